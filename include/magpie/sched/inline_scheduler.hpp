#pragma once
// magpie/sched/inline_scheduler.hpp — runs tasks on the calling thread, in serial order.
//
// sync_wait(inline_scheduler&, ...) executes the serial projection: every fork runs its child at
// once and nobody steals the continuation, so tasks run exactly in the order of the program with
// fork/join removed. Calls on one scheduler from several threads are serialised by a mutex.

#include <mutex>
#include <stdexcept>

#include "magpie/core/config.hpp"
#include "magpie/core/context.hpp"
#include "magpie/sched/job.hpp"

namespace magpie::sched {

/// A scheduler that runs each root task on the calling thread in serial order (the serial
/// projection of the program): for tests, debugging and single-threaded builds. sync_wait calls
/// from several threads are serialised.
class inline_scheduler {
public:
  inline_scheduler() = default;
  inline_scheduler(inline_scheduler const &) = delete;
  inline_scheduler &operator=(inline_scheduler const &) = delete;

  /// Runs the job now, on this thread, with this scheduler's stack and deque installed.
  void submit_root(job *j) {
    std::lock_guard lock(m_mutex);
    core::context *previous = core::set_this_context(&m_ctx);
    j->m_run(j, m_ctx);
    core::set_this_context(previous);
  }
  /// Nothing to account for: submit_root returns only when the root has completed.
  void finish_root() noexcept {}

  /// True while a task of this scheduler runs on the calling thread.
  bool is_worker_thread() const noexcept { return core::this_context() == &m_ctx; }

  /// The one worker's counters.
  core::worker_stats stats() const noexcept { return m_ctx.stats(); }

private:
  std::mutex m_mutex;
  core::context m_ctx{this, 0};
};

} // namespace magpie::sched
