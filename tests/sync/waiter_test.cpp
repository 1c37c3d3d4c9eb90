// sync/detail/waiter.hpp, the skeleton of every waiting primitive, through a minimal one-shot
// gate: tasks that find it open pass without suspending; the others queue and are woken in FIFO
// order by open() from another thread; a gate destroyed closed fails its waiters.

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_support.hpp"
#include "magpie/sync/detail/waiter.hpp"

namespace {

using namespace magpie::test;
namespace sd = magpie::sync::detail;
using magpie::task;

class gate {
public:
  ~gate() { sd::wake_all(m_waiters.take_all(), std::make_exception_ptr(magpie::abandoned_wait())); }

  void open() {
    sd::waiter *all = nullptr;
    {
      std::lock_guard lock(m_mutex);
      m_open = true;
      m_open_hint.store(true); // release: what preceded open() is visible to try_now()
      all = m_waiters.take_all();
    }
    sd::wake_all(all);
  }
  std::size_t waiting() {
    std::lock_guard lock(m_mutex);
    return m_waiters.size();
  }

  struct awaitable : sd::wait_awaitable<awaitable> {
    gate *m_gate = nullptr;
    bool try_now() noexcept { return m_gate->m_open_hint.load(); } // acquire: sees open()'s data
    bool try_or_enqueue(sd::waiter &w) {
      std::lock_guard lock(m_gate->m_mutex);
      if (m_gate->m_open) {
        return true;
      }
      m_gate->m_waiters.push(&w);
      return false;
    }
    int resume_value() const noexcept { return 7; }
  };
  struct request {
    using magpie_awaitable = void;
    gate *m_gate;
    awaitable magpie_bind(magpie::core::frame_base &self) {
      awaitable a;
      a.m_gate = m_gate;
      sd::bind_waiter(a, self);
      return a;
    }
  };
  request wait() noexcept { return {this}; }

private:
  std::mutex m_mutex;
  bool m_open = false;
  std::atomic<bool> m_open_hint{false};
  sd::waiter_queue m_waiters;
};

task<int> pass(gate *g) { co_return co_await g->wait(); }

task<int> many(gate *g, int n) {
  std::vector<int> out(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    co_await magpie::fork(&out[static_cast<std::size_t>(i)], pass, g);
  }
  co_await magpie::join();
  int sum = 0;
  for (int v : out) {
    sum += v;
  }
  co_return sum;
}

using waiter_test = scheduler_test;

TEST_P(waiter_test, queued_tasks_are_woken_by_another_thread) {
  gate g;
  int const n = scaled(64, 16);
  std::thread opener([&] {
    ASSERT_TRUE(wait_until([&] { return g.waiting() == static_cast<std::size_t>(n); }));
    g.open();
  });
  EXPECT_EQ(m_sched.run(many, &g, n), 7 * n);
  opener.join();
}

task<int> fails(gate *g) {
  try {
    co_await g->wait();
  } catch (magpie::abandoned_wait const &) {
    co_return 1;
  }
  co_return 0;
}

TEST_P(waiter_test, a_gate_destroyed_closed_fails_its_waiters) {
  auto g = std::make_unique<gate>();
  std::thread destroyer([&] {
    ASSERT_TRUE(wait_until([&] { return g->waiting() == 1; }));
    g.reset();
  });
  EXPECT_EQ(m_sched.run(fails, g.get()), 1);
  destroyer.join();
}

INSTANTIATE_TEST_SUITE_P(every_scheduler, waiter_test, ::testing::ValuesIn(all_schedulers()),
                         sched_name{});

} // namespace
