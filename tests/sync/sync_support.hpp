#pragma once
// tests/sync/sync_support.hpp — helpers shared by the tests of the waiting primitives.

#include <cstddef>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/test_support.hpp"

namespace magpie::test {

/// Forks `n` children `fn(i, args...)` (i = 0 … n−1), joins them and returns the sum of their
/// results. With one worker the children start in order, each running until it first waits.
template <typename Fn, typename... Args>
magpie::task<long> fork_n(int n, Fn fn, Args... args) {
  std::vector<long> out(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    co_await magpie::fork(&out[static_cast<std::size_t>(i)], fn, i, args...);
  }
  co_await magpie::join();
  long sum = 0;
  for (long v : out) {
    sum += v;
  }
  co_return sum;
}

/// Spawned tasks go to the scheduler under test if it is a pool; the inline scheduler's tasks
/// read futures of a separate pool.
struct spawn_target {
  explicit spawn_target(any_scheduler &s) {
    if (s.pool() == nullptr) {
      m_own = std::make_unique<magpie::lazy_pool>(2);
    }
    m_pool = s.pool() != nullptr ? s.pool() : m_own.get();
  }
  std::unique_ptr<magpie::pool> m_own;
  magpie::pool *m_pool;
};

/// Runs `fn` on a plain thread and joins it on destruction.
class side_thread {
public:
  template <typename Fn>
  explicit side_thread(Fn fn) : m_thread(std::move(fn)) {}
  ~side_thread() { m_thread.join(); }
  side_thread(side_thread const &) = delete;
  side_thread &operator=(side_thread const &) = delete;

private:
  std::thread m_thread;
};

/// The order in which tasks ran, from any thread.
struct order_log {
  std::mutex mutex;
  std::vector<int> order;
  void add(int tag) {
    std::lock_guard lock(mutex);
    order.push_back(tag);
  }
};

/// A task that records `tag` in `log`.
inline magpie::task<void> log_tag(order_log *log, int tag) {
  log->add(tag);
  co_return;
}

} // namespace magpie::test
