// Choosing a scheduler: the same async function on a lazy pool, a busy pool and the inline
// scheduler, and sync_wait called from several threads at once.
#include <cstdio>
#include <thread>
#include <vector>

#include "magpie/magpie.hpp"

/// The sum of the integers in [lo, hi), split in halves down to blocks of 4096.
magpie::task<long> sum(long lo, long hi) {
  if (hi - lo <= 4096) {
    long s = 0;
    for (long i = lo; i < hi; ++i) {
      s += i;
    }
    co_return s;
  }
  long const mid = lo + (hi - lo) / 2;
  long left = 0;
  long right = 0;
  co_await magpie::fork(&left, sum, lo, mid);
  co_await magpie::call(&right, sum, mid, hi);
  co_await magpie::join();
  co_return left + right;
}

int main() {
  magpie::lazy_pool lazy(2);       // idle workers sleep: the default choice
  magpie::busy_pool busy(2);       // idle workers keep stealing: lowest latency, burns cores
  magpie::inline_scheduler serial; // the serial projection, on the calling thread

  std::printf("lazy:   %ld\n", magpie::sync_wait(lazy, sum, 0L, 1'000'000L));
  std::printf("busy:   %ld\n", magpie::sync_wait(busy, sum, 0L, 1'000'000L));
  std::printf("inline: %ld\n", magpie::sync_wait(serial, sum, 0L, 1'000'000L));

  // Any number of threads may submit roots to one pool at once.
  std::vector<long> results(4);
  std::vector<std::thread> clients;
  clients.reserve(results.size());
  for (int i = 0; i < 4; ++i) {
    clients.emplace_back(
        [&lazy, &results, i] { results[i] = magpie::sync_wait(lazy, sum, 0L, 1000L * (i + 1)); });
  }
  for (std::thread &t : clients) {
    t.join();
  }
  std::printf("from 4 threads: %ld %ld %ld %ld\n", results[0], results[1], results[2], results[3]);
  std::printf("lazy pool: %zu workers\n", lazy.size());
}
