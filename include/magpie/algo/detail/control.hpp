#pragma once
// magpie/algo/detail/control.hpp — the state one call of a parallel algorithm shares among its
// tasks: cancellation (a stop token, an internal stop flag, the enclosing algorithm's control),
// the first exception, and the adaptive chunk size. See docs/algorithms.md.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <exception>
#include <utility>

#include "magpie/algo/stop_token.hpp"
#include "magpie/core/config.hpp"

namespace magpie::algo::detail {

class loop_control;

inline thread_local loop_control const *tls_current_loop = nullptr;

/// The control of the algorithm whose chunk is running on this thread, or null. Out of line, like
/// core::this_context(): Clang may otherwise cache a thread_local's address across a suspension.
MAGPIE_NOINLINE inline loop_control const *current_loop() noexcept { return tls_current_loop; }

/// Installs `c` as this thread's running algorithm; returns the previous one.
MAGPIE_NOINLINE inline loop_control const *set_current_loop(loop_control const *c) noexcept {
  loop_control const *old = tls_current_loop;
  tls_current_loop = c;
  return old;
}

/// Sets this thread's running algorithm for one chunk (synchronous code: no suspension inside).
class current_loop_scope {
public:
  explicit current_loop_scope(loop_control const *c) noexcept : m_old(set_current_loop(c)) {}
  current_loop_scope(current_loop_scope const &) = delete;
  current_loop_scope &operator=(current_loop_scope const &) = delete;
  ~current_loop_scope() { set_current_loop(m_old); }

private:
  loop_control const *m_old;
};

/// Chunk durations the adaptive policy aims for (docs/algorithms.md, "Adaptive splitting"): a
/// chunk shorter than `grow_below` doubles the chunk size, one longer than `shrink_above` halves
/// it. Between checks a thief waits at most about one chunk.
inline constexpr std::chrono::nanoseconds grow_below{250};
inline constexpr std::chrono::nanoseconds shrink_above{2000};
/// Once settled, a task re-times one chunk in `resample_every`.
inline constexpr unsigned resample_every = 64;

class loop_control {
public:
  /// `grain` 0 = adaptive chunks; `parent`: the enclosing algorithm's control (may be null).
  loop_control(std::size_t grain, stop_token token, loop_control const *parent) noexcept
      : m_parent(parent), m_token(std::move(token)), m_chunk(grain == 0 ? 1 : grain),
        m_settled(grain != 0), m_fixed(grain != 0) {}
  loop_control(loop_control const &) = delete;
  loop_control &operator=(loop_control const &) = delete;

  /// Any thread: whether iterations not yet started should be skipped.
  bool stopped() const noexcept {
    for (loop_control const *c = this; c != nullptr; c = c->m_parent) {
      // relaxed: a hint that ends the loop early; results travel through the join.
      if (c->m_stop.load(std::memory_order_relaxed) || c->m_token.stop_requested()) {
        return true;
      }
    }
    return false;
  }

  /// Any thread: stops this algorithm (not its parent). Idempotent.
  void request_stop() noexcept {
    m_stop.store(true, std::memory_order_relaxed); // no edge: see stopped()
  }

  /// Any thread: records `e` if it is the first exception, and stops the algorithm. A later one is
  /// destroyed here (exactly one reaches the caller; none is leaked).
  void fail(std::exception_ptr e) noexcept {
    // acq_rel: exactly one thread wins the slot; the join orders its write before rethrow().
    if (!m_failed.exchange(true, std::memory_order_acq_rel)) {
      m_error = std::move(e);
    }
    request_stop();
  }

  /// After every task of the algorithm has joined: rethrows the first exception, if any.
  void rethrow_if_failed() {
    if (m_error) {
      std::rethrow_exception(std::exchange(m_error, nullptr));
    }
  }

  /// The chunk size now in use (any thread; relaxed: a tuning hint, not data).
  std::size_t chunk() const noexcept { return m_chunk.load(std::memory_order_relaxed); }

  /// Whether the task should time its next chunk; `count` is the task's own chunk counter.
  bool should_time(unsigned count) const noexcept {
    if (m_fixed) {
      return false;
    }
    return !m_settled.load(std::memory_order_relaxed) || count % resample_every == 0; // a hint
  }

  /// Feeds back the duration of a chunk of `size` iterations (or blocks).
  void observe(std::size_t size, std::chrono::nanoseconds took) noexcept {
    // relaxed throughout: the chunk size is a tuning hint; a lost update only delays adaptation.
    std::size_t const now = m_chunk.load(std::memory_order_relaxed);
    if (size != now) {
      return; // measured with a stale size: ignore
    }
    if (took < grow_below) {
      m_chunk.store(now * 2, std::memory_order_relaxed);
    } else if (took > shrink_above && now > 1) {
      m_chunk.store(now / 2, std::memory_order_relaxed);
      m_settled.store(true, std::memory_order_relaxed);
    } else {
      m_settled.store(true, std::memory_order_relaxed);
    }
  }

  /// Whether the chunk size is fixed by the caller's grain.
  bool fixed() const noexcept { return m_fixed; }

private:
  loop_control const *m_parent;
  stop_token m_token;
  // Padding, not alignas: the control lives in a coroutine frame on magpie's stack, which is only
  // 16-byte aligned. 64 bytes apart, the read-mostly fields, the stop flag and the chunk size that
  // calibration writes never share a cache line.
  [[maybe_unused]] char m_pad0[64] = {};
  std::atomic<bool> m_stop{false};
  std::atomic<bool> m_failed{false};
  std::exception_ptr m_error; // written once, by the winner of m_failed
  [[maybe_unused]] char m_pad1[64] = {};
  std::atomic<std::size_t> m_chunk;
  std::atomic<bool> m_settled;
  bool m_fixed;
};

} // namespace magpie::algo::detail
