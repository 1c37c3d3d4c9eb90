// Cancellation scopes: a fork–join search runs inside `magpie::with_stop`, so every task it forks
// — on whichever worker — sees the stop through `co_await magpie::this_task::stop_requested()`;
// a task group puts its children (and everything they start) in a scope of its own, stopped by
// its request_stop() or by the token it was made with.
#include <atomic>
#include <cstdio>

#include "magpie/magpie.hpp"

namespace {

std::atomic<long> visited{0};

// [scope]
// Counts the nodes of a complete binary tree of the given depth, giving up below a node where
// the search has been stopped. The leaf numbered `target` asks for the stop.
magpie::task<long> count_nodes(magpie::stop_source *stop, long id, int depth, long target) {
  bool const stopped = co_await magpie::this_task::stop_requested(); // see the note on GCC 12
  if (stopped) {
    co_return 0; // the scope was stopped: this subtree is not wanted any more
  }
  ++visited;
  if (depth == 0) {
    if (id == target) {
      stop->request_stop(); // every task inside the scope sees it from now on
    }
    co_return 1;
  }
  long left = 0;
  long right = 0;
  co_await magpie::fork(&left, count_nodes, stop, 2 * id, depth - 1, target);
  co_await magpie::call(&right, count_nodes, stop, 2 * id + 1, depth - 1, target);
  co_await magpie::join();
  co_return 1 + left + right;
}

magpie::task<long> search(magpie::stop_source *stop, int depth, long target) {
  long counted = 0;
  co_await magpie::with_stop(stop->get_token(), &counted, count_nodes, stop, 0L, depth, target);
  co_await magpie::join();
  bool const outside = co_await magpie::this_task::stop_requested(); // not in that scope
  std::printf("stopped scope seen outside it: %s\n", outside ? "yes" : "no");
  co_return counted;
}
// [scope]

int stopped_group(magpie::pool &pool) {
  // [group]
  magpie::task_group group(pool); // or group(pool, token): then the token stops it as well
  group.request_stop();           // before, during or after the children start
  std::atomic<int> saw{0};
  for (int i = 0; i < 4; ++i) {
    group.spawn(
        [](std::atomic<int> *seen) -> magpie::task<void> {
          bool const stopped = co_await magpie::this_task::stop_requested();
          if (stopped) { // as would any task they fork
            ++*seen;
          }
        },
        &saw);
  }
  group.wait();
  // [group]
  return saw.load();
}

} // namespace

int main() {
  magpie::lazy_pool pool(2);
  int const depth = 16;
  long const all = (2L << depth) - 1;

  magpie::stop_source stop;
  long const counted = magpie::sync_wait(pool, search, &stop, depth, 1000L);
  std::printf("nodes counted: %s of %ld\n", counted < all ? "fewer than all" : "all", all);

  int const saw = stopped_group(pool);
  std::printf("group children that saw the stop: %d of 4\n", saw);
  return counted < all && saw == 4 ? 0 : 1;
}
