// Explicit scheduling: a task moves itself to a chosen worker, or to another pool, and back.
// Here one worker of a one-worker pool owns a log: every task that writes to it moves there
// first, so the writes never run concurrently and need no lock.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include "magpie/magpie.hpp"

struct log_owner {
  magpie::lazy_pool pool{1};      // the log's one worker
  std::vector<std::string> lines; // touched only by a task running on that worker
};

magpie::task<long> square_and_log(magpie::pool &compute, log_owner &log, long x) {
  long const y = x * x; // runs on some worker of `compute`
  co_await magpie::resume_on(log.pool, 0);
  log.lines.push_back(std::to_string(x) + "^2 = " + std::to_string(y)); // on the log's worker
  co_await magpie::resume_on(compute); // back to any worker of `compute`
  co_return y;
}

magpie::task<long> sum_of_squares(magpie::pool &compute, log_owner &log, long n) {
  std::array<long, 4> parts{};
  for (std::size_t i = 0; i < parts.size() && static_cast<long>(i) < n; ++i) {
    co_await magpie::fork(&parts[i], square_and_log, compute, log, static_cast<long>(i) + 1);
  }
  co_await magpie::join();
  co_await magpie::resume_on(compute, 1); // now on worker 1 of `compute`
  std::printf("joined, then moved to worker %td\n", magpie::this_worker_index());
  co_return parts[0] + parts[1] + parts[2] + parts[3];
}

int main() {
  magpie::lazy_pool compute(2);
  log_owner log;
  long const total = magpie::sync_wait(compute, sum_of_squares, compute, log, 4L);
  std::sort(log.lines.begin(), log.lines.end()); // tasks wrote in whatever order they ran
  for (std::string const &line : log.lines) {
    std::printf("%s\n", line.c_str());
  }
  std::printf("sum of squares: %ld\n", total);
}
