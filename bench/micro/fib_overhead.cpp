// bench/micro/fib_overhead.cpp — the figure of merit of DESIGN.md §3: fib with every call a
// task on one worker (T_1) against a plain recursive `long fib(int)` (T_s), same binary, same
// flags. Reports ns per call (calls = 2·fib(n+1) − 1) and T_1/T_s. Google Benchmark runs both;
// the custom main prints the ratio at the end.

#include <benchmark/benchmark.h>

#include <unistd.h>

#include <cstdio>
#include <map>
#include <string>

#include "magpie/magpie.hpp"

namespace {

long fib_plain(int n) {
  if (n < 2) {
    return n;
  }
  return fib_plain(n - 1) + fib_plain(n - 2);
}

magpie::task<long> fib_task(int n) {
  if (n < 2) {
    co_return n;
  }
  long a = 0;
  long b = 0;
  co_await magpie::fork(&a, fib_task, n - 1);
  co_await magpie::call(&b, fib_task, n - 2);
  co_await magpie::join();
  co_return a + b;
}

double calls(int n) {
  long a = 0;
  long b = 1;
  for (int i = 0; i < n + 1; ++i) {
    long const c = a + b;
    a = b;
    b = c;
  }
  return 2.0 * static_cast<double>(a) - 1.0; // 2·fib(n+1) − 1
}

void BM_fib_serial(benchmark::State &state) {
  int volatile n = static_cast<int>(state.range(0));
  for (auto _ : state) {
    benchmark::DoNotOptimize(fib_plain(n));
  }
  state.counters["calls"] = calls(n);
}

void BM_fib_inline(benchmark::State &state) {
  int const n = static_cast<int>(state.range(0));
  magpie::inline_scheduler s;
  for (auto _ : state) {
    benchmark::DoNotOptimize(magpie::sync_wait(s, fib_task, n));
  }
  state.counters["calls"] = calls(n);
}

void BM_fib_lazy1(benchmark::State &state) {
  int const n = static_cast<int>(state.range(0));
  magpie::lazy_pool pool(1);
  for (auto _ : state) {
    benchmark::DoNotOptimize(magpie::sync_wait(pool, fib_task, n));
  }
  state.counters["calls"] = calls(n);
}

void BM_fib_busy1(benchmark::State &state) {
  int const n = static_cast<int>(state.range(0));
  magpie::busy_pool pool(1);
  for (auto _ : state) {
    benchmark::DoNotOptimize(magpie::sync_wait(pool, fib_task, n));
  }
  state.counters["calls"] = calls(n);
}

constexpr int n_fib = 30;
BENCHMARK(BM_fib_serial)->Arg(n_fib)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_fib_inline)->Arg(n_fib)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_fib_lazy1)->Arg(n_fib)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_fib_busy1)->Arg(n_fib)->Unit(benchmark::kMillisecond)->UseRealTime();

/// Collects each run's real time per iteration, to print ns/call and T_1/T_s at the end.
class ratio_reporter : public benchmark::ConsoleReporter {
public:
  /// Colours only on a terminal (the runner saves this output to a file).
  ratio_reporter() : ConsoleReporter(isatty(1) ? OO_Defaults : OO_Tabular) {}

  void ReportRuns(std::vector<Run> const &runs) override {
    for (auto const &r : runs) {
      if (r.run_type == Run::RT_Iteration && r.iterations > 0) {
        m_ns[r.run_name.function_name] =
            r.real_accumulated_time * 1e9 / static_cast<double>(r.iterations);
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }

  void summary() const {
    double const c = calls(n_fib);
    auto it = m_ns.find("BM_fib_serial");
    if (it == m_ns.end()) {
      return;
    }
    double const ts = it->second;
    std::printf("\nfib(%d): %.0f calls; plain recursion T_s = %.3f ms = %.2f ns/call\n", n_fib, c,
                ts / 1e6, ts / c);
    for (auto const &[name, ns] : m_ns) {
      if (name != "BM_fib_serial") {
        std::printf("  %-14s T_1 = %8.3f ms = %6.2f ns/call   T_1/T_s = %5.1f\n", name.c_str(),
                    ns / 1e6, ns / c, ns / ts);
      }
    }
  }

private:
  std::map<std::string, double> m_ns;
};

} // namespace

int main(int argc, char **argv) {
  benchmark::Initialize(&argc, argv);
  ratio_reporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.summary();
  benchmark::Shutdown();
  return 0;
}
