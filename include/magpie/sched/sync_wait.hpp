#pragma once
// magpie/sched/sync_wait.hpp — the way into magpie from ordinary code.
//
//   magpie::lazy_pool pool;
//   long r = magpie::sync_wait(pool, fib, 40);
//
// Blocks the calling thread until the root task completes and returns its value, or rethrows its
// exception. On a pool the calling thread runs the root itself, as a guest of the pool
// (pool::run_root_here): idle workers steal its continuations, and it runs nothing but its own
// root's strand. If the root waits (for stolen children, or on a primitive) the caller waits for
// a worker to finish it: it polls before it sleeps, for 4 to 100 µs adapted to how long its recent
// waits took (core/detail/thread_wait.hpp). When all guest slots are taken, or an observer
// watches the pool, the root goes to a worker and the caller waits the same way. Any number of
// threads may call sync_wait on one scheduler at once. Calling it from a worker of the same
// scheduler (or from inside a root it runs) would deadlock a one-worker pool, so it throws
// std::logic_error.

#include <atomic>
#include <concepts>
#include <cstdint>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>

#include "magpie/core/detail/thread_wait.hpp"
#include "magpie/core/ext.hpp"
#include "magpie/core/fork.hpp"
#include "magpie/core/frame.hpp"
#include "magpie/core/scope.hpp"
#include "magpie/core/task.hpp"
#include "magpie/sched/detail/pool_access.hpp"
#include "magpie/sched/job.hpp"

namespace magpie::sched {

/// What sync_wait needs of a scheduler: take a root job, account for its end, and recognise its
/// own worker threads. A scheduler provides submit_root(job *) and finish_root() as public
/// members, or privately to detail::pool_access (as sched::pool does), and may provide
/// run_root_here(job *) (see sync_wait).
template <typename S>
concept scheduler = requires(S &s, job *j, S const &cs) {
  detail::pool_access::submit_root(s, j);
  detail::pool_access::finish_root(s);
  { cs.is_worker_thread() } -> std::convertible_to<bool>;
};

namespace detail {

template <typename T>
struct value_slot {
  T value{};
  T *target() noexcept { return &value; }
  T take() { return std::move(value); }
};
template <>
struct value_slot<void> {
  void take() const noexcept {}
};

/// A root task's job and its anchor, living in sync_wait's frame on the caller's thread.
template <typename Fn, typename... Args>
struct root_job final : job, core::root_block {
  using value_type = core::async_result_t<Fn, Args...>;

  root_job(Fn &&fn, Args &&...args)
      : m_fn(std::forward<Fn>(fn)), m_args(std::forward<Args>(args)...) {
    m_run = &start;
    m_on_complete = &complete;
  }

  static void start(job *j, core::context &ctx) {
    auto *self = static_cast<root_job *>(j);
    core::detail::promise<value_type> *child = nullptr;
    try {
      child = core::detail::create_task(std::forward<Fn>(self->m_fn), std::move(self->m_args));
    } catch (...) { // an argument's copy or the stack's growth threw: the caller gets it
      self->store_exception(std::current_exception());
      complete(self);
      return;
    }
    if constexpr (std::is_void_v<value_type>) {
      core::ext::start_root(child, self, ctx, static_cast<void *>(nullptr));
    } else {
      core::ext::start_root(child, self, ctx, self->m_value.target());
    }
  }

  static void complete(core::root_block *b) noexcept {
    auto *self = static_cast<root_job *>(b);
    // The last touch of the job: once `done` is in, the waiter may return and free it.
    core::detail::set_done(self->m_word, self);
  }

  void wait() { core::detail::wait_for_done(m_word, this); }

  value_type result() {
    if (has_exception()) {
      std::rethrow_exception(take_exception());
    }
    return m_value.take();
  }

  Fn &&m_fn;
  std::tuple<Args &&...> m_args;
  value_slot<value_type> m_value;
  std::atomic<std::uintptr_t> m_word{core::detail::word_pending};
};

} // namespace detail

/// Runs `fn(args...)` as a root task on `s` and waits for it. Rethrows the task's exception.
template <scheduler S, typename Fn, typename... Args>
  requires core::async_function<Fn, Args...>
core::async_result_t<Fn, Args...> sync_wait(S &s, Fn &&fn, Args &&...args) {
  using value_type = core::async_result_t<Fn, Args...>;
  static_assert(std::is_void_v<value_type> || std::default_initializable<value_type>,
                "magpie::sync_wait: the root task's value type must be default-constructible");
  if (s.is_worker_thread()) {
    throw std::logic_error("magpie::sync_wait called from a worker of the same scheduler: it would "
                           "wait for itself; inside a task use co_await magpie::call(...) instead");
  }
  detail::root_job<Fn, Args...> root(std::forward<Fn>(fn), std::forward<Args>(args)...);
  // Called from an algorithm's iteration: the root and its descendants are inside that
  // algorithm's cancellation scope (which outlives this call).
  core::ext::set_scope(root, core::detail::thread_scope());
  // A pool lets the caller run the root itself when it can (pool::run_root_here): no hand-off,
  // no wake-up, and the waiting thread works instead of polling beside the workers.
  if constexpr (requires { detail::pool_access::run_root_here(s, &root); }) {
    if (!detail::pool_access::run_root_here(s, &root)) { // may throw pool_closed
      detail::pool_access::submit_root(s, &root);
    }
  } else {
    detail::pool_access::submit_root(s, &root); // may throw (e.g. pool_closed)
  }
  root.wait();
  detail::pool_access::finish_root(s);
  return root.result();
}

} // namespace magpie::sched
