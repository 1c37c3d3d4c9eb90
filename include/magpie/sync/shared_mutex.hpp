#pragma once
// magpie/sync/shared_mutex.hpp — a readers/writer lock on which tasks suspend.
//
//   magpie::shared_mutex rw;
//   { auto g = co_await rw.scoped_lock_shared(); read(); }   // many readers at once
//   { auto g = co_await rw.scoped_lock();        write(); }  // one writer, no readers
//
// Policy: one FIFO for readers and writers, direct hand-off. A reader passes at once only if no
// writer holds the lock and nobody is queued; otherwise it queues — behind any waiting writer, so
// a stream of readers cannot starve a writer. A writer passes only if the lock is entirely free
// and nobody is queued. When the last holder leaves, the lock goes to the head of the queue: a
// writer alone, or the whole run of consecutive readers at the head together (they may all hold
// it at once: each is handed its own share, not invited to race for it).
//
// A writer task handed the lock is revocable until its resumption starts, as magpie::mutex's
// (detail/heir_queue.hpp): a task of the same pool that locks meanwhile — exclusively or shared —
// takes the lock back, and the writer returns to the head of the queue, at most fairness_bound
// times per wait. Readers are handed their shares for good. Neither side starves: every waiter
// is served after at most the waiters queued before it and fairness_bound revocations.
//
// On Linux either side can be waited for with a deadline (try_lock_for, try_lock_shared_for, and
// their _until and _blocking_ forms): a waiter whose deadline passes leaves the queue, and the
// waiters its departure unblocks are granted the lock at once (readers behind a writer that gave
// up, when readers hold it).
// Protocol and proof sketch: docs/protocols.md §9.5 (and §9.8, "Timed takes: the shared_mutex").

#include <cstddef>
#include <exception>
#include <stdexcept>
#include <utility>
#if defined(__linux__)
#  include <chrono>
#endif

#include "magpie/core/config.hpp"
#include "magpie/core/frame.hpp"
#include "magpie/sync/detail/blocking.hpp"
#include "magpie/sync/detail/heir_queue.hpp"
#include "magpie/sync/detail/lock_word.hpp"
#include "magpie/sync/detail/permits.hpp"
#include "magpie/sync/detail/timed.hpp" // the timed locks (Linux)
#include "magpie/sync/detail/waiter.hpp"
#include "magpie/sync/guard.hpp"

namespace magpie::sync {

class shared_mutex;

namespace detail {
#if defined(__linux__)
/// One side of a shared_mutex (exclusive or shared) as a primitive of timed.hpp's timed waits: an
/// empty base of shared_mutex whose members forward to it with the side fixed.
template <bool Exclusive>
class shared_mutex_side {
  friend struct timed_access;
  friend class sync::shared_mutex;
  bool try_pass() noexcept;
  bool try_pass(core::frame_base &self) noexcept;
  timed_outcome pass_or_enqueue_timed(waiter &w, io::detail::timeout_node *arm) noexcept;
  void take_out_expired(waiter &w) noexcept;
  sync::shared_mutex &owner() noexcept;
};
#endif
} // namespace detail

/// A readers/writer lock for tasks and (blocking) plain threads, FIFO-fair with direct hand-off
/// and a writer's revocable hand-off (see the top of this file). Ownership is not tied to a thread
/// (tasks move between workers). Not recursive, no upgrade. Every member may be called
/// concurrently from any thread or task. Destroying it while tasks or threads wait (or a writer
/// task handed the lock has not resumed yet) makes their lock throw magpie::abandoned_wait.
///
/// Cost: an uncontended lock, lock_shared, unlock or unlock_shared is one CAS; otherwise a short
/// internal spin lock, and a suspension (one park, one resubmission) per waiting task.
class shared_mutex : private detail::heir_queue
#if defined(__linux__)
    ,
                     private detail::shared_mutex_side<true>,
                     private detail::shared_mutex_side<false>
#endif
{
public:
  /// How many times a waiting writer's hand-off may be revoked by tasks that lock meanwhile: the
  /// bound on the lock's unfairness (see the top of this file).
  static constexpr std::size_t fairness_bound = max_revocations;

  /// An unlocked shared_mutex.
  shared_mutex() noexcept : heir_queue(0) {}
  shared_mutex(shared_mutex const &) = delete;
  shared_mutex &operator=(shared_mutex const &) = delete;
  /// Releases every task and thread still waiting with magpie::abandoned_wait (and a writer
  /// handed the lock whose resumption has not started), then waits until the deadlines of timed
  /// waiters that had already claimed their waits have taken them out (they call into this
  /// object, so it happens here, not in the base's destructor).
  ~shared_mutex() { shut_down(); }

  /// The awaitable of every lock request; `Guard` is what the co_await returns. Internal.
  template <bool Exclusive, typename Guard>
  struct lock_awaitable : detail::wait_awaitable<lock_awaitable<Exclusive, Guard>> {
    /// The shared_mutex to lock.
    shared_mutex *m_target = nullptr;
    /// Fast path, from await_ready: succeeds without suspending when it can, taking the lock
    /// free or from a writer heir (sync/detail/waiter.hpp).
    bool try_now() noexcept {
      return m_target->try_take(Exclusive) ||
             m_target->try_revoke(Exclusive, core::ext::worker_of(*this->m_frame).home());
    }
    /// Slow path, under the lock: succeeds now (true), or queues `w` to be resumed later (false).
    bool try_or_enqueue(detail::waiter &w) noexcept {
      return m_target->take_or_enqueue(w, Exclusive, w.m_task.home());
    }
    /// What the co_await returns.
    Guard resume_value() const noexcept {
      if constexpr (!std::is_void_v<Guard>) {
        return Guard(*m_target, std::adopt_lock);
      }
    }
  };

  /// What the lock functions return; co_await it in a magpie task.
  template <bool Exclusive, typename Guard>
  using lock_request = detail::task_request<lock_awaitable<Exclusive, Guard>, shared_mutex>;

  /// `co_await m.lock()`: exclusive ownership, suspending the task meanwhile. Throws
  /// magpie::abandoned_wait if the lock is destroyed first, std::logic_error (nothing waited)
  /// inside an unjoined fork–join scope, magpie::pool_closed on a pool being destroyed.
  lock_request<true, void> lock() noexcept { return {this}; }
  /// `co_await m.lock_shared()`: shared ownership; as lock() otherwise.
  lock_request<false, void> lock_shared() noexcept { return {this}; }
  /// `auto g = co_await m.scoped_lock()`: as lock(), returning a guard that unlocks.
  lock_request<true, unique_guard<shared_mutex>> scoped_lock() noexcept { return {this}; }
  /// `auto g = co_await m.scoped_lock_shared()`: as lock_shared(), returning a guard.
  lock_request<false, shared_guard<shared_mutex>> scoped_lock_shared() noexcept { return {this}; }

  /// Exclusive ownership if the lock is free and nobody waits; never waits, never spurious.
  bool try_lock() noexcept { return try_take(true); }
  /// Shared ownership if no writer holds the lock and nobody waits; never waits, never spurious.
  bool try_lock_shared() noexcept { return try_take(false); }

  /// Releases exclusive ownership, handing the lock to the head of the queue (see the top of the
  /// file). Any thread or task. Precondition (checked, always): held exclusively.
  void unlock() noexcept {
    word_t s = writer;
    // release: the writer's section → the next holder's acquire (fast path: nobody queued).
    if (m_word.word().compare_exchange_strong(s, 0, std::memory_order_release,
                                              std::memory_order_relaxed)) {
      return;
    }
    word_t const v = m_word.lock();
    MAGPIE_CHECK((v & writer) != 0, "magpie::shared_mutex::unlock: not locked exclusively");
    release_and_grant(v & ~writer);
  }

  /// Releases one shared ownership; the last reader out hands the lock to a queued writer. Any
  /// thread or task. Precondition (checked, always): held shared.
  void unlock_shared() noexcept {
    word_t s = m_word.load(std::memory_order_relaxed);
    while ((s & (lock_word::locked | waiters_bit)) == 0) {
      MAGPIE_CHECK(s >= reader, "magpie::shared_mutex::unlock_shared: not locked shared");
      // release: the reader's section → the next writer's acquire.
      if (m_word.word().compare_exchange_weak(s, s - reader, std::memory_order_release,
                                              std::memory_order_relaxed)) {
        return;
      }
    }
    word_t const v = m_word.lock();
    MAGPIE_CHECK(v >= reader, "magpie::shared_mutex::unlock_shared: not locked shared");
    release_and_grant(v - reader);
  }

  /// For plain threads (not tasks: a task would block its worker): blocks until the calling
  /// thread holds the lock exclusively. Throws std::logic_error on a thread that runs a magpie
  /// task, magpie::abandoned_wait if the lock is destroyed first.
  void lock_blocking() { take_blocking(true); }
  /// As lock_blocking(), for shared ownership.
  void lock_shared_blocking() { take_blocking(false); }

#if defined(__linux__)
  /// `bool const locked = co_await m.try_lock_until(t)`: as lock(), giving up at `t` — true if
  /// the task holds the lock exclusively (pair it with unlock()), false if `t` came first. The
  /// waiter keeps its place in the FIFO until then; a wait whose turn came before `t` returns
  /// true. A deadline already reached does not suspend: true only if the lock succeeds at once.
  /// Any clock's time point is converted to io::clock. While it waits the task holds its pool (the
  /// pool's destructor waits for the deadline). Throws what lock() throws, and std::bad_alloc if
  /// the reactor's timer heap cannot grow. With GCC 12.2 bind the result to a variable
  /// (docs/guarantees.md, L3b).
  template <typename Clock, typename Duration>
  detail::timed_wait_request<detail::shared_mutex_side<true>>
  try_lock_until(std::chrono::time_point<Clock, Duration> t) {
    return detail::wait_until_request(side<true>(), t);
  }
  /// `co_await m.try_lock_for(d)`: try_lock_until(now + d), reading the clock once; a zero or
  /// negative `d` does not wait.
  template <typename Rep, typename Period>
  detail::timed_wait_request<detail::shared_mutex_side<true>>
  try_lock_for(std::chrono::duration<Rep, Period> d) {
    return detail::wait_for_request(side<true>(), d);
  }
  /// `co_await m.try_lock_shared_until(t)`: as try_lock_until, for shared ownership (pair it
  /// with unlock_shared()).
  template <typename Clock, typename Duration>
  detail::timed_wait_request<detail::shared_mutex_side<false>>
  try_lock_shared_until(std::chrono::time_point<Clock, Duration> t) {
    return detail::wait_until_request(side<false>(), t);
  }
  /// `co_await m.try_lock_shared_for(d)`: try_lock_shared_until(now + d).
  template <typename Rep, typename Period>
  detail::timed_wait_request<detail::shared_mutex_side<false>>
  try_lock_shared_for(std::chrono::duration<Rep, Period> d) {
    return detail::wait_for_request(side<false>(), d);
  }

  /// For plain threads: as lock_blocking(), giving up at `t` — true if the thread holds the lock
  /// exclusively, false if `t` came first (a deadline already reached: true only if it is free
  /// now). Throws std::logic_error on a thread that runs a magpie task, magpie::abandoned_wait if
  /// the lock is destroyed first. The thread keeps its own time (no reactor).
  template <typename Clock, typename Duration>
  bool try_lock_blocking_until(std::chrono::time_point<Clock, Duration> t) {
    return detail::timed_blocking_until(side<true>(), t, timed_blocking_on_worker);
  }
  /// try_lock_blocking_until(now + d); a zero or negative `d` does not wait.
  template <typename Rep, typename Period>
  bool try_lock_blocking_for(std::chrono::duration<Rep, Period> d) {
    return detail::timed_blocking_for(side<true>(), d, timed_blocking_on_worker);
  }
  /// As try_lock_blocking_until, for shared ownership.
  template <typename Clock, typename Duration>
  bool try_lock_shared_blocking_until(std::chrono::time_point<Clock, Duration> t) {
    return detail::timed_blocking_until(side<false>(), t, timed_blocking_on_worker);
  }
  /// try_lock_shared_blocking_until(now + d).
  template <typename Rep, typename Period>
  bool try_lock_shared_blocking_for(std::chrono::duration<Rep, Period> d) {
    return detail::timed_blocking_for(side<false>(), d, timed_blocking_on_worker);
  }
#endif

  /// Tasks and threads waiting now (a snapshot, for diagnostics and tests).
  using heir_queue::waiting;

private:
#if defined(__linux__)
  friend class detail::shared_mutex_side<true>;
  friend class detail::shared_mutex_side<false>;

  static constexpr char const *timed_blocking_on_worker =
      "magpie::shared_mutex::try_lock_blocking_for/_until (or _shared_) inside a task would block "
      "its worker: co_await m.try_lock_for(d) (or try_lock_shared_for) instead";

  template <bool Exclusive>
  detail::shared_mutex_side<Exclusive> &side() noexcept {
    return *this;
  }

  /// The timed wait's slow path, under the lock: takes the lock as take_or_enqueue (passed), or
  /// queues `w` and arms its deadline (`arm`; null for a plain thread): queued, or out_of_memory
  /// (nothing queued) if the timer heap cannot grow.
  detail::timed_outcome pass_or_enqueue_timed(detail::waiter &w, bool exclusive,
                                              io::detail::timeout_node *arm) noexcept {
    if (take_locked(m_word.lock(), exclusive, w.m_task ? w.m_task.home() : nullptr)) {
      return detail::timed_outcome::passed;
    }
    w.m_exclusive = exclusive;
    return detail::queued_or_out_of_memory(enqueue_timed(w, arm));
  }

  /// The deadline's side of a timed wait, after it claimed `w`: takes it out and grants the lock
  /// to the waiters its departure unblocks (a writer that gave up at the head, with readers
  /// behind it and readers holding; or the lock left free by a grant that found only waiters
  /// whose deadlines had claimed them). Its last touch of the lock (the destructor waits for it).
  void take_out_timed(detail::waiter &w) noexcept {
    word_t const v = m_word.lock();
    m_waiters.remove_expired(w);
    release_and_grant(v);
  }
#endif

  using lock_word = detail::lock_word;
  // The word: bit 0 the lock_word's lock, bit 1 "waiters queued", bit 2 "a writer holds it",
  // bits 3.. the readers holding it. As in detail/permits.hpp, the word changes only by a CAS
  // whose expected value has the lock bit clear, or by the lock's holder. Invariants while the
  // lock is free: waiters bit ⇔ queue non-empty ⇒ somebody holds the lock; never writer and
  // readers at once; readers > 0 with a non-empty queue ⇒ the head is a writer; an heir ⇒ it
  // is a writer and holds the lock alone (writer bit, no readers).
  static constexpr word_t writer = 4;
  static constexpr word_t reader = 8;

  static bool can_take(word_t v, bool exclusive) noexcept {
    return exclusive ? v == 0 : (v & (waiters_bit | writer)) == 0;
  }

  bool try_take(bool exclusive) noexcept {
    // acquire: the previous holder's releasing CAS or unlock_with → our section.
    word_t s = m_word.load(std::memory_order_acquire);
    while ((s & lock_word::locked) == 0) {
      if (!can_take(s, exclusive)) {
        return false;
      }
      // acquire: as above.
      if (m_word.word().compare_exchange_weak(s, s + (exclusive ? writer : reader),
                                              std::memory_order_acquire,
                                              std::memory_order_acquire)) {
        return true;
      }
    }
    word_t const v = m_word.lock(); // decide under the lock, where the word is frozen
    bool const took = can_take(v, exclusive);
    m_word.unlock_with(
        [&](word_t cur) { return took ? cur + (exclusive ? writer : reader) : cur; });
    return took;
  }

  /// Under the lock (`v`: the word lock() returned): takes the lock free, or, for a task of
  /// `mine` (null: never), from the writer heir (revoke_heir); either way releases the lock and
  /// returns true. False, still holding the lock, if neither.
  bool take_locked(word_t v, bool exclusive, core::executor *mine) noexcept {
    if (can_take(v, exclusive)) {
      m_word.unlock_with([&](word_t cur) { return cur + (exclusive ? writer : reader); });
      return true;
    }
    // A timed heir may be revoked too (timed_too): every holder gives the lock back, so the heir,
    // requeued untimed at the head, is handed it again at the next release.
    if (heir() != nullptr && revoke_heir(mine, /*timed_too=*/true)) {
      // The heir held the lock alone; it is the revoker's now, and the heir heads the queue.
      // release (in unlock_with): the requeued heir and the waiters bit, to the next lock holder.
      m_word.unlock_with([exclusive](word_t cur) {
        return ((cur & ~writer) + (exclusive ? writer : reader)) | waiters_bit;
      });
      return true;
    }
    return false;
  }

  /// For a task's lock before it parks (`mine`: the task's executor): takes the lock from a
  /// writer heir of `mine` whose job has not started, as take_or_enqueue would; false (having
  /// changed nothing) if there is no such heir or no lock comes of it.
  bool try_revoke(bool exclusive, core::executor *mine) noexcept {
    if (heir() == nullptr) {
      return false; // the common case: no lock taken
    }
    if (take_locked(m_word.lock(), exclusive, mine)) {
      return true; // freed meanwhile, or revoked
    }
    m_word.unlock();
    return false;
  }

  /// Under the lock: takes the lock (true), or queues `w` (false). A task of `mine` (null for a
  /// thread: never) may take it from a writer heir (take_locked).
  bool take_or_enqueue(detail::waiter &w, bool exclusive, core::executor *mine) noexcept {
    if (take_locked(m_word.lock(), exclusive, mine)) {
      return true;
    }
    w.m_exclusive = exclusive; // the tag (make_heir sets a writer heir's m_slot itself)
    m_waiters.push(&w);
    // release: the queued waiter → the next lock holder (who may hand it the lock).
    m_word.unlock_with([](word_t cur) { return cur | waiters_bit; });
    return false;
  }

  /// Under the lock, with `v` the word once the caller's ownership is dropped (or unchanged, for
  /// a waiter that left): grants the lock to whom the queue's order lets in now (grant_locked);
  /// releases the lock; wakes whoever was granted it. A writer task becomes the heir (there is
  /// none: an heir holds the lock, so nobody releases it while one is pending).
  void release_and_grant(word_t v) noexcept {
    detail::waiter *to_resubmit = nullptr; // the new heir, unless its job is still in flight
    detail::waiter *const head = grant_locked(v, to_resubmit); // handed for good
    // release: our section and the grant → the next lock holder and the fast paths; the woken
    // waiters are ordered after this by their executor's queue (or their blocking mutex).
    m_word.unlock_with([v](word_t) { return v; });
    if (to_resubmit != nullptr) {
      to_resubmit->wake(); // point of no return (a revoker may already have requeued it: its job
                           // is then a no-op)
    }
    detail::hand_to_all(head); // point of no return for each; the primitive is not touched again
  }

  /// Under the lock: unlinks the waiters the lock can be granted to now, oldest first — if nobody
  /// holds it (`v`, less the waiters bit, is 0), the first waiter it can take and, if that is a
  /// reader, the readers after it up to the next writer; if only readers hold it, the readers at
  /// the head up to the first writer. A timed waiter whose deadline claimed it is skipped (it
  /// stays queued for its deadline's side, which grants again once it has left). A writer task
  /// granted the lock becomes the heir (`to_resubmit`, if its job must be submitted); the others
  /// are returned, linked, to be handed the lock for good. Sets `v` to the word to release:
  /// the holders and the waiters bit as the queue now is.
  detail::waiter *grant_locked(word_t &v, detail::waiter *&to_resubmit) noexcept {
    word_t const held = v & ~waiters_bit;
    if ((held & writer) != 0) { // a writer holds it (the caller was not that writer)
      v = m_waiters.empty() ? held : (held | waiters_bit);
      return nullptr;
    }
    using scan = detail::waiter_queue::scan;
    word_t readers = 0;
    bool took_writer = false;
    detail::waiter *granted = m_waiters.take_until([&](detail::waiter &w) {
      if (took_writer) {
        return scan::stop;
      }
      if (w.m_exclusive) {
        if (deadline_claimed(w)) {
          return scan::skip; // leaving: it blocks nobody
        }
        if (held != 0 || readers != 0) {
          return scan::stop; // readers hold it (or go in now): the writer waits its turn
        }
        if (!claim_for_take(w)) {
          return scan::skip; // its deadline claimed it just now
        }
        took_writer = true;
        return scan::take;
      }
      if (!claim_for_take(w)) {
        return scan::skip;
      }
      readers += reader;
      return scan::take;
    });
    word_t next = held + readers;
    if (took_writer) {
      next = writer;
      if (granted->m_task) { // a task: the heir (a plain thread is handed it for good)
        if (make_heir(*granted)) {
          to_resubmit = granted;
        }
        granted = nullptr;
      }
    }
    v = m_waiters.empty() ? next : (next | waiters_bit);
    return granted;
  }

  /// Whether `w` is a timed waiter whose deadline has claimed it (it is leaving the queue); a
  /// hint that is exact once true: nobody unclaims.
  static bool deadline_claimed(detail::waiter &w) noexcept {
#if defined(__linux__)
    io::detail::timeout_node *const node = detail::timed_node(w);
    // acquire: pairs with the claiming exchange; nothing else is read through it.
    return node != nullptr && node->m_claimed.load(std::memory_order_acquire);
#else
    static_cast<void>(w);
    return false;
#endif
  }

  /// Whether the grant may take `w`: an untimed waiter, or a timed one this side claims now.
  bool claim_for_take(detail::waiter &w) noexcept {
#if defined(__linux__)
    return m_waiters.claim_for_take(w);
#else
    static_cast<void>(w);
    return true;
#endif
  }

  void take_blocking(bool exclusive) {
    detail::refuse_on_worker("magpie::shared_mutex: a blocking lock inside a task would block "
                             "its worker: co_await m.lock() / m.lock_shared() instead");
    if (try_take(exclusive)) {
      return;
    }
    detail::blocking_waiter w;
    if (take_or_enqueue(w, exclusive, nullptr)) {
      return;
    }
    w.block();
  }
};

#if defined(__linux__)
namespace detail {
template <bool Exclusive>
sync::shared_mutex &shared_mutex_side<Exclusive>::owner() noexcept {
  return static_cast<sync::shared_mutex &>(*this);
}
template <bool Exclusive>
bool shared_mutex_side<Exclusive>::try_pass() noexcept {
  return owner().try_take(Exclusive);
}
template <bool Exclusive>
bool shared_mutex_side<Exclusive>::try_pass(core::frame_base &self) noexcept {
  return owner().try_take(Exclusive) ||
         owner().try_revoke(Exclusive, core::ext::worker_of(self).home());
}
template <bool Exclusive>
timed_outcome
shared_mutex_side<Exclusive>::pass_or_enqueue_timed(waiter &w,
                                                    io::detail::timeout_node *arm) noexcept {
  return owner().pass_or_enqueue_timed(w, Exclusive, arm);
}
template <bool Exclusive>
void shared_mutex_side<Exclusive>::take_out_expired(waiter &w) noexcept {
  owner().take_out_timed(w);
}
} // namespace detail
#endif

} // namespace magpie::sync
