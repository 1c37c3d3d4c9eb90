#pragma once
// magpie/core/detail/thread_wait.hpp — a plain thread waits for a one-shot completion.
//
// One word per wait, three values; the waiting thread polls it for a while (4 to 100 µs, adapted
// per thread to how long its recent waits took), then sleeps on one of a few static
// mutex/condition-variable slots. Used wherever a plain thread waits
// for something a worker finishes: sync_wait's root, a future's get(), and a plain thread queued
// in a synchronisation primitive (sync/detail/blocking.hpp). Protocol: docs/protocols.md §9.1.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <ctime>
#include <mutex>
#include <thread>
#include <utility>

#include "magpie/core/detail/pause.hpp"

namespace magpie::core::detail {

/// A one-shot completion that one plain thread may wait for: `pending`, `done`, or
/// `thread_waiting` (the waiter sleeps). The completer exchanges `done` in and, if it took
/// `thread_waiting` out, calls notify_thread(key). Words that also hold other states (a future's
/// word holds a waiting task's address) share the three values.
inline constexpr std::uintptr_t word_pending = 0;
inline constexpr std::uintptr_t word_done = 1;
inline constexpr std::uintptr_t word_thread_waiting = 2;

/// Where plain threads sleep: a few mutex/condition-variable pairs shared by all waits (by the
/// address of what is waited for), so that it carries none and may be gone as soon as its waiter
/// has seen `done`: the completer touches only the slot (static) after its exchange.
struct thread_wait_slot {
  std::mutex mutex;
  std::condition_variable cv;
};
inline thread_wait_slot &thread_wait_slot_of(void const *key) noexcept {
  static thread_wait_slot slots[16];
  auto const a = reinterpret_cast<std::uintptr_t>(key);
  return slots[(a >> 6) % 16];
}

/// The completer's side, after its exchange returned `word_thread_waiting`: wakes the waiter.
/// `key` is only an address here (what it named may be gone).
inline void notify_thread(void const *key) noexcept {
  thread_wait_slot &slot = thread_wait_slot_of(key);
  {
    // The waiter checks the word under the mutex: once we have held it, the waiter is either
    // waiting on the cv (it released the mutex there) or will see `done` when it takes it.
    std::lock_guard lock(slot.mutex);
  }
  // After the release (the slot is static, so it outlives every wait): a waiter woken while we
  // still held the mutex would block on it once more on its way out of wait(), a second wake-up.
  // The slot's other waits just look again.
  slot.cv.notify_all();
}

/// How long a plain thread polls before it sleeps: at least `poll_floor` (less than a sleep and a
/// wake-up cost the two threads, ~6 µs on a VM), at most `poll_ceiling`. Per thread, adapted after
/// each wait (`adapt_poll`): a thread that waits again and again for work of a few tens of
/// microseconds (a loop called from main, a future read right after a short task) polls long
/// enough to see the end without a sleep and a wake-up (~15-20 µs on a VM); a thread whose waits
/// are long goes back to the floor within a few waits.
inline constexpr std::chrono::nanoseconds poll_floor{4'000};
inline constexpr std::chrono::nanoseconds poll_ceiling{100'000};
/// Past this much polling the thread yields its core between polls: on a machine with more
/// runnable threads than cores, the workers it waits for get the core.
inline constexpr std::chrono::nanoseconds poll_yield_after{8'000};

/// Set on a thread that has just woken a sleeping worker (the pool's wake-up, src/pool/sleep.cpp),
/// cleared by its next wait_for_done, which then yields its core between polls from the start:
/// the operating system often queues the woken worker on the waker's own core, where polling
/// without yielding would hold it off until the waker's time slice ends.
inline bool &woke_a_sleeper() noexcept {
  thread_local bool woke = false;
  return woke;
}

/// The calling thread's polling budget (thread_wait.hpp; tests read it).
inline std::chrono::nanoseconds &poll_budget() noexcept {
  thread_local std::chrono::nanoseconds budget = poll_floor;
  return budget;
}

/// How a wait ended: seen while polling, seen while polling but on a shared core (while it
/// yielded, the thread got less than half of the time: another runnable thread, perhaps the worker
/// it waits for, shares its core), or after a sleep.
enum class wait_end : unsigned char { polled, shared, slept };

/// After a wait of `took` that ended as `how`: a wait longer than poll_ceiling halves the budget;
/// one on a shared core drops it to the floor (the thread soon sleeps, and the operating system
/// wakes it on an idle core: a thread that spins beside the worker it waits for delays it); one
/// that slept yet ended within poll_ceiling raises the budget to twice its length (so that the
/// next one like it ends while polling); one that ended while polling keeps it. Between floor
/// and ceiling always.
inline void adapt_poll(std::chrono::nanoseconds took, wait_end how) noexcept {
  std::chrono::nanoseconds &budget = poll_budget();
  if (took > poll_ceiling) {
    budget = std::max(poll_floor, budget / 2);
  } else if (how == wait_end::shared) {
    budget = poll_floor;
  } else if (how == wait_end::slept) {
    budget = std::clamp(2 * took, budget, poll_ceiling);
  }
}

/// CPU time the calling thread has used (a system call: read only once a poll yields).
inline std::chrono::nanoseconds thread_cpu_now() noexcept {
  timespec ts{};
  (void)clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

/// The waiting thread's side: blocks until `word` is `word_done` (acquire: the completer's writes
/// are visible), or until `deadline` (then false). It first polls for its thread's poll_budget()
/// — or until the deadline if sooner (a deadline already past: no polling), yielding its core
/// between polls after poll_yield_after; while it polls the word stays `pending`, so a completion
/// then costs neither side a system call. Then it announces itself (`pending` →
/// `thread_waiting`) and sleeps on the slot of `key`. Protocol: docs/protocols.md §9.1.
template <typename Clock, typename Duration>
bool wait_for_done(std::atomic<std::uintptr_t> &word, void const *key,
                   std::chrono::time_point<Clock, Duration> const *deadline) {
  using std::chrono::steady_clock;
  auto const is_done = [&] { return word.load(std::memory_order_acquire) == word_done; };
  auto const start = steady_clock::now();
  auto const until = start + poll_budget();
  auto const yield_from = std::exchange(woke_a_sleeper(), false) ? start : start + poll_yield_after;
  steady_clock::time_point yielding_since{}; // the first yield; then the CPU time at that point
  std::chrono::nanoseconds cpu_since{0};
  // Whether the thread shared its core while it yielded (less than half the time on its CPU,
  // over at least 2 µs of yielding).
  auto const shared = [&](steady_clock::time_point now) {
    if (yielding_since == steady_clock::time_point{} ||
        now - yielding_since < std::chrono::microseconds(2)) {
      return false;
    }
    return 2 * (thread_cpu_now() - cpu_since) < now - yielding_since;
  };
  auto const finish_polled = [&] { // after a yield: was the core shared?
    auto const now = steady_clock::now();
    adapt_poll(now - start, shared(now) ? wait_end::shared : wait_end::polled);
  };
  for (;;) {
    if (deadline != nullptr && Clock::now() >= *deadline) {
      break;
    }
    for (int i = 0; i < 32; ++i) {
      if (is_done()) {
        if (yielding_since != steady_clock::time_point{}) {
          finish_polled(); // else: ended within the budget before any yield: the budget stays
        }
        return true;
      }
      cpu_pause();
    }
    auto const now = steady_clock::now();
    if (now >= until) {
      break;
    }
    if (now >= yield_from) {
      if (yielding_since == steady_clock::time_point{}) {
        yielding_since = now;
        cpu_since = thread_cpu_now();
      }
      std::this_thread::yield();
    }
  }
  bool const shared_core = shared(steady_clock::now()); // before a sleep blurs it
  auto const finish_after_sleep = [&] {
    adapt_poll(steady_clock::now() - start, shared_core ? wait_end::shared : wait_end::slept);
  };
  std::uintptr_t w = word_pending;
  // acq_rel; on failure acquire: a result that became ready meanwhile is visible.
  if (!word.compare_exchange_strong(w, word_thread_waiting, std::memory_order_acq_rel,
                                    std::memory_order_acquire) &&
      w == word_done) {
    finish_after_sleep();
    return true;
  }
  bool done = true;
  {
    thread_wait_slot &slot = thread_wait_slot_of(key);
    std::unique_lock lock(slot.mutex);
    // The completer stores `done` before taking this mutex to notify: we either see `done` here,
    // or are waiting (the mutex released) when it notifies.
    if (deadline == nullptr) {
      slot.cv.wait(lock, is_done);
    } else {
      done = slot.cv.wait_until(lock, *deadline, is_done);
    }
  }
  finish_after_sleep();
  return done;
}

/// wait_for_done without a deadline. A word already `done` (a root that ran on the caller) costs
/// one load: no clock read.
inline void wait_for_done(std::atomic<std::uintptr_t> &word, void const *key) {
  if (word.load(std::memory_order_acquire) == word_done) { // acquire: as in the polls
    return;
  }
  (void)wait_for_done(word, key,
                      static_cast<std::chrono::steady_clock::time_point const *>(nullptr));
}

/// The completer's whole side for a word that holds only the three values: stores `done`
/// (acq_rel: release publishes what the completer wrote before) and wakes a sleeping waiter. The
/// last touch of `word`: once `done` is in, the waiter may return and free it; only the address
/// `key` is used after.
inline void set_done(std::atomic<std::uintptr_t> &word, void const *key) noexcept {
  if (word.exchange(word_done, std::memory_order_acq_rel) == word_thread_waiting) {
    notify_thread(key);
  }
}

} // namespace magpie::core::detail
