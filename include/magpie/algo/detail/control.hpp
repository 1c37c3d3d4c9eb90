#pragma once
// magpie/algo/detail/control.hpp — the state one call of a parallel algorithm shares among its
// tasks: cancellation (a scope: the stop token, an internal stop flag, the enclosing scope),
// the first exception, and the adaptive chunk size. See docs/algorithms.md.

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <utility>

#include "magpie/algo/stop_token.hpp"
#include "magpie/core/config.hpp"
#include "magpie/core/scope.hpp"

namespace magpie::algo::detail {

/// Sets this thread's cancellation scope to an algorithm's for one chunk (synchronous code: no
/// suspension inside), so that magpie::stop_requested() and sync_wait see it.
class current_loop_scope {
public:
  explicit current_loop_scope(core::stop_scope const *s) noexcept
      : m_old(core::detail::set_thread_scope(s)) {}
  current_loop_scope(current_loop_scope const &) = delete;
  current_loop_scope &operator=(current_loop_scope const &) = delete;
  ~current_loop_scope() { core::detail::set_thread_scope(m_old); }

private:
  core::stop_scope const *m_old;
};

/// Chunk durations the adaptive policy aims for (docs/algorithms.md, "Adaptive splitting"): a
/// chunk shorter than `grow_below` doubles the chunk size, one longer than `shrink_above` halves
/// it. Between checks a thief waits at most about one chunk.
inline constexpr std::chrono::nanoseconds grow_below{250};
inline constexpr std::chrono::nanoseconds shrink_above{2000};
/// Once settled, a task re-times one chunk in `resample_every`.
inline constexpr unsigned resample_every = 64;
/// The least work, by the timed chunks' estimate, a range must hold for a task to split it
/// (docs/algorithms.md, "Too small to split"): handing half of it to another worker costs a
/// steal, the thief's first misses on the stolen frames, and the join with the thread that waits
/// for the loop, ~1 µs in all on a VM, which the second worker must save. Below it the range runs
/// on the worker that holds it. (Rounded up to a power of two of indices: in effect 1–2 µs.)
#if defined(MAGPIE_SPLIT_FLOOR_NS) // for measurements only
static_assert(MAGPIE_SPLIT_FLOOR_NS >= 0, "MAGPIE_SPLIT_FLOOR_NS is a duration in nanoseconds");
inline constexpr std::chrono::nanoseconds split_floor{MAGPIE_SPLIT_FLOOR_NS};
#else
inline constexpr std::chrono::nanoseconds split_floor{1000};
#endif

class loop_control {
public:
  /// `grain` 0 = adaptive chunks; `outer`: the cancellation scope around the algorithm (null:
  /// none), found with `co_await core::enclosing_scope()`.
  loop_control(std::size_t grain, stop_token token, core::stop_scope const *outer) noexcept
      : m_scope(std::move(token), outer), m_chunk(grain == 0 ? 1 : grain), m_settled(grain != 0),
        m_fixed(grain != 0) {}
  loop_control(loop_control const &) = delete;
  loop_control &operator=(loop_control const &) = delete;

  /// Any thread: whether iterations not yet started should be skipped.
  bool stopped() const noexcept { return m_scope.stop_requested(); }

  /// Any thread: stops this algorithm (not its enclosing scopes). Idempotent.
  void request_stop() noexcept { m_scope.request_stop(); }

  /// The algorithm's cancellation scope: its token and internal stop, inside `outer`.
  core::stop_scope const *scope() const noexcept { return &m_scope; }

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
    learn_split(size, took);
    if (took < grow_below) {
      m_chunk.store(now * 2, std::memory_order_relaxed);
    } else if (took > shrink_above && now > 1) {
      m_chunk.store(now / 2, std::memory_order_relaxed);
      m_settled.store(true, std::memory_order_relaxed);
    } else if (!m_settled.load(std::memory_order_relaxed)) { // a write only when it changes:
      m_settled.store(true, std::memory_order_relaxed);      // other tasks read this line
    }
  }

  /// Whether the adaptive chunk size has settled (a hint, as chunk()).
  bool settled() const noexcept { return m_settled.load(std::memory_order_relaxed); }

  /// The fewest indices a range must hold for a task to split it, with chunks of `chunk` (a
  /// hint, as chunk()): two chunks, and, once a chunk has been timed, as many indices as the
  /// timed chunks say take split_floor (a power of two). With a fixed grain: two chunks.
  std::size_t split_min(std::size_t chunk) const noexcept {
    return std::max(2 * chunk, m_split_min.load(std::memory_order_relaxed));
  }

  /// The timed estimate behind split_min() (0: none yet), for the next call of the same loop.
  std::size_t split_estimate() const noexcept {
    return m_split_min.load(std::memory_order_relaxed);
  }

  /// Before the loop starts: begins the adaptive chunk size at `chunk` and the split estimate at
  /// `split` (what an earlier run of the same loop settled on) instead of 1 and none. Still
  /// unsettled: the first timed chunk confirms them, or halves or doubles the chunk as observe()
  /// would.
  void start_from(std::size_t chunk, std::size_t split) noexcept {
    if (!m_fixed && chunk != 0) {
      m_chunk.store(chunk, std::memory_order_relaxed);
      m_split_min.store(split, std::memory_order_relaxed);
    }
  }

  /// Whether the chunk size is fixed by the caller's grain.
  bool fixed() const noexcept { return m_fixed; }

private:
  /// From a chunk of `size` indices that took `took`: the indices that take split_floor, rounded
  /// up to a power of two (so that timing noise seldom changes it: a write only when it does).
  void learn_split(std::size_t size, std::chrono::nanoseconds took) noexcept {
    auto const ns = static_cast<std::uint64_t>(std::max<std::int64_t>(took.count(), 1));
    std::uint64_t const need =
        (static_cast<std::uint64_t>(split_floor.count()) * size + ns - 1) / ns;
    std::size_t const split = std::bit_ceil(static_cast<std::size_t>(std::min<std::uint64_t>(
        need, std::uint64_t{1} << (std::numeric_limits<std::size_t>::digits - 2))));
    if (m_split_min.load(std::memory_order_relaxed) != split) {
      m_split_min.store(split, std::memory_order_relaxed);
    }
  }

  // Padding, not alignas: the control lives in a coroutine frame on magpie's stack, which is only
  // 16-byte aligned. 64 bytes apart, the scope (read by every chunk, written once by a stop), the
  // failure slot and the chunk size that calibration writes never share a cache line.
  [[maybe_unused]] char m_pad0[64] = {};
  core::stop_scope m_scope;
  [[maybe_unused]] char m_padS[64] = {};
  std::atomic<bool> m_failed{false};
  std::exception_ptr m_error; // written once, by the winner of m_failed
  [[maybe_unused]] char m_pad1[64] = {};
  std::atomic<std::size_t> m_chunk;
  std::atomic<std::size_t> m_split_min{0}; // 0: not timed yet (see split_min)
  std::atomic<bool> m_settled;
  bool m_fixed;
};

} // namespace magpie::algo::detail
