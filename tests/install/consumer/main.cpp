// The umbrella header magpie/magpie.hpp, and each layer's own umbrella header in a translation
// unit of its own (core.cpp, sched.cpp, ...), the way the guide says to include them.
#include <cstdio>

#include <magpie/magpie.hpp>

bool use_sched();
bool use_sync();
bool use_algo();
bool use_io();
bool use_trace();

namespace {
magpie::task<long> fib(int n) {
  if (n < 2) {
    co_return n;
  }
  long a = 0;
  long b = 0;
  co_await magpie::fork(&a, fib, n - 1);
  co_await magpie::call(&b, fib, n - 2);
  co_await magpie::join();
  co_return a + b;
}
} // namespace

int main() {
  magpie::lazy_pool pool(2);
  bool const checks[] = {magpie::sync_wait(pool, fib, 20) == 6765,
                         use_sched(),
                         use_sync(),
                         use_algo(),
                         use_io(),
                         use_trace()};
  char const *const names[] = {"magpie.hpp", "sched.hpp", "sync.hpp",
                               "algo.hpp",   "io.hpp",    "trace.hpp"};
  int failed = 0;
  for (int i = 0; i < 6; ++i) {
    if (!checks[i]) {
      std::printf("consumer of %s: wrong result\n", names[i]);
      ++failed;
    }
  }
  return failed == 0 ? 0 : 1;
}
