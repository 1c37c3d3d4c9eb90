#pragma once
// magpie/core/scope.hpp — cancellation scopes: a stop token that every descendant task sees.
//
//   co_await magpie::with_stop(source.get_token(), &r, search, root);  // a fork–join scope
//   ...
//   bool const stopped = co_await magpie::this_task::stop_requested(); // in any descendant
//   if (stopped) co_return;
//
// A scope is a stop_scope object: a stop token, an internal stop flag, and the scope that was
// innermost where it was opened (its outer scope). A stop of any scope on the chain stops
// everything inside it. Scopes are opened by with_stop (a called child in its own scope), by the
// parallel algorithms (their loop options' token, and their internal stops), by a task_group made
// with a token, and by sync_wait called from inside an algorithm's iteration (the root inherits
// the iteration's scope).
//
// How a task finds its scope, at no cost to fork and call: every chain of frames ends in an
// anchor — the root_block of the computation (sync_wait, spawn, a task group's child) or the
// anchor with_stop puts between a task and its child — whose m_parent is null and which carries a
// stop_scope pointer (null: no scope). A task walks m_parent from its own frame to the anchor:
// O(depth of the chain since the innermost anchor) loads, done only when it asks. The walk reads
// only links that were written before the asking task started (m_parent, the anchor's m_scope)
// and that no one changes while it runs: a frame's ancestors outlive it (fully strict), so the
// walk is race-free on any worker (docs/protocols.md, "Cancellation scopes").

#include <atomic>
#include <coroutine>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

#include "magpie/core/config.hpp"
#include "magpie/core/fork.hpp"
#include "magpie/core/frame.hpp"
#include "magpie/core/stop_token.hpp"
#include "magpie/core/task.hpp"

namespace magpie::core {

/// A cancellation scope: a stop token, an internal stop flag, and the enclosing scope. Stopped
/// when its flag is set, its token has been asked to stop, or an enclosing scope is stopped.
/// Thread-safe: any thread may ask or request at any time. Not copyable (tasks refer to it).
class stop_scope {
public:
  /// A scope that stops when `token` is asked to stop, or when `outer` (null: none) stops, or
  /// when request_stop() is called. `outer` must outlive this scope.
  explicit stop_scope(stop_token token = {}, stop_scope const *outer = nullptr) noexcept
      : m_token(std::move(token)), m_outer(outer) {}
  stop_scope(stop_scope const &) = delete;
  stop_scope &operator=(stop_scope const &) = delete;

  /// Whether this scope or an enclosing one has been stopped. Cost: two loads per scope on the
  /// chain (a relaxed flag, the token's acquire). Once true, stays true.
  [[nodiscard]] bool stop_requested() const noexcept {
    for (stop_scope const *s = this; s != nullptr; s = s->m_outer) {
      // relaxed: a hint to end work early; results travel through joins, not through the flag.
      if (s->m_stopped.load(std::memory_order_relaxed) || s->m_token.stop_requested()) {
        return true;
      }
    }
    return false;
  }

  /// Stops this scope (and, through it, every scope opened inside it), not its outer ones.
  /// Idempotent, any thread.
  void request_stop() noexcept {
    m_stopped.store(true, std::memory_order_relaxed); // no edge: see stop_requested()
  }

  /// The scope that was innermost where this one was opened (null: none).
  [[nodiscard]] stop_scope const *outer() const noexcept { return m_outer; }

  /// This scope's own token (not its outer scopes').
  [[nodiscard]] stop_token const &token() const noexcept { return m_token; }

private:
  stop_token m_token;
  std::atomic<bool> m_stopped{false};
  stop_scope const *m_outer;
};

namespace detail {

/// The innermost scope of the task whose frame is `f` (null: none): the scope of the anchor at
/// the end of its chain. See the top of this file for why the walk is race-free.
inline stop_scope const *scope_of(frame_base const &f) noexcept {
  frame_base const *p = &f;
  while (p->m_parent != nullptr) {
    p = p->m_parent;
  }
  return static_cast<root_block const *>(p)->m_scope; // a chain always ends in a root_block
}

inline thread_local stop_scope const *tls_scope = nullptr;

/// The scope of the algorithm iteration running on this thread (null: none). Out of line and
/// opaque, like this_context(): Clang may otherwise cache a thread_local's address across a
/// suspension, or merge two calls.
MAGPIE_NOINLINE inline stop_scope const *thread_scope() noexcept {
  return opaque_address(tls_scope);
}

/// Installs `s` as this thread's scope; returns the previous one.
MAGPIE_NOINLINE inline stop_scope const *set_thread_scope(stop_scope const *s) noexcept {
  stop_scope const *old = tls_scope;
  tls_scope = s;
  return old;
}

/// An answer the awaiting task gets at once (never suspends): the bound form of the questions
/// below.
template <typename T>
struct ready_answer {
  T m_value;
  bool await_ready() const noexcept { return true; }
  void await_suspend(std::coroutine_handle<>) const noexcept {}
  T await_resume() const noexcept { return m_value; }
};

/// A question about the awaiting task's scope: `Tag::answer(scope)` once bound to the task's frame.
/// Outside a magpie task, a static_assert that says so.
template <typename Tag>
struct [[nodiscard("co_await it")]] scope_question {
  using magpie_awaitable = void;
  auto magpie_bind(frame_base &self) const noexcept {
    return ready_answer<decltype(Tag::answer(nullptr))>{Tag::answer(scope_of(self))};
  }

  // Reached only when awaited outside a magpie task (a magpie task binds the request first).
  template <typename Self = scope_question>
  void operator co_await() const {
    static_assert(sizeof(Self) == 0, "this magpie question (magpie::this_task::stop_requested, "
                                     "magpie::core::enclosing_scope) can only be co_awaited "
                                     "inside a magpie::task coroutine; in an algorithm's "
                                     "iteration call magpie::stop_requested()");
  }
};

/// enclosing_scope(): the scope itself.
struct scope_tag {
  static stop_scope const *answer(stop_scope const *s) noexcept { return s; }
};
/// this_task::stop_requested(): whether it is stopped.
struct stopped_tag {
  static bool answer(stop_scope const *s) noexcept { return s != nullptr && s->stop_requested(); }
};

/// The awaitable of with_stop once bound: the anchor between the awaiting task and its child,
/// and the scope the anchor carries. Lives in the awaiting task's frame (guaranteed elision of the
/// prvalue magpie_bind returns), so the child may point at it.
class scoped_child {
public:
  template <typename R, typename Fn, typename Tuple>
  scoped_child(frame_base &parent, stop_token token, R *ret, Fn &&fn, Tuple &&args)
      : m_scope(std::move(token), scope_of(parent)), m_parent(&parent) {
    m_anchor.m_handle = parent.m_handle; // the child's return resumes the awaiting task
    m_anchor.m_ctx = parent.m_ctx;
    m_anchor.m_scope = &m_scope;
    m_anchor.m_caller = &parent;
    m_child = make_child(m_anchor, ret, std::forward<Fn>(fn), std::forward<Tuple>(args),
                         frame_kind::called);
  }
  scoped_child(scoped_child const &) = delete;
  scoped_child &operator=(scoped_child const &) = delete;

  bool await_ready() const noexcept { return false; }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<>) const noexcept {
    return m_child->m_handle;
  }
  void await_resume() noexcept {
    // The child's return went through the anchor (transfer_to_parent, frame_kind::called): the
    // worker it finished on is the anchor's now, and ours.
    m_parent->m_ctx = m_anchor.m_ctx;
    if (m_anchor.has_exception()) {
      m_parent->store_exception(m_anchor.take_exception()); // rethrown by our next join, as call
    }
  }

private:
  stop_scope m_scope;
  root_block m_anchor;
  frame_base *m_parent;
  frame_base *m_child = nullptr;
};

template <typename R, typename Fn, typename... Args>
struct [[nodiscard("co_await it")]] with_stop_request {
  using magpie_awaitable = void;

  stop_token m_token;
  R *m_ret;
  Fn &&m_fn;
  std::tuple<Args &&...> m_args;

  scoped_child magpie_bind(frame_base &parent) && {
    return scoped_child(parent, std::move(m_token), m_ret, std::forward<Fn>(m_fn),
                        std::move(m_args));
  }

  // Reached only when awaited outside a magpie task (a magpie task binds the request first).
  template <typename Self = with_stop_request>
  void operator co_await() const {
    static_assert(sizeof(Self) == 0,
                  "magpie::with_stop can only be co_awaited inside a magpie::task coroutine");
  }
};

} // namespace detail

/// Inside a task: `co_await core::enclosing_scope()` is the innermost cancellation scope around
/// the task (null: none). For libraries that open scopes of their own (the parallel algorithms).
inline detail::scope_question<detail::scope_tag> enclosing_scope() noexcept { return {}; }

/// `co_await magpie::with_stop(token, &r, fn, args...)` — as `co_await magpie::call(&r, fn,
/// args...)`, with the child and every task it starts (forked, called, and the algorithms it
/// runs) inside a new cancellation scope that stops when `token` is asked to stop or an enclosing
/// scope stops. `co_await magpie::with_stop(token, fn, args...)` discards the value (or is for
/// task<void>). A stop does not end any task by itself: tasks see it through
/// `co_await magpie::this_task::stop_requested()` (algorithms skip the iterations they have not
/// started) and return early as they see fit. As with call, the child's exception is rethrown by
/// the awaiting task's next join(), and arguments are passed as call passes them (temporaries
/// live until the child returns). Cost: an anchor (~100 bytes) in the awaiting task's frame; fork
/// and call inside the scope cost nothing more.
template <typename First, typename... Rest>
auto with_stop(stop_token token, First &&first, Rest &&...rest) {
  if constexpr (detail::is_return_form<First, Rest...>()) {
    return [&]<typename R, typename Fn, typename... Args>(R *ret, Fn &&fn, Args &&...args) {
      static_assert(std::is_same_v<R, detail::value_of<Fn, Args...>>,
                    "magpie::with_stop: the return pointer must point to the child's value type "
                    "T (the child returns magpie::task<T>)");
      return detail::with_stop_request<R, Fn, Args...>{
          std::move(token), ret, std::forward<Fn>(fn), {std::forward<Args>(args)...}};
    }(first, std::forward<Rest>(rest)...);
  } else if constexpr (async_function<First, Rest...>) {
    using R = detail::discarded_result_t<detail::value_of<First, Rest...>>;
    return detail::with_stop_request<R, First, Rest...>{std::move(token),
                                                        static_cast<R *>(nullptr),
                                                        std::forward<First>(first),
                                                        {std::forward<Rest>(rest)...}};
  } else if constexpr (detail::has_return_pointer<First, Rest...>()) {
    return detail::diagnose_not_async<Rest...>();
  } else {
    return detail::diagnose_not_async<First, Rest...>();
  }
}

/// Questions a running task asks about itself.
namespace this_task {

/// Inside a task: `co_await magpie::this_task::stop_requested()` is true when a cancellation scope
/// around the task — with_stop, an algorithm, a task_group with a token, and their enclosing
/// scopes — has been stopped. Never suspends. Cost: a walk up the task's chain of frames to its
/// innermost anchor (one load per frame) plus two loads per scope; poll it at a granularity where
/// that is small (once per node of a search, not per instruction). Once true, stays true.
///
/// With GCC 12.2, bind the answer to a variable (`bool const stopped = co_await ...;`) rather
/// than writing the co_await in an if-condition: GCC 12.2 miscompiles a coroutine whose body has
/// `if (co_await x)` outside a loop (the body does not run; measured, any awaitable; Clang is not
/// affected). docs/guarantees.md lists it.
inline detail::scope_question<detail::stopped_tag> stop_requested() noexcept { return {}; }

} // namespace this_task

} // namespace magpie::core
