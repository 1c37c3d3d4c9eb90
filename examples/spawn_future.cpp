// Spawn tasks from a plain thread and from inside tasks, read their futures, gather a task group
// and see the first exception of a group come back.
#include <cstdio>
#include <stdexcept>
#include <string>

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

// [in_task]
// Inside a task: spawn, then co_await (suspends; helps if the task has not started yet).
magpie::task<long> fib_pair(magpie::pool *pool, int n) {
  magpie::future<long> f = magpie::spawn(*pool, magpie::priority::high, fib, n);
  magpie::future<long> g = magpie::spawn(*pool, fib, n + 1);
  long const a = co_await f;
  long const b = co_await g;
  co_return a + b; // fib(n + 2)
}
// [in_task]

magpie::task<void> count_words(std::string text, long *out) {
  long words = 0;
  bool in_word = false;
  for (char c : text) {
    bool const letter = c != ' ';
    words += letter && !in_word ? 1 : 0;
    in_word = letter;
  }
  *out = words;
  co_return;
}

magpie::task<void> fails(int id) {
  throw std::runtime_error("child " + std::to_string(id) + " failed");
  co_return;
}

int main() {
  magpie::lazy_pool pool(2);

  // [from_thread]
  // From a plain thread: get() blocks.
  magpie::future<long> f = magpie::spawn(pool, fib, 30);
  std::printf("fib(30) = %ld\n", f.get());
  std::printf("fib(27) via two futures = %ld\n", magpie::sync_wait(pool, fib_pair, &pool, 25));
  // [from_thread]

  // [group]
  // A task group: arguments are copied into each child (the strings), values go through pointers.
  long counts[3] = {};
  char const *texts[3] = {"one two three", "four five", "six"};
  magpie::task_group g(pool);
  for (int i = 0; i < 3; ++i) {
    g.spawn(count_words, std::string(texts[i]), &counts[i]);
  }
  g.wait();
  std::printf("words: %ld %ld %ld\n", counts[0], counts[1], counts[2]);

  // The first exception is rethrown by wait(); the others are counted.
  for (int i = 0; i < 3; ++i) {
    g.spawn(fails, i);
  }
  try {
    g.wait();
  } catch (std::runtime_error const &e) {
    std::printf("group rethrew one error (%s), dropped %zu\n",
                std::string(e.what()).substr(0, 5).c_str(), g.dropped_exceptions());
  }
  // [group]
  return 0;
}
