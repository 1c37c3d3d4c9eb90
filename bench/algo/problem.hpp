#pragma once
// bench/algo/problem.hpp — the parallel algorithms against their peers: reduce of doubles,
// inclusive_scan of ints, sort of random 64-bit keys, find_if with the match at a random position.
//
// Sizes: "reduce", "scan", "sort", "find" (10⁷, 10⁷, 10⁶, 10⁷ elements: the default run) and the
// large sizes "reduce-1e8", "scan-1e8", "sort-1e7", "find-1e8" (--paper; 0.8–1.6 GB of memory).
// Each runtime supplies the four operations; one process runs one of them.
//
// Checks: reduce — values are multiples of 2⁻¹⁰ below 1, so every partial sum is exact in double
// and any grouping gives the integer reference exactly. scan — the last element and 1,024 sampled
// positions against a serial prefix computed at start-up. sort — sorted, and the same sum and xor
// of keys as the input (restored from a copy after each check, outside the timed region). find —
// the returned index is the position where the only match was planted (a new position each rep,
// drawn from SplitMix64); the time of a rep is the time to the answer. Runtimes that can say when
// the match was seen report `stop_latency_us`: from the predicate's `true` to the caller holding
// the answer. A runtime whose caller sleeps while the search runs (magpie's sync_wait on a pool)
// also stamps `quiesced_ns` where the search has stopped — every iteration finished or skipped —
// on the worker that ends it; `quiesce_us` (seen → stopped) then separates the algorithm's stop
// from the operating system's wake-up of the caller (stopped → answer held). Quiescence also
// waits for the iterations *below* the match, which find_if's contract (the first match) obliges
// it to run, so it is not the stop alone: `overrun_us`, reported by every runtime, is from the
// match being seen to the last predicate call *above* the match that began after it (0 when none
// did) — how long the search went on with iterations it was allowed to skip.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "common/harness.hpp"

namespace algo_bench {

inline constexpr char const *problem_name = "algo";

enum class op { reduce, scan, sort, find };

struct size {
  char const *name;
  op what;
  std::size_t n;
};

inline constexpr size sizes[] = {
    {"reduce", op::reduce, 10'000'000},      {"scan", op::scan, 10'000'000},
    {"sort", op::sort, 1'000'000},           {"find", op::find, 10'000'000},
    {"reduce-1e8", op::reduce, 100'000'000}, {"scan-1e8", op::scan, 100'000'000},
    {"sort-1e7", op::sort, 10'000'000},      {"find-1e8", op::find, 100'000'000},
};

inline size const &find_size(std::string const &s) {
  return bench::find_named(sizes, s, problem_name);
}

using bench::splitmix64;

using clock_type = std::chrono::steady_clock;

/// When the search had stopped, on the worker (0 = not recorded by this runtime).
inline std::atomic<std::int64_t> quiesced_ns{0};
/// When the find predicate saw its match (the runtime's predicate stores it; 0 = not recorded).
inline std::atomic<std::int64_t> match_seen_ns{0};
/// Where the match is planted this rep (written between reps; every other key equals its index).
inline std::atomic<std::int64_t> planted_at{-1};
/// The latest start of a predicate call above the match after the match was seen (0 = none).
inline std::atomic<std::int64_t> overrun_ns{0};
inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now().time_since_epoch())
      .count();
}

/// Records a predicate call above the match that began after the match was seen (a maximum).
[[gnu::noinline]] inline void note_overrun() noexcept {
  std::int64_t const t = now_ns();
  std::int64_t seen = overrun_ns.load(std::memory_order_relaxed);
  while (t > seen && !overrun_ns.compare_exchange_weak(seen, t, std::memory_order_relaxed)) {
  }
}

/// The predicate every find runtime uses: the only negative key is the planted match. Costs every
/// runtime the same two relaxed loads per call to notice iterations that run after the match.
struct is_match {
  bool operator()(std::int64_t x) const noexcept {
    if (x < 0) {
      match_seen_ns.store(now_ns(), std::memory_order_relaxed);
      return true;
    }
    if (x > planted_at.load(std::memory_order_relaxed) &&
        match_seen_ns.load(std::memory_order_relaxed) != 0) [[unlikely]] {
      note_overrun();
    }
    return false;
  }
};

/// The four operations of one runtime.
template <typename Reduce, typename Scan, typename Sort, typename Find>
struct ops {
  Reduce reduce; ///< double(std::vector<double> const&)
  Scan scan;     ///< void(std::vector<int> const& in, std::vector<int>& out)
  Sort sort;     ///< void(std::vector<std::uint64_t>&)
  Find find;     ///< std::size_t(std::vector<std::int64_t> const&): index of the match
};
/// Spelled out: Clang 16 has no class template argument deduction for aggregates (C++20 P1816).
template <typename Reduce, typename Scan, typename Sort, typename Find>
ops(Reduce, Scan, Sort, Find) -> ops<Reduce, Scan, Sort, Find>;

template <typename Ops>
int main_for(char const *runtime, bench::options const &o, Ops &&rt) {
  size const &z = find_size(o.size);
  std::uint64_t state = 42;
  switch (z.what) {
  case op::reduce: {
    std::vector<double> v(z.n);
    std::uint64_t want = 0; // in units of 2^-10
    for (auto &x : v) {
      auto const k = splitmix64(state) % 1024;
      want += k;
      x = static_cast<double>(k) / 1024.0;
    }
    return bench::measure(
        o, problem_name, runtime, [&] { return rt.reduce(v); },
        [&](double got) {
          double const w = static_cast<double>(want) / 1024.0;
          return bench::verdict{got == w ? bench::verdict::ok : bench::verdict::fail,
                                std::to_string(got), "expected " + std::to_string(w)};
        });
  }
  case op::scan: {
    std::vector<int> in(z.n), out(z.n);
    for (auto &x : in) {
      x = static_cast<int>(splitmix64(state) % 16);
    }
    std::vector<int> ref(z.n);
    std::inclusive_scan(in.begin(), in.end(), ref.begin());
    return bench::measure(
        o, problem_name, runtime,
        [&] {
          rt.scan(in, out);
          return 0;
        },
        [&](int) {
          bool ok = out.back() == ref.back();
          std::uint64_t s = 7;
          for (int i = 0; i < 1024 && ok; ++i) {
            std::size_t const k = splitmix64(s) % z.n;
            ok = out[k] == ref[k];
          }
          std::fill(out.begin(), out.end(), -1); // the next rep must write everything again
          return bench::verdict{ok ? bench::verdict::ok : bench::verdict::fail,
                                std::to_string(ref.back()), ok ? "" : "prefix mismatch"};
        });
  }
  case op::sort: {
    std::vector<std::uint64_t> input(z.n);
    std::uint64_t sum = 0, x = 0;
    for (auto &k : input) {
      k = splitmix64(state);
      sum += k;
      x ^= k;
    }
    std::vector<std::uint64_t> v = input;
    return bench::measure(
        o, problem_name, runtime,
        [&] {
          rt.sort(v);
          return 0;
        },
        [&](int) {
          std::uint64_t s = 0, xx = 0;
          for (auto k : v) {
            s += k;
            xx ^= k;
          }
          bool const ok = std::is_sorted(v.begin(), v.end()) && s == sum && xx == x;
          v = input; // restored outside the timed region
          return bench::verdict{ok ? bench::verdict::ok : bench::verdict::fail, "sorted",
                                ok ? "" : "not sorted, or keys lost"};
        });
  }
  case op::find: {
    std::vector<std::int64_t> v(z.n);
    for (std::size_t i = 0; i < z.n; ++i) {
      v[i] = static_cast<std::int64_t>(i);
    }
    std::uint64_t pos_state = 1234;
    std::size_t planted = 0;
    std::vector<double> latency_us, quiesce_us, overrun_us;
    auto plant = [&] {
      v[planted] = static_cast<std::int64_t>(planted);
      planted = splitmix64(pos_state) % z.n;
      v[planted] = -1;
      planted_at.store(static_cast<std::int64_t>(planted), std::memory_order_relaxed);
      match_seen_ns.store(0, std::memory_order_relaxed);
      quiesced_ns.store(0, std::memory_order_relaxed);
      overrun_ns.store(0, std::memory_order_relaxed);
    };
    plant();
    int rep = 0;
    auto result = bench::measure(
        o, problem_name, runtime,
        [&] {
          std::size_t const at = rt.find(v);
          std::int64_t const answered = now_ns();
          std::int64_t const seen = match_seen_ns.load(std::memory_order_relaxed);
          std::int64_t const quiesced = quiesced_ns.load(std::memory_order_relaxed);
          std::int64_t const overrun = overrun_ns.load(std::memory_order_relaxed);
          if (seen != 0 && rep++ >= o.warmup) {
            latency_us.push_back(static_cast<double>(answered - seen) / 1000.0);
            overrun_us.push_back(static_cast<double>(std::max<std::int64_t>(overrun - seen, 0)) /
                                 1000.0);
            if (quiesced != 0) {
              quiesce_us.push_back(static_cast<double>(quiesced - seen) / 1000.0);
            }
          }
          return at;
        },
        [&](std::size_t got) {
          bool const ok = got == planted;
          std::string const note = ok ? "" : "expected " + std::to_string(planted);
          plant();
          return bench::verdict{ok ? bench::verdict::ok : bench::verdict::fail, "planted", note};
        },
        {});
    if (!latency_us.empty()) {
      std::sort(latency_us.begin(), latency_us.end());
      std::sort(overrun_us.begin(), overrun_us.end());
      std::fprintf(stderr, "find: match seen → answer held: median %.1f µs, max %.1f µs\n",
                   latency_us[latency_us.size() / 2], latency_us.back());
      std::fprintf(stderr,
                   "find: match seen → last skippable iteration started: median %.2f µs, max "
                   "%.2f µs\n",
                   overrun_us[overrun_us.size() / 2], overrun_us.back());
      std::string quiesce;
      if (quiesce_us.size() == latency_us.size()) {
        std::sort(quiesce_us.begin(), quiesce_us.end());
        std::fprintf(stderr, "find: match seen → search stopped: median %.1f µs, max %.1f µs\n",
                     quiesce_us[quiesce_us.size() / 2], quiesce_us.back());
        char buf[96];
        std::snprintf(buf, sizeof buf, ", \"quiesce_us_median\": %.2f, \"quiesce_us_max\": %.2f",
                      quiesce_us[quiesce_us.size() / 2], quiesce_us.back());
        quiesce = buf;
      }
      std::printf("@@LATENCY {\"runtime\": \"%s\", \"stop_latency_us_median\": %.2f, "
                  "\"stop_latency_us_max\": %.2f, \"overrun_us_median\": %.2f, "
                  "\"overrun_us_max\": %.2f%s}\n",
                  runtime, latency_us[latency_us.size() / 2], latency_us.back(),
                  overrun_us[overrun_us.size() / 2], overrun_us.back(), quiesce.c_str());
    }
    return result;
  }
  }
  return 2;
}

} // namespace algo_bench
