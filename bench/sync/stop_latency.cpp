// stop_latency: the time from a stop request to the return of the cancellation scope it stops
// ("quiescence"), for a fork–join search inside magpie::with_stop and for a task group made with a
// token. The search is a binary tree whose leaves each burn `leaf_us` microseconds and whose
// nodes poll `co_await magpie::this_task::stop_requested()`; another thread requests the stop once
// the search has run for `lead_ms`, and the caller's sync_wait / wait() return ends the interval.
// Prints p50, p90, p99 and max in microseconds per pool kind. Checks: every run must have been
// stopped early (fewer leaves than the whole tree), else the run is reported as an error.
//
//   stop_latency [--runs N] [--leaf-us U] [--workers P]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "magpie/magpie.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

[[gnu::noinline]] void burn_us(int us) {
  auto const end = clock_type::now() + std::chrono::microseconds(us);
  while (clock_type::now() < end) {
  }
}

struct search_state {
  int leaf_us;
  std::atomic<long> leaves{0};
};

magpie::task<void> search(search_state *s, int depth) {
  bool const stopped = co_await magpie::this_task::stop_requested(); // not in an if: GCC 12
  if (stopped) {
    co_return;
  }
  if (depth == 0) {
    s->leaves.fetch_add(1, std::memory_order_relaxed);
    burn_us(s->leaf_us);
    co_return;
  }
  co_await magpie::fork(search, s, depth - 1);
  co_await magpie::call(search, s, depth - 1);
  co_await magpie::join();
}

magpie::task<void> scoped(magpie::stop_token token, search_state *s, int depth) {
  co_await magpie::with_stop(std::move(token), search, s, depth);
  co_await magpie::join();
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

template <typename Run>
bool measure(char const *what, int runs, Run run) {
  std::vector<double> us;
  int errors = 0;
  for (int i = 0; i < runs; ++i) {
    double const took = run();
    if (took < 0) {
      ++errors;
    } else {
      us.push_back(took);
    }
  }
  if (us.empty()) {
    std::printf("%-28s no run was stopped early: ERROR\n", what);
    return false;
  }
  std::printf("%-28s p50 %8.1f  p90 %8.1f  p99 %8.1f  max %8.1f us  (%zu runs%s)\n", what,
              percentile(us, 0.5), percentile(us, 0.9), percentile(us, 0.99),
              *std::max_element(us.begin(), us.end()), us.size(), errors ? ", ERRORS" : "");
  return errors == 0;
}

/// One run: starts `start(token, state)` (which returns when the scope has returned), requests
/// the stop from this thread after `lead`, and returns microseconds from request to return.
template <typename Start>
double one_run(int leaf_us, int depth, std::chrono::milliseconds lead, Start start) {
  search_state s{leaf_us};
  magpie::stop_source src;
  std::atomic<bool> done{false};
  clock_type::time_point finished;
  std::thread runner([&] {
    start(src.get_token(), &s, depth);
    finished = clock_type::now();
    done.store(true, std::memory_order_release);
  });
  std::this_thread::sleep_for(lead);
  auto const requested = clock_type::now();
  src.request_stop();
  runner.join();
  if (s.leaves.load() >= (1L << depth)) {
    return -1; // finished before the stop
  }
  return std::chrono::duration<double, std::micro>(finished - requested).count();
}

} // namespace

int main(int argc, char **argv) {
  int runs = 200;
  int leaf_us = 1;
  std::size_t workers = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--runs") == 0) {
      runs = std::atoi(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--leaf-us") == 0) {
      leaf_us = std::atoi(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--workers") == 0) {
      workers = static_cast<std::size_t>(std::atoi(argv[i + 1]));
    }
  }
  int depth = 22;
  if (char const *e = std::getenv("DEPTH")) {
    depth = std::atoi(e);
  } // 4M leaves of >= 1 us: seconds of work, stopped after 5 ms
  auto const lead = std::chrono::milliseconds(5);
  std::printf("stop -> scope returned, %zu workers, leaves of %d us, stop after %lld ms\n", workers,
              leaf_us, static_cast<long long>(lead.count()));
  bool ok = true;
  for (int kind = 0; kind < 2; ++kind) {
    std::unique_ptr<magpie::pool> pool;
    if (kind == 0) {
      pool = std::make_unique<magpie::busy_pool>(workers);
    } else {
      pool = std::make_unique<magpie::lazy_pool>(workers);
    }
    std::string const name = kind == 0 ? "busy" : "lazy";
    ok &= measure((name + " with_stop").c_str(), runs, [&] {
      return one_run(leaf_us, depth, lead, [&](magpie::stop_token t, search_state *s, int d) {
        magpie::sync_wait(*pool, scoped, std::move(t), s, d);
      });
    });
    ok &= measure((name + " task_group(token)").c_str(), runs, [&] {
      return one_run(leaf_us, depth, lead, [&](magpie::stop_token t, search_state *s, int d) {
        magpie::task_group g(*pool, std::move(t));
        for (int i = 0; i < 4; ++i) {
          g.spawn(search, s, d - 2);
        }
        g.wait();
      });
    });
  }
  return ok ? 0 : 1;
}
