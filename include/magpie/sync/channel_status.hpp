#pragma once
// magpie/sync/channel_status.hpp — what a channel's sends and receives that may not wait (or may
// wait only until a deadline) report: send_status, receive_status and receive_result.

#include <optional>
#include <utility>

namespace magpie::sync {

/// The outcome of channel::try_send and of a timed send (send_for, send_until and their
/// blocking forms).
enum class send_status : unsigned char {
  sent,   ///< the value is in the channel (or with a receiver); it was moved from
  full,   ///< the channel is full (no receiver waits), or stayed so until the deadline; the value
          ///< was not touched
  closed, ///< the channel is closed; the value was not touched
};

/// How a timed receive (receive_for, receive_until and their blocking forms) ended.
enum class receive_status : unsigned char {
  received, ///< a value was received
  empty,    ///< the channel stayed empty until the deadline
  closed,   ///< the channel is closed and drained: no value will come
};

/// What a timed receive returns: the value (engaged exactly when `status` is `received`) and how
/// the receive ended. `auto [value, status] = co_await ch.receive_for(5ms);`
template <typename T>
struct receive_result {
  std::optional<T> value; ///< the value received, if any
  receive_status status;  ///< received, empty (the deadline came first) or closed

  /// True if a value was received.
  explicit operator bool() const noexcept { return status == receive_status::received; }
};

} // namespace magpie::sync
