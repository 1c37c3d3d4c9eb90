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
// Protocol and proof sketch: docs/protocols.md §9.8 ("event").

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>

#include "magpie/core/frame.hpp"
#include "magpie/sync/detail/blocking.hpp"
#include "magpie/sync/detail/lock_word.hpp"
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
/// undefined. Cost: wait() on a set event and set() with no waiter are one atomic operation each;
/// otherwise a short lock, and a suspension (one park and one resubmission) per waiting task.
class event {
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

  /// Releases every task and thread still waiting with magpie::abandoned_wait.
  ~event() { detail::abandon_all(m_word, m_waiters); }

  /// Sets the event: manual-reset, releases every waiter; auto-reset, releases the oldest waiter
  /// or, if none, sets the flag. Any thread or task; never blocks (beyond the short lock).
  /// Everything the caller did before set() is visible to the waiters it releases. set() does not
  /// touch the event after the step that lets a waiter pass, so a waiter may destroy the event as
  /// soon as its wait returns, even while set() is still running.
  void set() noexcept {
    // acquire: a set flag means no waiter is queued (invariant below): nothing to do.
    if ((m_word.load(std::memory_order_acquire) & set_bit) != 0) {
      return;
    }
    bool const automatic = m_auto; // read now: after unlock_with the event may be gone
    m_word.lock();
    detail::waiter *wake = automatic ? m_waiters.pop() : m_waiters.take_all();
    bool const publish = !automatic || wake == nullptr;
    // release (inside unlock_with): our writes → the waiters' fast-path acquire, and → the
    // released waiters (the lock's next holder, or their resumption through the executor).
    // The last touch of the event: from here on only locals and the taken waiters.
    m_word.unlock_with([publish](auto v) { return publish ? (v | set_bit) : v; });
    if (automatic) {
      if (wake != nullptr) {
        detail::release(wake); // one waiter: its m_next_waiter is stale (pop does not clear it)
      }
    } else {
      detail::release_all(wake);
    }
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

  /// How many tasks and threads wait now (a snapshot, for diagnostics and tests).
  std::size_t waiting() noexcept { return detail::locked_size(m_word, m_waiters); }

  /// The awaitable of wait(): suspends the task unless the event lets it pass. Internal.
  struct wait_awaitable : detail::wait_awaitable<wait_awaitable> {
    /// The event waited on.
    event *m_event = nullptr;
    /// Fast path, from await_ready: succeeds without suspending when it can
    /// (sync/detail/waiter.hpp).
    bool try_now() noexcept { return m_event->try_pass(); }
    /// Slow path, under the lock: succeeds now (true), or queues `w` to be resumed later (false).
    bool try_or_enqueue(detail::waiter &w) noexcept { return m_event->pass_or_enqueue(w); }
  };

  /// What wait() returns; co_await it in a magpie task.
  struct [[nodiscard("co_await it")]] wait_request {
    /// Marks the request as awaitable inside a magpie task.
    using magpie_awaitable = void;
    /// The event waited on.
    event *m_event;
    /// Binds the request to the awaiting task (co_await does this) and returns the awaitable.
    wait_awaitable magpie_bind(core::frame_base &self) && {
      wait_awaitable a;
      a.m_event = m_event;
      return detail::bind_waiter(std::move(a), self);
    }
  };

  /// `co_await ev.wait()`: returns once the event lets the task pass (see the class comment),
  /// suspending the task meanwhile (its worker runs other work). Throws magpie::abandoned_wait if
  /// the event is destroyed first, std::logic_error (nothing waited) inside an unjoined fork–join
  /// scope, magpie::pool_closed on a pool being destroyed with nothing left to run.
  wait_request wait() noexcept { return {this}; }

  /// For plain threads (not tasks: a task would block its worker): blocks the calling thread
  /// until the event lets it pass. Throws magpie::abandoned_wait if the event is destroyed first.
  void wait_blocking() {
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
  static constexpr detail::lock_word::value_type set_bit = 2;

  bool try_pass() noexcept {
    // acquire: pairs with set()'s releasing unlock_with (its writes become ours).
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

  // Invariant, under the lock: if the flag is set, no waiter is queued. A waiter is queued only
  // after seeing the flag clear under the lock, and only set() sets it: under the same lock,
  // emptying the queue as it does (manual) or only when the queue is empty (automatic).
  // try_pass and reset only clear it.
  bool pass_or_enqueue(detail::waiter &w) noexcept {
    m_word.lock();
    bool const passed = try_pass();
    if (!passed) {
      m_waiters.push(&w);
    }
    m_word.unlock();
    return passed;
  }

  detail::lock_word m_word; // bit 0: the lock; bit 1: the flag
  bool const m_auto;
  detail::waiter_queue m_waiters; // guarded by the lock
};

} // namespace magpie::sync
