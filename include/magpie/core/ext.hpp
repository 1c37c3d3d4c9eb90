#pragma once
// magpie/core/ext.hpp — the extension interface: what a scheduler or a waiting primitive may do
// with tasks, without touching a frame's fields.
//
// Three kinds of code sit on top of core and need more than fork/call/join:
//   - schedulers (sched/pool, sched/inline_scheduler) start root tasks and resume stolen
//     continuations;
//   - explicit scheduling (resume_on) and every waiting primitive (sync/: futures, mutexes,
//     channels, timers) suspend a task at an arbitrary point and resume it later, from any thread;
//   - both hand work to a worker from outside: a `job` given to the worker's `executor`.
// They use only the names in `magpie::core::ext`. The protocol behind them (who owns a suspended
// task's stacklet chain, and when) is docs/protocols.md §3 ("stack hand-off") and §8
// ("Suspension").

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <limits>

#include "magpie/core/config.hpp"
#include "magpie/core/context.hpp"
#include "magpie/core/detail/transfer.hpp"
#include "magpie/core/frame.hpp"

namespace magpie::core::ext {

/// "Any worker will do" for executor::submit.
inline constexpr std::size_t any_worker = std::numeric_limits<std::size_t>::max();

/// An opaque reference to a task suspended away from any worker: it owns its stacklet chain until
/// it is resumed. Obtained from `park`; consumed by `resume`. Trivially copyable; the owner of
/// the handle (the primitive that parked the task) must resume it exactly once.
class task_handle {
public:
  task_handle() noexcept = default;
  /// True if this handle refers to a task.
  explicit operator bool() const noexcept { return m_frame != nullptr; }
  /// The executor of the worker on which the task was suspended: where it is normally resumed.
  executor *home() const noexcept { return m_home; }

private:
  friend task_handle park(frame_base &self) noexcept;
  friend void resume(task_handle t, context &worker) noexcept;
  friend std::coroutine_handle<> resume_here(task_handle t, context &worker) noexcept;
  task_handle(frame_base *f, executor *home) noexcept : m_frame(f), m_home(home) {}

  frame_base *m_frame = nullptr;
  executor *m_home = nullptr;
};

/// Diagnostics' view of suspensions (trace::track_parked keeps its list of parked tasks with
/// it): `parked` is called by park() before the task is published, `resumed` by resume() and
/// resume_here() before the task runs again, both on the calling worker's thread. They must not
/// throw, park or resume tasks. While none is installed, park and resume pay one load and a
/// branch; fork, call and join never look at them.
struct park_hooks {
  void (*parked)(frame_base const &task, executor *home) noexcept; ///< `home`: the task's executor
  void (*resumed)(frame_base const &task) noexcept;                ///< the task is about to run
};

/// The installed hooks, or null (internal: use set_park_hooks). The table must outlive every
/// park and resume that may load it (a static one: trace::track_parked's).
inline std::atomic<park_hooks const *> installed_park_hooks{nullptr};

/// Installs `h` (null: none); returns the previous table. Calls in progress may still use the
/// previous table, which must therefore stay alive (static storage).
inline park_hooks const *set_park_hooks(park_hooks const *h) noexcept {
  return installed_park_hooks.exchange(h, std::memory_order_acq_rel); // pairs with the loads below
}

/// Inside an awaitable's await_suspend: detaches the awaiting task `self` from its worker. The
/// task takes the worker's current chain (its frame and its callers' frames live on it); the
/// worker continues on a spare chain or a fresh small one. After this call, publish the handle
/// (to a queue, a primitive's waiter list …) and return `continue_after(worker)` from
/// await_suspend. Once the handle is published, another thread may resume the task: touch
/// neither the task's frame nor the awaitable (which lives in that frame) after publishing.
/// Precondition: the task has no unjoined children (checked by the callers in sched/ and sync/).
inline task_handle park(frame_base &self) noexcept {
  context *const ctx = self.m_ctx;
  ctx->bump(counter::parks);
  ctx->observe(event::park);
  // acquire: pairs with set_park_hooks (the hooks' state is visible before we call them)
  if (park_hooks const *h = installed_park_hooks.load(std::memory_order_acquire)) [[unlikely]] {
    h->parked(self, ctx->home());
  }
  self.m_stack = ctx->release_stack(/*parked=*/true);
  return {&self, ctx->home()};
}

/// What a worker does after parking a task: carry on with the oldest continuation left in its
/// deque (the parked task's parent or an ancestor, which it now runs as a thief would), or with
/// nothing (the worker returns to its scheduler loop). Return it from await_suspend.
inline std::coroutine_handle<> continue_after(context &worker) noexcept {
  return detail::continue_after_handoff(&worker);
}

inline std::coroutine_handle<> resume_here(task_handle t, context &worker) noexcept;

/// Resumes a parked task on `worker`, on the calling thread, which must be the thread running
/// `worker` with an empty stack (a scheduler's loop between jobs). Returns when the strand that
/// began with the task has ended: the task finished, or suspended again.
inline void resume(task_handle t, context &worker) noexcept {
  frame_base *f = t.m_frame;
  MAGPIE_ASSERT(f != nullptr, "internal: resumed an empty task_handle");
  worker.observe(event::resume);
  // acquire: pairs with set_park_hooks (the hooks' state is visible before we call them)
  if (park_hooks const *h = installed_park_hooks.load(std::memory_order_acquire)) [[unlikely]] {
    h->resumed(*f);
  }
  worker.adopt_stack(f->m_stack);
  f->m_stack = nullptr;
  f->m_ctx = &worker;
  f->m_handle.resume();
}

/// Inside the await_suspend that parked `t` on `worker` (whose stack is still the empty one that
/// `park` left it): takes the task back onto `worker` without a trip through the executor, and
/// returns its coroutine for await_suspend to transfer to. For a resumption that arrives before
/// the suspending code has finished.
inline std::coroutine_handle<> resume_here(task_handle t, context &worker) noexcept {
  frame_base *f = t.m_frame;
  worker.observe(event::resume);
  // acquire: pairs with set_park_hooks (the hooks' state is visible before we call them)
  if (park_hooks const *h = installed_park_hooks.load(std::memory_order_acquire)) [[unlikely]] {
    h->resumed(*f);
  }
  worker.adopt_stack(f->m_stack);
  f->m_stack = nullptr;
  f->m_ctx = &worker;
  return f->m_handle;
}

/// Resumes a continuation that `worker` has just stolen from another worker's deque (the steal's
/// acquire made its state ours). The calling thread must be running `worker`, whose stack is
/// empty. Returns when the strand has ended.
inline void resume_stolen(frame_base *continuation, context &worker) noexcept {
  ++continuation->m_steals; // we are its runner now; its join counts this steal
  continuation->m_ctx = &worker;
  continuation->m_handle.resume();
}

/// Starts `root`, a task just created on `worker`'s stack (by `create_task`), as the root of a
/// computation anchored in `anchor`: its exception lands in `anchor`, and `anchor->m_on_complete`
/// is called on the worker that finishes it. `value` receives its result (null to discard).
template <typename Promise, typename T>
void start_root(Promise *root, root_block *anchor, context &worker, T *value) noexcept {
  root->m_parent = anchor;
  root->m_ctx = &worker;
  root->m_kind = frame_kind::root;
  if constexpr (requires { root->m_return = value; }) {
    root->m_return = value;
  }
  worker.bump(counter::roots);
  worker.observe(event::root);
  root->m_handle.resume();
}

/// Gives every task below `anchor` the cancellation scope `scope` (core/scope.hpp; null: none).
/// Before the root starts; `scope` must outlive the computation.
inline void set_scope(root_block &anchor, stop_scope const *scope) noexcept {
  anchor.m_scope = scope;
}

/// True if `self` has forked children it has not joined yet. A task may only be suspended away
/// (resume_on, waiting primitives) outside such a scope.
inline bool in_fork_join_scope(frame_base const &self) noexcept { return self.m_unjoined; }

/// The worker currently running `self`.
inline context &worker_of(frame_base const &self) noexcept { return *self.m_ctx; }

} // namespace magpie::core::ext
