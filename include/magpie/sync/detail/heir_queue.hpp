#pragma once
// magpie/sync/detail/heir_queue.hpp — the FIFO of a lock-like primitive with direct, revocable
// hand-off: the base of detail::permits (magpie::mutex, magpie::semaphore) and of
// magpie::shared_mutex. Protocol and proof sketch: docs/protocols.md §9.4 (and §9.5, §9.6 for
// what the shared_mutex and the semaphore add); model docs/models/mutex_heir.pml.
//
// The primitive's state is one lock_word: bit 0 its lock, bit 1 "waiters are queued" (both
// here), the other bits the primitive's own (free permits; a writer and a count of readers). The
// word changes only by a CAS whose expected value has the lock bit clear, or by the lock's holder.
//
// Revocable hand-off: a releaser hands the lock (a permit) to the oldest waiter. A task handed it
// while there is no heir becomes the *heir* until its resumption job starts (make_heir). A task of
// the same executor that takes meanwhile, finding the lock held only by the heir, may revoke the
// hand-off (revoke_heir): it takes what the heir was handed, the heir goes back to the head of
// the queue — at most max_revocations times per wait. This ends the lock convoy of strict
// hand-off (a holder that releases and takes again at once does not queue behind a waiter that
// has not even started running). The heir's state lives in its waiter (heir_state), is changed
// only by CAS (its job against a revoker or a destructor), and the heir's job clears m_heir under
// the lock before the task runs, so nobody reads a waiter whose task has gone on. There is at most
// one heir; the derived primitive hands for good whatever it hands while an heir is pending.
//
// On Linux the queue may hold timed waiters (a mutex's try_lock_for, a semaphore's
// try_acquire_for, a shared_mutex's try_lock_for and try_lock_shared_for: timed.hpp): the
// primitive takes only a waiter it claims (timed_queue::take, or take_until for the shared_mutex's
// grant), the
// deadline's side takes out one it claimed (take_out_expired), and a hand-off to a timed waiter
// is revoked only where the revoker must give the lock back (a mutex): its deadline's claim is
// spent, so requeued it can no longer time out. docs/protocols.md §9.8, "Timed takes".

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <utility>

#include "magpie/core/config.hpp"
#include "magpie/sync/detail/blocking.hpp"
#include "magpie/sync/detail/lock_word.hpp"
#include "magpie/sync/detail/timed.hpp" // timed_queue (Linux)
#include "magpie/sync/detail/waiter.hpp"

namespace magpie::sync::detail {

/// Wakes a waiter to whom something was handed: a task is resubmitted, a thread notified. A
/// waiter carries its own error (set by a condition variable destroyed while it waited, see
/// condition_variable.hpp), which its wait then throws. Point of no return for `w`.
inline void hand_to(waiter *w) noexcept { release(w, std::exchange(w->m_error, nullptr)); }

/// hand_to() for each waiter of a chain linked through m_next_waiter.
inline void hand_to_all(waiter *w) noexcept {
  while (w != nullptr) {
    waiter *next = w->m_next_waiter; // read first: the woken waiter may be gone at once
    hand_to(w);
    w = next;
  }
}

/// The states of a task waiter's hand-off as the heir (waiter::m_heir_state). "In flight": the
/// task's resumption job is queued or about to be; the job (heir_run) moves the state back to idle
/// with a CAS and then acts on what it found. "Hold": the executor hold a parked task needs, which
/// a resubmission ends (core::executor::hold).
enum heir_state : std::uint8_t {
  heir_idle = 0, ///< no job in flight (queued, or never handed)
  heir_handed, ///< handed the lock or a permit; job in flight; no hold (the resubmission ended it)
  heir_handed_held, ///< handed the lock or a permit; job in flight; one hold, which the job ends
  heir_revoked,     ///< back in the queue; job in flight, which does nothing; one hold (its own)
  heir_failed,      ///< the primitive was destroyed: the wait throws abandoned_wait; job in flight
  heir_failed_held, ///< as heir_failed, with one hold, which the job ends
};

/// Atomic access to a waiter's heir state byte, shaped like std::atomic_ref (which libc++ 16
/// lacks): the GCC/Clang __atomic builtins on the plain byte.
class heir_state_ref {
public:
  explicit heir_state_ref(std::uint8_t &b) noexcept : m_byte(&b) {}
  std::uint8_t load(std::memory_order o) const noexcept {
    return __atomic_load_n(m_byte, order(o));
  }
  void store(std::uint8_t v, std::memory_order o) noexcept {
    __atomic_store_n(m_byte, v, order(o));
  }
  bool compare_exchange_strong(std::uint8_t &expected, std::uint8_t desired,
                               std::memory_order success, std::memory_order failure) noexcept {
    return __atomic_compare_exchange_n(m_byte, &expected, desired, false, order(success),
                                       order(failure));
  }
  bool compare_exchange_strong(std::uint8_t &expected, std::uint8_t desired,
                               std::memory_order o) noexcept {
    return compare_exchange_strong(expected, desired, o, o); // callers pass relaxed only
  }
  bool compare_exchange_weak(std::uint8_t &expected, std::uint8_t desired,
                             std::memory_order success, std::memory_order failure) noexcept {
    return __atomic_compare_exchange_n(m_byte, &expected, desired, true, order(success),
                                       order(failure));
  }

private:
  static constexpr int order(std::memory_order o) noexcept {
    switch (o) {
    case std::memory_order_relaxed:
      return __ATOMIC_RELAXED;
    case std::memory_order_acquire:
      return __ATOMIC_ACQUIRE;
    case std::memory_order_release:
      return __ATOMIC_RELEASE;
    case std::memory_order_acq_rel:
      return __ATOMIC_ACQ_REL;
    default:
      return __ATOMIC_SEQ_CST;
    }
  }
  std::uint8_t *m_byte;
};

/// A waiter's heir state, atomically.
inline heir_state_ref heir_state_of(waiter &w) noexcept { return heir_state_ref(w.m_heir_state); }

/// The lock word, the waiters and the heir of a primitive with revocable hand-off (see the top of
/// this file). The derived primitive decides what is handed and taken; this class keeps who waits
/// and who is the heir, and fails them all when the primitive is destroyed.
class heir_queue {
public:
  using word_t = lock_word::value_type;
  /// The word's "waiters are queued" bit. Invariant whenever the lock is free: set ⇔ the queue is
  /// non-empty.
  static constexpr word_t waiters_bit = 2;

  /// How many times one wait's hand-off may be revoked (the bound on the unfairness: a waiter
  /// handed the lock lets at most this many critical sections of others go first).
  static constexpr std::uint8_t max_revocations = 32;

  heir_queue(heir_queue const &) = delete;
  heir_queue &operator=(heir_queue const &) = delete;

  /// Waiters now (a snapshot, for diagnostics and tests).
  std::size_t waiting() noexcept {
    m_word.lock();
    std::size_t const n = m_waiters.size();
    m_word.unlock();
    return n;
  }

protected:
  explicit heir_queue(word_t initial) noexcept : m_word(initial) {}

  /// Fails every waiter with abandoned_wait (the primitive is being destroyed): the queued ones,
  /// and an heir whose job has not started (it never ran holding the lock). A timed waiter whose
  /// deadline claimed it first ends its own wait (false): the destructor waits until its
  /// deadline's side has taken it out.
  ~heir_queue() { shut_down(); }

  /// The destructor's work, for a derived primitive whose deadlines' sides call into it (the
  /// shared_mutex) to do before its own destruction ends: idempotent.
  void shut_down() noexcept {
    m_word.lock();
    unsigned spins = 0;
    while (waiter *const h = heir()) {
      std::uint8_t st = heir_state_of(*h).load(std::memory_order_relaxed);
      // relaxed: the job learns only that it lost; it reads nothing else of ours.
      if (st != heir_idle &&
          heir_state_of(*h).compare_exchange_strong(
              st, st == heir_handed ? heir_failed : heir_failed_held, std::memory_order_relaxed)) {
        set_heir(nullptr);
        break;
      }
      // Its job has begun (idle): it clears m_heir under the lock before the task runs. Wait
      // for that — a few instructions of a running thread.
      m_word.unlock();
      spin_pause(spins);
      m_word.lock();
    }
    waiter *const w = m_waiters.take_all(); // skips timed waiters whose deadline claimed them
#if defined(__linux__)
    bool const expiring = m_waiters.timed() != 0;
#endif
    m_word.unlock();
    if (w != nullptr) {
      fail_taken(w);
    }
#if defined(__linux__)
    if (expiring) {
      wait_out_expiring(m_word, m_waiters); // their deadline's side touches us until then
    }
#endif
  }

  /// The destructor's failure of the waiters it took (a list linked by m_next_waiter).
  static void fail_taken(waiter *w) noexcept {
    std::exception_ptr const abandoned = std::make_exception_ptr(abandoned_wait());
    waiter *const rest = w->m_next_waiter; // read first: a released waiter may be gone at once
    // A revoked heir is queued only at the head (it went back to the front, and no hand-off, so
    // no other heir, happens while it is queued). Its job is in flight: turn that into the
    // failure (relaxed, as above) instead of waking it a second time.
    std::uint8_t s = heir_revoked;
    if (!w->m_task || !heir_state_of(*w).compare_exchange_strong(s, heir_failed_held,
                                                                 std::memory_order_relaxed)) {
      release(w, abandoned);
    }
    release_all(rest, abandoned);
  }

  /// Under the lock: hands the popped task waiter `w` what was released, as the heir (there must
  /// be none). True if its resumption must be submitted — `w->wake()` after the lock is released;
  /// false if its job is still in flight (it was revoked), which then resumes it.
  bool make_heir(waiter &w) noexcept {
    MAGPIE_ASSERT(heir() == nullptr, "magpie: a second heir while one is pending");
    std::uint8_t s = heir_revoked;
    bool resubmit = true;
    // A revoked heir whose job has not run yet: hand it the lock again, and its job (still in
    // flight) resumes it, ending the hold its revoker took. release: our section → the job's
    // acquiring CAS. Else it is idle (no job in flight; only its job moves it off revoked);
    // acquire: that job's last touch of the waiter happens-before our reuse of it.
    if (heir_state_of(w).compare_exchange_strong(s, heir_handed_held, std::memory_order_release,
                                                 std::memory_order_acquire)) {
      resubmit = false;
    } else {
      w.m_run = &heir_run; // nothing else reads these until the resubmission
      w.m_slot = this;
      // release: as above (the resubmission orders it too).
      heir_state_of(w).store(heir_handed, std::memory_order_release);
    }
    // The heir even past the bound (then revoke_heir declines): its job touches us in
    // forget_heir, so the destructor must know of it.
    set_heir(&w);
    return resubmit;
  }

  /// Under the lock, with an heir: takes from the heir what it was handed, for a task of `mine`
  /// (null: never), if the heir is a task of that executor whose job has not started and whose
  /// revocations are not used up; the heir goes back to the head of the queue (the caller
  /// releases the lock with the waiters bit set and the heir's share now the revoker's). True if
  /// it did. A timed heir (its deadline's claim spent: requeued, it cannot time out any more) is
  /// revoked only with `timed_too`, which the primitive passes when every taker gives back what
  /// it took (a mutex's unlock), so the heir is handed the lock again soon; it is requeued as an
  /// untimed waiter.
  bool revoke_heir(core::executor *mine, bool timed_too = false) noexcept {
    waiter *const h = heir();
    core::executor *const home = h->m_task.home();
    if (mine == nullptr || home != mine || h->m_revocations >= max_revocations ||
        (h->m_has_deadline && !timed_too)) {
      // Another executor (a hold there would be costly), the bound, or a timed heir that a
      // release may never reach again (a semaphore's): queue.
      return false;
    }
    // relaxed: only the job moves a handed state (to idle), and it reads nothing we write here
    // but the state itself; the lock's history reaches us through the internal lock.
    std::uint8_t s = heir_state_of(*h).load(std::memory_order_relaxed);
    if (s == heir_handed) {
      // Parked again once revoked, the heir needs a hold (its resubmission ended the last one).
      try {
        home->hold();
      } catch (...) { // the executor is closing: let the hand-off stand
        return false;
      }
    } else if (s != heir_handed_held) {
      return false; // idle: its job has begun, the heir owns the lock now
    }
    std::uint8_t const seen = s;
    if (!heir_state_of(*h).compare_exchange_strong(s, heir_revoked, std::memory_order_relaxed)) {
      if (seen == heir_handed) {
        home->unhold(); // its job won the race: undo our hold
      }
      return false;
    }
    ++h->m_revocations;
    h->m_has_deadline = false; // its m_slot is ours now (make_heir): requeued untimed
    set_heir(nullptr);
    m_waiters.push_front(h);
    return true;
  }

#if defined(__linux__)
  /// Under the lock: queues the timed waiter `w` and arms its deadline (`arm`: null for a plain
  /// thread), or, if the timer heap cannot grow, queues nothing (false). Releases the lock
  /// either way, with the waiters bit as the queue now is.
  bool enqueue_timed(waiter &w, io::detail::timeout_node *arm) noexcept {
    bool const armed = m_waiters.push_timed(w, arm);
    bool const queued = !m_waiters.empty();
    // release (in unlock_with): the queued waiter and the bit, to the next lock holder.
    m_word.unlock_with([queued](word_t cur) { return queued ? (cur | waiters_bit) : cur; });
    return armed;
  }

  /// The deadline's side of a timed wait, after it claimed `w`: takes it out of the queue (where
  /// every other party left it), clearing the waiters bit if the queue is now empty. Its last
  /// touch of the primitive (the destructor waits for it).
  void take_out_expired(waiter &w) noexcept {
    m_word.lock();
    m_waiters.remove_expired(w);
    bool const queued = !m_waiters.empty();
    m_word.unlock_with([queued](word_t cur) { return queued ? cur : (cur & ~waiters_bit); });
  }
#endif

  lock_word m_word;
#if defined(__linux__)
  timed_queue m_waiters; // guarded by the lock; a mutex's or semaphore's may hold timed waiters
#else
  waiter_queue m_waiters; // guarded by the lock
#endif

  // relaxed: under the lock, which orders it; outside, a hint decided under the lock.
  waiter *heir() const noexcept { return m_heir.load(std::memory_order_relaxed); }

private:
  void set_heir(waiter *w) noexcept { m_heir.store(w, std::memory_order_relaxed); }

  /// An heir's job is running: forget it (under the lock), so that no revoker reads its waiter
  /// once the task goes on.
  void forget_heir(waiter *w) noexcept {
    m_word.lock();
    if (heir() == w) {
      set_heir(nullptr);
    }
    m_word.unlock();
  }

  /// The resumption job of the heir (make_heir; it replaces waiter::run).
  static void heir_run(core::job *j, core::context &worker) noexcept {
    auto *const w = static_cast<waiter *>(j);
    // acquire: the giver's section before its state change. release: the executor's reads of
    // this job (m_run, m_next) before a giver that sees idle reuses it. The CAS settles the race
    // with a revoker or a destructor, who change the state only while it is handed.
    std::uint8_t s = heir_state_of(*w).load(std::memory_order_acquire);
    while (!heir_state_of(*w).compare_exchange_weak(s, heir_idle, std::memory_order_acq_rel,
                                                    std::memory_order_acquire)) {
    }
    switch (s) {
    case heir_revoked:
      return; // a task took the lock meanwhile: we are queued again, parked, with a hold
    case heir_handed:
    case heir_handed_held:
      static_cast<heir_queue *>(w->m_slot)->forget_heir(w); // the lock is ours: it is alive
      break;
    case heir_failed:
    case heir_failed_held:
      w->m_error = std::make_exception_ptr(abandoned_wait()); // the lock is gone: touch nothing
      break;
    default: // idle: woken by a plain release (a destructor's failure of a queued waiter)
      break;
    }
    if (s == heir_handed_held || s == heir_failed_held) {
      w->m_task.home()->unhold();
    }
    core::ext::resume(w->m_task, worker);
  }

  /// The heir, if any (make_heir). Written under the lock; read under it, or outside it as a
  /// hint (a taker's try before it parks).
  std::atomic<waiter *> m_heir{nullptr};
};

} // namespace magpie::sync::detail
