#pragma once
// magpie/sync/detail/channel_waiters.hpp — a channel's waiting senders (or receivers), some of
// them with a deadline.
//
// A channel serves a waiter by *giving first*: under the channel's lock it moves a value into the
// waiter's slot (a receiver) or out of it (a sender), and only then settles who wakes the waiter.
// An untimed waiter is the channel's to wake. A timed one is decided by its deadline node's claim
// (timed_queue.hpp): if the channel claims it, the channel wakes it (and the task cancels
// its timer); if the deadline claimed it first, the waiter moves to this queue's *expiring* list,
// keeping what it was given, and its deadline's side (the reactor, or the waiting thread itself)
// takes it out under the lock and reports what it finds there: a value received or sent is never
// lost to a deadline that fired as it was handed over. The claim cannot come first: a lock-free
// fast-path receive may take the ring's last value between a look and the hand-over, and a
// claimed waiter with nothing to give could neither be woken nor keep its deadline.
// Protocol and proof sketch: docs/protocols.md §9.11, "Timed sends and receives".

#include <cstddef>
#include <cstdint>

#include "magpie/io/detail/timer_heap.hpp"
#include "magpie/sync/detail/timed_queue.hpp"
#include "magpie/sync/detail/waiter.hpp"

namespace magpie::sync::detail {

/// The deadline part of a timed channel waiter: a queued waiter with m_has_deadline set has its
/// m_slot pointing here (as an io::detail::timeout_node: timed_node), and its value slot in m_data.
struct channel_deadline : io::detail::timeout_node {
  /// The waiter's value slot: what m_slot is for an untimed waiter (a sender's T, null once
  /// sent; a receiver's std::optional<T>).
  void *m_data = nullptr;
};

/// The deadline part of a queued waiter, or null if it has none.
inline channel_deadline *deadline_of(waiter &w) noexcept {
  return static_cast<channel_deadline *>(timed_node(w));
}

/// A queued waiter's value slot (see channel_deadline::m_data).
inline void *&data_of(waiter &w) noexcept {
  channel_deadline *const d = deadline_of(w);
  return d != nullptr ? d->m_data : w.m_slot;
}

/// One side's FIFO of a channel's waiters: a timed_queue served by giving first, with the list of
/// expiring waiters (given their due, but claimed by their deadline). Every member: under the
/// channel's lock.
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
  /// and, for a task, arms its deadline (`arm`; null for a plain thread): timed_queue::push_timed.
  /// False, queuing nothing, if the timer heap could not grow.
  bool push_timed(waiter &w, channel_deadline &d, void *data,
                  io::detail::timeout_node *arm) noexcept {
    d.m_data = data;
    w.m_slot = static_cast<io::detail::timeout_node *>(&d);
    return m_waiters.push_timed(w, arm);
  }

  /// Unlinks the oldest waiter, which has been given its due (or is released): returns it for
  /// the caller to release after the unlock, or null if its deadline claimed it first (it then
  /// waits in the expiring list, untouched, for its deadline's side). Null if none waits.
  waiter *pop() noexcept {
    waiter *const w = m_waiters.pop_unclaimed();
    if (w == nullptr) {
      return nullptr;
    }
    w->m_next_waiter = nullptr;         // the caller may treat it as a one-waiter list
    if (m_waiters.claim_for_take(*w)) { // ours: its deadline's side will not touch the channel
      return w;
    }
    m_expiring.push(w); // its deadline won: its side takes it out and reports what it holds
    return nullptr;
  }

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
  bool remove_expired(waiter &w) noexcept { return m_waiters.remove_expired(w, &m_expiring); }

  /// Timed waiters whose deadline's side may still take them out (it touches the channel until
  /// then): queued ones and expiring ones. The destructor waits them out (wait_out_expiring).
  std::uint32_t timed() const noexcept { return m_waiters.timed(); }

private:
  timed_queue m_waiters;
  waiter_queue m_expiring;
};

} // namespace magpie::sync::detail
