// Several senders on one channel: each producer task holds a magpie::channel_sender, a handle
// that counts as one sender, and the channel closes when the last handle goes — when the last
// producer ends, whichever it is. The consumer's loop then ends, with no counting of our own.
#include <cstdio>
#include <optional>

#include "magpie/magpie.hpp"

// [senders]
// `tx` is this task's own sender handle (a copy): it goes when the task ends.
magpie::task<void> produce(magpie::channel_sender<long> tx, long first, long n) {
  for (long i = first; i < first + n; ++i) {
    co_await tx.send(i); // false once the channel is closed: nothing would receive it
  }
}

magpie::task<long> add_up(magpie::channel<long> *in) {
  long sum = 0;
  while (std::optional<long> x = co_await in->receive()) { // nullopt: closed and drained
    sum += *x;
  }
  co_return sum;
}
// [senders]

int main() {
  long const producers = 4;
  long const per = 250;
  // [main]
  magpie::lazy_pool pool(2);
  magpie::channel<long> numbers(8);
  magpie::future<long> sum = magpie::spawn(pool, add_up, &numbers);
  magpie::task_group g(pool);
  {
    magpie::channel_sender<long> tx(numbers); // ours, held while the producers get their copies
    for (long p = 0; p < producers; ++p) {
      g.spawn(produce, tx, p * per + 1, per);
    }
  } // ours goes: the last producer to end closes `numbers`
  long const total = sum.get();
  g.wait();
  // [main]
  long const n = producers * per;
  long const expected = n * (n + 1) / 2;
  std::printf("%ld producers sent 1..%ld, the consumer added up %ld: %s\n", producers, n, total,
              total == expected ? "ok" : "WRONG");
  return total == expected ? 0 : 1;
}
