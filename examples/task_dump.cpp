// Why is my program stuck? A task dump (what each worker runs, as a chain of tasks), the tasks
// parked on waiting primitives, and the stall watchdog that prints them by itself.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>

#include "magpie/magpie.hpp"

std::atomic<bool> arrived{false};
std::atomic<bool> go{false};

// A plain blocking wait inside a task: the mistake the watchdog is for (it blocks a worker).
[[gnu::noinline]] void wait_for_go() {
  arrived = true;
  while (!go) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

magpie::task<int> load_config() {
  wait_for_go();
  co_return 42;
}

magpie::task<int> start_server() {
  int config = 0;
  co_await magpie::call(&config, load_config);
  co_return config;
}

magpie::task<int> wait_for_client(magpie::event *connected) {
  co_await connected->wait(); // parked: its worker runs other work meanwhile
  co_return 1;
}

int main() {
  // [dump]
  magpie::trace::track_parked parked; // optional: list parked tasks in dumps too
  magpie::lazy_pool pool(2);
  std::ostringstream report;
  magpie::trace::watchdog stall(pool, std::chrono::milliseconds(200),
                                [&](std::string const &text) { report << text; });
  magpie::event connected;
  std::thread client([&] { magpie::sync_wait(pool, wait_for_client, &connected); });
  std::thread server([&] { magpie::sync_wait(pool, start_server); });
  while (!arrived || magpie::trace::counters(pool).total.parks == 0) {
    std::this_thread::yield(); // (for this example: until the server blocks and the client waits)
  }
  magpie::trace::dump(pool, std::cerr); // any thread, any time: what runs and what waits
  // [dump]
  // [snapshot]
  magpie::trace::task_dump const d = magpie::trace::snapshot(pool); // the same, as data
  for (magpie::trace::worker_chain const &w : d.workers) {
    for (magpie::trace::task_frame const &t : w.chain) { // innermost first
      std::printf("%s %s%s", &t == &w.chain.front() ? "running:" : " <-", t.function.c_str(),
                  &t == &w.chain.back() ? "\n" : "");
    }
  }
  for (auto const &chain : d.parked) {
    std::printf("parked: %s\n", chain.front().function.c_str());
  }
  // [snapshot]
  while (stall.fired() == 0) { // the watchdog reports once, after 200 ms without progress
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  go = true;
  connected.set();
  server.join();
  client.join();
  bool const named = report.str().find("load_config()") != std::string::npos;
  std::printf("watchdog fired %zu time(s); its report names load_config: %s\n", stall.fired(),
              named ? "yes" : "no");
  return named ? 0 : 1;
}
