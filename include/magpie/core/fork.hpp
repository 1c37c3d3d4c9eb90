#pragma once
// magpie/core/fork.hpp — fork, call and join: the three verbs of fully-strict fork–join.
//
//   co_await magpie::fork(&r, fn, args...);  // child runs now; our continuation may be stolen
//   co_await magpie::call(&r, fn, args...);  // child runs now; nothing to steal
//   co_await magpie::join();                 // wait for every child forked since the last join
//
// The return pointer is omitted for task<void> and to discard a value. Arguments are passed to
// `fn` as given; since children finish before their parent returns, references into the parent's
// frame are safe. A child's exception is rethrown by the parent's next join().

#include <coroutine>
#include <cstddef>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

#include "magpie/core/config.hpp"
#include "magpie/core/frame.hpp"
#include "magpie/core/task.hpp"

namespace magpie::core {

namespace detail {

/// Calls `fn(args...)` on this worker's stack and takes the new (suspended) task's promise.
/// Whether the parameters of the coroutine `Fn` are all trivially destructible: then its frame,
/// once finished, holds nothing that needs destroying (see frame_base::m_trivial_frame). False when
/// it cannot be told (overloaded or generic callables): the frame is then destroyed normally.
template <typename Fn>
struct trivial_parameters : std::false_type {};
template <typename R, typename... P>
struct trivial_parameters<R (*)(P...)>
    : std::bool_constant<(std::is_trivially_destructible_v<std::remove_cvref_t<P>> && ...)> {};
template <typename R, typename... P>
struct trivial_parameters<R (*)(P...) noexcept> : trivial_parameters<R (*)(P...)> {};
template <typename R, typename C, typename... P>
struct trivial_parameters<R (C::*)(P...) const> : trivial_parameters<R (*)(P...)> {};
template <typename R, typename C, typename... P>
struct trivial_parameters<R (C::*)(P...)> : trivial_parameters<R (*)(P...)> {};
template <typename R, typename C, typename... P>
struct trivial_parameters<R (C::*)(P...) const noexcept> : trivial_parameters<R (*)(P...)> {};
template <typename R, typename C, typename... P>
struct trivial_parameters<R (C::*)(P...) noexcept> : trivial_parameters<R (*)(P...)> {};
template <typename Fn>
consteval bool has_trivial_parameters() {
  using F = std::remove_cvref_t<Fn>;
  if constexpr (std::is_function_v<F>) {
    return trivial_parameters<F *>::value;
  } else if constexpr (std::is_pointer_v<F> || std::is_member_function_pointer_v<F>) {
    return trivial_parameters<F>::value;
  } else if constexpr (requires { &F::operator(); }) { // one non-template call operator
    return trivial_parameters<decltype(&F::operator())>::value;
  } else {
    return false;
  }
}

template <typename Fn, typename T>
inline constexpr bool trivial_frame_v =
    std::is_trivially_destructible_v<promise<T>> && has_trivial_parameters<Fn>();

/// `args` is a tuple of references, consumed (moved from) once.
template <typename Fn, typename Tuple>
auto *create_task(Fn &&fn, Tuple &&args) {
  auto fresh = std::apply(
      [&](auto &&...a) {
        return std::invoke(std::forward<Fn>(fn), std::forward<decltype(a)>(a)...);
      },
      std::forward<Tuple>(args));
  auto *p = task_access::take(fresh);
  using value_type = typename decltype(fresh)::value_type;
  p->m_trivial_frame = trivial_frame_v<Fn, value_type>;
  return p;
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

template <typename T>
using return_slot_t = std::conditional_t<std::is_void_v<T>, void, T>;

template <bool Fork, typename R, typename Fn, typename... Args>
struct [[nodiscard("co_await it")]] spawn_request {
  using magpie_awaitable = void;

  R *m_ret;
  Fn &&m_fn;
  std::tuple<Args &&...> m_args;

  auto magpie_bind(frame_base &parent) && {
    if constexpr (Fork) {
      parent.m_ctx->tasks().reserve_one(); // may throw: nothing has happened yet
      frame_base *child =
          make_child(parent, m_ret, std::forward<Fn>(m_fn), std::move(m_args), frame_kind::forked);
      parent.m_unjoined = true;
      return forked_child{&parent, child};
    } else {
      return called_child{
          make_child(parent, m_ret, std::forward<Fn>(m_fn), std::move(m_args), frame_kind::called)};
    }
  }

  // Reached only when awaited outside a magpie task (a magpie task binds the request first).
  template <typename Self = spawn_request>
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
    // acquire: pairs with each arriving child's release decrement; all have arrived if the
    // counter shows only our share left.
    if (f->m_joins.load(std::memory_order_acquire) == frame_base::join_init - f->m_steals) {
      f->m_ctx->adopt_stack(f->m_stack);
      f->m_stack = nullptr;
      return true;
    }
    return false;
  }

  MAGPIE_CORO_SUSPEND_NOINLINE std::coroutine_handle<>
  await_suspend(std::coroutine_handle<> self) const noexcept {
    frame_base *f = m_frame;
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
    // Point of no return: the last child resumes the task on its own worker. Touch nothing of
    // it. If we ran it as a self-stolen continuation (after a resume_on below it), older
    // continuations may still be in our deque: carry on with them before going idle.
    return continue_after_handoff(ctx);
  }

  void await_resume() const {
    frame_base *f = m_frame;
    if (f->m_steals != 0) {
      f->m_steals = 0;
      f->m_joins.store(frame_base::join_init, std::memory_order_relaxed); // sole owner now
      if (f->m_deferred != nullptr) [[unlikely]] {
        f->release_deferred(f->m_ctx->stack()); // our chain is back: see stack_alloc.hpp
      }
    }
    f->m_unjoined = false;
    if (f->has_exception()) [[unlikely]] {
      std::rethrow_exception(f->take_exception());
    }
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

/// Starts `fn(args...)` as a child that runs at once; the parent's continuation may be stolen.
/// Its value is written to `*ret` by the time the parent's next join() returns.
template <typename R, typename Fn, typename... Args>
  requires async_function<Fn, Args...>
auto fork(R *ret, Fn &&fn, Args &&...args) {
  static_assert(std::is_same_v<R, detail::value_of<Fn, Args...>>,
                "magpie::fork/call: the return pointer must point to the child's value type T "
                "(the child returns magpie::task<T>)");
  return detail::spawn_request<true, R, Fn, Args...>{
      ret, std::forward<Fn>(fn), {std::forward<Args>(args)...}};
}

/// fork without a return pointer: for task<void>, or to discard the child's value.
template <typename Fn, typename... Args>
  requires async_function<Fn, Args...>
auto fork(Fn &&fn, Args &&...args) {
  using slot = detail::return_slot_t<detail::value_of<Fn, Args...>>;
  return detail::spawn_request<true, std::conditional_t<std::is_void_v<slot>, char, slot>, Fn,
                               Args...>{
      nullptr, std::forward<Fn>(fn), {std::forward<Args>(args)...}};
}

/// Runs `fn(args...)` as a child now; the parent continues when it returns. Nothing is stealable.
template <typename R, typename Fn, typename... Args>
  requires async_function<Fn, Args...>
auto call(R *ret, Fn &&fn, Args &&...args) {
  static_assert(std::is_same_v<R, detail::value_of<Fn, Args...>>,
                "magpie::fork/call: the return pointer must point to the child's value type T "
                "(the child returns magpie::task<T>)");
  return detail::spawn_request<false, R, Fn, Args...>{
      ret, std::forward<Fn>(fn), {std::forward<Args>(args)...}};
}

/// call without a return pointer.
template <typename Fn, typename... Args>
  requires async_function<Fn, Args...>
auto call(Fn &&fn, Args &&...args) {
  using slot = detail::return_slot_t<detail::value_of<Fn, Args...>>;
  return detail::spawn_request<false, std::conditional_t<std::is_void_v<slot>, char, slot>, Fn,
                               Args...>{
      nullptr, std::forward<Fn>(fn), {std::forward<Args>(args)...}};
}

/// Waits for every child forked since the last join; rethrows the first exception among them.
inline detail::join_request join() noexcept { return {}; }

} // namespace magpie::core
