#pragma once
// magpie/sched/resume_on.hpp — explicit scheduling: move the current task onto a chosen worker.
//
//   co_await magpie::resume_on(pool, 3);  // continue on worker 3 of `pool`
//   co_await magpie::resume_on(pool);     // continue on some worker of `pool` (maybe another pool)
//
// The task suspends, hands its stack to itself, and its resumption goes through the target
// worker's submission queue. Only outside fork–join scopes (no unjoined children).
//
// Pool lifetime: the move counts as in flight for the target pool from the co_await until the
// job is queued and the target woken, so the target's destructor cannot pass it by. A move into
// a pool whose destructor has begun — from another pool, or within that pool — throws
// pool_closed into the task; an accepted move always runs, and the target's destructor waits
// until the task has left (finished, or moved on). The target must merely not have been
// destroyed already when the co_await is evaluated (docs/protocols.md §5.1).

#include <coroutine>
#include <cstddef>
#include <stdexcept>

#include "magpie/core/config.hpp"
#include "magpie/core/context.hpp"
#include "magpie/core/ext.hpp"
#include "magpie/core/frame.hpp"
#include "magpie/sched/detail/parked_job.hpp"
#include "magpie/sched/job.hpp"
#include "magpie/sched/pool.hpp"

namespace magpie::sched {

namespace detail {

/// Bound to its task: the job that resumes it lives in the task's own frame.
struct resume_on_awaitable : parked_job {
  pool *m_pool;
  std::size_t m_index;
  core::frame_base *m_frame;

  bool await_ready() const noexcept { return false; }

  MAGPIE_CORO_SUSPEND_NOINLINE std::coroutine_handle<>
  await_suspend(std::coroutine_handle<>) noexcept {
    core::context &ctx = core::ext::worker_of(*m_frame);
    pool *target = m_pool; // read now: `this` lives in the frame that the push gives away
    std::size_t const index = m_index;
    park_task(*m_frame);
    // Point of no return: from the push inside submit_to, the target may be running the task
    // (and this awaitable) or may have finished it; touch neither. submit_to also ends the
    // submission that magpie_bind opened, after which the target pool may be destroyed.
    pool_access::submit_to(*target, index, this);
    return core::ext::continue_after(ctx);
  }

  void await_resume() const noexcept {}
};

struct [[nodiscard("co_await it")]] resume_on_request {
  using magpie_awaitable = void;
  pool *m_pool;
  std::size_t m_index;
  bool m_any;

  resume_on_awaitable magpie_bind(core::frame_base &self) const {
    MAGPIE_CHECK(!core::ext::in_fork_join_scope(self),
                 "magpie::resume_on inside a fork-join scope: join first");
    if (!m_any && m_index >= m_pool->size()) {
      throw std::out_of_range("magpie::resume_on: no such worker in the pool");
    }
    // Last, and nothing can throw between here and await_suspend's submit_to, which ends it:
    // from now on the pool's destructor waits for this submission (or it threw pool_closed).
    pool_access::open_submission(*m_pool);
    resume_on_awaitable a{};
    a.m_pool = m_pool;
    a.m_index = m_any ? pool_access::choose_worker(*m_pool) : m_index;
    a.m_frame = &self;
    return a;
  }
};

} // namespace detail

/// Continues the current task on worker `index` of `p`. Throws std::out_of_range for a bad index
/// and pool_closed if `p` is shutting down.
inline detail::resume_on_request resume_on(pool &p, std::size_t index) noexcept {
  return {&p, index, false};
}

/// Continues the current task on some worker of `p`, preferring an idle one.
inline detail::resume_on_request resume_on(pool &p) noexcept { return {&p, 0, true}; }

/// The index of the worker running the caller within its scheduler, or -1 on other threads (and
/// on a thread that runs its own root as a guest of a pool: pool::run_root_here).
inline std::ptrdiff_t this_worker_index() noexcept {
  core::context const *c = core::this_context();
  if (c == nullptr || (c->home() != nullptr && c->index() >= c->home()->workers())) {
    return -1;
  }
  return static_cast<std::ptrdiff_t>(c->index());
}

} // namespace magpie::sched
