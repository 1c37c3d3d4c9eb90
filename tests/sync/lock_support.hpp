#pragma once
// tests/sync/lock_support.hpp — what the tests of magpie's locks share: a critical-section
// checker (a non-atomic counter plus an occupancy count that catches two holders at once), a
// fan-out of tasks over a binary fork tree, and a bounded wait for a primitive's queue length.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/test_support.hpp"

namespace magpie::test {

/// Shared state that only a holder of the lock may touch. `enter`/`leave` bracket a critical
/// section; a second holder shows up in `overlaps`, a lost update in `value`.
struct critical_state {
  long value = 0;                 // NOT atomic: guarded by the lock under test
  std::atomic<int> inside{0};     // holders right now (must stay <= limit)
  std::atomic<long> overlaps{0};  // times a holder found more than `limit` inside
  std::atomic<int> max_inside{0}; // the most holders seen at once

  void enter(int limit = 1) noexcept {
    int const n = inside.fetch_add(1) + 1;
    if (n > limit) {
      overlaps.fetch_add(1);
    }
    int m = max_inside.load();
    while (n > m && !max_inside.compare_exchange_weak(m, n)) {
    }
  }
  /// The section's work: a read-modify-write of `value` with a pause in the middle, so that a
  /// second holder would lose an update.
  void bump() noexcept {
    long const v = value;
    spin_work(20);
    value = v + 1;
  }
  void leave() noexcept { inside.fetch_sub(1); }
};

/// Runs `leaf(args..., i)` for i in [0, n) as the leaves of a binary fork tree (so that the
/// leaves spread over the workers by stealing). `Leaf` is an async function returning task<void>.
template <typename Leaf, typename... Args>
task<void> fan_out(Leaf leaf, int lo, int hi, Args... args) {
  if (hi - lo == 1) {
    co_await call(leaf, args..., lo);
    co_return;
  }
  int const mid = lo + (hi - lo) / 2;
  co_await fork(fan_out<Leaf, Args...>, leaf, lo, mid, args...);
  co_await call(fan_out<Leaf, Args...>, leaf, mid, hi, args...);
  co_await join();
}

/// Forks `fn(args..., i)` for i in [0, n) (each returns task<int>), joins, returns the sum.
template <typename Fn, typename... Args>
task<int> fork_sum(Fn fn, int n, Args... args) {
  std::vector<int> out(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    co_await fork(&out[static_cast<std::size_t>(i)], fn, args..., i);
  }
  co_await join();
  int sum = 0;
  for (int v : out) {
    sum += v;
  }
  co_return sum;
}

/// Waits (yielding, out of line) until `count()` reaches `n`; false after 10 s.
template <typename Count>
[[gnu::noinline]] bool wait_count(Count count, std::size_t n) {
  return wait_until([&] { return count() >= n; });
}

} // namespace magpie::test
