// Choosing a scheduler: the same async function on a lazy pool, a busy pool and the inline
// scheduler, and sync_wait called from several threads at once.
#include <cstdio>
#include <thread>
#include <vector>

#include "magpie/magpie.hpp"

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

int main() {
  magpie::lazy_pool lazy(2);       // idle workers sleep: the default choice
  magpie::busy_pool busy(2);       // idle workers keep stealing: lowest latency, burns cores
  magpie::inline_scheduler serial; // the serial projection, on the calling thread

  std::printf("lazy:   %ld\n", magpie::sync_wait(lazy, fib, 25));
  std::printf("busy:   %ld\n", magpie::sync_wait(busy, fib, 25));
  std::printf("inline: %ld\n", magpie::sync_wait(serial, fib, 25));

  // Any number of threads may submit roots to one pool at once.
  std::vector<long> results(4);
  std::vector<std::thread> clients;
  for (int i = 0; i < 4; ++i) {
    clients.emplace_back(
        [&lazy, &results, i] { results[i] = magpie::sync_wait(lazy, fib, 20 + i); });
  }
  for (std::thread &t : clients) {
    t.join();
  }
  std::printf("from 4 threads: %ld %ld %ld %ld\n", results[0], results[1], results[2], results[3]);
  std::printf("lazy pool: %zu workers\n", lazy.size());
}
