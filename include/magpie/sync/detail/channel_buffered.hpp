#pragma once
// magpie/sync/detail/channel_buffered.hpp — a channel of capacity > 0: sends and receives that do
// not wait use the lock-free ring (detail/channel_ring.hpp), spinning a little before they wait;
// those that wait register under the lock, and whoever makes room or publishes a value for them
// pumps.
//
// One of a channel's two modes, with the operations of detail/channel_rendezvous.hpp under the
// same names; sync/channel.hpp picks the mode. Protocol and proof sketch: docs/protocols.md
// §9.11 ("Waiting", "Spinning before waiting", "Close"); model docs/models/channel.pml.

#include <atomic>
#include <optional>

#include "magpie/core/config.hpp"
#include "magpie/core/frame.hpp"
#include "magpie/sync/channel_status.hpp"
#include "magpie/sync/detail/blocking.hpp"
#include "magpie/sync/detail/channel_spin.hpp"
#include "magpie/sync/detail/channel_state.hpp"
#include "magpie/sync/detail/channel_waiters.hpp"
#include "magpie/sync/detail/waiter.hpp"

namespace magpie::sync::detail {

/// The buffered mode of a channel's state (a view: copy it freely).
template <typename T>
class channel_buffered {
public:
  explicit channel_buffered(channel_state<T> &s) noexcept : m_state(&s) {}

  /// A send that never waits: into the ring if it has room (`sent`), else `full` or `closed`.
  send_status try_send(T &v) noexcept {
    send_status const status = m_state->m_ring.push(v);
    if (status == send_status::sent) {
      after_push();
    }
    return status;
  }
  /// A receive that never waits: true if `out` was filled from the ring.
  bool try_receive(std::optional<T> &out) noexcept {
    bool closed = false;
    if (m_state->m_ring.pop(out, closed)) {
      after_pop();
      return true;
    }
    return false;
  }

  /// The fast path of a send that may wait: sent, closed, or full. A task (`self`) spins first
  /// only where another worker could free room (adaptive_spin::may_spin); a plain thread (null)
  /// always does. Forced inline, as channel::send_now.
  MAGPIE_FORCEINLINE send_status send_now(T &v, core::frame_base *self) noexcept {
    send_status const status = send_fast(v);
    if (status == send_status::full && (self == nullptr || adaptive_spin::may_spin(*self))) {
      return send_spinning(v);
    }
    return status;
  }
  /// The fast path of a receive that may wait, as send_now: true if done (`out` filled, or
  /// closed and drained).
  MAGPIE_FORCEINLINE bool receive_now(std::optional<T> &out, core::frame_base *self) noexcept {
    return receive_fast(out) ||
           ((self == nullptr || adaptive_spin::may_spin(*self)) && receive_spinning(out));
  }

  /// The slow path of a send; takes the lock: sends now, or queues `w` (value slot &v, as `plan`
  /// says) and returns `full`; after that return `w` may be released at any moment. `full` with
  /// plan->out_of_memory set: not queued (its deadline could not be armed).
  send_status send_slow(T &v, waiter &w, queue_plan *plan) noexcept {
    channel_state<T> &s = *m_state;
    waiter_queue done; // served: released after the unlock
    s.m_lock.lock();
    send_status status = send_status::full;
    if (s.m_ring.is_closed_under_lock()) {
      status = send_status::closed;
    } else {
      // relaxed + fence: the Dekker of after_pop (protocols §9.11).
      s.m_waiting_senders.fetch_add(1, std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_seq_cst);
      // Behind earlier waiters, wait our turn: whoever freed room for them pumps (FIFO).
      if (s.m_senders.empty() && s.m_ring.push(v) == send_status::sent) {
        s.m_waiting_senders.fetch_sub(1, std::memory_order_relaxed);
        status = send_status::sent;
        if (s.m_waiting_receivers.load(std::memory_order_seq_cst) != 0) { // after_push's duty
          pump_with_lock_held(done);
        }
      } else if (!enqueue(s.m_senders, w, &v, plan)) {
        s.m_waiting_senders.fetch_sub(1, std::memory_order_relaxed); // not queued after all
      }
    }
    s.m_lock.unlock();
    release_all(done.take_all());
    return status;
  }

  /// The slow path of a receive; takes the lock: true if done (`out` filled, or closed and
  /// drained), else queues `w` (value slot &out, as `plan` says) and returns false; after that
  /// return `w` may be released at any moment. False with plan->out_of_memory set: not queued.
  bool receive_slow(std::optional<T> &out, waiter &w, queue_plan *plan) noexcept {
    channel_state<T> &s = *m_state;
    waiter_queue done; // served: released after the unlock
    s.m_lock.lock();
    bool finished = true;
    // relaxed + fence: the Dekker of after_push (protocols §9.11).
    s.m_waiting_receivers.fetch_add(1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    bool closed = false;
    if (!s.m_receivers.empty()) {
      // Behind earlier waiters (FIFO); they exist only while the channel is not closed and
      // drained (the pump releases them all then), so a value or close will reach us too.
      finished = false;
      if (!enqueue(s.m_receivers, w, &out, plan)) {
        s.m_waiting_receivers.fetch_sub(1, std::memory_order_relaxed); // not queued after all
      }
    } else if (s.m_ring.pop(out, closed)) {
      s.m_waiting_receivers.fetch_sub(1, std::memory_order_relaxed);
      if (s.m_waiting_senders.load(std::memory_order_seq_cst) != 0) { // after_pop's duty
        pump_with_lock_held(done);
      }
    } else if (closed) {
      s.m_waiting_receivers.fetch_sub(1, std::memory_order_relaxed);
    } else {
      finished = false;
      if (!enqueue(s.m_receivers, w, &out, plan)) {
        s.m_waiting_receivers.fetch_sub(1, std::memory_order_relaxed); // not queued after all
      }
    }
    s.m_lock.unlock();
    release_all(done.take_all());
    return finished;
  }

  /// A plain thread's send before it blocks: sent or closed now (after a spin: waiting would cost
  /// a kernel sleep), or `w` queued (`full`).
  send_status send_before_blocking(T &v, waiter &w) noexcept {
    send_status const status = send_now(v, nullptr);
    return status == send_status::full ? send_slow(v, w, nullptr) : status;
  }
  /// A plain thread's receive before it blocks: true if done, false if `w` was queued.
  bool receive_before_blocking(std::optional<T> &out, waiter &w) noexcept {
    return receive_now(out, nullptr) || receive_slow(out, w, nullptr);
  }

  /// The mode's part of a close, with the lock held (close() has set the closed bit and taken the
  /// senders): waiting receivers get what is buffered, then std::nullopt. The served waiters go
  /// to `done`.
  void close_receivers_with_lock_held(waiter_queue &done) noexcept { pump_with_lock_held(done); }

  /// A timed sender's deadline side took it out of the waiting senders (the lock held): it counts
  /// no more.
  void uncount_sender() noexcept {
    m_state->m_waiting_senders.fetch_sub(1, std::memory_order_relaxed); // under the lock
  }
  /// A timed receiver's deadline side took it out of the waiting receivers, as uncount_sender.
  void uncount_receiver() noexcept {
    m_state->m_waiting_receivers.fetch_sub(1, std::memory_order_relaxed); // under the lock
  }

private:
  /// The fast path of a send that may wait: `full` also when others already wait to send (it
  /// then queues behind them).
  send_status send_fast(T &v) noexcept {
    if (m_state->m_waiting_senders.load(std::memory_order_relaxed) != 0) { // a hint: fairness only
      return send_status::full;
    }
    return try_send(v);
  }

  /// The fast path of a receive that may wait: true if done (a value, or closed and drained).
  bool receive_fast(std::optional<T> &out) noexcept {
    if (m_state->m_waiting_receivers.load(std::memory_order_relaxed) != 0) { // as send_fast
      return false;
    }
    bool closed = false;
    if (m_state->m_ring.pop(out, closed)) {
      after_pop();
      return true;
    }
    return closed;
  }

  /// Called when a send found the ring full: spins on the send side's budget, retrying the fast
  /// path whenever the ring looks to have room. Returns the last attempt's status (`full` if none
  /// succeeded).
  send_status send_spinning(T &v) noexcept {
    send_status status = send_status::full;
    m_state->m_send_spin.spin([this] { return m_state->m_ring.room_hint(); },
                              [&] {
                                status = send_fast(v);
                                return status != send_status::full;
                              });
    return status;
  }

  /// Called when a receive found the ring empty: as send_spinning. True if done (a value, or
  /// closed and drained).
  bool receive_spinning(std::optional<T> &out) noexcept {
    return m_state->m_receive_spin.spin([this] { return m_state->m_ring.value_hint(); },
                                        [&] { return receive_fast(out); });
  }

  /// After a value went into the ring outside the pump: serves waiting receivers, if any.
  void after_push() noexcept {
    // seq_cst, after push's seq_cst claim: Dekker with a receiver's registration (its count, a
    // fence, then its own pop): either its pop sees our claim, or we see its count (§9.11). The
    // seq_cst CAS and load suffice; the fence is there because the channel is faster with it
    // under contention (`sync_bench --only channel1024`, bench/README.md, compares; the likely
    // reason, not measured: fewer transfers of the contended lines while it drains).
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (m_state->m_waiting_receivers.load(std::memory_order_seq_cst) != 0) {
      pump_taking_lock();
    }
  }

  /// After a value left the ring outside the pump: serves waiting senders, if any.
  void after_pop() noexcept {
    std::atomic_thread_fence(std::memory_order_seq_cst);                   // as after_push
    if (m_state->m_waiting_senders.load(std::memory_order_seq_cst) != 0) { // seq_cst: as after_push
      pump_taking_lock();
    }
  }

  /// Takes the lock, pumps (pump_with_lock_held), and releases the served waiters after the
  /// unlock.
  void pump_taking_lock() noexcept {
    waiter_queue done; // served: released after the unlock
    m_state->m_lock.lock();
    pump_with_lock_held(done);
    m_state->m_lock.unlock();
    release_all(done.take_all());
  }

  /// Requires the lock: moves values from the ring to waiting receivers and from waiting senders
  /// into the ring, oldest first, for as long as either is possible; once the channel is closed
  /// and empty, the remaining receivers get std::nullopt. The served waiters go to `done`.
  void pump_with_lock_held(waiter_queue &done) noexcept {
    channel_state<T> &s = *m_state;
    for (bool progress = true; progress;) {
      progress = false;
      while (waiter *r = s.m_receivers.front()) {
        bool closed = false;
        if (!s.m_ring.pop(*static_cast<std::optional<T> *>(data_of(*r)), closed)) {
          if (closed) { // closed and drained: nothing more will come
            push_released(done, s.m_receivers.take_all());
            s.m_waiting_receivers.store(0, std::memory_order_relaxed); // under the lock
          }
          break;
        }
        push_released(done, s.m_receivers.pop()); // given first, then settled (channel_waiters.hpp)
        s.m_waiting_receivers.fetch_sub(1, std::memory_order_relaxed); // under the lock
        progress = true;
      }
      while (waiter *w = s.m_senders.front()) {
        // Not `closed`: close() empties this queue under the lock, and nobody joins it after.
        void *&value = data_of(*w);
        if (s.m_ring.push(*static_cast<T *>(value)) != send_status::sent) {
          break;
        }
        value = nullptr; // sent
        push_released(done, s.m_senders.pop());
        s.m_waiting_senders.fetch_sub(1, std::memory_order_relaxed); // under the lock
        progress = true;
      }
    }
  }

  channel_state<T> *m_state;
};

} // namespace magpie::sync::detail
