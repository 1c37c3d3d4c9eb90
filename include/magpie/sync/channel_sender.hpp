#pragma once
// magpie/sync/channel_sender.hpp — a handle that counts as one of a channel's senders: the
// channel closes when the last handle goes, so N producers need no counting of their own.
//
//   magpie::channel<int> results(16);
//   {
//     magpie::channel_sender<int> tx(results);   // one sender, held while the producers start
//     for (int i = 0; i < n; ++i) g.spawn(produce, tx);   // each producer holds a copy
//   }                                            // then only the producers' copies remain
//   while (auto v = co_await results.receive()) { ... }   // ends when the last producer ends

#include <cstddef>
#include <utility>

#include "magpie/sync/channel.hpp"

namespace magpie::sync {

/// One of a channel's senders. Copying a handle makes another sender; moving one hands the place
/// over (the moved-from handle counts no more). When the last handle of a channel is destroyed
/// or reset — however its task ends, also by an exception — the channel is closed: receivers
/// take what is buffered, then get std::nullopt. Every value a sender sent before its handle
/// went is received (or, if the channel is destroyed first, destroyed with it).
///
/// Handles are passed by value to the tasks that send (spawn and fork copy their arguments
/// into the task); hold one of your own while you hand out copies, and reset it after, or the
/// channel may close when the first producer finishes before the second has its copy. A handle
/// made from a closed channel counts, but its sends fail. The channel must outlive its handles.
/// The counting costs one atomic read-modify-write per copy and per destruction. Handles may be
/// copied, moved and destroyed concurrently with each other and with every channel operation,
/// but one handle is not shared by threads without synchronisation (like std::shared_ptr).
template <typename T>
class channel_sender {
public:
  /// A sender of `ch`.
  explicit channel_sender(channel<T> &ch) noexcept : m_channel(&ch) { join(); }
  /// Another sender of the same channel (none if `other` is empty).
  channel_sender(channel_sender const &other) noexcept : m_channel(other.m_channel) { join(); }
  /// Takes `other`'s place; `other` is left empty.
  channel_sender(channel_sender &&other) noexcept
      : m_channel(std::exchange(other.m_channel, nullptr)) {}
  /// Takes `other`'s place (a copy or a move of it, by the argument's kind) and leaves its own:
  /// closes the old channel if this was its last sender.
  channel_sender &operator=(channel_sender other) noexcept {
    std::swap(m_channel, other.m_channel);
    return *this; // `other`, holding our old place, leaves it now
  }
  /// Leaves the channel's senders; closes the channel if this was the last one.
  ~channel_sender() { reset(); }

  /// Leaves the channel's senders now (closing it if this was the last); the handle is then
  /// empty. Does nothing on an empty handle.
  void reset() noexcept {
    channel<T> *ch = std::exchange(m_channel, nullptr);
    // acq_rel: the release publishes this sender's sends to the last one out, which acquires
    // every other sender's release (a release sequence of RMWs), so its close comes after all of
    // their sends: none is refused for a close it did not cause.
    if (ch != nullptr && ch->m_senders_alive.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      ch->close();
    }
  }

  /// False once moved from or reset.
  explicit operator bool() const noexcept { return m_channel != nullptr; }
  /// The channel (for its other members: try_send, send_for, is_closed, ...). Precondition: not
  /// empty.
  channel<T> &get() const noexcept { return *m_channel; }
  /// `co_await tx.send(v)`: channel::send. Precondition: not empty.
  auto send(T value) noexcept { return m_channel->send(std::move(value)); }
  /// For plain threads: channel::send_blocking. Precondition: not empty.
  bool send_blocking(T value) { return m_channel->send_blocking(std::move(value)); }

private:
  void join() noexcept {
    if (m_channel != nullptr) {
      // relaxed: joining orders nothing; only the leaving (reset) publishes and acquires.
      m_channel->m_senders_alive.fetch_add(1, std::memory_order_relaxed);
    }
  }

  channel<T> *m_channel;
};

} // namespace magpie::sync
