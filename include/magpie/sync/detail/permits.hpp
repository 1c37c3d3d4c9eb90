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

  /// Fails every queued waiter with abandoned_wait (the owner is being destroyed).
  ~permits() { release_all(m_waiters.take_all(), std::make_exception_ptr(abandoned_wait())); }

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
  /// the queue: a giver may hand it a permit and wake it as soon as the lock is released.
  bool take_or_enqueue(waiter &w) noexcept {
    word_t const v = m_word.lock();
    if (v >= one) {
      m_word.unlock_with([](word_t cur) { return cur - one; });
      return true;
    }
    m_waiters.push(&w);
    // release (in unlock_with): the queued waiter and the waiters bit, to the next lock holder.
    m_word.unlock_with([](word_t cur) { return cur | waiters_bit; });
    return false;
  }

  /// Gives `n` permits: each goes to the oldest waiter while any waits (woken after the lock is
  /// released), the rest to the count. `check(free_before)` is called under the lock (or on the
  /// fast path) with the count before the gift, to diagnose misuse (a mutex unlocked twice);
  /// it must not return if it fails. The last touch of the primitive is the releasing CAS (or
  /// unlock_with): a woken waiter may destroy the primitive at once.
  template <typename Check>
  void give(std::size_t n, Check check) noexcept {
    word_t s = m_word.load(std::memory_order_relaxed);
    while ((s & (lock_word::locked | waiters_bit)) == 0) {
      check(static_cast<std::size_t>(s / one), n);
      // release: what the giver did before give() → whoever takes these permits (acquire).
      if (m_word.word().compare_exchange_weak(s, s + static_cast<word_t>(n) * one,
                                              std::memory_order_release,
                                              std::memory_order_relaxed)) {
        return;
      }
    }
    word_t const v = m_word.lock(); // waiters queued, or someone holds the lock
    check(static_cast<std::size_t>(v / one), n);
    waiter *head = nullptr;
    waiter **tail = &head;
    while (n > 0 && !m_waiters.empty()) { // one permit each, oldest first: direct hand-off
      waiter *w = m_waiters.pop();
      *tail = w;
      tail = &w->m_next_waiter;
      --n;
    }
    *tail = nullptr;
    bool const still_waiting = !m_waiters.empty();
    // release: our writes (and the permits) → the next lock holder and the fast paths; then the
    // woken waiters, whose resumption is ordered after this by the executor's queue.
    m_word.unlock_with([&](word_t cur) {
      word_t c = (cur & ~waiters_bit) + static_cast<word_t>(n) * one;
      return still_waiting ? (c | waiters_bit) : c;
    });
    hand_to_all(head); // point of no return for each; we touch nothing of the primitive now
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
  lock_word m_word;
  waiter_queue m_waiters; // guarded by the lock
};

/// The awaitable of a take from `permits`: never suspends if a permit is free. For the requests
/// of mutex::lock and semaphore::acquire.
struct take_awaitable : wait_awaitable<take_awaitable> {
  permits *m_permits = nullptr;
  bool try_now() noexcept { return m_permits->try_take(); }
  bool try_or_enqueue(waiter &w) noexcept { return m_permits->take_or_enqueue(w); }
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
