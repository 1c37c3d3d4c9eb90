#pragma once
// magpie/sync/semaphore.hpp — a counting semaphore on which tasks suspend.
//
//   magpie::semaphore slots(4);            // at most four tasks inside at once
//   co_await slots.acquire();              // suspends the task (not its worker) while none is free
//   ...
//   slots.release();                       // any thread or task
//
// Policy: direct hand-off, FIFO, revocable until the heir runs — as magpie::mutex. release(n)
// with tasks (or threads) queued gives one permit to each of the n oldest waiters (woken one by
// one, no broadcast) instead of adding it to the count; the count rises only while nobody waits,
// so an acquire that arrives later cannot take a free permit past a queued waiter.
//
// The first task handed a permit while no other is pending is the *heir* until its resumption
// starts: a task of the same pool that acquires meanwhile, finding no free permit, takes the
// heir's (which returns to the head of the queue), at most `fairness_bound` times per wait.
// Without this, a task that releases and acquires again at once would queue behind a waiter
// that is not running yet (a convoy: every acquire a suspension and a resumption). Plain threads
// (acquire_blocking) are handed permits directly and neither revoke nor are revoked. Protocol
// and proof sketch: docs/protocols.md §9.6 (the core is §9.4's); model:
// docs/models/mutex_heir.pml with -DPERMITS=2.

#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <utility>

#include "magpie/core/config.hpp"
#include "magpie/core/frame.hpp"
#include "magpie/sync/detail/permits.hpp"
#include "magpie/sync/detail/timed.hpp" // try_acquire_for / try_acquire_until (Linux)
#include "magpie/sync/detail/waiter.hpp"

namespace magpie::sync {

/// A counting semaphore for tasks and threads (see the top of this file). Every member may be
/// called concurrently from any thread or task. Destroying a semaphore while tasks or threads
/// wait in acquire makes their acquire throw magpie::abandoned_wait.
///
/// Cost: acquire with a free permit and nobody waiting, and release with nobody waiting, are one
/// CAS each; otherwise a short internal spin lock, and a suspension (one park and one
/// resubmission) per waiting task.
class semaphore {
public:
  /// The bound on the semaphore's unfairness: a task whose turn has come lets at most this many
  /// acquires of other tasks go first (see the top of this file).
  static constexpr std::size_t fairness_bound = detail::permits::max_revocations;

  /// The largest count a semaphore holds.
  static constexpr std::size_t max() noexcept { return detail::permits::max_count; }

  /// A semaphore with `initial` free permits. Precondition (checked): initial <= max().
  explicit semaphore(std::size_t initial) noexcept : m_permits(initial) {
    MAGPIE_CHECK(initial <= max(), "magpie::semaphore: initial count above semaphore::max()");
  }
  semaphore(semaphore const &) = delete;
  semaphore &operator=(semaphore const &) = delete;
  /// Releases every task and thread still waiting with magpie::abandoned_wait.
  ~semaphore() = default;

  /// What acquire() returns; co_await it in a magpie task.
  using acquire_request = detail::task_request<detail::take_awaitable, detail::permits>;

  /// `co_await s.acquire()`: takes one permit, suspending the task (its worker runs other work)
  /// until one is handed to it; waiters are served in FIFO order, each overtaken by at most
  /// fairness_bound acquires after its turn has come. Throws magpie::abandoned_wait
  /// if the semaphore is destroyed first, std::logic_error (nothing taken) inside an unjoined
  /// fork–join scope, magpie::pool_closed on a pool being destroyed with nothing left to run.
  acquire_request acquire() noexcept { return {&m_permits}; }

  /// Takes a permit if one is free and nobody waits; never waits, never fails spuriously.
  bool try_acquire() noexcept { return m_permits.try_take(); }

  /// Gives `n` permits back: one to each of the n oldest waiters (the first task among them may
  /// lose its permit to an acquire before it runs, see above), the rest to the count. Any
  /// thread or task, including plain threads; never blocks beyond a short internal lock.
  /// Everything the caller did before is visible to whoever takes these permits. Precondition
  /// (checked, always): the count does not exceed max().
  void release(std::size_t n = 1) noexcept {
    m_permits.give(n, [](std::size_t free, std::size_t more) {
      MAGPIE_CHECK(more <= max() - free, "magpie::semaphore::release: count above max()");
    });
  }

  /// For plain threads (not tasks: a task would block its worker): blocks the calling thread
  /// until it has a permit, queued in the same FIFO as tasks. Throws std::logic_error on a thread
  /// that runs a magpie task, magpie::abandoned_wait if the semaphore is destroyed first.
  void acquire_blocking() {
    detail::take_blocking(m_permits, "magpie::semaphore::acquire_blocking inside a task would "
                                     "block its worker: co_await s.acquire() instead");
  }

#if defined(__linux__)
  /// `bool const took = co_await s.try_acquire_until(t)`: as acquire(), giving up at `t` — true
  /// if the task took a permit, false if `t` came first (a release that comes later goes to the
  /// next waiter, or to the count: no permit is lost to a wait that gives up). The waiter keeps
  /// its place in the FIFO until then; a wait whose turn came before `t` returns true (a hand-off
  /// to a timed waiter is never revoked). A deadline already reached does not suspend: true only if
  /// a permit is taken at once. Any clock's time point is converted to io::clock. While it waits
  /// the task holds its pool (the pool's destructor waits for the deadline). Throws what acquire()
  /// throws, and std::bad_alloc if the reactor's timer heap cannot grow. With GCC 12.2 bind the
  /// result to a variable (docs/guarantees.md, L3b).
  template <typename Clock, typename Duration>
  detail::timed_wait_request<detail::permits>
  try_acquire_until(std::chrono::time_point<Clock, Duration> t) {
    return detail::wait_until_request(m_permits, t);
  }

  /// `co_await s.try_acquire_for(d)`: try_acquire_until(now + d), reading the clock once; a zero
  /// or negative `d` does not wait.
  template <typename Rep, typename Period>
  detail::timed_wait_request<detail::permits>
  try_acquire_for(std::chrono::duration<Rep, Period> d) {
    return detail::wait_for_request(m_permits, d);
  }

  /// For plain threads: as acquire_blocking(), giving up at `t` — true if the thread took a
  /// permit, false if `t` came first (a deadline already reached: true only if one is free now).
  /// Throws std::logic_error on a thread that runs a magpie task, magpie::abandoned_wait if the
  /// semaphore is destroyed first. The thread keeps its own time (no reactor).
  template <typename Clock, typename Duration>
  bool try_acquire_blocking_until(std::chrono::time_point<Clock, Duration> t) {
    return detail::timed_blocking_until(m_permits, t, timed_blocking_on_worker);
  }

  /// try_acquire_blocking_until(now + d); a zero or negative `d` does not wait.
  template <typename Rep, typename Period>
  bool try_acquire_blocking_for(std::chrono::duration<Rep, Period> d) {
    return detail::timed_blocking_for(m_permits, d, timed_blocking_on_worker);
  }
#endif

  /// Free permits now (a snapshot).
  std::size_t count() const noexcept { return m_permits.count(); }
  /// Tasks and threads waiting now (a snapshot, for diagnostics and tests).
  std::size_t waiting() noexcept { return m_permits.waiting(); }

private:
#if defined(__linux__)
  static constexpr char const *timed_blocking_on_worker =
      "magpie::semaphore::try_acquire_blocking_for/_until inside a task "
      "would block its worker: co_await s.try_acquire_for(d) instead";
#endif

  detail::permits m_permits;
};

} // namespace magpie::sync
