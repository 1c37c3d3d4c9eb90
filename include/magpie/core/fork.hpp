#pragma once
// magpie/core/fork.hpp — fork, call and join: the three verbs of fully-strict fork–join.
//
//   co_await magpie::fork(&r, fn, args...);  // child runs now; our continuation may be stolen
//   co_await magpie::call(&r, fn, args...);  // child runs now; nothing to steal
//   co_await magpie::join();                 // wait for every child forked since the last join
//
// The return pointer is omitted for task<void> and to discard a value. Arguments are passed to
// `fn` as given. Children finish before their parent's join returns, so a child's reference
// parameters may refer to the parent's locals (lvalues that outlive the join); a forked child's
// reference parameter bound to a temporary is rejected at compile time (detail/signature.hpp).
// A child's exception is rethrown by the parent's next join().

#include <coroutine>
#include <cstddef>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

#include "magpie/core/config.hpp"
#include "magpie/core/detail/signature.hpp"
#include "magpie/core/frame.hpp"
#include "magpie/core/task.hpp"

namespace magpie::core {

namespace detail {

/// Calls `fn(args...)` on this worker's stack and takes the new (suspended) task's promise.
/// `args` is a tuple of references, consumed (moved from) once.
template <typename Fn, typename Tuple>
auto *create_task(Fn &&fn, Tuple &&args) {
  auto fresh = std::apply(
      [&](auto &&...a) {
        return std::invoke(std::forward<Fn>(fn), std::forward<decltype(a)>(a)...);
      },
      std::forward<Tuple>(args));
  return task_access::take(fresh);
}

/// Creates the child of `parent` and links it to its parent.
template <typename R, typename Fn, typename Tuple>
auto *make_child(frame_base &parent, R *ret, Fn &&fn, Tuple &&args, frame_kind kind) {
  auto *child = create_task(std::forward<Fn>(fn), std::forward<Tuple>(args));
  child->m_parent = &parent;
  child->m_ctx = parent.m_ctx;
  child->m_kind = kind;
  if constexpr (requires { child->m_return = ret; }) {
    child->m_return = ret;
  }
  // The child starts right after this (the caller's await_suspend transfers to it).
  parent.m_ctx->observe_task(kind == frame_kind::forked ? event::fork : event::call);
  return child;
}

/// The awaitable of fork once bound to its parent: pushes the parent, then runs the child.
struct forked_child {
  frame_base *m_parent;
  frame_base *m_child;

  bool await_ready() const noexcept { return false; }
  MAGPIE_CORO_SUSPEND_NOINLINE std::coroutine_handle<>
  await_suspend(std::coroutine_handle<>) const noexcept {
    std::coroutine_handle<> child = m_child->m_handle;
    m_parent->m_ctx->tasks().push_reserved(m_parent);
    // Point of no return: a thief may now resume the parent; only `child` is ours.
    return child;
  }
  void await_resume() const noexcept {}
};

/// The awaitable of call once bound: runs the child; the parent resumes when it returns.
struct called_child {
  frame_base *m_child;

  bool await_ready() const noexcept { return false; }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<>) const noexcept {
    return m_child->m_handle;
  }
  void await_resume() const noexcept {}
};

/// Where a child's result goes when the caller passes no return pointer (the result is
/// discarded): a slot of the child's value type T, or a placeholder char for task<void> (a
/// request always names a slot type).
template <typename T>
using discarded_result_t = std::conditional_t<std::is_void_v<T>, char, T>;

/// Stops the program: a fork or call request was destroyed without having been co_awaited.
[[noreturn]] MAGPIE_NOINLINE inline void request_not_awaited(bool fork) noexcept {
  assertion_failed("co_await magpie::fork(...) / magpie::call(...)",
                   fork ? "magpie::fork(...) does nothing unless co_awaited: the child never ran. "
                          "Write `co_await magpie::fork(...);`"
                        : "magpie::call(...) does nothing unless co_awaited: the child never ran. "
                          "Write `co_await magpie::call(...);`",
                   __FILE__, __LINE__);
}

/// A request's record of having been co_awaited; its destructor stops the program if not
/// (MAGPIE_CHECK_AWAITED). Where the check is off it is empty and trivially destructible, so the
/// request is exactly what it was without it.
template <bool Fork, bool Checked = MAGPIE_CHECK_AWAITED>
struct await_check {
  bool m_bound = false;
  void bound() noexcept { m_bound = true; }
  await_check() = default;
  await_check(await_check const &) = delete;
  await_check &operator=(await_check const &) = delete;
  ~await_check() {
    if (!m_bound) [[unlikely]] {
      request_not_awaited(Fork);
    }
  }
};

template <bool Fork>
struct await_check<Fork, false> {
  void bound() noexcept {}
};

/// What fork(...) and call(...) return: the child to start, bound to the awaiting task by
/// co_await. Destroyed without having been co_awaited, it stops the program with a message
/// (MAGPIE_CHECK_AWAITED: the child would otherwise silently never run).
template <bool Fork, typename R, typename Fn, typename... Args>
struct [[nodiscard("the child runs only when the request is co_awaited")]] child_request {
  using magpie_awaitable = void;

  R *m_ret;
  Fn &&m_fn;
  std::tuple<Args &&...> m_args;
  [[no_unique_address]] await_check<Fork> m_check;

  auto magpie_bind(frame_base &parent) && {
    m_check.bound();
    if constexpr (Fork) {
      // Read the request (which GCC keeps in the coroutine frame) before the reservation, whose
      // slow path is a call: the compiler then sees the callee and calls it directly.
      R *const ret = m_ret;
      Fn &&fn = std::forward<Fn>(m_fn);
      std::tuple<Args &&...> args = std::move(m_args);
      parent.m_ctx->tasks().reserve_one(); // may throw: nothing has happened yet
      frame_base *child =
          make_child(parent, ret, std::forward<Fn>(fn), std::move(args), frame_kind::forked);
      parent.m_unjoined = true;
      return forked_child{&parent, child};
    } else {
      return called_child{
          make_child(parent, m_ret, std::forward<Fn>(m_fn), std::move(m_args), frame_kind::called)};
    }
  }

  // Reached only when awaited outside a magpie task (a magpie task binds the request first).
  template <typename Self = child_request>
  void operator co_await() const {
    static_assert(sizeof(Self) == 0,
                  "magpie::fork/call can only be co_awaited inside a magpie::task coroutine");
  }
};

template <typename Fn, typename... Args>
using value_of = async_result_t<Fn, Args...>;

/// The join awaitable, bound to its task.
struct join_awaitable {
  frame_base *m_frame;

  bool await_ready() const noexcept {
    frame_base *f = m_frame;
    if (f->m_steals == 0) [[likely]] {
      return true; // nothing was stolen: every child already ran on this worker
    }
    return all_arrived(f);
  }

  /// Out of line, as are the other rare paths below: inlined into every task's coroutine they
  /// cost GCC registers (saved and restored at each resumption) on the hot path.
  MAGPIE_NOINLINE static bool all_arrived(frame_base *f) noexcept {
    // acquire: pairs with each arriving child's release decrement; all have arrived if the
    // counter shows only our share left.
    if (f->m_joins.load(std::memory_order_acquire) == frame_base::join_init - f->m_steals) {
      f->m_ctx->adopt_stack(f->m_stack);
      f->m_stack = nullptr;
      return true;
    }
    return false;
  }

  std::coroutine_handle<> await_suspend(std::coroutine_handle<> self) const noexcept {
    return suspend_at_join(m_frame, self);
  }

  /// The join's slow path (children were stolen and some may still run), out of line. Being an
  /// opaque call, it also keeps the point of no return away from the coroutine's own code, as
  /// MAGPIE_CORO_SUSPEND_NOINLINE would (config.hpp).
  MAGPIE_NOINLINE static std::coroutine_handle<>
  suspend_at_join(frame_base *f, std::coroutine_handle<> self) noexcept {
    context *ctx = f->m_ctx;
    std::uint32_t const share = frame_base::join_init - f->m_steals;
    MAGPIE_ASSERT(ctx->stack().empty(), "internal: a stolen task joined with frames on its stack");
    // acq_rel: release publishes the task's state to the child that arrives last and resumes
    // it; acquire, if we are last, makes every child's results visible.
    if (f->m_joins.fetch_sub(share, std::memory_order_acq_rel) == share) {
      ctx->adopt_stack(f->m_stack);
      f->m_stack = nullptr;
      return self; // everyone had arrived: continue at once
    }
    // ctx is the worker, not part of f: still ours after the point of no return above.
    ctx->bump(counter::join_suspends);
    ctx->observe(event::join_suspend);
    // Point of no return: the last child resumes the task on its own worker. Touch nothing of
    // it. If we ran it as a self-stolen continuation (after a resume_on below it), older
    // continuations may still be in our deque: carry on with them before going idle.
    return continue_after_handoff(ctx);
  }

  void await_resume() const {
    frame_base *f = m_frame;
    f->m_ctx->observe_task(event::join); // nothing unless MAGPIE_OBSERVE_TASKS (work/span)
    if (f->m_steals != 0) [[unlikely]] {
      reset_after_steals(f);
    }
    f->m_unjoined = false;
    if (f->has_exception()) [[unlikely]] {
      rethrow_child_exception(f);
    }
  }

  MAGPIE_NOINLINE static void reset_after_steals(frame_base *f) noexcept {
    f->m_steals = 0;
    f->m_joins.store(frame_base::join_init, std::memory_order_relaxed); // sole owner now
    if (f->m_deferred != nullptr) [[unlikely]] {
      f->release_deferred(f->m_ctx->stack()); // our chain is back: see stack_alloc.hpp
    }
  }

  [[noreturn]] MAGPIE_NOINLINE static void rethrow_child_exception(frame_base *f) {
    std::rethrow_exception(f->take_exception());
  }
};

struct [[nodiscard("co_await it")]] join_request {
  using magpie_awaitable = void;
  join_awaitable magpie_bind(frame_base &self) const noexcept { return {&self}; }

  template <typename Self = join_request>
  void operator co_await() const {
    static_assert(sizeof(Self) == 0,
                  "magpie::join can only be co_awaited inside a magpie::task coroutine");
  }
};

} // namespace detail

namespace detail {

template <typename T>
inline constexpr bool dependent_false_v = false;

/// Whether the first argument of fork/call is meant as the return pointer: an object pointer
/// followed by a callable (a function pointer is the callable itself).
template <typename First, typename... Rest>
consteval bool has_return_pointer() {
  using P = std::remove_cvref_t<First>;
  return sizeof...(Rest) != 0 && std::is_pointer_v<P> &&
         !std::is_function_v<std::remove_pointer_t<P>>;
}

/// `fork(ret, fn, args...)` rather than `fork(fn, args...)`: a return pointer, then an async call.
template <typename First, typename... Rest>
consteval bool is_return_form() {
  if constexpr (!has_return_pointer<First, Rest...>()) {
    return false;
  } else {
    return []<typename Fn, typename... Args>(type_list<Fn, Args...>) {
      return async_function<Fn, Args...>;
    }(type_list<Rest...>{});
  }
}

/// What a rejected fork/call returns after its static_assert: awaitable, so that the error above
/// is the only one reported.
struct rejected_request {
  using magpie_awaitable = void;
  std::suspend_never magpie_bind(frame_base &) const noexcept { return {}; }
};

/// Why `fn(args...)` is not an async call, as a compile-time error that says what to do.
template <typename Fn, typename... Args>
rejected_request diagnose_not_async() {
  if constexpr (!std::invocable<Fn, Args...> &&
                std::invocable<Fn, std::remove_cvref_t<Args> &&...>) {
    static_assert(dependent_false_v<Fn>,
                  "magpie::fork/call: an argument cannot be copied into the child's by-value "
                  "parameter (a move-only object passed as an lvalue): pass std::move(x)");
  } else if constexpr (!std::invocable<Fn, Args...>) {
    static_assert(dependent_false_v<Fn>,
                  "magpie::fork/call: fn cannot be called with these arguments: check their number "
                  "and types against fn's parameters");
  } else {
    static_assert(dependent_false_v<Fn>,
                  "magpie::fork/call: fn must return magpie::task<T>: fork and call start async "
                  "functions (coroutines returning magpie::task<T>); call a plain function "
                  "directly");
  }
  return {};
}

/// The compile-time half of fork's contract: no argument of a forked child may refer to a
/// temporary of the parent's full-expression (see detail/signature.hpp).
template <typename Fn, typename... Args>
consteval bool check_fork_lifetimes() {
  constexpr fork_args_verdict v = check_fork_args<Fn, Args...>();
  // reference_to_temp: reported where it is found (detail/signature.hpp), naming the parameter.
  static_assert(
      v != fork_args_verdict::temporary_callable,
      "magpie::fork: a lambda with captures (or a function object with state) passed as a "
      "temporary: its captures die when the parent's continuation is stolen while the "
      "child runs. Name it (a local that outlives the join) and pass the lvalue, or "
      "pass the captured values as by-value parameters");
  static_assert(v != fork_args_verdict::temporary_object,
                "magpie::fork: the object of a member-function child is a temporary, which dies "
                "when the parent's continuation is stolen while the child runs. Pass an lvalue "
                "(or a pointer) that outlives the join");
  static_assert(v != fork_args_verdict::default_reference,
                "magpie::fork: the child has a defaulted reference parameter; its default argument "
                "is a temporary that dies before the child runs. Pass the argument explicitly, as "
                "an lvalue that outlives the join");
  static_assert(v != fork_args_verdict::unknown_with_rvalues,
                "magpie::fork: the child's parameter types cannot be seen (an overloaded or "
                "constrained template call operator), so magpie cannot check that no reference "
                "parameter binds to a temporary. Pass lvalues that outlive the join, or fork a "
                "callable with explicit parameter types");
  return true; // the assertions above have reported any problem, each with its own message
}

template <bool Fork, typename First, typename... Rest>
auto make_request(First &&first, Rest &&...rest) {
  if constexpr (is_return_form<First, Rest...>()) {
    return []<typename R, typename Fn, typename... Args>(R *ret, Fn &&fn, Args &&...args) {
      static_assert(std::is_same_v<R, value_of<Fn, Args...>>,
                    "magpie::fork/call: the return pointer must point to the child's value type T "
                    "(the child returns magpie::task<T>)");
      if constexpr (Fork) {
        static_assert(check_fork_lifetimes<Fn, Args...>());
      }
      return child_request<Fork, R, Fn, Args...>{
          ret, std::forward<Fn>(fn), {std::forward<Args>(args)...}, {}};
    }(first, std::forward<Rest>(rest)...);
  } else if constexpr (async_function<First, Rest...>) {
    if constexpr (Fork) {
      static_assert(check_fork_lifetimes<First, Rest...>());
    }
    return child_request<Fork, discarded_result_t<value_of<First, Rest...>>, First, Rest...>{
        nullptr, std::forward<First>(first), {std::forward<Rest>(rest)...}, {}};
  } else if constexpr (has_return_pointer<First, Rest...>()) {
    return diagnose_not_async<Rest...>(); // fork(&r, fn, args...) with a bad fn(args...)
  } else {
    return diagnose_not_async<First, Rest...>();
  }
}

} // namespace detail

/// Starts `fn(args...)` as a child that runs at once; the parent's continuation may be stolen.
///
///   co_await magpie::fork(&r, fn, args...);  // r = the child's value, by the next join()
///   co_await magpie::fork(fn, args...);      // for task<void>, or to discard the value
///
/// `fn` is an async function (returns magpie::task<T>); `r` must be a `T*`. Arguments are passed
/// to `fn` as given. Because the parent may move on (on another worker) while the child runs, a
/// reference parameter of the child must bind to an lvalue that outlives the join: binding one to
/// a temporary, passing a lambda with captures as a temporary, or a member function's object as
/// a temporary does not compile (see detail/signature.hpp). By-value parameters take anything.
template <typename First, typename... Rest>
auto fork(First &&first, Rest &&...rest) {
  return detail::make_request<true>(std::forward<First>(first), std::forward<Rest>(rest)...);
}

/// Runs `fn(args...)` as a child now; the parent continues when it returns. Nothing is stealable,
/// so temporaries in the arguments live long enough. Forms as for fork.
template <typename First, typename... Rest>
auto call(First &&first, Rest &&...rest) {
  return detail::make_request<false>(std::forward<First>(first), std::forward<Rest>(rest)...);
}

/// Waits for every child forked since the last join; rethrows the first exception among them.
inline detail::join_request join() noexcept { return {}; }

} // namespace magpie::core
