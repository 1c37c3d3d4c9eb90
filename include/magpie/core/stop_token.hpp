#pragma once
// magpie/core/stop_token.hpp — the stop token of cancellation scopes and parallel algorithms:
// std::stop_token and std::stop_source wherever the standard library has them, and a minimal
// stand-in where it does not (libc++ 16 ships no <stop_token>).

#include <version>

#if defined(__cpp_lib_jthread)
#  include <stop_token>
#else
#  include <atomic>
#  include <memory>
#endif

namespace magpie::core {

#if defined(__cpp_lib_jthread) || defined(MAGPIE_DOXYGEN)

/// The token of a cancellation scope (core/scope.hpp) and of loop_options: std::stop_token where
/// the standard library provides it (libstdc++ 10+, libc++ 18+). On a library without
/// `<stop_token>` (libc++ 16) it is a stand-in with the same names for what the algorithms use —
/// `stop_requested()`, `stop_possible()`, and magpie::stop_source's `get_token()`,
/// `request_stop()`, `stop_requested()` — but no `stop_callback`. Write `magpie::stop_source` to
/// compile on both.
using stop_token = std::stop_token;
/// The source of a stop_token: std::stop_source, or the stand-in (see stop_token).
using stop_source = std::stop_source;

#else

namespace detail {
/// The state a stand-in source shares with its tokens.
struct stop_state {
  std::atomic<bool> stopped{false};
};
} // namespace detail

class stop_source;

/// Stand-in for std::stop_token (this standard library has none): see the other definition.
class stop_token {
public:
  stop_token() noexcept = default;
  /// Whether the source has been asked to stop (acquire: pairs with request_stop()).
  [[nodiscard]] bool stop_requested() const noexcept {
    return m_state != nullptr && m_state->stopped.load(std::memory_order_acquire);
  }
  /// Whether a stop can ever be requested (false for a default-made token).
  [[nodiscard]] bool stop_possible() const noexcept { return m_state != nullptr; }
  friend bool operator==(stop_token const &, stop_token const &) noexcept = default;

private:
  friend class stop_source;
  explicit stop_token(std::shared_ptr<detail::stop_state> state) noexcept
      : m_state(std::move(state)) {}
  std::shared_ptr<detail::stop_state> m_state;
};

/// Stand-in for std::stop_source (this standard library has none).
class stop_source {
public:
  stop_source() : m_state(std::make_shared<detail::stop_state>()) {}
  /// A token that sees this source's stop request.
  [[nodiscard]] stop_token get_token() const noexcept { return stop_token(m_state); }
  /// Requests a stop; true for the call that made it (release: pairs with stop_requested()).
  bool request_stop() noexcept {
    return m_state != nullptr && !m_state->stopped.exchange(true, std::memory_order_acq_rel);
  }
  /// Whether a stop has been requested.
  [[nodiscard]] bool stop_requested() const noexcept { return get_token().stop_requested(); }
  /// Whether a stop can be requested (always, for a source made by the default constructor).
  [[nodiscard]] bool stop_possible() const noexcept { return m_state != nullptr; }

private:
  std::shared_ptr<detail::stop_state> m_state;
};

#endif

} // namespace magpie::core
