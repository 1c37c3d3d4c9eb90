#pragma once
// magpie/sync/detail/channel_waiters.hpp — a channel's waiting senders (or receivers), some of
// them with a deadline.
//
// A channel serves a waiter by *giving first*: under the channel's lock it moves a value into the
// waiter's slot (a receiver) or out of it (a sender), and only then settles who wakes the waiter.
// An untimed waiter is the channel's to wake. A timed one is decided by its deadline node's claim
// (io/detail/timer_heap.hpp): if the channel claims it, the channel wakes it (and the task cancels
// its timer); if the deadline claimed it first, the waiter moves to this queue's *expiring* list,
// keeping what it was given, and its deadline's side (the reactor, or the waiting thread itself)
// takes it out under the lock and reports what it finds there: a value received or sent is never
// lost to a deadline that fired as it was handed over. The claim cannot come first: a lock-free
// fast-path receive may take the ring's last value between a look and the hand-over, and a
// claimed waiter with nothing to give could neither be woken nor keep its deadline.
// Protocol and proof sketch: docs/protocols.md §9.11, "Timed sends and receives".

#include <cstddef>
#include <cstdint>

#include "magpie/core/config.hpp"
#include "magpie/core/detail/pause.hpp"
#include "magpie/io/detail/timer_heap.hpp"
#include "magpie/sync/detail/lock_word.hpp"
#include "magpie/sync/detail/waiter.hpp"

namespace magpie::sync::detail {

/// The deadline part of a timed channel waiter: a queued waiter with m_has_deadline set has its
/// m_slot pointing here (as an io::detail::timeout_node), and its value slot in m_data.
struct channel_deadline : io::detail::timeout_node {
  /// The waiter's value slot: what m_slot is for an untimed waiter (a sender's T, null once
  /// sent; a receiver's std::optional<T>).
  void *m_data = nullptr;
};

/// The deadline part of a queued waiter, or null if it has none.
inline channel_deadline *deadline_of(waiter &w) noexcept {
  return w.m_has_deadline
             ? static_cast<channel_deadline *>(static_cast<io::detail::timeout_node *>(w.m_slot))
             : nullptr;
}

/// A queued waiter's value slot (see channel_deadline::m_data).
inline void *&data_of(waiter &w) noexcept {
  channel_deadline *const d = deadline_of(w);
  return d != nullptr ? d->m_data : w.m_slot;
}

/// One side's FIFO of a channel's waiters. Every member: under the channel's lock.
class channel_queue {
public:
  bool empty() const noexcept { return m_waiters.empty(); }
  /// Waiters still waiting (not those in the expiring list).
  std::size_t size() const noexcept { return m_waiters.size(); }
  /// The oldest waiting waiter, still queued, or null.
  waiter *front() const noexcept { return m_waiters.front(); }

  /// Queues an untimed waiter whose m_slot is set.
  void push(waiter *w) noexcept { m_waiters.push(w); }

  /// Queues a timed waiter with value slot `data` and deadline part `d` (`d` may be `w` itself)
  /// and, for a task, arms its deadline (`arm`; null for a plain thread, which keeps its own
  /// time): under the channel's lock, so that a deadline that fires at once waits for it to take
  /// the waiter out. False, queuing nothing, if the timer heap could not grow.
  bool push_timed(waiter &w, channel_deadline &d, void *data,
                  io::detail::timeout_node *arm) noexcept {
    d.m_data = data;
    w.m_slot = static_cast<io::detail::timeout_node *>(&d);
    w.m_has_deadline = true;
    m_waiters.push(&w);
    if (arm != nullptr && !io::detail::arm_timer(*arm)) {
      m_waiters.remove(&w);
      w.m_has_deadline = false;
      return false;
    }
    ++m_timed;
    return true;
  }

  /// Unlinks the oldest waiter, which has been given its due (or is released): returns it for
  /// the caller to release after the unlock, or null if its deadline claimed it first (it then
  /// waits in the expiring list, untouched, for its deadline's side). Null if none waits.
  waiter *pop() noexcept { return settle(m_waiters.pop()); }

  /// Unlinks every waiting waiter (a close, the channel's destruction): the list to release,
  /// linked by m_next_waiter (as waiter_queue::take_all); those whose deadline claimed them go
  /// to the expiring list instead.
  waiter *take_all() noexcept {
    waiter_queue released;
    while (waiter *w = pop()) {
      released.push(w);
    }
    return released.take_all();
  }

  /// The deadline's side, having won `w`'s claim: takes it out of whichever list holds it. True
  /// if it was still waiting (nothing was given to it, and the side's count of waiters must drop).
  bool remove_expired(waiter &w) noexcept {
    bool const waiting = m_waiters.remove(&w);
    if (!waiting) {
      bool const found = m_expiring.remove(&w);
      MAGPIE_ASSERT(found,
                    "magpie: a channel's timed waiter claimed by its deadline left the queue");
      static_cast<void>(found);
    }
    --m_timed;
    return waiting;
  }

  /// Timed waiters whose deadline's side may still take them out (it touches the channel until
  /// then): queued ones and expiring ones.
  std::uint32_t timed() const noexcept { return m_timed; }

private:
  waiter *settle(waiter *w) noexcept {
    if (w == nullptr) {
      return nullptr;
    }
    w->m_next_waiter = nullptr; // the caller may treat it as a one-waiter list
    channel_deadline *const d = deadline_of(*w);
    if (d == nullptr) {
      return w;
    }
    if (d->claim()) { // ours: its deadline's side will not touch the channel
      --m_timed;
      return w;
    }
    m_expiring.push(w); // its deadline won: its side takes it out and reports what it holds
    return nullptr;
  }

  waiter_queue m_waiters;
  waiter_queue m_expiring;
  std::uint32_t m_timed = 0;
};

/// For a channel's destructor, after it released what it could: waits until the deadlines' sides
/// have taken out the rest of both queues' timed waiters (they touch the channel until then; none
/// of them blocks, so the wait is short).
inline void wait_out_expiring(lock_word &lock, channel_queue const &a,
                              channel_queue const &b) noexcept {
  for (unsigned spins = 0;;) {
    lock.lock();
    bool const left = a.timed() + b.timed() != 0;
    lock.unlock();
    if (!left) {
      return;
    }
    spin_pause(spins);
  }
}

} // namespace magpie::sync::detail
