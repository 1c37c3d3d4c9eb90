#pragma once
// magpie/sync/detail/timed_queue.hpp — the one home of a waiter queue some of whose waiters have
// a deadline: the claim that decides who ends a timed wait, the count of timed waiters whose
// deadline's side may still touch the primitive, and the destructor's wait for them.
//
// A timed waiter is a `waiter` with m_has_deadline set whose m_slot points at an
// `io::detail::timeout_node` (timed_node): the node's m_claimed decides, by one exchange, who
// ends the wait — the primitive's side (a release, a close, its destructor: under the
// primitive's lock) or the deadline's side (the reactor, or a plain thread whose own deadline
// passed). The loser touches the waiter no more, except that the deadline's side takes it out
// under the primitive's lock (remove_expired) before the wait returns; a primitive's destructor
// waits until those are gone (wait_out_expiring). Two ways to serve a queue:
//   - claim, then take (timed.hpp's primitives: event, latch, counter, cv, the heir_queue
//     locks): take / take_all / claim_for_take; a waiter whose deadline won stays queued;
//   - give, then settle (the channel, channel_waiters.hpp): pop_unclaimed, hand the waiter its
//     due, then claim_for_take; one whose deadline won moves to the primitive's own list of
//     expiring waiters, which remove_expired searches too.
// Protocol and proof sketch: docs/protocols.md §9.8 "Timed waits" and §9.11 "Timed sends and
// receives"; models docs/models/timed_wait.pml, docs/models/channel_timed.pml.

#include <cstddef>
#include <cstdint>

#include "magpie/core/config.hpp"
#include "magpie/io/detail/timer_heap.hpp"
#include "magpie/sync/detail/lock_word.hpp" // spin_pause
#include "magpie/sync/detail/waiter.hpp"

namespace magpie::sync::detail {

/// The claim node of a queued timed waiter (its m_slot), or null for an untimed one.
inline io::detail::timeout_node *timed_node(waiter &w) noexcept {
  return w.m_has_deadline ? static_cast<io::detail::timeout_node *>(w.m_slot) : nullptr;
}

/// A primitive's FIFO of waiters, some of them timed. Every member: under the primitive's lock.
class timed_queue {
public:
  bool empty() const noexcept { return m_waiters.empty(); }
  std::size_t size() const noexcept { return m_waiters.size(); }
  /// Queues an untimed waiter.
  void push(waiter *w) noexcept { m_waiters.push(w); }
  /// Queues an untimed waiter ahead of every other (a revoked heir: heir_queue.hpp).
  void push_front(waiter *w) noexcept { m_waiters.push_front(w); }
  /// The oldest waiter, still queued, or null.
  waiter *front() const noexcept { return m_waiters.front(); }
  /// The oldest waiter, unlinked, or null: only for a queue none of whose waiters is timed (a
  /// primitive with timed waiters takes them with take() or take_until(), or pop_unclaimed()).
  waiter *pop() noexcept {
    MAGPIE_ASSERT(m_timed == 0, "magpie: pop() from a queue with timed waiters");
    return m_waiters.pop();
  }

  /// Queues a timed waiter, whose m_slot points at its claim node, and, for a task, arms its
  /// deadline (`arm`; null for a plain thread, which keeps its own time): under the primitive's
  /// lock, so a deadline that fires at once waits for that lock to take the waiter out
  /// (primitive → shard lock order). False, queuing nothing (the waiter left untimed), if the
  /// timer heap could not grow.
  bool push_timed(waiter &w, io::detail::timeout_node *arm) noexcept {
    MAGPIE_ASSERT(w.m_slot != nullptr, "magpie: a timed waiter without its timeout node");
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

  /// Whether this side may take (or keep) `w`: an untimed waiter, or a timed one it claims now
  /// (a claim it cannot undo: call it only for a waiter it will take, or has given its due).
  /// False: its deadline claimed it first, and its side takes it out (remove_expired).
  bool claim_for_take(waiter &w) noexcept {
    io::detail::timeout_node *const node = timed_node(w);
    if (node == nullptr) {
      return true;
    }
    if (!node->claim()) {
      return false;
    }
    --m_timed; // ours: its deadline's side will not touch the primitive
    return true;
  }

  /// Unlinks up to `limit` waiters, the oldest first, as a list linked by m_next_waiter (as
  /// waiter_queue::take_all). A timed waiter is taken only if this side claims it; one whose
  /// deadline claimed it first stays queued, untouched, until its deadline's side takes it out.
  waiter *take(std::size_t limit) noexcept {
    if (m_timed == 0) {
      return m_waiters.take(limit);
    }
    return m_waiters.take_if([this](waiter &w) { return claim_for_take(w); }, limit);
  }
  waiter *take_all() noexcept { return take(~std::size_t{0}); }

  /// waiter_queue::take_until over the queue (`decide` claims through claim_for_take).
  template <typename Decide>
  waiter *take_until(Decide decide) noexcept {
    return m_waiters.take_until(decide);
  }

  /// For a primitive that gives first and settles after (the channel): the oldest waiter,
  /// unlinked whatever its kind, or null. The caller gives it its due, then settles it with
  /// claim_for_take; one it cannot claim still counts in timed() and goes to the caller's list
  /// of expiring waiters, whence remove_expired takes it.
  waiter *pop_unclaimed() noexcept { return m_waiters.pop(); }

  /// The deadline's side, having won the claim: takes `w` out of the queue or, if a primitive
  /// that gives first had unlinked it already, out of `expiring` (that primitive's list). True
  /// if it was still queued (nothing was given to it).
  bool remove_expired(waiter &w, waiter_queue *expiring = nullptr) noexcept {
    bool const queued = m_waiters.remove(&w);
    bool const found = queued || (expiring != nullptr && expiring->remove(&w));
    MAGPIE_ASSERT(found, "magpie: a timed waiter claimed by its deadline left the queue");
    static_cast<void>(found);
    --m_timed;
    return queued;
  }

  /// Timed waiters whose deadline's side may still take them out (it touches the primitive
  /// until then). After take_all(): those whose deadline claimed them.
  std::uint32_t timed() const noexcept { return m_timed; }

private:
  waiter_queue m_waiters;
  std::uint32_t m_timed = 0;
};

/// For a primitive's destructor, after it has taken (and failed) every waiter it could claim
/// and released `lock` (its lock_word, or a std::mutex): waits until the deadlines' sides have
/// taken out the rest of `queues`' timed waiters (they touch the primitive until then; none of
/// them blocks, so the wait is short).
template <typename Lock, typename... Queues>
void wait_out_expiring(Lock &lock, Queues const &...queues) noexcept {
  for (unsigned spins = 0;;) {
    lock.lock();
    bool const left = (queues.timed() + ... + 0U) != 0;
    lock.unlock();
    if (!left) {
      return;
    }
    spin_pause(spins);
  }
}

} // namespace magpie::sync::detail
