#pragma once
// magpie/sync/mutex.hpp — a mutex on which tasks suspend instead of blocking their worker.
//
//   magpie::mutex m;
//   {
//     auto guard = co_await m.scoped_lock();  // suspends the task (not the worker) while held
//     ...                                     // the critical section; may co_await anything
//   }                                         // unlocked here, also when an exception leaves
//
// Policy: FIFO direct hand-off, revocable until the heir runs. unlock() with tasks (or threads)
// queued passes ownership to the oldest of them without ever marking the mutex free, so no
// fast-path lock can barge in; only one waiter is woken per unlock (no thundering herd). A lock
// that finds the mutex free and nobody queued takes it with one CAS and does not suspend.
//
// A task handed the mutex is its *heir* until its resumption starts. A task of the same pool
// that locks meanwhile takes the mutex back from the heir (which returns to the head of the
// queue), at most `fairness_bound` times per wait; after that the hand-off stands. Without this,
// a task that unlocks and locks again at once would queue behind a waiter that is not running
// yet, and under contention every critical section would cost a suspension and a resumption (a
// lock convoy: far slower at two workers than at one; the `mutex` benchmark, bench/README.md,
// measures contended sections). Plain threads (the *_blocking forms) are handed the mutex
// directly and neither revoke nor are revoked.
// Protocol and proof sketch: docs/protocols.md §9.4; models: docs/models/mutex.pml,
// docs/models/mutex_heir.pml.

#include <chrono>
#include <cstddef>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "magpie/core/config.hpp"
#include "magpie/core/detail/pause.hpp"
#include "magpie/core/ext.hpp"
#include "magpie/core/frame.hpp"
#include "magpie/sync/detail/permits.hpp"
#include "magpie/sync/detail/timed.hpp" // try_lock_for / try_lock_until (Linux)
#include "magpie/sync/detail/waiter.hpp"
#include "magpie/sync/guard.hpp"

namespace magpie::sync {

/// A mutual-exclusion lock for tasks (and, blocking, for plain threads), with FIFO direct
/// hand-off, revocable until the heir runs (see the top of this file).
///
/// Ownership is not tied to a thread: a task holding the mutex may move between workers (it
/// resumes wherever it is woken), so the mutex records no owner, and unlock() may be called by
/// whoever holds it logically. It is not recursive: a holder that locks again waits for itself
/// forever. Every member may be called concurrently from any thread or task.
///
/// Destroying a mutex while tasks or threads wait for it makes their lock throw
/// magpie::abandoned_wait (they never got it) — including a task it was handed to whose
/// resumption had not started; destroying it while it is held is otherwise fine for the mutex,
/// but the holder must not unlock it afterwards.
///
/// Cost: an uncontended lock or unlock is one CAS; a contended lock on a pool of two or more
/// workers first tries again spin_tries times, a pause apart (the holder may be running on
/// another worker, about to unlock), then suspends the task (one park and, when its turn comes,
/// one resubmission to its pool) unless it revokes a hand-off (a short internal spin lock and two
/// CASes, no suspension); a contended unlock takes the spin lock and wakes exactly one waiter.
class mutex {
public:
  /// The bound on the mutex's unfairness: a task whose turn has come lets at most this many
  /// critical sections of other tasks go first (see the top of this file).
  static constexpr std::size_t fairness_bound = detail::permits::max_revocations;

  /// An unlocked mutex.
  mutex() noexcept = default;
  mutex(mutex const &) = delete;
  mutex &operator=(mutex const &) = delete;
  /// Releases every task and thread still waiting with magpie::abandoned_wait.
  ~mutex() = default;

  /// Tries of a contended lock, a pause apart, before the task parks (on pools of 2+ workers).
  static constexpr unsigned spin_tries = 16;

  /// The awaitables of lock() and scoped_lock(). Internal.
  template <typename Derived>
  struct lock_awaitable_base : detail::wait_awaitable<Derived> {
    /// The mutex to lock.
    mutex *m_target = nullptr;
    /// Fast path, from await_ready: succeeds without suspending when it can
    /// (sync/detail/waiter.hpp).
    bool try_now() noexcept {
      detail::permits &p = m_target->m_permits;
      if (p.try_take_or_revoke(*this->m_frame)) {
        return true;
      }
      // Held, and the holder may be running on another worker: a few more tries before parking
      // (a park and a resubmission cost more than a short critical section). Not on one worker,
      // where the holder cannot be running (it waits for us to give the worker up).
      core::executor *const home = core::ext::worker_of(*this->m_frame).home();
      if (home == nullptr || home->workers() < 2) {
        return false;
      }
      for (unsigned k = 0; k < spin_tries; ++k) {
        core::detail::cpu_pause();
        if (p.try_take_or_revoke(*this->m_frame)) {
          return true;
        }
      }
      return false;
    }
    /// Slow path, under the lock: succeeds now — the mutex was free, or handed to a task that has
    /// not started yet, whose hand-off this revokes — (true), or queues `w` (false).
    bool try_or_enqueue(detail::waiter &w) noexcept {
      return m_target->m_permits.take_or_enqueue(w, /*may_revoke=*/true);
    }
  };

  /// The awaitable of lock(). Internal.
  struct lock_awaitable : lock_awaitable_base<lock_awaitable> {};

  /// The awaitable of scoped_lock(): lock, then hand the lock to a guard. Internal.
  struct guard_awaitable : lock_awaitable_base<guard_awaitable> {
    /// What the co_await returns.
    unique_guard<mutex> resume_value() const noexcept { return {*m_target, std::adopt_lock}; }
  };

  /// What lock() returns; co_await it in a magpie task.
  using lock_request = detail::task_request<lock_awaitable, mutex>;

  /// What scoped_lock() returns; co_await it in a magpie task.
  using scoped_lock_request = detail::task_request<guard_awaitable, mutex>;

  /// `co_await m.lock()`: returns once the task holds the mutex, suspending it meanwhile (its
  /// worker runs other work). Pair it with unlock(), or prefer scoped_lock(). Throws
  /// magpie::abandoned_wait if the mutex is destroyed first, std::logic_error (nothing waited)
  /// inside an unjoined fork–join scope, magpie::pool_closed on a pool being destroyed with
  /// nothing left to run. Waiters are served in FIFO order, each overtaken by at most
  /// fairness_bound critical sections after its turn has come.
  lock_request lock() noexcept { return {this}; }

  /// `auto guard = co_await m.scoped_lock()`: as lock(), returning a unique_guard that unlocks.
  scoped_lock_request scoped_lock() noexcept { return {this}; }

  /// Takes the mutex if it is free and nobody waits for it; never waits, never fails spuriously.
  /// Any thread or task.
  bool try_lock() noexcept { return m_permits.try_take(); }

  /// Releases the mutex: hands it to the oldest waiter if any (which then holds it, unless a
  /// lock revokes the hand-off before the waiter runs), else frees it. Any thread or task; never
  /// blocks beyond a short internal lock. Everything the holder did is visible to the next holder.
  /// Precondition (checked, always: the program stops with a message): the mutex is locked.
  void unlock() noexcept {
    m_permits.give(1, [](std::size_t free, std::size_t) {
      MAGPIE_CHECK(free == 0, "magpie::mutex::unlock: the mutex is not locked (unlocked twice?)");
    });
  }

  /// For plain threads (not tasks: a task would block its worker): blocks the calling thread
  /// until it holds the mutex, queued in the same FIFO as tasks. Throws std::logic_error on a
  /// thread that runs a magpie task, magpie::abandoned_wait if the mutex is destroyed first.
  void lock_blocking() {
    detail::take_blocking(m_permits, "magpie::mutex::lock_blocking inside a task would block its "
                                     "worker: co_await m.lock() (or m.scoped_lock()) instead");
  }

  /// lock_blocking(), returning a guard.
  unique_guard<mutex> scoped_lock_blocking() {
    lock_blocking();
    return {*this, std::adopt_lock};
  }

#if defined(__linux__)
  /// `bool const locked = co_await m.try_lock_until(t)`: as lock(), giving up at `t` — true if
  /// the task holds the mutex (pair it with unlock()), false if `t` came first. The waiter keeps
  /// its place in the FIFO until then; a wait whose turn came before `t` returns true, even if
  /// revocations (at most fairness_bound critical sections of other tasks) delay its resumption
  /// past `t`. A deadline already reached does not suspend: true only if the lock succeeds at once.
  /// Any clock's time point is converted to io::clock. While it waits the task holds its pool (the
  /// pool's destructor waits for the deadline). Throws what lock() throws, and std::bad_alloc if
  /// the reactor's timer heap cannot grow. With GCC 12.2 bind the result to a variable
  /// (docs/guarantees.md, L3b).
  template <typename Clock, typename Duration>
  detail::timed_wait_request<detail::permits>
  try_lock_until(std::chrono::time_point<Clock, Duration> t) {
    return detail::wait_until_request(m_permits, t);
  }

  /// `co_await m.try_lock_for(d)`: try_lock_until(now + d), reading the clock once; a zero or
  /// negative `d` does not wait.
  template <typename Rep, typename Period>
  detail::timed_wait_request<detail::permits> try_lock_for(std::chrono::duration<Rep, Period> d) {
    return detail::wait_for_request(m_permits, d);
  }

  /// For plain threads: as lock_blocking(), giving up at `t` — true if the thread holds the
  /// mutex, false if `t` came first (a deadline already reached: true only if it is free now).
  /// Throws std::logic_error on a thread that runs a magpie task, magpie::abandoned_wait if the
  /// mutex is destroyed first. The thread keeps its own time (no reactor).
  template <typename Clock, typename Duration>
  bool try_lock_blocking_until(std::chrono::time_point<Clock, Duration> t) {
    return detail::timed_blocking_until(m_permits, t, timed_blocking_on_worker);
  }

  /// try_lock_blocking_until(now + d); a zero or negative `d` does not wait.
  template <typename Rep, typename Period>
  bool try_lock_blocking_for(std::chrono::duration<Rep, Period> d) {
    return detail::timed_blocking_for(m_permits, d, timed_blocking_on_worker);
  }
#endif

  /// True if the mutex is held now (a snapshot, for diagnostics and tests).
  bool is_locked() const noexcept { return m_permits.count() == 0; }
  /// Tasks and threads waiting now (a snapshot, for diagnostics and tests).
  std::size_t waiting() noexcept { return m_permits.waiting(); }

private:
  friend class condition_variable;

#if defined(__linux__)
  static constexpr char const *timed_blocking_on_worker =
      "magpie::mutex::try_lock_blocking_for/_until inside a task would "
      "block its worker: co_await m.try_lock_for(d) instead";
#endif

  detail::permits m_permits{1, /*given_back=*/true}; // one permit: free; none: held
};

} // namespace magpie::sync
