#pragma once
// magpie/mpi/call_lock.hpp — one MPI call at a time, where MPI provides MPI_THREAD_SERIALIZED.
//
// Under MPI_THREAD_MULTIPLE any thread may call MPI at any time, and magpie::mpi needs no lock:
// a task starts its operation on whichever worker runs it while magpie's poller thread tests the
// pending requests. Under MPI_THREAD_SERIALIZED (an MPI built without MULTIPLE, or a program that
// asks for less, as MULTIPLE may cost every call a lock inside MPI anyway) calls from several
// threads are allowed only one at a time: magpie::mpi then takes one process-wide lock around
// each of its own MPI calls (a start, a test, a cancel; the poller's scan of the pending
// requests), and a program's own MPI calls made while magpie::mpi may be active — from a task,
// from another thread, or from main while tasks wait on MPI — must hold it too:
//
//   {
//     magpie::mpi::call_lock lock; // nothing under MPI_THREAD_MULTIPLE
//     MPI_Isend(buf, n, MPI_INT, peer, tag, comm, &request);
//   }
//   MPI_Status s = co_await magpie::mpi::wait(request); // the poller tests it under the lock
//
// Hold it for the calls only: never across a co_await (the task may resume on another thread)
// nor across a blocking MPI call that needs another rank's progress while this rank's tasks wait
// on MPI (the poller could not test meanwhile; the calls magpie offers do not block). The lock
// may be taken again by a thread that holds it (it counts).

#include <atomic>
#include <mutex>

#include "magpie/core/config.hpp"

namespace magpie::mpi {

namespace detail {
/// Whether MPI provides less than MPI_THREAD_MULTIPLE (MPI_THREAD_SERIALIZED): set by the
/// environment and by the first wait, from MPI_Query_thread.
inline std::atomic<bool> serialize_calls{false};
inline std::mutex &call_mutex() noexcept {
  static std::mutex m;
  return m;
}
/// How many call_locks the calling thread holds. Opaque under Clang (MAGPIE_CLANG_OPAQUE_TLS): a
/// task takes call_lock on whichever worker it runs on, and with an address cached across a
/// suspension it would count on one worker's depth while it runs on another, which loses the
/// count and leaves the mutex held by nobody (every MPI call then waits for ever).
MAGPIE_CLANG_OPAQUE_TLS inline int &call_depth() noexcept {
  thread_local int depth = 0;
  return *core::detail::opaque_address(&depth);
}
} // namespace detail

/// Holds magpie::mpi's lock on MPI calls while it lives, if MPI provides only
/// MPI_THREAD_SERIALIZED; does nothing under MPI_THREAD_MULTIPLE. See the top of this file.
class call_lock {
public:
  call_lock() {
    // acquire: the level was published before the first operation that could race us
    if (detail::serialize_calls.load(std::memory_order_acquire)) {
      if (detail::call_depth()++ == 0) {
        try {
          detail::call_mutex().lock();
        } catch (...) {
          --detail::call_depth();
          throw;
        }
      }
      m_counted = true;
    }
  }
  call_lock(call_lock const &) = delete;
  call_lock &operator=(call_lock const &) = delete;
  ~call_lock() {
    if (m_counted && --detail::call_depth() == 0) {
      detail::call_mutex().unlock();
    }
  }

  /// True if MPI calls are serialised (MPI_THREAD_SERIALIZED) and this thread holds the lock.
  static bool held() noexcept { return detail::call_depth() > 0; }

private:
  bool m_counted = false;
};

} // namespace magpie::mpi
