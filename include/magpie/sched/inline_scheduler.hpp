#pragma once
// magpie/sched/inline_scheduler.hpp — runs tasks on the calling thread, in serial order.
//
// sync_wait(inline_scheduler&, ...) executes the serial projection: every fork runs its child at
// once and nobody steals the continuation, so tasks run exactly in the order of the program with
// fork/join removed. Calls on one scheduler from several threads are serialised by a mutex.
//
// A task may suspend (co_await a waiting primitive): sync_wait's thread then waits until some
// thread resumes it and runs it again, so waiting for something that only another task of the
// same sync_wait would provide deadlocks, as it would in a serial program.

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "magpie/core/config.hpp"
#include "magpie/core/context.hpp"
#include "magpie/sched/job.hpp"

namespace magpie::sched {

/// A scheduler of one worker: the thread that calls sync_wait.
class inline_scheduler : public core::executor {
public:
  inline_scheduler() noexcept : core::executor(operations_table) {}
  inline_scheduler(inline_scheduler const &) = delete;
  inline_scheduler &operator=(inline_scheduler const &) = delete;
  ~inline_scheduler() = default;

  /// Runs the job now, on this thread, with this scheduler's stack and deque installed; then,
  /// while tasks it started are suspended, waits for their resumption and runs them.
  void submit_root(job *j) {
    std::lock_guard serial(m_mutex);
    core::context *previous = core::set_this_context(m_ctx.get());
    j->m_run(j, *m_ctx);
    for (;;) {
      job *next = nullptr;
      {
        std::unique_lock lock(m_queue_mutex);
        // The mutex orders each resubmitter's push (and the task's state) before our pop.
        m_queue_cv.wait(lock, [&] { return m_queue != nullptr || m_held == 0; });
        if (m_queue == nullptr) {
          break; // nothing suspended, nothing queued: every task of the root has finished
        }
        next = m_queue;
        m_queue = next->m_next;
      }
      next->m_run(next, *m_ctx);
    }
    core::set_this_context(previous);
  }
  /// Nothing to account for: submit_root returns only when the root has completed.
  void finish_root() noexcept {}

  /// executor: counts a task suspending on this scheduler. Never throws.
  void hold() {
    std::lock_guard lock(m_queue_mutex);
    ++m_held;
  }
  /// executor: queues the resumed task for the sync_wait thread and wakes it; any worker index
  /// means the one worker.
  void resubmit(job *j, std::size_t) noexcept {
    std::lock_guard lock(m_queue_mutex);
    j->m_next = nullptr;
    job **tail = &m_queue;
    while (*tail != nullptr) { // FIFO; the queue holds at most the tasks suspended right now
      tail = &(*tail)->m_next;
    }
    *tail = j;
    --m_held;
    m_queue_cv.notify_one(); // under the lock: the waiter cannot miss it
  }
  /// executor: ends one `hold` without a resubmission.
  void unhold() noexcept {
    std::lock_guard lock(m_queue_mutex);
    --m_held;
    m_queue_cv.notify_one(); // under the lock: the waiter cannot miss it
  }
  /// executor: one worker.
  std::size_t workers() const noexcept { return 1; }

  /// True while a task of this scheduler runs on the calling thread.
  bool is_worker_thread() const noexcept { return core::this_context() == m_ctx.get(); }

  /// The one worker's counters.
  core::worker_stats stats() const noexcept { return m_ctx->stats(); }

private:
  static core::executor::operations const operations_table;

  std::mutex m_mutex;
  std::mutex m_queue_mutex;
  std::condition_variable m_queue_cv;
  job *m_queue = nullptr; // resumed tasks, oldest first (guarded by m_queue_mutex)
  std::size_t m_held = 0; // suspended tasks not yet resubmitted (guarded by m_queue_mutex)
  // On the heap: a context is over-aligned (its deque's ends and its counters have cache lines of
  // their own), and the scheduler may be a task's local, or a local of a plain function that a
  // compiler inlines into a task, where only alignof(std::max_align_t) is guaranteed.
  std::unique_ptr<core::context> m_ctx = std::make_unique<core::context>(this, 0, this);
};
// It may be a task's local, or a local of a plain function that a compiler inlines into a task.
static_assert(alignof(inline_scheduler) <= alignof(std::max_align_t),
              "inline_scheduler must not be over-aligned: it may live in a task's frame");

inline core::executor::operations const inline_scheduler::operations_table = {
    [](core::executor &self) { static_cast<inline_scheduler &>(self).hold(); },
    [](core::executor &self, job *j, std::size_t worker) noexcept {
      static_cast<inline_scheduler &>(self).resubmit(j, worker);
    },
    [](core::executor &self) noexcept { static_cast<inline_scheduler &>(self).unhold(); },
    [](core::executor const &) noexcept { return std::size_t{1}; },
    nullptr, // its one context never lends its chain to another thread
};

} // namespace magpie::sched
