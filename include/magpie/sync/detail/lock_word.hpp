#pragma once
// magpie/sync/detail/lock_word.hpp — a primitive's state word with a lock in its lowest bit.
//
// Critical sections under it are a few loads and stores (no allocation, no user code, no waking),
// so a test-and-test-and-set lock beats std::mutex's futex path when two workers meet on a
// channel. A holder may be preempted (more threads than cores): after a few dozen spins the
// waiting thread yields instead of burning its time slice.
//
// The other bits belong to the primitive (an event's flag, a latch's count) and may be read
// without the lock. `unlock_with` publishes the new value and releases the lock in ONE atomic
// step: that step is the releaser's last touch of the primitive. This is what makes it safe for
// a waiter that sees the published value on its fast path to destroy the primitive at once (the
// usual "signal, then the waiter frees the event" pattern): the releaser is already done with it.

#include <atomic>
#include <cstdint>

#include "magpie/core/detail/pause.hpp"

namespace magpie::sync::detail {

using core::detail::spin_pause; // pause 64 times, then yield (core/detail/pause.hpp)

class lock_word {
public:
  using value_type = std::uintptr_t;
  static constexpr value_type locked = 1; ///< the lock bit; the primitive's values are even

  explicit lock_word(value_type initial = 0) noexcept : m_word(initial) {}

  /// The word (lock bit included). `order` as the caller documents.
  value_type load(std::memory_order order) const noexcept { return m_word.load(order); }
  std::atomic<value_type> &word() noexcept { return m_word; }

  /// Takes the lock; returns the word's value bits at that moment.
  value_type lock() noexcept {
    value_type s = m_word.load(std::memory_order_relaxed);
    // acquire: the previous holder's section (its releasing CAS or fetch_and) happens-before ours.
    if ((s & locked) == 0 && m_word.compare_exchange_weak(s, s | locked, std::memory_order_acquire))
        [[likely]] {
      return s;
    }
    return lock_slow();
  }

  /// Releases the lock, keeping the value bits (which others may have changed meanwhile).
  void unlock() noexcept {
    m_word.fetch_and(~locked, std::memory_order_release); // release: our section → next holder
  }

  /// Releases the lock and sets the value bits to `update(current value bits)` in one step.
  template <typename Update>
  void unlock_with(Update update) noexcept {
    value_type s = m_word.load(std::memory_order_relaxed);
    // release: our section, and everything before it, → whoever acquires the new value (a
    // waiter's fast path or the next holder). The last touch of the primitive.
    while (!m_word.compare_exchange_weak(s, update(s & ~locked), std::memory_order_release,
                                         std::memory_order_relaxed)) {
    }
  }

  /// BasicLockable, for std::lock_guard.
  struct guard {
    lock_word &w;
    explicit guard(lock_word &l) noexcept : w(l) { w.lock(); }
    ~guard() { w.unlock(); }
    guard(guard const &) = delete;
    guard &operator=(guard const &) = delete;
  };

private:
  [[gnu::noinline]] value_type lock_slow() noexcept {
    for (unsigned spins = 0;;) {
      value_type s = m_word.load(std::memory_order_relaxed); // a hint; the CAS acquires
      if ((s & locked) == 0) {
        // acquire: as lock().
        if (m_word.compare_exchange_weak(s, s | locked, std::memory_order_acquire,
                                         std::memory_order_relaxed)) {
          return s;
        }
        continue;
      }
      spin_pause(spins);
    }
  }

  std::atomic<value_type> m_word;
};

} // namespace magpie::sync::detail
