// magpie::sleep_for / sleep_until: a sleep never ends early; many sleepers (forked, with
// computing siblings) all wake and the reactor's heaps empty again; a zero sleep does not
// suspend; sleeping inside a fork-join scope is refused; a pool destroyed while a task sleeps
// waits for it; the timer heap against a reference; arming from many threads at once.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_support.hpp"
#include "magpie/io.hpp"
#include "sync/sync_support.hpp"

namespace {

using namespace magpie::test;
using namespace std::chrono_literals;
using magpie::task;
using magpie::io::clock;

using timer_test = scheduler_test;

/// Pending timers left in the reactor, once those of finished tasks are gone (they are gone at
/// once: a node leaves its heap before its task is woken).
std::size_t pending_timers() { return magpie::io::reactor_statistics().pending_timers; }

task<long> sleep_and_check(int i, std::atomic<int> *early) {
  auto const d = std::chrono::microseconds(100 + (i * 7919) % 3000);
  auto const start = clock::now();
  co_await magpie::sleep_for(d);
  if (clock::now() - start < d) {
    early->fetch_add(1);
  }
  co_return 1;
}

TEST_P(timer_test, a_sleep_never_ends_early) {
  std::atomic<int> early{0};
  EXPECT_EQ(m_sched.run(sleep_and_check, 3, &early), 1);
  EXPECT_EQ(early.load(), 0);
}

task<long> sleeper_or_worker(int i, std::atomic<int> *early) {
  long r = 0;
  if (i % 3 == 0) {
    co_await magpie::call(&r, fib, 12);
    co_return static_cast<long>(r == serial_fib(12));
  }
  co_await magpie::call(&r, sleep_and_check, i, early);
  co_return r;
}

TEST_P(timer_test, many_forked_sleepers_all_wake_and_nothing_stays_pending) {
  std::atomic<int> early{0};
  int const n = scaled(600, 120);
  EXPECT_EQ(m_sched.run(fork_n<decltype(&sleeper_or_worker), std::atomic<int> *>, n,
                        &sleeper_or_worker, &early),
            n);
  EXPECT_EQ(early.load(), 0);
  EXPECT_EQ(pending_timers(), 0u);
}

TEST_P(timer_test, sleep_until_a_past_or_present_time_does_not_suspend) {
  auto const before = m_sched.total_stats().handoffs;
  m_sched.run([]() -> task<void> {
    co_await magpie::sleep_for(0s);
    co_await magpie::sleep_for(-5ms);
    co_await magpie::sleep_until(clock::now() - 1s);
  });
  EXPECT_EQ(m_sched.total_stats().handoffs, before); // a park hands the worker's stack off
}

TEST_P(timer_test, sleep_until_another_clock_converts) {
  auto const start = clock::now();
  m_sched.run(
      []() -> task<void> { co_await magpie::sleep_until(std::chrono::system_clock::now() + 2ms); });
  EXPECT_GE(clock::now() - start, 1ms); // system_clock may step; allow a millisecond of it
}

TEST_P(timer_test, sleeping_inside_a_fork_join_scope_throws) {
  auto body = []() -> task<bool> {
    long r = 0;
    co_await magpie::fork(&r, fib, 5);
    bool threw = false;
    try {
      co_await magpie::sleep_for(1ms);
    } catch (std::logic_error const &) {
      threw = true;
    }
    co_await magpie::join();
    co_return threw &&r == serial_fib(5);
  };
  EXPECT_TRUE(m_sched.run(body));
}

TEST_P(timer_test, a_huge_duration_saturates_and_a_pending_sleep_counts) {
  // Not awaited to the end: only checks that the request is built without overflow.
  auto r = magpie::sleep_for(std::chrono::hours::max());
  EXPECT_EQ(r.m_deadline, magpie::io::detail::no_deadline);
  auto s = magpie::sleep_for(std::chrono::seconds(1));
  EXPECT_GT(s.m_deadline, magpie::io::detail::now_nanos());
}

INSTANTIATE_TEST_SUITE_P(schedulers, timer_test, ::testing::ValuesIn(all_schedulers()),
                         sched_name{});

TEST(timer_lifetime, a_pool_destroyed_while_a_task_sleeps_waits_for_the_sleep) {
  watchdog dog(current_test_name());
  std::atomic<int> done{0};
  auto const start = clock::now();
  {
    magpie::lazy_pool pool(2);
    auto f = magpie::spawn(
        pool,
        [](std::atomic<int> *d) -> task<void> {
          co_await magpie::sleep_for(30ms);
          d->store(1);
        },
        &done);
    (void)f; // detached when it goes out of scope, before the pool
  }
  EXPECT_EQ(done.load(), 1) << "the pool's destructor returned before its sleeping task ended";
  EXPECT_GE(clock::now() - start, 30ms);
  EXPECT_EQ(pending_timers(), 0u);
}

TEST(timer_lifetime, sleeps_on_a_pool_that_is_closing_still_finish) {
  watchdog dog(current_test_name());
  std::atomic<int> done{0};
  {
    magpie::lazy_pool pool(2);
    for (int i = 0; i < 50; ++i) {
      (void)magpie::spawn(
          pool,
          [](int k, std::atomic<int> *d) -> task<void> {
            for (int j = 0; j < 3; ++j) {
              co_await magpie::sleep_for(std::chrono::microseconds(200 * (k % 5)));
            }
            d->fetch_add(1);
          },
          i, &done);
    }
  } // destroyed at once: its destructor waits for the tasks that sleep, step by step
  EXPECT_EQ(done.load(), 50);
}

TEST(timer_heap, agrees_with_a_sorted_reference) {
  using magpie::io::detail::timer_heap;
  using magpie::io::detail::wait_node;
  std::mt19937_64 rng(42);
  std::vector<wait_node> nodes(2000);
  timer_heap heap;
  std::multimap<std::int64_t, wait_node *> ref;
  for (int round = 0; round < 20000; ++round) {
    auto op = rng() % 4;
    wait_node &n = nodes[rng() % nodes.size()];
    if (op < 2 && n.m_index == wait_node::not_queued) {
      n.m_deadline = static_cast<std::int64_t>(rng() % 1000);
      heap.reserve_one();
      heap.push(&n);
      ref.emplace(n.m_deadline, &n);
    } else if (op == 2 && n.m_index != wait_node::not_queued) {
      heap.erase(&n);
      auto [lo, hi] = ref.equal_range(n.m_deadline);
      ref.erase(std::find_if(lo, hi, [&](auto const &kv) { return kv.second == &n; }));
    } else if (op == 3 && !heap.empty()) {
      ASSERT_EQ(heap.earliest(), ref.begin()->first);
      wait_node *top = heap.pop();
      ASSERT_EQ(top->m_deadline, ref.begin()->first);
      auto [lo, hi] = ref.equal_range(top->m_deadline);
      ref.erase(std::find_if(lo, hi, [&](auto const &kv) { return kv.second == top; }));
    }
    ASSERT_EQ(heap.size(), ref.size());
  }
  while (!heap.empty()) {
    ASSERT_EQ(heap.pop()->m_deadline, ref.begin()->first);
    ref.erase(ref.begin());
  }
}

} // namespace
