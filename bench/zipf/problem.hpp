#pragma once
// bench/zipf/problem.hpp — the skewed parallel loop (BENCHMARKS.md, "Skewed parallel loop").
//
// N independent iterations; iteration i costs 50 ns × k_i with P(k) ∝ k^−1.5 on {1 … 1000},
// drawn from SplitMix64 seeded with 42. Costs are burned by a calibrated arithmetic spin (a chain
// of dependent multiply-adds), never by reading a clock. The uniform variant gives every
// iteration the mean cost of the Zipf sample of the same N, so both do the same total work.
//
// One repetition runs the loop `loops` times back to back inside the runtime's parallel context
// (one sync_wait / arena.execute / parallel region per repetition). Iteration i adds k_i to
// out[i] every time it runs, so the answer, Σ out, must be loops × Σ k_i: every iteration ran
// exactly once per loop.

#include <time.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "common/harness.hpp"

namespace zipf {

inline constexpr char const *problem_name = "zipf";
inline constexpr double unit_ns = 50.0;

struct size {
  char const *name;
  std::size_t n;
  bool uniform;
  int loops; ///< loops per repetition (≈ 50 ms of work on one core)
};

// The article's counts (N = 64 … 2,048), skewed and uniform; ≈ 50 ms of work per repetition.
inline constexpr size sizes[] = {
    {"64", 64, false, 640},           {"100", 100, false, 410},
    {"128", 128, false, 320},         {"512", 512, false, 80},
    {"1024", 1024, false, 40},        {"2048", 2048, false, 20},
    {"uniform-64", 64, true, 640},    {"uniform-100", 100, true, 410},
    {"uniform-128", 128, true, 320},  {"uniform-512", 512, true, 80},
    {"uniform-1024", 1024, true, 40}, {"uniform-2048", 2048, true, 20},
};

inline size const &find(std::string const &s) { return bench::find_named(sizes, s, problem_name); }

using bench::splitmix64;

/// k_0 … k_{n−1}: P(k) ∝ k^−1.5 on {1 … 1000}, k = the smallest k whose cumulative weight
/// exceeds u × total.
inline std::vector<std::uint32_t> zipf_ks(std::size_t n) {
  std::vector<double> cumulative(1000);
  double total = 0;
  for (int k = 1; k <= 1000; ++k) {
    total += std::pow(static_cast<double>(k), -1.5);
    cumulative[k - 1] = total;
  }
  std::uint64_t state = 42;
  std::vector<std::uint32_t> ks(n);
  for (auto &k : ks) {
    double const u = static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
    double const target = u * total;
    std::uint32_t j = 0;
    while (j < 999 && !(cumulative[j] > target)) {
      ++j;
    }
    k = j + 1;
  }
  return ks;
}

/// The spin that burns costs: `iters` dependent multiply-adds.
inline std::uint64_t burn(std::uint64_t iters, std::uint64_t x) noexcept {
  for (std::uint64_t i = 0; i < iters; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    asm volatile("" : "+r"(x)); // keeps the chain: no vectorising, no folding
  }
  return x;
}

inline double thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

/// Spin iterations per nanosecond on this core: the fastest of several bursts, timed in this
/// thread's CPU time so that being descheduled (a busy machine) does not skew the calibration.
inline double calibrate() {
  double best = 1e300;
  for (int t = 0; t < 9; ++t) {
    std::uint64_t const iters = 4'000'000;
    double const t0 = thread_cpu_ns();
    std::uint64_t volatile sink = burn(iters, static_cast<std::uint64_t>(t));
    (void)sink;
    double const t1 = thread_cpu_ns();
    best = std::fmin(best, (t1 - t0) / static_cast<double>(iters));
  }
  return 1.0 / best;
}

/// A loop instance: per-iteration spin counts and result slots.
struct loop {
  loop(size const &z, double iters_per_ns) : ks(zipf_ks(z.n)), iters(z.n), out(z.n, 0) {
    std::uint64_t sum_k = 0;
    for (auto k : ks) {
      sum_k += k;
    }
    nominal_ns = unit_ns * static_cast<double>(sum_k);
    for (std::size_t i = 0; i < z.n; ++i) {
      double const ns = z.uniform ? nominal_ns / static_cast<double>(z.n) : unit_ns * ks[i];
      iters[i] = static_cast<std::uint64_t>(std::llround(ns * iters_per_ns));
    }
    expected_per_loop = sum_k;
  }

  /// Iteration i (any thread; distinct i touch distinct slots).
  void body(std::size_t i) const noexcept {
    std::uint64_t const x = burn(iters[i], i);
    out[i] += ks[i] + (x == 0x5EED ? 1 : 0); // depends on the spin: it cannot be removed
  }

  std::uint64_t total() const noexcept {
    std::uint64_t s = 0;
    for (auto v : out) {
      s += v;
    }
    return s;
  }

  std::vector<std::uint32_t> ks;
  std::vector<std::uint64_t> iters;
  mutable std::vector<std::uint64_t> out;
  double nominal_ns = 0;               ///< Σ cost of one loop
  std::uint64_t expected_per_loop = 0; ///< Σ k_i
};

/// Runs the whole benchmark for one runtime: `run_rep(loop&, loops)` runs `loops` loops.
template <typename RunRep>
int main_for(int argc, char **argv, char const *runtime, bench::options const &o, RunRep &&run_rep,
             bench::extras more = {}) {
  (void)argc;
  (void)argv;
  size const &z = find(o.size);
  double const ipn = calibrate();
  loop lp(z, ipn);
  std::uint64_t done = 0; // loops run so far (warm-up included)
  more.push_back({"loops_per_rep", std::to_string(z.loops)});
  more.push_back({"nominal_loop_s", std::to_string(lp.nominal_ns * 1e-9)});
  more.push_back({"spin_iters_per_ns", std::to_string(ipn)});
  return bench::measure(
      o, problem_name, runtime,
      [&] {
        run_rep(lp, z.loops);
        done += static_cast<std::uint64_t>(z.loops);
        return lp.total();
      },
      [&](std::uint64_t got) {
        // The answer printed is per loop (the same in every rep); the check is on the total.
        std::uint64_t const want = done * lp.expected_per_loop;
        bool const ok = got == want;
        return bench::verdict{
            ok ? bench::verdict::ok : bench::verdict::fail,
            std::to_string(got / (done == 0 ? 1 : done)),
            ok ? "" : "expected " + std::to_string(want) + " in total, got " + std::to_string(got)};
      },
      more);
}

} // namespace zipf
