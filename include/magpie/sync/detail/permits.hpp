#pragma once
// magpie/sync/detail/permits.hpp — a count of permits with a FIFO of waiters and direct hand-off:
// the core of magpie::semaphore and magpie::mutex (a mutex is one permit). Protocol and proof
// sketch: docs/protocols.md §9.4.
//
// The state is one word: bit 0 the lock_word's lock, bit 1 "waiters are queued", bits 2.. the
// number of free permits. The rule that makes every decision simple: the word changes only by a
// CAS whose expected value has the lock bit CLEAR, or by the holder of the lock. So under the lock
// the state is frozen, and the fast paths (one CAS each) never race with a decision taken under
// it. Invariant whenever the lock is free: waiters bit ⇔ the queue is non-empty ⇒ no free permit.
//
// Direct hand-off: give() with waiters queued passes each permit to the oldest waiter (popped
// under the lock, woken after it) instead of adding it to the count; the count never goes up while
// anybody waits, so a late-comer's fast path cannot barge past a queued waiter.
//
// Revocable hand-off (give, try_take_or_revoke, take_or_enqueue(w, true)): a task handed a
// permit while there is no heir becomes the *heir* until its resumption job starts. A task of the
// same executor that takes meanwhile, finding no free permit, may revoke the hand-off — it takes
// the heir's permit, the heir goes back to the head of the queue — at most max_revocations times
// per wait. This ends the lock convoy of strict hand-off (a holder that releases and takes again
// at once no longer queues behind a waiter that has not even started running). The heir's state
// lives in its waiter (heir_state), is changed only by CAS (its job against a revoker or a
// destructor), and the heir's job clears m_heir under the lock before the task runs, so nobody
// reads a waiter whose task has gone on. There is at most one heir; a waiter handed a permit
// while another heir is pending (a semaphore's other holder released) is handed it for good.
// docs/protocols.md §9.4 and §9.6, docs/models/mutex_heir.pml.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <utility>

#include "magpie/core/config.hpp"
#include "magpie/sync/detail/blocking.hpp"
#include "magpie/sync/detail/lock_word.hpp"
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
  heir_idle = 0,    ///< no job in flight (queued, or never handed)
  heir_handed,      ///< handed a permit; job in flight; no hold (the resubmission ended it)
  heir_handed_held, ///< handed a permit; job in flight; one hold, which the job ends
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

/// True if the calling thread runs a magpie task (a worker, or a sync_wait thread inside its
/// task). Blocking forms (lock_blocking …) refuse to run there: they would block the worker.
inline bool on_worker_thread() noexcept { return core::this_context() != nullptr; }

class permits {
public:
  using word_t = lock_word::value_type;
  static constexpr word_t waiters_bit = 2;
  static constexpr word_t one = 4;
  /// The largest count the word holds.
  static constexpr std::size_t max_count = static_cast<std::size_t>(~word_t{0} >> 2);

  explicit permits(std::size_t initial) noexcept : m_word(static_cast<word_t>(initial) * one) {}
  permits(permits const &) = delete;
  permits &operator=(permits const &) = delete;

  /// How many times one wait's hand-off may be revoked (the bound on a mutex's unfairness: a
  /// waiter handed the mutex lets at most this many critical sections of others go first).
  static constexpr std::uint8_t max_revocations = 32;

  /// Fails every waiter with abandoned_wait (the owner is being destroyed): the queued ones, and
  /// an heir whose job has not started (it never ran holding the mutex).
  ~permits() {
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
    waiter *const w = m_waiters.take_all();
    m_word.unlock();
    if (w == nullptr) {
      return; // nobody waits: no exception made (it allocates)
    }
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

  /// Takes one permit if one is free and nobody waits. Never spurious: if the lock is held by
  /// someone else, decides under it.
  bool try_take() noexcept {
    // acquire: a permit given by give()'s release CAS (or unlock_with) brings the giver's writes.
    word_t s = m_word.load(std::memory_order_acquire);
    while ((s & lock_word::locked) == 0) {
      if (s < one) {
        return false; // no free permit (the waiters bit implies none)
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
    waiter *to_resubmit = nullptr;        // the new heir, unless its job is still in flight
    while (n > 0 && !m_waiters.empty()) { // one permit each, oldest first: direct hand-off
      waiter *const w = m_waiters.pop();
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

  /// Waiters now (a snapshot, for diagnostics and tests).
  std::size_t waiting() noexcept {
    m_word.lock();
    std::size_t const n = m_waiters.size();
    m_word.unlock();
    return n;
  }

private:
  /// Under the lock, for give(): hands the popped task waiter `w` the permit as the heir. True if
  /// its resumption must be submitted (after the lock is released); false if its job is still in
  /// flight (it was revoked), which then resumes it.
  bool make_heir(waiter &w) noexcept {
    std::uint8_t s = heir_revoked;
    bool resubmit = true;
    // A revoked heir whose job has not run yet: hand it the permit again, and its job (still in
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
    if (mine != nullptr && heir() != nullptr && revoke_heir(mine)) {
      // release (in unlock_with): the requeued heir and the waiters bit, to the next lock holder.
      m_word.unlock_with([](word_t cur) { return cur | waiters_bit; });
      return true;
    }
    return false;
  }

  /// Under the lock, with an heir and no permit free: takes the permit from the heir for a task
  /// of `mine` if the heir is a task of that executor whose job has not started; the heir goes
  /// back to the head of the queue. True if it did.
  bool revoke_heir(core::executor *mine) noexcept {
    waiter *const h = heir();
    core::executor *const home = h->m_task.home();
    if (home != mine || h->m_revocations >= max_revocations) {
      return false; // another executor (a hold there would be costly), or the bound: queue
    }
    // relaxed: only the job moves a handed state (to idle), and it reads nothing we write here
    // but the state itself; the permit's history reaches us through the internal lock.
    std::uint8_t s = heir_state_of(*h).load(std::memory_order_relaxed);
    if (s == heir_handed) {
      // Parked again once revoked, the heir needs a hold (its resubmission ended the last one).
      try {
        home->hold();
      } catch (...) { // the executor is closing: let the hand-off stand
        return false;
      }
    } else if (s != heir_handed_held) {
      return false; // idle: its job has begun, the heir owns the mutex now
    }
    std::uint8_t const seen = s;
    if (!heir_state_of(*h).compare_exchange_strong(s, heir_revoked, std::memory_order_relaxed)) {
      if (seen == heir_handed) {
        home->unhold(); // its job won the race: undo our hold
      }
      return false;
    }
    ++h->m_revocations;
    set_heir(nullptr);
    m_waiters.push_front(h);
    return true;
  }

  /// An heir's job is running: forget it (under the lock), so that no revoker reads its waiter
  /// once the task goes on.
  void forget_heir(waiter *w) noexcept {
    m_word.lock();
    if (heir() == w) {
      set_heir(nullptr);
    }
    m_word.unlock();
  }

  /// The resumption job of the heir (give, make_heir; it replaces waiter::run).
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
      return; // a locker took the mutex meanwhile: we are queued again, parked, with a hold
    case heir_handed:
    case heir_handed_held:
      static_cast<permits *>(w->m_slot)->forget_heir(w); // the mutex is ours: it is alive
      break;
    case heir_failed:
    case heir_failed_held:
      w->m_error = std::make_exception_ptr(abandoned_wait()); // the mutex is gone: touch nothing
      break;
    default: // idle: woken by a plain release (a destructor's failure of a queued waiter)
      break;
    }
    if (s == heir_handed_held || s == heir_failed_held) {
      w->m_task.home()->unhold();
    }
    core::ext::resume(w->m_task, worker);
  }

  lock_word m_word;
  waiter_queue m_waiters; // guarded by the lock
  /// The heir, if any (make_heir). Written under the lock; read under it, or outside
  /// it as a hint (try_revoke).
  std::atomic<waiter *> m_heir{nullptr};
  // relaxed: under the lock, which orders it; outside, a hint decided under the lock.
  waiter *heir() const noexcept { return m_heir.load(std::memory_order_relaxed); }
  void set_heir(waiter *w) noexcept { m_heir.store(w, std::memory_order_relaxed); }
};

/// The awaitable of a task's take from `permits` (semaphore::acquire; mutex::lock has its own,
/// which also yields a guard): never suspends if a permit is free or an heir's can be revoked.
struct take_awaitable : wait_awaitable<take_awaitable> {
  permits *m_permits = nullptr;
  bool try_now() noexcept { return m_permits->try_take_or_revoke(*m_frame); }
  bool try_or_enqueue(waiter &w) noexcept {
    return m_permits->take_or_enqueue(w, /*may_revoke=*/true);
  }
};

/// Blocks the calling plain thread until it has a permit. Throws std::logic_error on a thread
/// that runs a magpie task (`what` names the task form to use instead), abandoned_wait if the
/// primitive is destroyed first.
inline void take_blocking(permits &p, char const *what) {
  if (on_worker_thread()) {
    throw std::logic_error(what);
  }
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
