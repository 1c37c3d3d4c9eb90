// Only the synchronisation layer's umbrella header, as docs/guide/tasks-that-wait.md says: spawn,
// futures, task groups, mutexes and channels, with the pools and tasks it brings in.
#include <optional>

#include <magpie/sync.hpp>

namespace {
magpie::task<void> produce(magpie::channel<int> *out, int n) {
  for (int i = 1; i <= n; ++i) {
    co_await out->send(i);
  }
  out->close();
}

magpie::task<int> add_up(magpie::channel<int> *in, magpie::mutex *m, int *total) {
  int sum = 0;
  while (std::optional<int> v = co_await in->receive()) {
    sum += *v;
  }
  auto guard = co_await m->scoped_lock();
  *total += sum;
  co_return sum;
}
} // namespace

bool use_sync() {
  magpie::lazy_pool pool(2);
  magpie::channel<int> numbers(4);
  magpie::mutex m;
  int total = 0;
  magpie::future<int> sum = magpie::spawn(pool, add_up, &numbers, &m, &total);
  magpie::task_group g(pool);
  g.spawn(produce, &numbers, 100);
  g.wait();
  return sum.get() == 5050 && total == 5050;
}
