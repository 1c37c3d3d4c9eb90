#pragma once
// magpie/sync/event.hpp — a manual- or auto-reset event that tasks wait on without blocking their
// worker, and plain threads wait on by blocking.
//
//   magpie::event ready;                                  // manual-reset, initially not set
//   co_await ready.wait();                                // in a task: suspends until set()
//   ready.set();                                          // any thread or task: wakes everyone
//
//   magpie::event item(magpie::event::reset::automatic);  // auto-reset: one set() releases one
//   co_await item.wait();                                 // waiter (the oldest), or the next
//                                                         // one to come if none waits
//
//   bool const passed = co_await ready.wait_for(10ms);    // in a task (Linux): false if 10 ms
//                                                         // passed first; wait_until(t) too
//   ready.wait_blocking_for(10ms);                        // the same from a plain thread
// Protocol and proof sketch: docs/protocols.md §9.8 ("event", "Timed waits").

#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <new>

#include "magpie/core/config.hpp"
#include "magpie/core/frame.hpp"
#include "magpie/sync/detail/blocking.hpp"
#include "magpie/sync/detail/lock_word.hpp"
#include "magpie/sync/detail/timed.hpp" // wait_for / wait_until (Linux)
#include "magpie/sync/detail/waiter.hpp"
#include "magpie/sync/suspend.hpp"

namespace magpie::sync {

/// An event: a flag that tasks and threads wait for.
///
/// Manual-reset (the default): `set()` sets the flag and releases every waiter; waits pass while
/// the flag is set; `reset()` clears it. Auto-reset: `set()` releases exactly one waiter, the
/// oldest (tasks and threads in one FIFO), leaving the flag clear; if none waits it sets the flag,
/// and the next wait (or try_wait) passes and clears it. Several set() calls with no waiter in
/// between count as one (a flag, not a counter: use a semaphore for that).
///
/// Every member may be called concurrently from any thread or task. A waiting task is suspended
/// (its worker runs other work). Destroying an event while tasks or threads wait on it releases
/// them with magpie::abandoned_wait thrown from their wait; any other use after destruction is
/// undefined. Cost: wait() on a set event and set() with no waiter are one atomic operation each,
/// and so are a wait that finds the event clear with nobody waiting (the waiter goes into the
/// event's word) and the set() that releases such a lone waiter; with more waiters, a short lock.
/// Each waiting task costs one suspension (one park and one resubmission).
class event
#if defined(__linux__)
    : public detail::timed_waits<event> // wait_for, wait_until, wait_blocking_for/_until: Linux
#endif
{
public:
  /// How the flag is cleared: by reset() only, or by the wait that it releases.
  enum class reset : std::uint8_t {
    manual,    ///< set() releases every waiter; the flag stays set until reset()
    automatic, ///< set() releases one waiter (FIFO); a set flag is consumed by one wait
  };

  /// An event of the given kind, set if `initially_set`.
  explicit event(enum reset mode = reset::manual, bool initially_set = false) noexcept
      : m_word(initially_set ? set_bit : 0), m_auto(mode == reset::automatic) {}
  event(event const &) = delete;
  event &operator=(event const &) = delete;

  /// Releases every task and thread still waiting with magpie::abandoned_wait (a timed wait
  /// whose deadline passed meanwhile may return false instead: whichever came first).
  ~event() {
    value_type const v = m_word.lock();
    detail::waiter *w = taken_all(v);
    // Left queued: timed waiters whose deadline claimed them first (none on other systems).
    bool const expiring = !m_waiters.empty();
    m_word.unlock_with(
        [expiring](value_type now) { return (now & set_bit) | (expiring ? queued_bit : 0); });
    if (w != nullptr) {
      detail::release_all(w, std::make_exception_ptr(abandoned_wait()));
    }
#if defined(__linux__)
    if (expiring) {
      detail::wait_out_expiring(m_word, m_waiters); // their deadline's side touches us until then
    }
#endif
  }

  /// Sets the event: manual-reset, releases every waiter; auto-reset, releases the oldest waiter
  /// or, if none, sets the flag. Any thread or task; never blocks (beyond the short lock).
  /// Everything the caller did before set() is visible to the waiters it releases. set() does not
  /// touch the event after the step that lets a waiter pass, so a waiter may destroy the event as
  /// soon as its wait returns, even while set() is still running.
  void set() noexcept {
    bool const automatic = m_auto; // read now: after the publishing step the event may be gone
    // acquire: a set flag means no waiter is queued (invariant below): nothing to do.
    value_type s = m_word.load(std::memory_order_acquire);
    // Unlocked, nobody queued: nobody waits, or one waiter in the word. One CAS publishes the
    // flag or takes that waiter (automatic: the hand-off consumes the set, the flag stays clear).
    while ((s & set_bit) == 0 && (s & ~solo_mask) == 0) {
      detail::waiter *const solo = solo_of(s);
      value_type const next = (solo == nullptr || !automatic) ? set_bit : 0;
      // acq_rel: acquire the lone waiter's fields (its enqueuing CAS released them); release
      // our writes to it and to the fast-path passers. The last touch of the event. On failure
      // acquire: a flag found set was published by a release.
      if (m_word.word().compare_exchange_weak(s, next, std::memory_order_acq_rel,
                                              std::memory_order_acquire)) {
        if (solo != nullptr) {
          solo->m_next_waiter = nullptr;
          detail::release(solo);
        }
        return;
      }
    }
    if ((s & set_bit) != 0) {
      return;
    }
    value_type const v = m_word.lock();
    detail::waiter *wake = nullptr;
    if (automatic) {
      if (solo_of(v) != nullptr) {
        wake = solo_of(v);
        wake->m_next_waiter = nullptr;
      } else {
        wake = m_waiters.take(1); // on Linux, skips timed waiters whose deadline claimed them
      }
    } else {
      wake = taken_all(v);
    }
    bool const publish = !automatic || wake == nullptr;
    bool const queued = !m_waiters.empty();
    // release (inside unlock_with): our writes → the waiters' fast-path acquire, and → the
    // released waiters (the lock's next holder, or their resumption through the executor).
    // The last touch of the event: from here on only locals and the taken waiters.
    m_word.unlock_with([publish, queued](value_type now) {
      return (now & set_bit) | (publish ? set_bit : 0) | (queued ? queued_bit : 0);
    });
    detail::release_all(wake);
  }

  /// Clears the flag. Waiters already released are not affected. Any thread or task.
  void reset() noexcept {
    m_word.word().fetch_and(~set_bit, std::memory_order_relaxed); // no edge: only the flag
  }

  /// True if the flag is set (a snapshot: another thread may change it at once).
  bool is_set() const noexcept {
    // acquire: pairs with set()'s releasing unlock_with.
    return (m_word.load(std::memory_order_acquire) & set_bit) != 0;
  }

  /// Passes if the flag is set, without waiting: manual-reset leaves it set, auto-reset consumes
  /// it. True if it passed.
  bool try_wait() noexcept { return try_pass(); }

  /// How many tasks and threads wait now (a snapshot, for diagnostics and tests; a timed wait
  /// counts until the reactor has taken it out, just after its deadline).
  std::size_t waiting() noexcept {
    value_type const v = m_word.lock();
    std::size_t const n = m_waiters.size() + (solo_of(v) != nullptr ? 1 : 0);
    m_word.unlock();
    return n;
  }

  /// The awaitable of wait(): suspends the task unless the event lets it pass. Internal.
  struct wait_awaitable : detail::wait_awaitable<wait_awaitable> {
    /// The event waited on.
    event *m_target = nullptr;
    /// Fast path, from await_ready: succeeds without suspending when it can
    /// (sync/detail/waiter.hpp).
    bool try_now() noexcept { return m_target->try_pass(); }
    /// Slow path, under the lock: succeeds now (true), or queues `w` to be resumed later (false).
    bool try_or_enqueue(detail::waiter &w) noexcept { return m_target->pass_or_enqueue(w); }
  };

  /// What wait() returns; co_await it in a magpie task.
  using wait_request = detail::task_request<wait_awaitable, event>;

  /// `co_await ev.wait()`: returns once the event lets the task pass (see the class comment),
  /// suspending the task meanwhile (its worker runs other work). Throws magpie::abandoned_wait if
  /// the event is destroyed first, std::logic_error (nothing waited) inside an unjoined fork–join
  /// scope, magpie::pool_closed on a pool being destroyed with nothing left to run.
  wait_request wait() noexcept { return {this}; }

  /// For plain threads (not tasks: a task would block its worker): blocks the calling thread
  /// until the event lets it pass. Throws magpie::abandoned_wait if the event is destroyed first,
  /// std::logic_error on a thread that runs a magpie task (even if the event is set).
  void wait_blocking() {
    detail::refuse_on_worker("magpie::event::wait_blocking inside a task would block its worker: "
                             "co_await ev.wait() instead");
    if (try_pass()) {
      return;
    }
    detail::blocking_waiter w;
    if (pass_or_enqueue(w)) {
      return;
    }
    w.block();
  }

private:
  using value_type = detail::lock_word::value_type;
  // The word: bit 0 the lock, bit 1 the flag, bit 2 "the queue is not empty", and the bits above
  // a lone waiter's address (waiters are 8-aligned) — the one waiter, when nobody else waits.
  static constexpr value_type set_bit = 2;
  static constexpr value_type queued_bit = 4;
  static constexpr value_type solo_mask = ~value_type{7};
  static_assert(alignof(detail::waiter) >= 8, "a waiter's address must leave the low 3 bits free");

  static detail::waiter *solo_of(value_type v) noexcept {
    return reinterpret_cast<detail::waiter *>(v & solo_mask);
  }

  /// Under the lock (`v`: the value bits it returned): every waiter, the oldest first, as a list
  /// linked by m_next_waiter; the queue is left empty. The lone waiter and the queue are never
  /// both non-empty (the second waiter moves the first into the queue).
  detail::waiter *taken_all(value_type v) noexcept {
    if (detail::waiter *const solo = solo_of(v)) {
      solo->m_next_waiter = nullptr;
      return solo;
    }
    return m_waiters.take_all();
  }

  bool try_pass() noexcept {
    // acquire: pairs with set()'s publishing CAS or unlock_with (its writes become ours).
    detail::lock_word::value_type s = m_word.load(std::memory_order_acquire);
    if (!m_auto) {
      return (s & set_bit) != 0;
    }
    // Auto-reset: consume the flag (the lock bit, whoever holds it, is kept). acquire: as above.
    while ((s & set_bit) != 0) {
      if (m_word.word().compare_exchange_weak(s, s & ~set_bit, std::memory_order_acquire)) {
        return true;
      }
    }
    return false;
  }

  // Invariant: if the flag is set, no waiter waits (none in the word; in the queue only timed
  // waiters whose deadline has claimed them, which the reactor is about to take out); a lone
  // waiter in the word means the queue is empty, and the queued bit says whether it is. A waiter
  // waits only after seeing the flag clear in the same atomic step that put it in the word, or
  // under the lock; only set() sets the flag: by a CAS from "nobody waits" (or, manual, from
  // "one waiter in the word", which it takes), or under the lock after emptying the queue
  // (manual) or only when nobody waits (automatic). try_pass and reset only clear it.
  bool pass_or_enqueue(detail::waiter &w) noexcept {
    // Nobody waits, no flag, no lock: into the word, one CAS. release: the waiter's fields →
    // the set() that takes it (acquire). Success is the point of no return.
    value_type expected = 0;
    if (m_word.word().compare_exchange_strong(expected, reinterpret_cast<value_type>(&w),
                                              std::memory_order_release,
                                              std::memory_order_relaxed)) {
      return false;
    }
    value_type const v = m_word.lock();
    if (try_pass()) {
      m_word.unlock(); // the flag was set: nobody waits, nothing else to keep
      return true;
    }
    if (detail::waiter *const solo = solo_of(v)) {
      m_waiters.push(solo); // the older one, first
    }
    m_waiters.push(&w);
    // The lone waiter's bits cleared, the queued bit set, the flag as it is (clear: only set()
    // sets it, and it needs the lock or an unlocked word). Point of no return.
    m_word.unlock_with([](value_type now) { return (now & set_bit) | queued_bit; });
    return false;
  }

#if defined(__linux__)
  friend struct detail::timed_access;

  static constexpr char const *timed_blocking_on_worker =
      "magpie::event::wait_blocking_for/_until inside a task would block its worker: "
      "co_await ev.wait_for(d) instead";

  /// Timed waits (detail/timed.hpp): a timed waiter never goes into the word, so that every
  /// set() takes the lock and can claim it. Passes now, or queues `w` (after a lone waiter,
  /// which is older) and arms its deadline, under the lock.
  detail::timed_outcome pass_or_enqueue_timed(detail::waiter &w,
                                              io::detail::timeout_node *arm) noexcept {
    value_type const v = m_word.lock();
    if (try_pass()) {
      m_word.unlock();
      return detail::timed_outcome::passed;
    }
    if (detail::waiter *const solo = solo_of(v)) {
      m_waiters.push(solo); // the older one, first
    }
    if (!m_waiters.push_timed(w, arm)) {
      bool const queued = !m_waiters.empty();
      m_word.unlock_with(
          [queued](value_type now) { return (now & set_bit) | (queued ? queued_bit : 0); });
      return detail::timed_outcome::out_of_memory;
    }
    // As pass_or_enqueue: the lone waiter's bits cleared, the queued bit set. Point of no return.
    m_word.unlock_with([](value_type now) { return (now & set_bit) | queued_bit; });
    return detail::timed_outcome::queued;
  }

  /// The deadline's side, after it claimed `w`: takes it out of the queue, where every other
  /// party left it. Its last touch of the event (the destructor waits for it).
  void take_out_expired(detail::waiter &w) noexcept {
    m_word.lock();
    m_waiters.remove_expired(w);
    bool const queued = !m_waiters.empty();
    m_word.unlock_with(
        [queued](value_type now) { return (now & set_bit) | (queued ? queued_bit : 0); });
  }
#endif

  detail::lock_word m_word; // the lock, the flag, the queued bit, a lone waiter (see above)
  bool const m_auto;
#if defined(__linux__)
  detail::timed_queue m_waiters; // guarded by the lock; may hold timed waiters
#else
  detail::waiter_queue m_waiters; // guarded by the lock
#endif
};

} // namespace magpie::sync
