// examples/algo_for_each.cpp — magpie's parallel algorithms from ordinary code: a skewed loop, a
// reduction, a scan, a sort, an early-exit search and a cancelled loop, each checked against the
// standard library's serial algorithm.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <numeric>
#include <vector>

#include "magpie/magpie.hpp"

int main() {
  bool ok = true;
  // [blocking]
  magpie::lazy_pool pool(2);

  // for_each: like std::for_each(std::execution::par, ...); iterations may cost very different
  // amounts — the loop splits on demand, no grain needed.
  std::vector<long> v(100000);
  std::iota(v.begin(), v.end(), 1);
  magpie::for_each(pool, v, [](long &x) { x = x % 7 == 0 ? x * x % 1000 : x % 10; });

  long const sum = magpie::reduce(pool, v.begin(), v.end(), 0L);
  std::vector<long> prefix(v.size());
  magpie::inclusive_scan(pool, v.begin(), v.end(), prefix.begin());
  std::vector<long> sorted = v;
  magpie::sort(pool, sorted);
  auto big = magpie::find_if(pool, v, [](long x) { return x >= 990; }); // the first, as std's
  // [blocking]
  ok = ok && sum == std::accumulate(v.begin(), v.end(), 0L) && prefix.back() == sum;
  ok = ok && std::is_sorted(sorted.begin(), sorted.end());
  ok = ok && big == std::find_if(v.begin(), v.end(), [](long x) { return x >= 990; });

  // [commutative]
  auto add = [](long a, long b) { return a + b; };
  long s = magpie::reduce(pool, v.begin(), v.end(), 0L, magpie::commutative(add));
  // [commutative]
  ok = ok && s == sum;

  // [cancel]
  // Cancellation: a stop request skips the iterations that have not started.
  magpie::stop_source stop;
  std::atomic<int> ran{0};
  std::atomic<int> saw_stop{0};
  magpie::for_range(
      pool, 0, 1000,
      [&](int i) {
        ++ran;
        if (i == 0) {
          stop.request_stop(); // from inside here; any thread may do this
        }
        if (magpie::stop_requested()) {
          ++saw_stop; // a running iteration can see the request and cut its work short
        }
      },
      {.stop = stop.get_token()});
  // [cancel]

  std::printf("sum %ld, last prefix %ld, sorted %s, first >= 990 at %ld\n", sum, prefix.back(),
              std::is_sorted(sorted.begin(), sorted.end()) ? "yes" : "no",
              static_cast<long>(big - v.begin()));
  std::printf("cancelled loop: %s of 1000 iterations skipped, iteration 0 saw the stop: %s\n",
              ran.load() < 1000 ? "some" : "none", saw_stop.load() >= 1 ? "yes" : "no");
  std::printf("all as the serial algorithms: %s\n", ok ? "yes" : "NO");
  return ok ? 0 : 1;
}
