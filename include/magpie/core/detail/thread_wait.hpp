#pragma once
// magpie/core/detail/thread_wait.hpp — a plain thread waits for a one-shot completion.
//
// One word per wait, three values; the waiting thread polls it for a few microseconds, then
// sleeps on one of a few static mutex/condition-variable slots. Used wherever a plain thread waits
// for something a worker finishes: sync_wait's root, a future's get(), and a plain thread queued
// in a synchronisation primitive (sync/detail/blocking.hpp). Protocol: docs/protocols.md §9.1.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

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
  std::lock_guard lock(slot.mutex); // the waiter checks the word under it: waiting, or will see
  slot.cv.notify_all();             // done (the slot's other waits just look again)
}

/// The waiting thread's side: blocks until `word` is `word_done` (acquire: the completer's writes
/// are visible), or until `deadline` (then false). It first polls for up to 4 µs — less than a
/// sleep and a wake-up cost the two threads (~6 µs on a VM) — or until the deadline if sooner (a
/// deadline already past: no polling); while it polls the word stays `pending`, so a completion
/// then costs neither side a system call. Then it announces itself (`pending` →
/// `thread_waiting`) and sleeps on the slot of `key`. Protocol: docs/protocols.md §9.1.
template <typename Clock, typename Duration>
bool wait_for_done(std::atomic<std::uintptr_t> &word, void const *key,
                   std::chrono::time_point<Clock, Duration> const *deadline) {
  auto const is_done = [&] { return word.load(std::memory_order_acquire) == word_done; };
  auto const until = std::chrono::steady_clock::now() + std::chrono::microseconds(4);
  for (;;) {
    if (deadline != nullptr && Clock::now() >= *deadline) {
      break;
    }
    for (int i = 0; i < 32; ++i) {
      if (is_done()) {
        return true;
      }
      cpu_pause();
    }
    if (std::chrono::steady_clock::now() >= until) {
      break;
    }
  }
  std::uintptr_t w = word_pending;
  // acq_rel; on failure acquire: a result that became ready meanwhile is visible.
  if (!word.compare_exchange_strong(w, word_thread_waiting, std::memory_order_acq_rel,
                                    std::memory_order_acquire) &&
      w == word_done) {
    return true;
  }
  thread_wait_slot &slot = thread_wait_slot_of(key);
  std::unique_lock lock(slot.mutex);
  // The completer stores `done` before taking this mutex to notify: we either see `done` here,
  // or are waiting (the mutex released) when it notifies.
  if (deadline == nullptr) {
    slot.cv.wait(lock, is_done);
    return true;
  }
  return slot.cv.wait_until(lock, *deadline, is_done);
}

/// wait_for_done without a deadline.
inline void wait_for_done(std::atomic<std::uintptr_t> &word, void const *key) {
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
