#pragma once
// magpie/core/task.hpp — task<T>, the return type of every magpie async function, and its promise.
//
//   magpie::task<long> fib(int n) {
//     if (n < 2) co_return n;
//     long a, b;
//     co_await magpie::fork(&a, fib, n - 1);
//     co_await magpie::call(&b, fib, n - 2);
//     co_await magpie::join();
//     co_return a + b;
//   }
//
// A task's frame is allocated on the current worker's segmented stack when the function is
// called, and the task starts suspended. Only fork, call and the schedulers' root entry points
// (sync_wait) call async functions; calling one directly is a misuse caught at run time.

#include <concepts>
#include <coroutine>
#include <exception>
#include <type_traits>
#include <utility>

#include "magpie/core/config.hpp"
#include "magpie/core/context.hpp"
#include "magpie/core/detail/transfer.hpp"
#include "magpie/core/frame.hpp"

namespace magpie::core {

template <typename T = void>
class task;

namespace detail {

struct task_access;

/// Types that a magpie task may co_await: the library's own awaitables and those of extensions,
/// which declare `using magpie_awaitable = void;` and honour the stack protocol (a task that
/// suspends hands its stack to whoever resumes it; see docs/protocols.md).
template <typename A>
concept magpie_awaitable = requires { typename std::remove_cvref_t<A>::magpie_awaitable; };

inline stack &allocating_stack() noexcept {
  context *ctx = this_context();
  MAGPIE_CHECK(ctx != nullptr,
               "a magpie task was called outside a worker: start it with magpie::sync_wait, or "
               "from a task with co_await magpie::fork / magpie::call");
  return ctx->stack();
}

/// What every promise has: frame allocation on the worker's stack, suspension points, and
/// exception capture.
struct promise_common : frame_base {
  promise_common() noexcept : frame_base(links_set_by_starter{}) {}

  static void *operator new(std::size_t bytes) { return allocating_stack().allocate(bytes); }
  static void operator delete(void *ptr, std::size_t bytes) noexcept {
    stack &s = allocating_stack();
    MAGPIE_ASSERT(s.is_top(ptr, bytes), "internal: a task frame was freed out of FILO order");
    (void)bytes;
    s.deallocate(ptr);
  }

  std::suspend_always initial_suspend() const noexcept { return {}; }

  struct final_awaiter {
    bool await_ready() const noexcept { return false; }
    template <typename P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> self) const noexcept {
      return final_transfer(&self.promise());
    }
    void await_resume() const noexcept {}
  };
  final_awaiter final_suspend() const noexcept { return {}; }

  void unhandled_exception() noexcept {
    // The scope is abandoned by the exception: children still outstanding are waited for in
    // final suspend, and our exception wins over theirs (exactly one reaches the parent).
    m_unjoined = false;
    m_parent->store_exception(std::current_exception());
  }

  /// magpie awaitables may bind to the awaiting task first (fork creates its child here, before
  /// the suspension, so that any exception is thrown in the parent's body).
  template <magpie_awaitable A>
  decltype(auto) await_transform(A &&a) {
    if constexpr (requires { std::forward<A>(a).magpie_bind(static_cast<frame_base &>(*this)); }) {
      return std::forward<A>(a).magpie_bind(static_cast<frame_base &>(*this));
    } else {
      return std::forward<A>(a);
    }
  }

  template <typename A>
    requires(!magpie_awaitable<A>)
  void await_transform(A &&) = delete; // a magpie task can only co_await magpie's awaitables
};

/// Whether a coroutine whose parameter copies are seen (by the promise's constructor) as lvalues
/// of types `P...` leaves nothing to destroy in its frame once its body has finished. A reference
/// parameter is seen as its referent's type, so it counts as non-trivial when the referent is:
/// conservative (only the cheap release path is lost), never wrong.
template <typename Promise, typename... P>
inline constexpr bool trivial_frame_v =
    std::is_trivially_destructible_v<Promise> &&
    (std::is_trivially_destructible_v<std::remove_cvref_t<P>> && ...);

template <typename T>
struct promise : promise_common {
  /// Sees the coroutine's own parameters (C++20 [dcl.fct.def.coroutine]), whatever the callable
  /// that fork/call/sync_wait was handed (an adapter returning another coroutine's task included),
  /// and decides from them whether the frame may be released without running its destroy path.
  template <typename... P>
  explicit promise(P &&...) noexcept {
    m_trivial_frame = trivial_frame_v<promise, P...>;
  }

  task<T> get_return_object() noexcept;

  template <typename U>
    requires std::is_assignable_v<T &, U &&>
  void return_value(U &&value) noexcept(std::is_nothrow_assignable_v<T &, U &&>) {
    if (m_return != nullptr) {
      *m_return = std::forward<U>(value);
    }
  }

  /// Where the value goes, or null to discard it. Set by whoever starts the task (make_child,
  /// ext::start_root), like the links of frame_base.
  T *m_return;
};

template <>
struct promise<void> : promise_common {
  template <typename... P>
  explicit promise(P &&...) noexcept { // as promise<T>'s
    m_trivial_frame = trivial_frame_v<promise, P...>;
  }

  task<void> get_return_object() noexcept;
  void return_void() const noexcept {}
};

} // namespace detail

/// The return type of an async function returning `T`. It is not a value the user keeps: pass the
/// function (not its result) to fork, call or sync_wait.
template <typename T>
class [[nodiscard(
    "pass async functions to magpie::fork/call/sync_wait; do not call them directly")]] task {
public:
  using value_type = T;                    ///< the type the async function co_returns
  using promise_type = detail::promise<T>; ///< the coroutine promise (internal)

  task(task const &) = delete;
  task &operator=(task const &) = delete;

  ~task() {
    // Always on: destroying the unstarted frame here would free it out of FILO order, below
    // frames allocated after it (it costs nothing: the library takes the handle before this runs).
    MAGPIE_CHECK(!m_handle, "a magpie::task was created but never started: do not call async "
                            "functions directly; pass them to magpie::fork/call/sync_wait");
  }

private:
  friend struct detail::promise<T>;
  friend struct detail::task_access;

  explicit task(std::coroutine_handle<promise_type> h) noexcept : m_handle(h) {}

  std::coroutine_handle<promise_type> m_handle;
};

namespace detail {

template <typename T>
task<T> promise<T>::get_return_object() noexcept {
  m_handle = std::coroutine_handle<promise<T>>::from_promise(*this);
  return task<T>(std::coroutine_handle<promise<T>>::from_promise(*this));
}

inline task<void> promise<void>::get_return_object() noexcept {
  m_handle = std::coroutine_handle<promise<void>>::from_promise(*this);
  return task<void>(std::coroutine_handle<promise<void>>::from_promise(*this));
}

/// The library's way in: takes the frame out of a freshly created task.
struct task_access {
  template <typename T>
  static promise<T> *take(task<T> &t) noexcept {
    promise<T> *p = &t.m_handle.promise();
    t.m_handle = nullptr;
    return p;
  }
};

template <typename>
inline constexpr bool is_task_v = false;
template <typename T>
inline constexpr bool is_task_v<task<T>> = true;

} // namespace detail

/// An async function: invocable with `Args` and returning some task<T>.
template <typename Fn, typename... Args>
concept async_function =
    std::invocable<Fn, Args...> && detail::is_task_v<std::invoke_result_t<Fn, Args...>>;

/// The value type of the task that `Fn(Args...)` returns.
template <typename Fn, typename... Args>
  requires async_function<Fn, Args...>
using async_result_t = typename std::invoke_result_t<Fn, Args...>::value_type;

} // namespace magpie::core
