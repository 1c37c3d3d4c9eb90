// A pipeline of tasks joined by channels: a producer sends numbers, three tasks square them, a
// collector adds the squares up. A send on a full channel and a receive on an empty one suspend
// the task, and its worker runs another: five tasks that wait on each other share two workers.
#include <cstdio>
#include <optional>

#include "magpie/magpie.hpp"

// [stages]
magpie::task<void> produce(magpie::channel<long> *out, long n) {
  for (long i = 1; i <= n; ++i) {
    co_await out->send(i); // suspends while the channel is full
  }
  out->close(); // receivers take what is buffered, then get std::nullopt
}

magpie::task<void> square(magpie::channel<long> *in, magpie::channel<long> *out) {
  while (std::optional<long> x = co_await in->receive()) { // suspends while it is empty
    co_await out->send(*x * *x);
  }
}

magpie::task<void> collect(magpie::channel<long> *in, long *sum) {
  while (std::optional<long> x = co_await in->receive()) {
    *sum += *x;
  }
}
// [stages]

int main() {
  long const n = 1000;
  // [main]
  magpie::lazy_pool pool(2);
  magpie::channel<long> numbers(4); // buffers up to four values
  magpie::channel<long> squares(4);
  long sum = 0;
  magpie::future<void> collector = magpie::spawn(pool, collect, &squares, &sum);
  magpie::task_group stages(pool);
  stages.spawn(produce, &numbers, n);
  for (int i = 0; i < 3; ++i) {
    stages.spawn(square, &numbers, &squares);
  }
  stages.wait();   // the producer has closed `numbers` and the squarers have drained it
  squares.close(); // so the collector's loop ends
  collector.get(); // and its writes to `sum` are visible here
  // [main]
  long const expected = n * (n + 1) * (2 * n + 1) / 6;
  std::printf("sum of the squares of 1..%ld = %ld: %s\n", n, sum, sum == expected ? "ok" : "WRONG");
  return sum == expected ? 0 : 1;
}
