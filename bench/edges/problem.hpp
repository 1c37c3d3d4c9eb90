#pragma once
// bench/edges/problem.hpp — magpie at the door: what a runtime costs when it is entered from
// ordinary code (a loop called from main(), a root or a spawn from a plain thread, a wake-up).
//
// Every runtime is a `door`: one object per runtime and worker count, built for one slot of a
// round and destroyed after it (so that a busy pool's spinning workers never run beside another
// runtime). The operations and their answers:
//
//   for_each         x = sqrt(x) + 1 over a std::vector<double>. Checked by serial replay: the
//                    vector starts at 1e300-sized values, and after every group of ≤ 24 calls it
//                    must equal, bit for bit, the serial loop applied as many times (from such
//                    values 24 applications are still distinct: an element run once too often or
//                    too rarely shows), then it is reset.
//   reduce           Σ w over multiples of 2^-10 below 1: every grouping is exact, so the sum must
//                    equal the serial one exactly.
//   transform_reduce Σ (sqrt(w) + 1): within 1e-12 relative of the serial sum.
//   find             the first negative key of 10^6 (the only one, at index 10).
//   root             a trivial task: returns v + 1.
//   spawn_and_get    a task that stamps its first and last instruction (steady_clock) and returns
//                    v; the caller waits for it (future::get, task_group::wait, the region's end).
//   group            n tasks started one by one from the calling thread into a group (magpie and
//                    oneTBB task_group, OpenMP tasks of a `single`), each adding its index to a
//                    shared sum; the caller waits for all. The sum must be n(n − 1)/2.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace edges {

/// steady_clock in ns: comparable across cores, the same clock in every runtime.
inline std::int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// The loop body (~3 ns): the same inline function in every runtime's translation unit.
inline void step(double &x) noexcept { x = std::sqrt(x) + 1.0; }

/// transform_reduce's transformation: the body's value without the store.
inline double lifted(double x) noexcept { return std::sqrt(x) + 1.0; }

/// The predicate of find: the one planted key is negative.
inline bool is_match(std::int64_t key) noexcept { return key < 0; }

/// Where find's match is planted, and the length searched.
inline constexpr std::size_t find_match_at = 10;
inline constexpr std::size_t find_length = 1'000'000;

/// What a task stamps: its first and its last instruction.
struct stamps {
  std::int64_t start = 0;
  std::int64_t end = 0;
};

/// Stamps `s` and returns `v`: the body of every runtime's spawned task.
inline int stamp(stamps &s, int v) noexcept {
  s.start = now_ns();
  s.end = now_ns();
  return v;
}

/// One runtime limited to a number of workers, entered from the calling (plain) thread.
class door {
public:
  door() = default;
  door(door const &) = delete;
  door &operator=(door const &) = delete;
  virtual ~door() = default;

  virtual void for_each(std::vector<double> &v) = 0;
  virtual double reduce(std::vector<double> const &w) = 0;
  virtual double transform_reduce(std::vector<double> const &w) = 0;
  virtual std::size_t find(std::vector<std::int64_t> const &keys) = 0;
  /// A trivial root from this thread and back: returns v + 1.
  virtual int root(int v) = 0;
  /// Starts a task that runs stamp(s, v), waits for it and returns its value.
  virtual int spawn_and_get(stamps &s, int v) = 0;
  /// Starts n tasks from this thread, task i adding i to a shared sum, waits for all of them and
  /// returns the sum.
  virtual std::int64_t group(int n) = 0;
  /// False for the serial projection (it has no roots or spawns to measure).
  virtual bool has_tasks() const noexcept { return true; }
};

// One factory per runtime (serial.cpp, magpie.cpp, tbb.cpp, omp.cpp).
std::unique_ptr<door> make_serial_door();
/// `callers`: the pool runs callers' roots on the calling thread (pool_options::callers_run_roots).
std::unique_ptr<door> make_magpie_door(bool busy, unsigned workers, bool callers);
std::unique_ptr<door> make_tbb_door(unsigned workers);
std::unique_ptr<door> make_omp_door(unsigned workers);
char const *omp_library() noexcept;

/// The nearest-rank quantile q of `v` (q = 0.99 of 20 samples is their maximum).
inline double quantile(std::vector<double> v, double q) {
  if (v.empty()) {
    return 0;
  }
  std::sort(v.begin(), v.end());
  auto const rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

} // namespace edges
