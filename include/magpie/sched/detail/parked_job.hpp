#pragma once
// magpie/sched/detail/parked_job.hpp — the job that brings a parked task back, for the
// awaitables that park their task and queue it on a worker themselves (resume_on, yield).

#include "magpie/core/context.hpp"
#include "magpie/core/ext.hpp"
#include "magpie/core/frame.hpp"
#include "magpie/sched/job.hpp"

namespace magpie::sched::detail {

/// Lives in the parked task's own frame (inside the awaitable). Inside await_suspend:
/// `park_task(frame)`, then push the job; from the push on, touch neither it nor the task.
struct parked_job : job {
  core::ext::task_handle m_task;

  /// Parks the task of `frame` (its stack goes with it) and makes this job the one that resumes
  /// it. Publish the job next, then return core::ext::continue_after from await_suspend.
  void park_task(core::frame_base &frame) noexcept {
    m_task = core::ext::park(frame); // the frame (and any stack_array) goes with the task
    m_run = &run;
  }

  static void run(job *j, core::context &ctx) {
    core::ext::resume(static_cast<parked_job *>(j)->m_task, ctx);
  }
};

} // namespace magpie::sched::detail
