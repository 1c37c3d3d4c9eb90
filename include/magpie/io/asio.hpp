#pragma once
// magpie/io/asio.hpp — co_await any Asio asynchronous operation from a magpie task.
//
//   asio::ip::tcp::socket sock(io);                 // io: an asio::io_context some thread runs
//   std::size_t n = co_await sock.async_read_some(asio::buffer(buf), magpie::use_task);
//   co_await timer.async_wait(magpie::use_task);
//   auto endpoints = co_await resolver.async_resolve("localhost", "80", magpie::use_task);
//
// `magpie::use_task` is an Asio completion token. The operation is started when the task
// co_awaits it (not before), the task is suspended away from its worker meanwhile, and the
// completion handler — run by whatever thread runs the I/O object's executor — resumes the task
// on its own pool (any worker). The co_await returns the handler's arguments after a leading
// error_code or exception_ptr: nothing (void), one value, or a std::tuple of several; a non-zero
// error_code is thrown as asio::system_error, an exception_ptr rethrown. Wrap the token in
// asio::experimental::as_tuple(magpie::use_task) to get the error code as a value instead.
//
// If the operation's handler is destroyed without being called (its io_context destroyed with
// the operation pending), the co_await throws magpie::abandoned_wait. As every wait, co_await
// inside a fork–join scope throws std::logic_error. The cost: the suspension (hold, park, one
// resubmission) plus Asio's own handler allocation. Optional part: needs standalone Asio
// (Debian's libasio-dev) and the CMake target magpie::asio.

#include <exception>
#include <optional>
#include <system_error>
#include <tuple>
#include <type_traits>
#include <utility>

#include <asio/async_result.hpp>
#include <asio/error_code.hpp>
#include <asio/system_error.hpp>

#include "magpie/core/frame.hpp"
#include "magpie/sync/suspend.hpp"

namespace magpie::io {

/// The completion token type: see the top of this file.
struct use_task_t {
  constexpr use_task_t() noexcept = default;
};

/// The completion token that makes an Asio operation awaitable in a magpie task.
inline constexpr use_task_t use_task{};

namespace detail {

/// How a completion's arguments become the co_await's value.
template <typename... Args>
struct asio_result {
  using storage = std::tuple<std::decay_t<Args>...>;
  static constexpr bool leading_error =
      sizeof...(Args) > 0 &&
      (std::is_same_v<std::decay_t<std::tuple_element_t<0, std::tuple<Args..., void>>>,
                      std::error_code> ||
       std::is_same_v<std::decay_t<std::tuple_element_t<0, std::tuple<Args..., void>>>,
                      std::exception_ptr>);

  template <std::size_t... I>
  static auto values(storage &&s, std::index_sequence<I...>) {
    constexpr std::size_t skip = leading_error ? 1 : 0;
    if constexpr (sizeof...(I) == 0) {
      return;
    } else if constexpr (sizeof...(I) == 1) {
      return std::move(std::get<(skip + I)...>(s));
    } else {
      return std::tuple<std::tuple_element_t<skip + I, storage>...>(
          std::move(std::get<skip + I>(s))...);
    }
  }

  static auto take(storage &&s) {
    if constexpr (leading_error) {
      auto &first = std::get<0>(s);
      if constexpr (std::is_same_v<std::decay_t<decltype(first)>, std::error_code>) {
        if (first) {
          throw asio::system_error(first);
        }
      } else if (first != nullptr) {
        std::rethrow_exception(first);
      }
    }
    return values(std::move(s),
                  std::make_index_sequence<sizeof...(Args) - (leading_error ? 1 : 0)>());
  }
};

/// The handler given to Asio: stores the arguments and resumes the task.
template <typename... Args>
struct asio_handler {
  std::optional<typename asio_result<Args...>::storage> *m_slot;
  sync::resume_handle m_handle;

  template <typename... A>
  void operator()(A &&...args) {
    m_slot->emplace(std::forward<A>(args)...);
    m_handle.resume(); // the task runs again on its pool; we touch nothing after
  }
};

/// What suspend() runs once the task is parked: starts the operation.
template <typename Initiation, typename InitArgs, typename... Args>
struct asio_launch {
  Initiation m_init;
  InitArgs m_args;
  std::optional<typename asio_result<Args...>::storage> *m_slot = nullptr;

  void operator()(sync::resume_handle h) {
    std::apply(
        [&](auto &...a) {
          std::move(m_init)(asio_handler<Args...>{m_slot, std::move(h)}, std::move(a)...);
        },
        m_args);
  }
};

/// The awaitable, in the task's frame: the result slot and the suspension.
template <typename Initiation, typename InitArgs, typename... Args>
struct asio_awaitable {
  using launch = asio_launch<Initiation, InitArgs, Args...>;
  std::optional<typename asio_result<Args...>::storage> m_result;
  sync::suspend_awaitable<launch> m_inner;

  asio_awaitable(sync::suspend_request<launch> &&req, core::frame_base &self)
      : m_inner(std::move(req).magpie_bind(self)) {}

  bool await_ready() const noexcept { return false; }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> h) noexcept {
    m_inner.m_fn.m_slot = &m_result; // our address is final now
    return m_inner.await_suspend(h);
  }
  auto await_resume() {
    m_inner.await_resume(); // abandoned_wait, or what the initiation threw
    return asio_result<Args...>::take(std::move(*m_result));
  }
};

/// What an Asio operation with use_task returns: co_await it in a task.
template <typename Initiation, typename InitArgs, typename... Args>
struct [[nodiscard("co_await it: the operation starts then")]] asio_request {
  using magpie_awaitable = void;
  asio_launch<Initiation, InitArgs, Args...> m_launch;

  asio_awaitable<Initiation, InitArgs, Args...> magpie_bind(core::frame_base &self) && {
    return {sync::suspend(std::move(m_launch)), self};
  }
};

} // namespace detail
} // namespace magpie::io

namespace magpie {
using io::use_task;
} // namespace magpie

/// \cond ASIO_HOOK
// Asio's hook: an operation given magpie::use_task returns a request to co_await. Left out of
// the reference (it lives in Asio's namespace); magpie::io::use_task documents the behaviour.
template <typename R, typename... Args>
struct asio::async_result<magpie::io::use_task_t, R(Args...)> {
  template <typename Initiation, typename... InitArgs>
  static auto initiate(Initiation &&init, magpie::io::use_task_t, InitArgs &&...args) {
    using init_t = std::decay_t<Initiation>;
    using args_t = std::tuple<std::decay_t<InitArgs>...>;
    return magpie::io::detail::asio_request<init_t, args_t, Args...>{
        {std::forward<Initiation>(init), args_t(std::forward<InitArgs>(args)...)}};
  }
};
/// \endcond
