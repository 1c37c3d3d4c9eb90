// bench/sync/parked_memory.cpp — memory per suspended task: N tasks (default 100,000) parked on
// ONE magpie::event at once, on a pool of P workers (default 1 and 2).
//
// Measured while all N wait (a plain thread polls event::waiting() until it reads N):
//   stacklets  bytes of live stacklets (core::get_stack_stats().bytes_live) minus the value before
//              the run, divided by N: the stack memory each parked task holds (its frame lives in
//              it). Also the live-stacklet count per task.
//   heap+rss   the process's resident set (VmRSS from /proc/self/status) minus the value before
//              the run, divided by N: everything, including the root's result vector (8 B/task),
//              allocator overhead and the pool.
// Then set() releases everyone; the answer (N) is checked, and the stacklets return to the
// baseline. Usage: sync_parked_memory [N]

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "magpie/magpie.hpp"

namespace {

long rss_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      return std::atol(line.c_str() + 6) * 1024;
    }
  }
  return -1;
}

std::size_t live_stack_bytes() { return magpie::core::get_stack_stats().bytes_live; }
std::size_t live_stacklets() { return magpie::core::get_stack_stats().stacklets_live; }

magpie::task<long> waiter(magpie::event *ev) {
  co_await ev->wait();
  co_return 1;
}

magpie::task<long> park_all(magpie::event *ev, long n) {
  std::vector<long> out(static_cast<std::size_t>(n));
  for (long i = 0; i < n; ++i) {
    co_await magpie::fork(&out[static_cast<std::size_t>(i)], waiter, ev);
  }
  co_await magpie::join();
  long sum = 0;
  for (long v : out) {
    sum += v;
  }
  co_return sum;
}

// The two ways tasks come to wait: forked children of one root (their frames only), and tasks
// spawned from a plain thread, each with its future (frame + the spawned state on the heap).
enum class how { forked, spawned };

bool measure(long n, std::size_t workers, how mode) {
  magpie::lazy_pool pool(workers);
  magpie::event ev;
  // Warm the pool's workers (their first chains) so the baseline includes them.
  ev.set();
  magpie::sync_wait(pool, waiter, &ev);
  ev.reset();
  std::vector<magpie::future<long>> futures;
  futures.reserve(static_cast<std::size_t>(n)); // its pages are touched (8 B/task) inside
  std::size_t const base_bytes = live_stack_bytes();
  std::size_t const base_stacklets = live_stacklets();
  long const base_rss = rss_bytes();
  std::size_t peak_bytes = 0;
  std::size_t peak_stacklets = 0;
  long peak_rss = 0;
  std::thread observer([&] {
    auto const deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (ev.waiting() < static_cast<std::size_t>(n) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    peak_bytes = live_stack_bytes();
    peak_stacklets = live_stacklets();
    peak_rss = rss_bytes();
    ev.set();
  });
  long got = 0;
  if (mode == how::forked) {
    got = magpie::sync_wait(pool, park_all, &ev, n);
  } else {
    for (long i = 0; i < n; ++i) {
      futures.push_back(magpie::spawn(pool, waiter, &ev));
    }
    for (auto &f : futures) {
      got += f.get();
    }
  }
  observer.join();
  bool const ok = got == n;
  double const per_task = static_cast<double>(peak_bytes - base_bytes) / static_cast<double>(n);
  std::printf("%-7s P=%zu  N=%ld  stacklets: %.1f bytes/task (%.3f stacklets/task)   rss: %.1f "
              "bytes/task   after: %zd stacklet bytes above baseline   check %s\n",
              mode == how::forked ? "forked" : "spawned", workers, n, per_task,
              static_cast<double>(peak_stacklets - base_stacklets) / static_cast<double>(n),
              static_cast<double>(peak_rss - base_rss) / static_cast<double>(n),
              static_cast<std::ptrdiff_t>(live_stack_bytes()) -
                  static_cast<std::ptrdiff_t>(base_bytes),
              ok ? "OK" : "FAIL");
  return ok;
}

} // namespace

int main(int argc, char **argv) {
  // Arguments other than a count (the runner's --benchmark_color) are ignored.
  long const n = argc > 1 && std::atol(argv[1]) > 0 ? std::atol(argv[1]) : 100'000;
  // Each measurement in its own child process: memory freed by an earlier one would otherwise be
  // reused without new pages and make the later RSS figures too small.
  bool ok = true;
  for (how mode : {how::forked, how::spawned}) {
    for (std::size_t workers : {1, 2}) {
      std::fflush(stdout);
      pid_t const child = fork();
      if (child == 0) {
        bool const good = measure(n, workers, mode);
        std::fflush(stdout);
        std::_Exit(good ? 0 : 1);
      }
      int status = 0;
      ok = child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) &&
           WEXITSTATUS(status) == 0 && ok;
    }
  }
  std::printf(ok ? "all checks OK\n" : "ERROR OCCURRED: a check failed\n");
  return ok ? 0 : 1;
}
