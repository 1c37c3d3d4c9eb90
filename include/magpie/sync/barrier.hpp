#pragma once
// magpie/sync/barrier.hpp — a reusable barrier for a fixed number of tasks (or threads), with an
// optional completion function run once per phase.
//
//   magpie::barrier sync_point(n, [&]() noexcept { ++generation; });
//   for (...) { work(); co_await sync_point.arrive_and_wait(); }   // in each of n tasks
//
// Protocol and proof sketch: docs/protocols.md §9.10 ("barrier").

#include <cstddef>
#include <exception>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "magpie/core/frame.hpp"
#include "magpie/sync/detail/blocking.hpp"
#include "magpie/sync/detail/lock_word.hpp"
#include "magpie/sync/detail/waiter.hpp"
#include "magpie/sync/suspend.hpp"

namespace magpie::sync {

namespace detail {
/// The default completion function of a barrier: nothing.
struct no_completion {
  void operator()() const noexcept {}
};
} // namespace detail

/// A barrier (as std::barrier, for tasks): `expected` participants arrive in each phase; the
/// last arrival of a phase runs the completion function (on its own thread, before anyone is
/// released), starts the next phase and releases every participant that waits. Phases repeat.
///
/// Every member may be called concurrently from any thread or task. Everything a participant
/// did before arriving is visible to the completion function and to every participant after its
/// wait. Arriving more often per phase than agreed is not detected (the arrival counts towards
/// the next phase), except with no participants left (std::logic_error). Destroying a barrier
/// while tasks or threads wait on it releases them with magpie::abandoned_wait. Cost per phase:
/// one short lock per arrival and one suspension per waiting task.
///
/// `Completion` is called as `completion()` and must be noexcept (as std::barrier requires): an
/// exception there could reach no participant in particular.
template <typename Completion = detail::no_completion>
class barrier {
  static_assert(std::is_nothrow_invocable_v<Completion &>,
                "magpie::barrier: the completion function must be callable with no arguments "
                "and noexcept: write the lambda as []() noexcept { ... }");

public:
  /// A barrier for `expected` participants. Throws std::invalid_argument if expected < 0.
  explicit barrier(std::ptrdiff_t expected, Completion completion = Completion())
      : m_completion(std::move(completion)), m_expected(checked(expected)), m_remaining(expected) {}
  barrier(barrier const &) = delete;
  barrier &operator=(barrier const &) = delete;

  /// Releases every task and thread still waiting with magpie::abandoned_wait.
  ~barrier() { detail::abandon_all(m_lock, m_waiters); }

  /// How many tasks and threads wait now (a snapshot, for diagnostics and tests).
  std::size_t waiting() noexcept { return detail::locked_size(m_lock, m_waiters); }

  /// The awaitable of arrive_and_wait(). Internal.
  struct wait_awaitable : detail::wait_awaitable<wait_awaitable> {
    /// The barrier waited on.
    barrier *m_target = nullptr;
    /// Fast path, from await_ready: succeeds without suspending when it can
    /// (sync/detail/waiter.hpp).
    bool try_now() { return m_target->arrive(nullptr); }
    /// Slow path, under the lock: succeeds now (true), or queues `w` to be resumed later (false).
    bool try_or_enqueue(detail::waiter &w) { return m_target->arrive(&w); }
  };

  /// What arrive_and_wait() returns; co_await it in a magpie task.
  using wait_request = detail::task_request<wait_awaitable, barrier>;

  /// `co_await b.arrive_and_wait()`: arrives and suspends the task (its worker runs other work)
  /// until the phase completes. Throws std::logic_error with no participants left, or inside an
  /// unjoined fork–join scope (then it did not arrive); magpie::abandoned_wait if the barrier is
  /// destroyed first.
  wait_request arrive_and_wait() noexcept { return {this}; }

  /// For plain threads (a task would block its worker): arrives and blocks until the phase
  /// completes. Throws as arrive_and_wait, and std::logic_error on a thread that runs a magpie
  /// task (then it did not arrive).
  void arrive_and_wait_blocking() {
    detail::refuse_on_worker("magpie::barrier::arrive_and_wait_blocking inside a task would block "
                             "its worker (it did not arrive): co_await b.arrive_and_wait() "
                             "instead");
    detail::blocking_waiter w;
    if (!arrive(&w)) {
      w.block();
    }
  }

  /// Arrives without waiting and leaves: later phases expect one participant fewer.
  void arrive_and_drop() {
    m_lock.lock();
    if (m_expected == 0) {
      m_lock.unlock();
      throw std::logic_error("magpie::barrier::arrive_and_drop: no participants left");
    }
    --m_expected;
    finish_arrival(nullptr);
  }

private:
  static std::ptrdiff_t checked(std::ptrdiff_t expected) {
    if (expected < 0) {
      throw std::invalid_argument("magpie::barrier: negative number of participants");
    }
    return expected;
  }

  // One arrival. `w` null: arrive only if this arrival completes the phase (the fast path: the
  // task has not suspended) and return whether it did. Otherwise arrive; queue `w` unless the
  // phase completes, and return whether it did (then `w` was not queued).
  bool arrive(detail::waiter *w) {
    m_lock.lock();
    if (m_remaining == 0) {
      m_lock.unlock();
      throw std::logic_error("magpie::barrier: arrival with no participants left (expected 0)");
    }
    if (m_remaining > 1 && w == nullptr) {
      m_lock.unlock();
      return false;
    }
    return finish_arrival(w);
  }

  // Under the lock (which it releases): counts the arrival; completes the phase if last, else
  // queues `w`. Returns true if the phase completed.
  bool finish_arrival(detail::waiter *w) {
    if (m_remaining > 1) {
      --m_remaining;
      if (w != nullptr) {
        m_waiters.push(w);
      }
      m_lock.unlock();
      return false;
    }
    // Last arrival (or, after a drop, none is awaited any more): a new phase begins.
    detail::waiter *all = m_waiters.take_all();
    m_remaining = m_expected;
    m_lock.unlock();
    // No participant of this phase can arrive again before it is released (below), so the
    // completion runs alone; the lock's acquire made every arrival's writes visible to it.
    m_completion();
    detail::release_all(all); // each release is a happens-before edge to its waiter
    return true;
  }

  Completion m_completion;
  detail::lock_word m_lock;
  std::ptrdiff_t m_expected;      ///< participants per phase; guarded by the lock
  std::ptrdiff_t m_remaining;     ///< arrivals still awaited this phase; guarded by the lock
  detail::waiter_queue m_waiters; ///< guarded by the lock
};

} // namespace magpie::sync
