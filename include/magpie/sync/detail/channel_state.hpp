#pragma once
// magpie/sync/detail/channel_state.hpp — what a channel's two modes share: the ring (whose tail
// carries the closed bit), the lock, the queues of waiting senders and receivers, and how a slow
// path queues its waiter.
//
// The modes (detail/channel_buffered.hpp for capacity > 0, detail/channel_rendezvous.hpp for
// capacity 0) are views of this state; sync/channel.hpp picks one per call, in one place.
// Protocol and proof sketch: docs/protocols.md §9.11 ("channel").

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "magpie/sync/detail/channel_ring.hpp"
#include "magpie/sync/detail/channel_spin.hpp"
#include "magpie/sync/detail/channel_waiters.hpp"
#include "magpie/sync/detail/lock_word.hpp"
#include "magpie/sync/detail/waiter.hpp"

namespace magpie::sync::detail {

/// A channel's state. The modes use it; nothing else does.
template <typename T>
struct channel_state {
  explicit channel_state(std::size_t capacity) : m_ring(capacity) {}

  /// The values buffered (none in a rendezvous channel), and the closed bit.
  channel_ring<T> m_ring;
  /// Waiters queued (or registering) on each side of a buffered channel: written under the lock,
  /// read by the fast paths after their fence. Apart from the ring's two ends so that reading
  /// them is cheap. A rendezvous channel does not count them.
  line_gap m_gap; // (padding, not alignas: see channel_ring's ends)
  std::atomic<std::uint32_t> m_waiting_senders{0};
  std::atomic<std::uint32_t> m_waiting_receivers{0}; ///< see m_waiting_senders
  /// The spin budgets of a send that finds the ring full and of a receive that finds it empty,
  /// on the same read-mostly line.
  adaptive_spin m_send_spin;
  adaptive_spin m_receive_spin; ///< see m_send_spin
  lock_word m_lock;
  // Guarded by the lock:
  channel_queue m_senders;   ///< waiting senders (data_of: their T, null once sent)
  channel_queue m_receivers; ///< waiting receivers (data_of: their std::optional<T>)
};

/// How a slow path queues its waiter: untimed (no plan), or with its deadline part and, for a
/// task, the timer to arm (channel_waiters.hpp).
struct queue_plan {
  channel_deadline *deadline;
  io::detail::timeout_node *arm; ///< null for a plain thread (it keeps its own time)
  bool out_of_memory = false;    ///< set if the timer could not be armed: nothing was queued
};

/// Queues `w` with value slot `data` on `q`, as `plan` says (null: untimed). False, queuing
/// nothing, if its deadline could not be armed. Under the channel's lock.
inline bool enqueue(channel_queue &q, waiter &w, void *data, queue_plan *plan) noexcept {
  if (plan == nullptr) {
    w.m_slot = data;
    q.push(&w);
    return true;
  }
  if (q.push_timed(w, *plan->deadline, data, plan->arm)) {
    return true;
  }
  plan->out_of_memory = true;
  return false;
}

/// Adds to `done` what a queue gave up to be released: one waiter, a list of them linked by
/// m_next_waiter (take_all), or none (null: its deadline claimed it).
inline void push_released(waiter_queue &done, waiter *w) noexcept {
  while (w != nullptr) {
    waiter *const next = w->m_next_waiter; // push() overwrites it
    done.push(w);
    w = next;
  }
}

} // namespace magpie::sync::detail
