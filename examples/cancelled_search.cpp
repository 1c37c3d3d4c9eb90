// Cancellation: a search over blocks of candidates stops the whole loop once one block finds the
// answer, through the magpie::stop_source whose token the loop was given; running blocks poll
// magpie::stop_requested() to give up early. Then any_of answers a yes/no question and stops
// itself at the first witness.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <ranges>

#include "magpie/magpie.hpp"

constexpr long n = 300007L * 3000017L; // the product of two primes
constexpr long root = 948698;          // > sqrt(n)

int main() {
  magpie::lazy_pool pool(2);

  // [search]
  long const block = 1000; // candidates per iteration
  long const blocks = root / block + 1;
  magpie::stop_source stop;
  std::atomic<long> factor{0};
  std::atomic<long> blocks_started{0};
  auto try_block = [&](long b) {
    ++blocks_started;
    for (long d = std::max(2L, b * block); d < (b + 1) * block; ++d) {
      if (d % 64 == 0 && magpie::stop_requested()) {
        return; // another block found it: give this one up
      }
      if (n % d == 0) {
        factor = d;
        stop.request_stop(); // blocks that have not started are skipped
        return;
      }
    }
  };
  magpie::for_range(pool, 0L, blocks, try_block, {.stop = stop.get_token()});
  // [search]
  long const f = factor.load();
  bool const found = f > 1 && n % f == 0;
  std::printf("%ld = %ld x %ld: %s\n", n, f, f > 0 ? n / f : 0L, found ? "ok" : "WRONG");
  std::printf("blocks started: %s of %ld\n",
              blocks_started.load() < blocks ? "fewer than all" : "all", blocks);

  // [any_of]
  auto candidates = std::views::iota(2L, root);
  bool const composite = magpie::any_of(pool, candidates, [](long d) { return n % d == 0; });
  bool const prime = magpie::none_of(pool, candidates, [](long d) { return 3000017L % d == 0; });
  // [any_of]
  std::printf("%ld is composite: %s; 3000017 is prime: %s\n", n, composite ? "yes" : "no",
              prime ? "yes" : "no");
  return found && composite && prime ? 0 : 1;
}
