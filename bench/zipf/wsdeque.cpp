// zipf — a minimal work-stealing scheduler as the reference article describes it, written here:
// one std::deque of tasks per thread, each behind a std::mutex; the owner pops from the back of
// its own deque, an idle thread steals from the front of another's with try_lock (a busy victim
// is skipped, never waited for). A loop pushes its N iterations round-robin over the P deques
// (one task per iteration) and the submitting thread works as worker 0 until all have run.
// Idle helpers spin with std::this_thread::yield() between steal rounds (like a busy pool).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "zipf/problem.hpp"

namespace {

/// One unit of work: `run(context, index)`.
struct task_item {
  void (*run)(void const *, std::size_t);
  void const *context;
  std::size_t index;
};

class ws_pool {
public:
  explicit ws_pool(unsigned workers) : m_queues(workers) {
    for (unsigned t = 1; t < workers; ++t) {
      m_threads.emplace_back([this, t] { helper_loop(t); });
    }
  }
  ws_pool(ws_pool const &) = delete;
  ws_pool &operator=(ws_pool const &) = delete;
  ~ws_pool() {
    m_stop.store(true, std::memory_order_release); // helpers see it at their next round
    for (auto &th : m_threads) {
      th.join();
    }
  }

  /// Runs `body(i)` for i in [0, n) and returns when all have run. Called by one thread at a time.
  template <typename Body>
  void parallel_for(std::size_t n, Body const &body) {
    auto const run = [](void const *ctx, std::size_t i) { (*static_cast<Body const *>(ctx))(i); };
    // release (by the increment below, before the pushes' unlocks): a helper that runs a task
    // and decrements m_pending orders after it.
    m_pending.fetch_add(static_cast<long>(n), std::memory_order_relaxed);
    auto const p = m_queues.size();
    for (std::size_t i = 0; i < n; ++i) {
      queue &q = m_queues[i % p];
      std::lock_guard lock(q.mutex); // the mutex publishes the task to whoever pops it
      q.tasks.push_back({run, &body, i});
    }
    // acquire: pairs with each task's release decrement, so that its effects are visible here.
    while (m_pending.load(std::memory_order_acquire) != 0) {
      if (!run_one(0)) {
        std::this_thread::yield();
      }
    }
  }

private:
  struct alignas(64) queue {
    std::mutex mutex;
    std::deque<task_item> tasks;
  };

  /// Pops from our own back, else steals from another's front with try_lock. False if idle.
  bool run_one(unsigned self) {
    task_item item{};
    bool found = false;
    {
      queue &own = m_queues[self];
      std::lock_guard lock(own.mutex);
      if (!own.tasks.empty()) {
        item = own.tasks.back();
        own.tasks.pop_back();
        found = true;
      }
    }
    auto const p = static_cast<unsigned>(m_queues.size());
    for (unsigned k = 1; !found && k < p; ++k) {
      queue &victim = m_queues[(self + k) % p];
      std::unique_lock lock(victim.mutex, std::try_to_lock);
      if (lock.owns_lock() && !victim.tasks.empty()) {
        item = victim.tasks.front();
        victim.tasks.pop_front();
        found = true;
      }
    }
    if (!found) {
      return false;
    }
    item.run(item.context, item.index);
    // release: the task's effects happen before the submitter's acquire load sees zero.
    m_pending.fetch_sub(1, std::memory_order_release);
    return true;
  }

  void helper_loop(unsigned self) {
    // acquire: pairs with the destructor's release store (nothing to publish but the stop).
    while (!m_stop.load(std::memory_order_acquire)) {
      if (!run_one(self)) {
        std::this_thread::yield();
      }
    }
  }

  std::vector<queue> m_queues;
  std::vector<std::thread> m_threads;
  alignas(64) std::atomic<long> m_pending{0};
  std::atomic<bool> m_stop{false};
};

} // namespace

int main(int argc, char **argv) {
  auto const o = bench::parse_options(argc, argv);
  ws_pool pool(o.workers);
  return zipf::main_for(argc, argv, "ws-deque", o, [&](zipf::loop const &lp, int count) {
    auto body = [&lp](std::size_t i) { lp.body(i); };
    for (int l = 0; l < count; ++l) {
      pool.parallel_for(lp.ks.size(), body);
    }
  });
}
