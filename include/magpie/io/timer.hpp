#pragma once
// magpie/io/timer.hpp — tasks that sleep.
//
//   co_await magpie::sleep_for(std::chrono::milliseconds(5));
//   co_await magpie::sleep_until(magpie::io::clock::now() + 1s);
//
// The task is suspended away from its worker (the worker goes on with other work, or sleeps) and
// is resubmitted to its pool, to any worker, once the deadline has passed. Deadlines are kept by
// magpie's reactor: one process-wide thread, started on first use, blocked in epoll until the
// earliest deadline or a descriptor event — it never spins, and it is the only thread awake while
// a lazy pool's tasks only sleep. Arming costs O(log n) in a per-thread shard of timers (no
// process-wide lock) and 56 bytes in the task's frame plus 8 in the shard; see
// docs/protocols.md §10 for the protocol and why no deadline is missed while the reactor and the
// workers fall asleep.
//
// Contract:
//   - a deadline already reached does not suspend the task (sleep_for(0) returns at once);
//   - the task resumes no earlier than the deadline, on any worker of its pool;
//   - a pending sleep counts as in flight in its pool: the pool's destructor waits for it to
//     expire (and after a second says on stderr that it waits for suspended tasks). A sleep is
//     not cancellable; sleep in short steps and check a flag if a pool must close early;
//   - like every wait, a sleep inside a fork–join scope (children forked and not joined) throws
//     std::logic_error; on a pool whose destructor has begun and that has nothing left in flight
//     it throws magpie::pool_closed; if the timer heap cannot grow, std::bad_alloc (after a trip
//     through the suspension, with nothing left pending).

#include <chrono>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "magpie/core/config.hpp"
#include "magpie/core/context.hpp"
#include "magpie/core/ext.hpp"
#include "magpie/core/frame.hpp"
#include "magpie/io/detail/timer_heap.hpp"

namespace magpie::io {

/// The clock of every magpie deadline.
using clock = std::chrono::steady_clock;

namespace detail {

inline nanos to_nanos(clock::time_point t) noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

inline nanos now_nanos() noexcept { return to_nanos(clock::now()); }

/// The inverse of to_nanos: a deadline's time point (for a plain thread's own timed sleep).
inline clock::time_point from_nanos(nanos n) noexcept {
  return clock::time_point(
      std::chrono::duration_cast<clock::duration>(std::chrono::nanoseconds(n)));
}

/// Checks that the task may wait and returns the executor it parks on.
inline core::executor &wait_home(core::frame_base &self, char const *what) {
  if (core::ext::in_fork_join_scope(self)) {
    throw std::logic_error(std::string(what) +
                           " inside a fork-join scope: co_await magpie::join() first");
  }
  core::executor *home = core::ext::worker_of(self).home();
  if (home == nullptr) {
    throw std::logic_error(std::string(what) + ": this worker's scheduler cannot resume tasks");
  }
  start_reactor(); // may throw std::system_error: nothing is suspended yet
  return *home;
}

/// The awaitable of sleep_until, in the sleeping task's frame: 56 bytes.
struct sleep_awaitable : wait_node {
  core::frame_base *m_frame;

  sleep_awaitable(nanos deadline, core::frame_base *frame) noexcept : m_frame(frame) {
    m_deadline = deadline;
  }

  bool await_ready() const noexcept { return m_deadline <= now_nanos(); }

  MAGPIE_CORO_SUSPEND_NOINLINE std::coroutine_handle<> await_suspend(std::coroutine_handle<>) {
    core::context &worker = core::ext::worker_of(*m_frame);
    core::executor *home = worker.home();
    home->hold(); // may throw pool_closed: nothing is suspended
    m_run = &wait_node::run;
    m_task = core::ext::park(*m_frame);
    if (!arm_timer(*this)) { // out of memory: never left
      m_result = out_of_memory;
      home->unhold();
      return core::ext::resume_here(m_task, worker);
    }
    // Point of no return: armed, and the reactor may already have resubmitted the task.
    return core::ext::continue_after(worker);
  }

  void await_resume() const {
    if (m_result == out_of_memory) [[unlikely]] {
      throw std::bad_alloc();
    }
  }
};

/// What sleep_until returns: bound to the awaiting task by co_await.
struct [[nodiscard("co_await it")]] sleep_request {
  using magpie_awaitable = void;
  nanos m_deadline;

  sleep_awaitable magpie_bind(core::frame_base &self) && {
    wait_home(self, "magpie::sleep_for/sleep_until");
    return sleep_awaitable(m_deadline, &self);
  }
};

} // namespace detail

/// A snapshot of the reactor's counters (racy while it runs).
struct reactor_stats {
  std::size_t pending_timers = 0; ///< sleeps and descriptor deadlines armed and not yet fired
  std::uint64_t wakeups = 0;      ///< times the reactor thread returned from the backend's wait
  std::uint64_t fired = 0;        ///< timers that expired (sleeps and descriptor deadlines)
  std::uint64_t fd_events = 0;    ///< descriptor events the backend reported
};

/// Any thread: the reactor's counters (starts the reactor if needed). Takes each shard's lock.
reactor_stats reactor_statistics();

/// Inside a task: `co_await sleep_until(t)` suspends the task until `t` (see the top of this
/// file). Any clock's time point is converted to io::clock at the call.
template <typename Clock, typename Duration>
detail::sleep_request sleep_until(std::chrono::time_point<Clock, Duration> t) {
  if constexpr (std::is_same_v<Clock, clock>) {
    return {detail::to_nanos(std::chrono::time_point_cast<clock::duration>(t))};
  } else {
    return {detail::to_nanos(clock::now() +
                             std::chrono::duration_cast<clock::duration>(t - Clock::now()))};
  }
}

/// Inside a task: `co_await sleep_for(d)` suspends the task for at least `d` (see the top of this
/// file). A zero or negative `d` returns at once.
template <typename Rep, typename Period>
detail::sleep_request sleep_for(std::chrono::duration<Rep, Period> d) {
  detail::nanos const now = detail::now_nanos();
  if (d <= d.zero()) {
    return {now};
  }
  // Saturate: a duration past the end of the clock never expires.
  if (std::chrono::duration<double>(d).count() >= 1e18 / 1e9) {
    return {detail::no_deadline};
  }
  detail::nanos const ns = std::chrono::ceil<std::chrono::nanoseconds>(d).count();
  return {ns > detail::no_deadline - now ? detail::no_deadline : now + ns};
}

} // namespace magpie::io
