// Work/span analysis: how much parallelism fib has, and the speedups that predicts for 1…64
// workers. Needs the per-task events of a MAGPIE_OBSERVE_TASKS build
// (cmake -DMAGPIE_OBSERVE_TASKS=ON); elsewhere the probe throws std::logic_error.
#include <cstdio>
#include <iostream>

#include "magpie/magpie.hpp"

// [units]
magpie::task<long> counted_fib(int n) {
  magpie::trace::charge(1); // one unit of work per task
  if (n < 2) {
    co_return n;
  }
  long a = 0;
  long b = 0;
  co_await magpie::fork(&a, counted_fib, n - 1);
  co_await magpie::call(&b, counted_fib, n - 2);
  co_await magpie::join();
  co_return a + b;
}
// [units]

int main() {
  // [probe]
  magpie::lazy_pool one(1);                  // the analysis follows the serial order of one worker
  magpie::trace::work_span_probe probe(one); // steady clock (charge() is ignored); default burden
  long const r = magpie::sync_wait(one, counted_fib, 25);
  magpie::trace::work_span const measured = probe.stop();
  std::cerr << measured.to_table(); // T1, T∞, T1/T∞, predicted speedups for 1…64 workers
  // [probe]
  // [measure]
  magpie::trace::work_span const counted = magpie::trace::measure_work_span(
      {magpie::trace::work_span_clock::units, 4}, counted_fib, 20); // burden: 4 units a fork
  std::cout << counted.to_table();
  // [measure]
  bool const ok = r == 75025 && measured.span <= measured.work && measured.tasks == 242785 &&
                  counted.span == 20 && counted.work == counted.tasks;
  std::printf("fib(25) = %ld; in time: span <= work: %s\n", r,
              measured.span <= measured.work ? "yes" : "no");
  return ok ? 0 : 1;
}
