// bench/micro/fib_overhead.cpp — the figure of merit of DESIGN.md §3: fib with every call a
// task on one worker (T_1) against a plain recursive `long fib(int)` (T_s), same binary, same
// flags. Reports ns per call (calls = 2·fib(n+1) − 1) and T_1/T_s. Google Benchmark runs both;
// the custom main prints the ratio at the end. Every computed fib is checked: a wrong one fails
// its benchmark (SkipWithError, "ERROR OCCURRED" in the output) and the exit status is 1.

#include <benchmark/benchmark.h>

#include <unistd.h>

#include <cstdio>
#include <map>
#include <string>
#include <utility>

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

/// fib(n) by iteration: the answer every benchmark below must compute (fib(30) = 832,040).
long fib_reference(int n) {
  long a = 0;
  long b = 1;
  for (int i = 0; i < n; ++i) {
    a = std::exchange(b, a + b);
  }
  return a;
}

int wrong_answers = 0; ///< benchmarks run one at a time (no ->Threads()), so a plain int

/// True if `got` is fib(n); otherwise fails the benchmark run with the wrong value.
bool check(benchmark::State &state, long got, int n) {
  if (got == fib_reference(n)) [[likely]] {
    return true;
  }
  ++wrong_answers;
  state.SkipWithError(("wrong answer: fib(" + std::to_string(n) + ") = " + std::to_string(got) +
                       ", expected " + std::to_string(fib_reference(n)))
                          .c_str());
  return false;
}

void BM_fib_serial(benchmark::State &state) {
  int volatile n = static_cast<int>(state.range(0));
  for (auto _ : state) {
    long const r = fib_plain(n);
    benchmark::DoNotOptimize(r);
    if (!check(state, r, n)) {
      break;
    }
  }
  state.counters["calls"] = calls(n);
}

/// fib(n) on `sched`, `state`'s iterations, every answer checked.
template <typename Scheduler>
void run_fib_task(benchmark::State &state, Scheduler &sched) {
  int const n = static_cast<int>(state.range(0));
  for (auto _ : state) {
    long const r = magpie::sync_wait(sched, fib_task, n);
    benchmark::DoNotOptimize(r);
    if (!check(state, r, n)) {
      break;
    }
  }
  state.counters["calls"] = calls(n);
}

void BM_fib_inline(benchmark::State &state) {
  magpie::inline_scheduler s;
  run_fib_task(state, s);
}

void BM_fib_lazy1(benchmark::State &state) {
  magpie::lazy_pool pool(1);
  run_fib_task(state, pool);
}

void BM_fib_busy1(benchmark::State &state) {
  magpie::busy_pool pool(1);
  run_fib_task(state, pool);
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
      // A run failed by check() stopped in its first iteration and timed nothing: left out.
      if (r.run_type == Run::RT_Iteration && r.iterations > 0 && r.real_accumulated_time > 0) {
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
  if (wrong_answers > 0) {
    std::fprintf(stderr, "micro_fib_overhead: %d wrong fib answer(s): see ERROR OCCURRED above\n",
                 wrong_answers);
    return 1;
  }
  return 0;
}
