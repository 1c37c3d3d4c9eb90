// yield: a task that never suspends lets the tasks woken meanwhile on its worker run first, and
// goes behind them; with nothing waiting it continues at once without parking; it is refused
// inside a fork–join scope, does nothing on a guest or the inline scheduler, and a pool destroyed
// while its tasks yield waits for every one of them.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_support.hpp"
#include "magpie/io.hpp"

namespace {

using namespace magpie::test;
using magpie::task;

/// Pools whose roots run on workers (hand-off), so that a spinning task holds a worker.
class yield_test : public ::testing::TestWithParam<magpie::test::sched_param> {
protected:
  yield_test() : m_dog(current_test_name()) {
    magpie::pool_options const o = handoff_options(GetParam().workers);
    if (GetParam().kind == sched_kind::busy) {
      m_pool = std::make_unique<magpie::busy_pool>(o);
    } else {
      m_pool = std::make_unique<magpie::lazy_pool>(o);
    }
  }

  magpie::pool &pool() { return *m_pool; }

  watchdog m_dog; // constructed first, destroyed last: also guards the pool's shutdown
  std::unique_ptr<magpie::pool> m_pool;
};

std::uint64_t parks(magpie::pool &p) {
  std::uint64_t n = 0;
  for (auto const &s : p.stats()) {
    n += s.parks;
  }
  return n;
}

// The woken task: waits on `ev`, then records itself.
task<void> woken(magpie::event *ev, std::atomic<bool> *waiting, std::mutex *m,
                 std::vector<int> *order, int id) {
  waiting->store(true);
  co_await ev->wait();
  std::lock_guard lock(*m);
  order->push_back(id);
}

// Says it has started, spins (never suspending) until `go`, then yields once and records itself.
task<long> spinner(std::atomic<bool> *started, std::atomic<bool> *go, std::mutex *m,
                   std::vector<int> *order) {
  started->store(true);
  while (!go->load()) {
    spin_work(100);
  }
  co_await magpie::yield();
  std::lock_guard lock(*m);
  order->push_back(0);
  co_return magpie::this_worker_index();
}

TEST_P(yield_test, the_woken_tasks_of_the_worker_go_first_in_the_order_they_were_woken) {
  if (pool().size() != 1) {
    GTEST_SKIP() << "the order is the one worker's";
  }
  std::mutex m;
  std::vector<int> order;
  magpie::event ev[3];
  std::atomic<bool> waiting[3] = {false, false, false};
  std::vector<magpie::future<void>> w;
  for (int i = 0; i < 3; ++i) {
    w.push_back(magpie::spawn(pool(), woken, &ev[i], &waiting[i], &m, &order, i + 1));
    while (!waiting[i].load()) { // the one worker has started it: it parks next
      std::this_thread::yield();
    }
  }
  // The one worker runs one task at a time, in spawn order: once the spinner has started, the
  // three have parked. The spinner holds the worker; they are woken in order, queued behind it.
  std::atomic<bool> started{false};
  std::atomic<bool> go{false};
  magpie::future<long> s = magpie::spawn(pool(), spinner, &started, &go, &m, &order);
  while (!started.load()) {
    std::this_thread::yield();
  }
  for (auto &e : ev) {
    e.set();
  }
  go.store(true);
  EXPECT_EQ(s.get(), 0);
  for (auto &f : w) {
    f.get();
  }
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 0}));
}

// Spins until `flag` is set, yielding every round: on one worker, only a yield lets the setter
// run. Returns the number of yields.
task<long> spin_yielding(std::atomic<bool> const *flag) {
  long yields = 0;
  while (!flag->load()) {
    co_await magpie::yield();
    ++yields;
  }
  co_return yields;
}

task<void> set_after_event(magpie::event *ev, std::atomic<bool> *flag) {
  co_await ev->wait();
  flag->store(true);
}

TEST_P(yield_test, a_task_that_spins_with_yield_lets_the_task_it_waits_for_run) {
  // Every worker spins: only yields let the woken setter run (a lost one would hang: watchdog).
  std::atomic<bool> flag{false};
  magpie::event ev;
  magpie::future<void> setter = magpie::spawn(pool(), set_after_event, &ev, &flag);
  std::vector<magpie::future<long>> spinners;
  for (std::size_t i = 0; i < pool().size(); ++i) {
    spinners.push_back(magpie::spawn(pool(), spin_yielding, &flag));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ev.set();
  setter.get();
  for (auto &f : spinners) {
    EXPECT_GE(f.get(), 0);
  }
  EXPECT_TRUE(flag.load());
}

task<std::uint64_t> yield_alone(magpie::pool *p, int n) {
  std::uint64_t const before = parks(*p);
  for (int i = 0; i < n; ++i) {
    co_await magpie::yield();
  }
  co_return parks(*p) - before;
}

TEST_P(yield_test, with_nothing_waiting_a_yield_continues_at_once_without_parking) {
  EXPECT_EQ(magpie::sync_wait(pool(), yield_alone, &pool(), 1000), 0u);
}

task<long> yield_in_scope() {
  long a = 0;
  co_await magpie::fork(&a, fib, 10);
  bool refused = false;
  try {
    co_await magpie::yield();
  } catch (std::logic_error const &) {
    refused = true;
  }
  co_await magpie::join();
  co_return refused ? a : -1;
}

TEST_P(yield_test, inside_a_fork_join_scope_a_yield_is_refused_with_logic_error) {
  EXPECT_EQ(magpie::sync_wait(pool(), yield_in_scope), serial_fib(10));
}

task<long> yield_then_fib(int n) {
  co_await magpie::yield();
  long r = 0;
  co_await magpie::call(&r, fib, n);
  co_await magpie::yield();
  co_return r;
}

TEST(yield, continues_at_once_on_a_guest_and_on_the_inline_scheduler) {
  watchdog dog(current_test_name());
  magpie::inline_scheduler inl;
  EXPECT_EQ(magpie::sync_wait(inl, yield_then_fib, 15), serial_fib(15));
  magpie::lazy_pool p(2); // callers run their roots: this one runs here, as a guest
  EXPECT_EQ(magpie::sync_wait(p, yield_then_fib, 15), serial_fib(15));
}

// Yields, sleeps now and then (the reactor wakes it and others), and counts its rounds.
task<void> yield_and_sleep(std::atomic<long> *rounds, int n) {
  for (int i = 0; i < n; ++i) {
    if (i % 8 == 7) {
      co_await magpie::sleep_for(std::chrono::microseconds(20));
    }
    co_await magpie::yield();
    rounds->fetch_add(1);
  }
}

TEST_P(yield_test, a_pool_destroyed_while_its_tasks_yield_waits_for_every_one) {
  std::atomic<long> rounds{0};
  int const tasks = 24;
  int const n = scaled(200, 40);
  for (int t = 0; t < tasks; ++t) {
    (void)magpie::spawn(pool(), yield_and_sleep, &rounds, n); // detached: the destructor waits
  }
  m_pool.reset();
  EXPECT_EQ(rounds.load(), long{tasks} * n);
}

std::vector<magpie::test::sched_param> yield_pools() {
  return {{sched_kind::busy, 1, true},
          {sched_kind::lazy, 1, true},
          {sched_kind::busy, 2, true},
          {sched_kind::lazy, 2, true},
          {sched_kind::lazy, 3, true}};
}

INSTANTIATE_TEST_SUITE_P(pools, yield_test, ::testing::ValuesIn(yield_pools()), sched_name{});

} // namespace
