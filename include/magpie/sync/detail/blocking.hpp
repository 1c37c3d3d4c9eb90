#pragma once
// magpie/sync/detail/blocking.hpp — plain threads in a primitive's waiter queue.
//
// The primitives that plain threads may wait on (event::wait_blocking, latch, barrier, channel)
// queue a thread in the same FIFO as their tasks, so hand-off order is one order for both. A
// thread's `blocking_waiter` lives on its own stack and is a `waiter` whose task handle is empty
// (a task waiter's handle is set by park before it is queued); `release` and `release_all`
// dispatch on that: a task is resubmitted to its pool, a thread's one-shot word is set to `done`
// (core/detail/thread_wait.hpp: the thread polls it for 4 to 100 µs, then sleeps on a static
// slot that the waker notifies). The waker's exchange of `done` is its last touch of the waiter
// (a notify after it names only a static slot), so the waiter may vanish as soon as its thread
// has seen `done`.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <utility>

#include "magpie/core/context.hpp"
#include "magpie/core/detail/thread_wait.hpp"
#include "magpie/sync/detail/lock_word.hpp"
#include "magpie/sync/detail/waiter.hpp"
#include "magpie/sync/suspend.hpp"

namespace magpie::sync::detail {

/// True if the calling thread runs a magpie task (a worker, or a sync_wait thread inside its
/// task). Every blocking form (the `_blocking` members) refuses to run there, first thing: it
/// would block the worker, and on a one-worker pool it would never return.
inline bool on_worker_thread() noexcept { return core::this_context() != nullptr; }

/// For a blocking form: throws std::logic_error(`what`, naming the task form to use instead) on
/// a thread that runs a magpie task.
inline void refuse_on_worker(char const *what) {
  if (on_worker_thread()) {
    throw std::logic_error(what);
  }
}

/// A plain thread waiting in a primitive's queue. Lives on the waiting thread's stack.
struct blocking_waiter : waiter {
  std::atomic<std::uintptr_t> m_word{core::detail::word_pending};

  /// Blocks the calling thread until released; rethrows what release stored with the wake.
  void block() {
    // Acquire (inside): release's writes of m_error and m_slot before its exchange are visible.
    core::detail::wait_for_done(m_word, this);
    rethrow_if_failed();
  }

  /// The waker's side. Its last touch of the waiter (see the top of this file).
  void notify() noexcept { core::detail::set_done(m_word, this); }
};

/// Wakes one waiter taken from a queue: a task is resubmitted to its pool, a thread is notified.
/// If `e` is set the waiter's wait throws it. Point of no return: touch nothing of `w` after.
inline void release(waiter *w, std::exception_ptr e = nullptr) noexcept {
  if (w->m_task) {
    if (e != nullptr) {
      w->fail(std::move(e));
    } else {
      w->wake();
    }
  } else {
    w->m_error = std::move(e);
    static_cast<blocking_waiter *>(w)->notify();
  }
}

/// release() for every waiter of a list returned by waiter_queue::take_all().
inline void release_all(waiter *w, std::exception_ptr const &e = nullptr) noexcept {
  while (w != nullptr) {
    waiter *next = w->m_next_waiter; // read first: the released waiter may be gone at once
    release(w, e);
    w = next;
  }
}

/// The size of a primitive's queue, read under its lock (a snapshot).
template <typename Queue>
std::size_t locked_size(lock_word &lock, Queue const &q) noexcept {
  lock.lock();
  std::size_t const n = q.size();
  lock.unlock();
  return n;
}

/// For a primitive's destructor: takes every waiter of `queues` under `lock`, then releases them
/// all with magpie::abandoned_wait thrown from their waits.
template <typename... Queues>
void abandon_all(lock_word &lock, Queues &...queues) noexcept {
  lock.lock();
  waiter *lists[] = {queues.take_all()...};
  lock.unlock();
  std::exception_ptr abandoned;
  for (waiter *w : lists) {
    if (w != nullptr) {
      if (abandoned == nullptr) {
        abandoned = std::make_exception_ptr(abandoned_wait());
      }
      release_all(w, abandoned);
    }
  }
}

} // namespace magpie::sync::detail
