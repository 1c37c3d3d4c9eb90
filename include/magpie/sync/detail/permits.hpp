#pragma once
// magpie/sync/detail/permits.hpp — a count of permits with a FIFO of waiters and direct hand-off:
// the core of magpie::semaphore and magpie::mutex (a mutex is one permit). Protocol and proof
// sketch: docs/protocols.md §9.4.
//
// The state is one word: bit 0 the lock_word's lock, bit 1 "waiters are queued", bits 2.. the
// number of free permits. The rule that makes every decision simple: the word changes only by a
// CAS whose expected value has the lock bit CLEAR, or by the holder of the lock. So under the lock
// the state is frozen, and the fast paths (one CAS each) never race with a decision taken under
// it. Invariant whenever the lock is free: waiters bit ⇔ the queue is non-empty; and a free
// permit ⇒ every queued waiter is a timed one whose deadline has claimed it (Linux; it is about
// to take itself out), so none waits for a permit.
//
// Direct hand-off: give() with waiters queued passes each permit to the oldest waiter (popped
// under the lock, woken after it) instead of adding it to the count; the count never goes up while
// anybody waits, so a late-comer's fast path cannot barge past a queued waiter.
//
// Revocable hand-off (heir_queue.hpp): give() makes the first task it hands a permit while no
// heir is pending the heir; a task's take (try_take_or_revoke, take_or_enqueue(w, true)) that
// finds no free permit may revoke the heir's. A waiter handed a permit while another heir is
// pending (a semaphore's other holder released) is handed it for good. docs/protocols.md §9.4
// and §9.6, docs/models/mutex_heir.pml.
//
// Timed takes (Linux; mutex::try_lock_for, semaphore::try_acquire_for): a timed waiter is queued
// with a deadline (timed.hpp); give() hands a permit only to a waiter it claims, skipping one
// whose deadline claimed it first, so no permit is lost to a wait that gives up. A timed waiter
// that give() claims and makes the heir returns true, holding what it was handed; its hand-off
// is revoked only on a mutex (`m_given_back`: the revoker must unlock, which hands it the lock
// again), never on a semaphore, whose revoker might never release (the waiter, its deadline
// spent, would wait forever). docs/protocols.md §9.8.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <utility>

#include "magpie/core/config.hpp"
#include "magpie/sync/detail/blocking.hpp"
#include "magpie/sync/detail/heir_queue.hpp"
#include "magpie/sync/detail/lock_word.hpp"
#include "magpie/sync/detail/timed.hpp"
#include "magpie/sync/detail/waiter.hpp"

namespace magpie::sync::detail {

class permits : public heir_queue {
public:
  static constexpr word_t one = 4;
  /// The largest count the word holds.
  static constexpr std::size_t max_count = static_cast<std::size_t>(~word_t{0} >> 2);

  /// `initial` free permits. `given_back`: every taker gives back what it takes (a mutex's
  /// unlock; not a semaphore, whose permits may be consumed), so a hand-off to a timed heir may
  /// be revoked (heir_queue::revoke_heir).
  explicit permits(std::size_t initial, bool given_back = false) noexcept
      : heir_queue(static_cast<word_t>(initial) * one), m_given_back(given_back) {}

  /// Takes one permit if one is free and nobody waits. Never spurious: if the lock is held by
  /// someone else, decides under it.
  bool try_take() noexcept {
    // acquire: a permit given by give()'s release CAS (or unlock_with) brings the giver's writes.
    word_t s = m_word.load(std::memory_order_acquire);
    while ((s & lock_word::locked) == 0) {
      if (s < one) {
        return false; // no free permit
      }
      // acquire: as above.
      if (m_word.word().compare_exchange_weak(s, s - one, std::memory_order_acquire,
                                              std::memory_order_acquire)) {
        return true;
      }
    }
    word_t v = m_word.lock(); // someone holds the lock: decide under it, where the state is frozen
    bool const took = v >= one;
    m_word.unlock_with([&](word_t cur) { return took ? cur - one : cur; });
    return took;
  }

  /// Under the lock: takes one permit (true), or queues `w` (false). After false, `w` belongs to
  /// the queue: a giver may hand it a permit and wake it as soon as the lock is released. With
  /// `may_revoke` (a task's own take, not a condition variable's move), a task `w` may also take
  /// the permit of an heir of its own executor (true; see the top of this file).
  bool take_or_enqueue(waiter &w, bool may_revoke = false) noexcept {
    if (take_locked(m_word.lock(), may_revoke && w.m_task ? w.m_task.home() : nullptr)) {
      return true;
    }
    m_waiters.push(&w);
    // release (in unlock_with): the queued waiter and the waiters bit, to the next lock holder.
    m_word.unlock_with([](word_t cur) { return cur | waiters_bit; });
    return false;
  }

  /// Gives `n` permits: each goes to the oldest waiter while any waits (woken after the lock is
  /// released), the rest to the count. The first task waiter handed a permit while there is no
  /// heir becomes the heir (revocable unless its revocations are used up; resumed through
  /// heir_run); the others are handed their permits for good. `check(free_before, n)` is called
  /// under the lock (or on the fast path) with the count before the gift, to diagnose misuse (a
  /// mutex unlocked twice); it must not return if it fails. The last touch of the primitive is
  /// the releasing CAS (or unlock_with): a woken waiter may destroy the primitive at once.
  template <typename Check>
  void give(std::size_t n, Check check) noexcept {
    if (give_fast(n, check)) {
      return;
    }
    word_t const v = m_word.lock(); // waiters queued, or someone holds the lock
    check(static_cast<std::size_t>(v / one), n);
    waiter *head = nullptr; // handed for good, woken after the lock is released
    waiter **tail = &head;
    waiter *to_resubmit = nullptr; // the new heir, unless its job is still in flight
    while (n > 0) {                // one permit each, oldest first: direct hand-off
      // The oldest we can claim (on Linux a timed waiter whose deadline claimed it first stays
      // queued until its deadline's side takes it out).
      waiter *const w = m_waiters.take(1);
      if (w == nullptr) {
        break; // nobody left whom we can claim: the rest go to the count
      }
      --n;
      if (w->m_task && heir() == nullptr) {
        if (make_heir(*w)) {
          to_resubmit = w;
        }
      } else {
        // A thread, or a task while another heir is pending (a semaphore's other holder gave):
        // not revoked (a revoked waiter is queued only at the head, while there is no heir), so
        // no job of its own is in flight.
        MAGPIE_ASSERT(!w->m_task || heir_state_of(*w).load(std::memory_order_relaxed) == heir_idle,
                      "magpie: a waiter handed for good has a resumption job in flight");
        *tail = w;
        tail = &w->m_next_waiter;
      }
    }
    *tail = nullptr;
    bool const still_waiting = !m_waiters.empty();
    // release: our writes (and the permits) → the next lock holder and the fast paths; then the
    // woken waiters, whose resumption is ordered after this by the executor's queue.
    m_word.unlock_with([&](word_t cur) {
      word_t c = (cur & ~waiters_bit) + static_cast<word_t>(n) * one;
      return still_waiting ? (c | waiters_bit) : c;
    });
    if (to_resubmit != nullptr) {
      to_resubmit->wake(); // point of no return (a revoker may already have requeued it: its job
                           // is then a no-op)
    }
    hand_to_all(head); // point of no return for each; we touch nothing of the primitive now
  }

  /// A task's take before it parks (the fast path of mutex::lock and semaphore::acquire):
  /// try_take(), else try_revoke() for the task of `self`.
  bool try_take_or_revoke(core::frame_base &self) noexcept {
    return try_take() || try_revoke(core::ext::worker_of(self).home());
  }

  /// For a task's take before it parks (`mine`: the task's executor): takes the permit of an heir
  /// of `mine` whose job has not started, as take_or_enqueue would; false (having changed
  /// nothing) if there is no such heir or no permit comes of it.
  bool try_revoke(core::executor *mine) noexcept {
    if (heir() == nullptr) {
      return false; // the common case: no lock taken
    }
    if (take_locked(m_word.lock(), mine)) {
      return true; // freed meanwhile, or revoked
    }
    m_word.unlock();
    return false;
  }

  /// Free permits now (a snapshot).
  std::size_t count() const noexcept {
    return static_cast<std::size_t>(m_word.load(std::memory_order_relaxed) / one); // snapshot
  }

private:
#if defined(__linux__)
  // Timed takes (timed.hpp; mutex::try_lock_for, semaphore::try_acquire_for wait on the permits
  // themselves): the fast paths, the timed take and, from heir_queue, take_out_expired.
  friend struct timed_access;
  bool try_pass() noexcept { return try_take(); }
  bool try_pass(core::frame_base &self) noexcept { return try_take_or_revoke(self); }

  /// Under the lock: takes a free permit or, for a task, the permit of an heir of its executor,
  /// as take_or_enqueue(w, true) (passed); else queues `w` and arms its deadline (`arm`; null
  /// for a plain thread): queued, or out_of_memory (nothing queued) if the reactor's timer heap
  /// cannot grow. After queued, `w` belongs to the queue and its deadline.
  timed_outcome pass_or_enqueue_timed(waiter &w, io::detail::timeout_node *arm) noexcept {
    if (take_locked(m_word.lock(), w.m_task ? w.m_task.home() : nullptr)) {
      return timed_outcome::passed;
    }
    return queued_or_out_of_memory(enqueue_timed(w, arm));
  }
#endif

  bool const m_given_back; // a mutex: timed heirs may be revoked (see the constructor)

  /// give()'s fast path: adds `n` permits by one CAS if nobody waits and the lock is free (true);
  /// false if the caller must decide under the lock.
  template <typename Check>
  bool give_fast(std::size_t n, Check &check) noexcept {
    word_t s = m_word.load(std::memory_order_relaxed);
    while ((s & (lock_word::locked | waiters_bit)) == 0) {
      check(static_cast<std::size_t>(s / one), n);
      // release: what the giver did before give() → whoever takes these permits (acquire).
      if (m_word.word().compare_exchange_weak(s, s + static_cast<word_t>(n) * one,
                                              std::memory_order_release,
                                              std::memory_order_relaxed)) {
        return true;
      }
    }
    return false;
  }

  /// Under the lock (`v`: the word lock() returned): takes a free permit, or, for a task of
  /// `mine` (null: never), the heir's (revoke_heir); either way releases the lock and returns
  /// true. False, still holding the lock, if neither.
  bool take_locked(word_t v, core::executor *mine) noexcept {
    if (v >= one) {
      m_word.unlock_with([](word_t cur) { return cur - one; });
      return true;
    }
    if (mine != nullptr && heir() != nullptr && revoke_heir(mine, m_given_back)) {
      // release (in unlock_with): the requeued heir and the waiters bit, to the next lock holder.
      m_word.unlock_with([](word_t cur) { return cur | waiters_bit; });
      return true;
    }
    return false;
  }
};

/// The awaitable of a task's take from `permits` (semaphore::acquire; mutex::lock has its own,
/// which also yields a guard): never suspends if a permit is free or an heir's can be revoked.
struct take_awaitable : wait_awaitable<take_awaitable> {
  permits *m_target = nullptr;
  bool try_now() noexcept { return m_target->try_take_or_revoke(*m_frame); }
  bool try_or_enqueue(waiter &w) noexcept {
    return m_target->take_or_enqueue(w, /*may_revoke=*/true);
  }
};

/// Blocks the calling plain thread until it has a permit. Throws std::logic_error on a thread
/// that runs a magpie task (`what` names the task form to use instead), abandoned_wait if the
/// primitive is destroyed first.
inline void take_blocking(permits &p, char const *what) {
  refuse_on_worker(what);
  if (p.try_take()) {
    return;
  }
  blocking_waiter w;
  if (p.take_or_enqueue(w)) {
    return;
  }
  w.block();
}

} // namespace magpie::sync::detail
