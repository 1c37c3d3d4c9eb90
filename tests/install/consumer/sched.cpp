// Only the scheduling layer's umbrella header: pools, the inline scheduler and sync_wait, with the
// core's names (magpie::task) that it brings in.
#include <magpie/sched.hpp>

magpie::task<long> core_fib(int n); // core.cpp

bool use_sched() {
  magpie::lazy_pool pool(2);
  magpie::inline_scheduler serial;
  return magpie::sync_wait(pool, core_fib, 20) == 6765 &&
         magpie::sync_wait(serial, core_fib, 10) == 55;
}
