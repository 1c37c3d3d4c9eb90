#pragma once
// magpie/sync/latch.hpp — a single-use countdown that tasks wait on without blocking their worker.
//
//   magpie::latch done(n);
//   ... n times, from any thread or task: done.count_down();
//   co_await done.wait();                 // in a task: suspends until the count reaches zero
//   done.wait_blocking();                 // from a plain thread
//   bool const all = co_await done.wait_for(50ms);  // Linux: false if 50 ms passed first
//   done.wait_blocking_for(50ms);         // the same from a plain thread
//
// Protocol and proof sketch: docs/protocols.md §9.9 ("latch").

#include <chrono>
#include <cstddef>
#include <exception>
#include <stdexcept>

#include "magpie/core/frame.hpp"
#include "magpie/sync/detail/blocking.hpp"
#include "magpie/sync/detail/lock_word.hpp"
#include "magpie/sync/detail/timed.hpp" // wait_for / wait_until (Linux)
#include "magpie/sync/detail/waiter.hpp"
#include "magpie/sync/suspend.hpp"

namespace magpie::sync {

/// A latch (as std::latch, for tasks): a count set at construction that count_down() lowers;
/// waits pass once it is zero, and it never rises again.
///
/// Every member may be called concurrently from any thread or task. The count_down that reaches
/// zero releases every waiter (tasks and threads); everything done before any count_down is
/// visible to every waiter after its wait. That count_down does not touch the latch after the
/// step that lets waiters pass, so a waiter may destroy the latch as soon as its wait returns.
/// Destroying a latch while tasks or threads wait releases them with magpie::abandoned_wait.
/// Cost: count_down is one CAS (plus, at zero, the short lock and a wake per waiter); a wait on
/// an open latch is one load.
class latch
#if defined(__linux__)
    : public detail::timed_waits<latch> // wait_for, wait_until, wait_blocking_for/_until: Linux
#endif
{
public:
  /// The largest count a latch can hold.
  static constexpr std::ptrdiff_t max() noexcept {
    return static_cast<std::ptrdiff_t>(~detail::lock_word::value_type{0} >> 2);
  }

  /// A latch with count `expected`. Throws std::invalid_argument unless 0 ≤ expected ≤ max().
  explicit latch(std::ptrdiff_t expected) : m_word(encode(checked(expected))) {}
  latch(latch const &) = delete;
  latch &operator=(latch const &) = delete;

  /// Releases every task and thread still waiting with magpie::abandoned_wait (a timed wait
  /// whose deadline passed meanwhile may return false instead: whichever came first).
  ~latch() {
#if defined(__linux__)
    detail::abandon_all_timed(m_word, m_waiters);
#else
    detail::abandon_all(m_word, m_waiters);
#endif
  }

  /// Lowers the count by `n`; at zero, releases every waiter. Any thread or task; never blocks
  /// (beyond the short lock). Throws std::logic_error, changing nothing, if n < 0 or n exceeds
  /// the count (more arrivals than the latch was made for).
  void count_down(std::ptrdiff_t n = 1) {
    if (n < 0) {
      throw std::logic_error("magpie::latch::count_down: negative n");
    }
    value s = m_word.load(std::memory_order_relaxed);
    for (;;) {
      std::ptrdiff_t const c = decode(s);
      if (n > c) {
        throw std::logic_error("magpie::latch::count_down: the count would go below zero (more "
                               "arrivals than the latch was made for)");
      }
      if (n == 0) {
        return;
      }
      if (n < c) {
        // release: our writes → the count_down that reaches zero (which acquires the count
        // through its lock's CAS, an RMW in the same release sequence), and on to the waiters.
        if (m_word.word().compare_exchange_weak(s, s - encode(n), std::memory_order_release,
                                                std::memory_order_relaxed)) {
          return;
        }
        continue;
      }
      break; // n == c: we reach zero; do it under the lock
    }
    std::ptrdiff_t const c = decode(m_word.lock());
    if (n != c) { // another count_down took some of the count meanwhile: n > c now
      m_word.unlock();
      throw std::logic_error("magpie::latch::count_down: the count would go below zero (more "
                             "arrivals than the latch was made for)");
    }
    detail::waiter *all = m_waiters.take_all();
    // release: everything before every count_down → waiters (fast path acquire, or through the
    // executor's resubmission after this). The last touch of the latch.
    m_word.unlock_with([](value) { return value{0}; });
    detail::release_all(all);
  }

  /// True if the count is zero. Never blocks.
  bool try_wait() const noexcept {
    return decode(m_word.load(std::memory_order_acquire)) == 0; // acquire: pairs with zero's CAS
  }

  /// How many tasks and threads wait now (a snapshot, for diagnostics and tests).
  std::size_t waiting() noexcept { return detail::locked_size(m_word, m_waiters); }

  /// The awaitable of wait() and arrive_and_wait(). Internal.
  struct wait_awaitable : detail::wait_awaitable<wait_awaitable> {
    /// The latch waited on.
    latch *m_latch = nullptr;
    /// Fast path, from await_ready: succeeds without suspending when it can
    /// (sync/detail/waiter.hpp).
    bool try_now() noexcept { return m_latch->try_wait(); }
    /// Slow path, under the lock: succeeds now (true), or queues `w` to be resumed later (false).
    bool try_or_enqueue(detail::waiter &w) noexcept { return m_latch->pass_or_enqueue(w); }
  };

  /// What wait() and arrive_and_wait() return; co_await it in a magpie task.
  struct [[nodiscard("co_await it")]] wait_request {
    /// Marks the request as awaitable inside a magpie task.
    using magpie_awaitable = void;
    /// The latch waited on.
    latch *m_latch;
    /// How much to count down before waiting (0 for wait(), n for arrive_and_wait(n)).
    std::ptrdiff_t m_arrive;
    /// Binds the request to the awaiting task (co_await does this) and returns the awaitable.
    wait_awaitable magpie_bind(core::frame_base &self) && {
      wait_awaitable a;
      a.m_latch = m_latch;
      detail::bind_waiter(a, self); // may throw: no arrival
      m_latch->count_down(m_arrive);
      return a;
    }
  };

  /// `co_await l.wait()`: returns once the count is zero, suspending the task meanwhile (its
  /// worker runs other work). Throws magpie::abandoned_wait if the latch is destroyed first,
  /// std::logic_error inside an unjoined fork–join scope (nothing waited).
  wait_request wait() noexcept { return {this, 0}; }

  /// `co_await l.arrive_and_wait(n)`: count_down(n), then wait(). Throws as count_down (then it
  /// neither arrived nor waited) and as wait().
  wait_request arrive_and_wait(std::ptrdiff_t n = 1) noexcept { return {this, n}; }

  /// For plain threads (a task would block its worker): blocks until the count is zero. Throws
  /// magpie::abandoned_wait if the latch is destroyed first, std::logic_error on a thread that
  /// runs a magpie task (even if the count is zero).
  void wait_blocking() {
    detail::refuse_on_worker("magpie::latch::wait_blocking inside a task would block its worker: "
                             "co_await l.wait() instead");
    if (try_wait()) {
      return;
    }
    detail::blocking_waiter w;
    if (!pass_or_enqueue(w)) {
      w.block();
    }
  }

  /// count_down(n), then wait_blocking(). On a thread that runs a magpie task it throws
  /// std::logic_error and neither arrives nor waits.
  void arrive_and_wait_blocking(std::ptrdiff_t n = 1) {
    detail::refuse_on_worker("magpie::latch::arrive_and_wait_blocking inside a task would block "
                             "its worker (it did not arrive): co_await l.arrive_and_wait(n) "
                             "instead");
    count_down(n);
    wait_blocking();
  }

private:
  using value = detail::lock_word::value_type;
  static value encode(std::ptrdiff_t c) noexcept { return static_cast<value>(c) << 1; }
  static std::ptrdiff_t decode(value s) noexcept { return static_cast<std::ptrdiff_t>(s >> 1); }
  static std::ptrdiff_t checked(std::ptrdiff_t expected) {
    if (expected < 0 || expected > max()) {
      throw std::invalid_argument("magpie::latch: the count must be in [0, latch::max()]");
    }
    return expected;
  }

  // Under the lock the count cannot reach zero (the count_down that reaches it takes the lock),
  // so a waiter that sees it non-zero here is queued before that count_down empties the queue.
  bool pass_or_enqueue(detail::waiter &w) noexcept {
    bool const open = decode(m_word.lock()) == 0; // the lock's acquire: as try_wait
    if (!open) {
      m_waiters.push(&w);
    }
    m_word.unlock();
    return open;
  }

#if defined(__linux__)
  friend struct detail::timed_access;

  static constexpr char const *timed_blocking_on_worker =
      "magpie::latch::wait_blocking_for/_until inside a task would block its worker: "
      "co_await l.wait_for(d) instead";

  bool try_pass() const noexcept { return try_wait(); }

  /// Timed waits (detail/timed.hpp): passes now, or queues `w` and arms its deadline, under the
  /// lock (as pass_or_enqueue).
  detail::timed_outcome pass_or_enqueue_timed(detail::waiter &w,
                                              io::detail::timeout_node *arm) noexcept {
    bool const open = decode(m_word.lock()) == 0; // the lock's acquire: as try_wait
    detail::timed_outcome outcome = detail::timed_outcome::passed;
    if (!open) {
      outcome = detail::queued_or_out_of_memory(m_waiters.push_timed(w, arm));
    }
    m_word.unlock(); // queued: the point of no return
    return outcome;
  }

  /// The deadline's side, after it claimed `w`: takes it out of the queue. Its last touch of
  /// the latch (the destructor waits for it).
  void take_out_expired(detail::waiter &w) noexcept {
    m_word.lock();
    m_waiters.remove_expired(w);
    m_word.unlock();
  }

  detail::lock_word m_word;      // bit 0: the lock; the rest: the count
  detail::timed_queue m_waiters; // guarded by the lock; may hold timed waiters
#else
  detail::lock_word m_word;       // bit 0: the lock; the rest: the count
  detail::waiter_queue m_waiters; // guarded by the lock
#endif
};

} // namespace magpie::sync
