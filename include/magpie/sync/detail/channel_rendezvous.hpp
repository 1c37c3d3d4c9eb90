#pragma once
// magpie/sync/detail/channel_rendezvous.hpp — a channel of capacity 0: every send and receive
// works under the channel's lock, handing a value straight from a sender to a receiver.
//
// One of a channel's two modes, with the operations of detail/channel_buffered.hpp under the same
// names; sync/channel.hpp picks the mode. Protocol and proof sketch: docs/protocols.md §9.11,
// "Rendezvous (capacity 0)".

#include <optional>
#include <utility>

#include "magpie/core/frame.hpp"
#include "magpie/sync/channel_status.hpp"
#include "magpie/sync/detail/blocking.hpp"
#include "magpie/sync/detail/channel_state.hpp"
#include "magpie/sync/detail/channel_waiters.hpp"
#include "magpie/sync/detail/waiter.hpp"

namespace magpie::sync::detail {

/// The rendezvous mode of a channel's state (a view: copy it freely). It does not spin (nothing
/// is buffered to wait for) and keeps no count of waiters (no fast path reads one).
template <typename T>
class channel_rendezvous {
public:
  explicit channel_rendezvous(channel_state<T> &s) noexcept : m_state(&s) {}

  /// A send that never waits: to a waiting receiver, or `full`.
  send_status try_send(T &v) noexcept { return send_taking_lock(v, nullptr, nullptr); }
  /// A receive that never waits: true if done (`out` filled from a waiting sender, or closed).
  bool try_receive(std::optional<T> &out) noexcept {
    return receive_taking_lock(out, nullptr, nullptr);
  }

  /// The fast path of a send that may wait: as try_send (`self` does not matter).
  send_status send_now(T &v, core::frame_base * /*self*/) noexcept { return try_send(v); }
  /// The fast path of a receive that may wait: as try_receive.
  bool receive_now(std::optional<T> &out, core::frame_base * /*self*/) noexcept {
    return try_receive(out);
  }

  /// The slow path of a send that may wait: sent or closed now, or `w` queued (`full`; not queued
  /// if plan->out_of_memory). Once `w` is queued it may be released at any moment.
  send_status send_slow(T &v, waiter &w, queue_plan *plan) noexcept {
    return send_taking_lock(v, &w, plan);
  }
  /// The slow path of a receive that may wait: true if done, false if `w` was queued (or, with
  /// plan->out_of_memory, not).
  bool receive_slow(std::optional<T> &out, waiter &w, queue_plan *plan) noexcept {
    return receive_taking_lock(out, &w, plan);
  }

  /// A plain thread's send before it blocks: sent or closed now, or `w` queued (`full`).
  send_status send_before_blocking(T &v, waiter &w) noexcept { return send_slow(v, w, nullptr); }
  /// A plain thread's receive before it blocks: true if done, false if `w` was queued.
  bool receive_before_blocking(std::optional<T> &out, waiter &w) noexcept {
    return receive_slow(out, w, nullptr);
  }

  /// The mode's part of a close, with the lock held (close() has set the closed bit and taken the
  /// senders): every waiting receiver gets std::nullopt (its slot stays empty). The served
  /// waiters go to `done`.
  void close_receivers_with_lock_held(waiter_queue &done) noexcept {
    push_released(done, m_state->m_receivers.take_all());
    m_state->m_waiting_receivers.store(0, std::memory_order_relaxed);
  }

  /// A timed sender's deadline side took it out of the waiting senders: nothing to count.
  void uncount_sender() noexcept {}
  /// A timed receiver's deadline side took it out of the waiting receivers: nothing to count.
  void uncount_receiver() noexcept {}

private:
  /// Takes the lock: gives `v` to a waiting receiver, or, if `w` is given, queues `w` with value
  /// slot &v as `plan` says (result `full`; not queued if plan->out_of_memory). Releases the
  /// served receiver after the unlock.
  send_status send_taking_lock(T &v, waiter *w, queue_plan *plan) noexcept {
    channel_state<T> &s = *m_state;
    s.m_lock.lock();
    if (s.m_ring.is_closed_under_lock()) {
      s.m_lock.unlock();
      return send_status::closed;
    }
    if (waiter *r = s.m_receivers.front()) {
      static_cast<std::optional<T> *>(data_of(*r))->emplace(std::move(v));
      r = s.m_receivers.pop(); // given first, then settled: null if its deadline claimed it
      s.m_lock.unlock();
      release_all(r); // after the unlock; touches only the waiter
      return send_status::sent;
    }
    if (w != nullptr) {
      (void)enqueue(s.m_senders, *w, &v, plan);
    }
    s.m_lock.unlock();
    return send_status::full;
  }

  /// Takes the lock: a waiting sender's value into `out`, or nothing. If nothing and not closed,
  /// queues `w` (if given) with value slot &out as `plan` says. Returns whether the receive is
  /// complete (`out` empty: closed). Releases the served sender after the unlock.
  bool receive_taking_lock(std::optional<T> &out, waiter *w, queue_plan *plan) noexcept {
    channel_state<T> &s = *m_state;
    s.m_lock.lock();
    waiter *sender = s.m_senders.front();
    if (sender != nullptr) {
      void *&value = data_of(*sender);
      out.emplace(std::move(*static_cast<T *>(value)));
      value = nullptr;            // sent
      sender = s.m_senders.pop(); // given first, then settled: null if its deadline claimed it
    } else if (!s.m_ring.is_closed_under_lock()) {
      if (w != nullptr) {
        (void)enqueue(s.m_receivers, *w, &out, plan);
      }
      s.m_lock.unlock();
      return false;
    }
    s.m_lock.unlock();
    release_all(sender); // after the unlock; touches only the waiter
    return true;
  }

  channel_state<T> *m_state;
};

} // namespace magpie::sync::detail
