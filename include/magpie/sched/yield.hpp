#pragma once
// magpie/sched/yield.hpp — let the tasks that wait for this worker go first.
//
//   for (;;) {
//     serve_one_request(fd);        // never suspends when the next request is already there
//     co_await magpie::yield();     // the other connections' handlers get their turn
//   }
//
// A task that never suspends keeps its worker: tasks woken meanwhile (by a timer, a descriptor,
// an event, a mutex) and queued on that worker wait until it suspends or ends. `co_await
// magpie::yield()` gives them their turn: if resumed tasks wait for the calling worker, the task
// goes to the back of that worker's queue of resumed tasks (behind every one already there,
// before new roots) and the worker runs them first; otherwise it continues at once, at the cost
// of a few loads. On a thread that runs its own root as a guest of a pool (pool_options::
// callers_run_roots), or on a scheduler other than a pool (inline_scheduler), nothing waits for
// the thread: it continues at once. A yielded task is resumed on the same worker unless an idle
// worker takes it first, as it would take any queued task.
//
// Only outside fork–join scopes (no unjoined forked children): throws std::logic_error from the
// co_await otherwise, as every suspension does. A task parked by yield counts as in flight (its
// pool's destructor waits for it). Protocol: docs/protocols.md §5.3.

#include <coroutine>
#include <stdexcept>

#include "magpie/core/config.hpp"
#include "magpie/core/context.hpp"
#include "magpie/core/ext.hpp"
#include "magpie/core/frame.hpp"
#include "magpie/sched/detail/parked_job.hpp"
#include "magpie/sched/detail/pool_access.hpp"
#include "magpie/sched/pool.hpp"

namespace magpie::sched {

namespace detail {

/// Bound to its task: the job that resumes it lives in the task's own frame.
struct yield_awaitable : parked_job {
  core::frame_base *m_frame = nullptr;
  pool *m_pool = nullptr; ///< the worker's pool; null: nothing to yield to

  bool await_ready() const noexcept {
    return m_pool == nullptr || !pool_access::others_waiting_here(*m_pool);
  }

  MAGPIE_CORO_SUSPEND_NOINLINE std::coroutine_handle<>
  await_suspend(std::coroutine_handle<> self) noexcept {
    core::context &ctx = core::ext::worker_of(*m_frame);
    pool &p = *m_pool; // read now: `this` lives in the frame that the push gives away
    try {
      ctx.home()->hold(); // the pool's destructor waits for the parked task
    } catch (...) {
      return self; // the pool is closing with nothing else in flight: go on here
    }
    park_task(*m_frame);
    // Point of no return: from the push the worker (or a thief) may run the task; touch neither
    // it nor this awaitable.
    pool_access::requeue_here(p, this);
    return core::ext::continue_after(ctx);
  }

  void await_resume() const noexcept {}
};

/// What yield() returns; co_await it in a magpie task.
struct [[nodiscard("co_await it")]] yield_request {
  /// Marks the request as awaitable inside a magpie task.
  using magpie_awaitable = void;

  /// Binds the request to the awaiting task (co_await does this) and returns the awaitable.
  yield_awaitable magpie_bind(core::frame_base &self) const {
    if (core::ext::in_fork_join_scope(self)) {
      throw std::logic_error("magpie::yield inside a fork-join scope (forked children not yet "
                             "joined): co_await magpie::join() first");
    }
    yield_awaitable a;
    a.m_frame = &self;
    a.m_pool = pool::current(); // the pool whose worker runs the task, or null
    return a;
  }
};

} // namespace detail

/// Inside a magpie task: `co_await magpie::yield();` lets the tasks resumed and waiting for this
/// worker run first, then continues; continues at once if none waits. See the top of this file.
inline detail::yield_request yield() noexcept { return {}; }

} // namespace magpie::sched
