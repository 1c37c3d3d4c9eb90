// bench/io/timers.cpp — what magpie's timers cost:
//   1. arm + cancel of a timer (the reactor's shard heap, as readable(fd, deadline) does when the
//      descriptor wins), ns per pair, with 0 and 10,000 other timers pending;
//   2. lateness of sleep_for(1 ms) with every worker of a lazy pool asleep: p50 / p99 / max µs;
//   3. CPU time (utime + stime from /proc/self/stat) over 5 s while 1,000 tasks sleep and
//      nothing else runs;
//   4. bytes of runtime state per pending timer.
// Checks its answers (every sleeper woke, never early; every arm was cancelled) and prints
// "ERROR OCCURRED" with exit status 1 otherwise. --quick shortens phase 3 to 1 s.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "magpie/io.hpp"
#include "magpie/magpie.hpp"

namespace {

using namespace std::chrono_literals;
using magpie::io::clock;
namespace iod = magpie::io::detail;

bool failed = false;
void check(bool ok, char const *what) {
  if (!ok) {
    std::printf("ERROR OCCURRED: %s\n", what);
    failed = true;
  }
}

double cpu_seconds() {
  std::ifstream f("/proc/self/stat");
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::istringstream in(s.substr(s.rfind(')') + 2)); // fields from 3 on
  std::string field;
  unsigned long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && in >> field; ++i) {
    if (i == 14) {
      utime = std::stoul(field);
    } else if (i == 15) {
      stime = std::stoul(field);
    }
  }
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

double arm_cancel_ns(std::size_t others) {
  std::vector<iod::wait_node> background(others);
  iod::nanos const far = iod::now_nanos() + 3'600'000'000'000; // an hour: never fires here
  for (std::size_t i = 0; i < others; ++i) {
    background[i].m_deadline = far + static_cast<iod::nanos>(i * 7919 % 100000);
    check(iod::arm_timer(background[i]), "arm");
  }
  constexpr int n = 1'000'000;
  iod::wait_node node;
  int cancelled = 0;
  auto const t0 = clock::now();
  for (int i = 0; i < n; ++i) {
    node.m_deadline = far + (i % 50000);
    (void)iod::arm_timer(node);
    cancelled += iod::cancel_timer(node) ? 1 : 0;
  }
  double const ns = std::chrono::duration<double, std::nano>(clock::now() - t0).count() / n;
  check(cancelled == n, "every armed timer was cancelled before it fired");
  for (auto &b : background) {
    check(iod::cancel_timer(b), "background timer cancelled");
  }
  return ns;
}

magpie::task<long> sleep_once(std::chrono::microseconds d, long *late_ns) {
  auto const deadline = clock::now() + d;
  co_await magpie::sleep_until(deadline);
  *late_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - deadline).count();
  co_return 1;
}

magpie::task<void> sleep_long(std::chrono::milliseconds d, std::atomic<int> *woke) {
  co_await magpie::sleep_for(d);
  woke->fetch_add(1);
}

} // namespace

int main(int argc, char **argv) {
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    quick = quick || std::strcmp(argv[i], "--quick") == 0;
  }
  std::printf("per pending timer: %zu bytes in the task's frame (sleep awaitable) + %zu in a "
              "shard's heap (+ spare vector capacity)\n",
              sizeof(iod::sleep_awaitable), sizeof(iod::wait_node *));
  std::printf("arm+cancel, no other timers:   %6.1f ns\n", arm_cancel_ns(0));
  std::printf("arm+cancel, 10,000 pending:    %6.1f ns\n", arm_cancel_ns(10000));

  {
    magpie::lazy_pool pool(2);
    std::vector<long> late;
    int const rounds = quick ? 200 : 1000;
    for (int i = 0; i < rounds; ++i) {
      std::this_thread::sleep_for(2ms); // every worker goes back to sleep
      long ns = 0;
      check(magpie::sync_wait(pool, sleep_once, std::chrono::microseconds(1000), &ns) == 1, "woke");
      check(ns >= 0, "a sleep ended before its deadline");
      late.push_back(ns);
    }
    std::sort(late.begin(), late.end());
    auto at = [&](double q) { return late[static_cast<std::size_t>(q * (late.size() - 1))] / 1e3; };
    std::printf("sleep_for(1ms) lateness, lazy_pool(2) asleep, %d rounds: p50 %.1f us, p99 %.1f "
                "us, max %.1f us\n",
                rounds, at(0.5), at(0.99), at(1.0));
  }

  {
    magpie::lazy_pool pool(2);
    std::atomic<int> woke{0};
    int const n = 1000;
    auto const window = quick ? 1s : 5s;
    auto const sleep = std::chrono::duration_cast<std::chrono::milliseconds>(window + 500ms);
    std::vector<magpie::future<void>> tasks;
    for (int i = 0; i < n; ++i) {
      tasks.push_back(magpie::spawn(pool, sleep_long, sleep, &woke));
    }
    std::this_thread::sleep_for(200ms); // all armed, workers asleep
    double const c0 = cpu_seconds();
    std::this_thread::sleep_for(window);
    double const c1 = cpu_seconds();
    for (auto &t : tasks) {
      t.get();
    }
    check(woke.load() == n, "every long sleeper woke");
    std::printf("CPU while %d tasks sleep (lazy_pool(2)), over %.0f s: %.3f s (utime+stime)\n", n,
                std::chrono::duration<double>(window).count(), c1 - c0);
  }
  return failed ? 1 : 0;
}
