// magpie::latch: count_down from threads and tasks, arrive_and_wait, waits on an open latch,
// misuse (negative counts, too many arrivals), destruction with waiters, a waiter freeing the
// latch at once, plain threads.

#include <atomic>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_support.hpp"
#include "sync/sync_support.hpp"

namespace {

using namespace magpie::test;
using magpie::latch;
using magpie::task;

using latch_test = scheduler_test;

task<long> arrive_child(int i, latch *l, std::atomic<long> *sum) {
  sum->fetch_add(i); // before the arrival: visible to every waiter after its wait
  co_await l->arrive_and_wait();
  co_return sum->load();
}

TEST_P(latch_test, arrive_and_wait_releases_everyone_at_zero) {
  int const n = scaled(64, 16);
  latch l(n);
  std::atomic<long> sum{0};
  long const expect = static_cast<long>(n) * (n - 1) / 2;
  EXPECT_EQ(m_sched.run(fork_n<decltype(&arrive_child), latch *, std::atomic<long> *>, n,
                        &arrive_child, &l, &sum),
            n * expect);
  EXPECT_TRUE(l.try_wait());
}

task<long> wait_child(int, latch *l) {
  co_await l->wait();
  co_return 1;
}

TEST_P(latch_test, count_down_from_threads) {
  int const n = scaled(32, 8);
  int const threads = 4;
  latch l(threads * n);
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&] {
      for (int i = 0; i < n; ++i) {
        l.count_down();
      }
    });
  }
  EXPECT_EQ(m_sched.run(fork_n<decltype(&wait_child), latch *>, 8, &wait_child, &l), 8);
  for (auto &t : ts) {
    t.join();
  }
  EXPECT_THROW(l.count_down(), std::logic_error); // already zero
  EXPECT_NO_THROW(l.count_down(0));
}

task<int> wait_and_free_latch(latch *l) {
  co_await l->wait();
  delete l;
  co_return 1;
}

TEST_P(latch_test, waiter_destroys_the_latch_while_count_down_returns) {
  int const rounds = scaled(2000, 200);
  for (int r = 0; r < rounds; ++r) {
    auto *l = new latch(2);
    std::thread a([l] { l->count_down(); });
    std::thread b([l] { l->count_down(); });
    EXPECT_EQ(m_sched.run(wait_and_free_latch, l), 1);
    a.join();
    b.join();
  }
}

task<long> abandoned_child(int, latch *l) {
  try {
    co_await l->wait();
  } catch (magpie::abandoned_wait const &) {
    co_return 1;
  }
  co_return 0;
}

TEST_P(latch_test, destroyed_while_waited_on) {
  auto l = std::make_unique<latch>(1);
  int const n = 5;
  std::atomic<int> thread_abandoned{0};
  std::thread waiter([&] {
    try {
      l->wait_blocking();
    } catch (magpie::abandoned_wait const &) {
      thread_abandoned = 1;
    }
  });
  side_thread destroyer([&] {
    ASSERT_TRUE(wait_until([&] { return l->waiting() == static_cast<std::size_t>(n + 1); }));
    l.reset();
  });
  EXPECT_EQ(m_sched.run(fork_n<decltype(&abandoned_child), latch *>, n, &abandoned_child, l.get()),
            n);
  waiter.join();
  EXPECT_EQ(thread_abandoned.load(), 1);
}

task<int> over_arrive(latch *l) {
  bool threw = false;
  try {
    co_await l->arrive_and_wait(2); // only 1 left: misuse, nothing changes
  } catch (std::logic_error const &) {
    threw = true;
  }
  co_await l->arrive_and_wait(1);
  co_return threw ? 1 : 0;
}

TEST_P(latch_test, misuse_is_diagnosed) {
  EXPECT_THROW(latch(-1), std::invalid_argument);
  latch l(1);
  EXPECT_THROW(l.count_down(-1), std::logic_error);
  EXPECT_EQ(m_sched.run(over_arrive, &l), 1);
  EXPECT_TRUE(l.try_wait());
}

TEST(latch_plain, threads_only) {
  latch l(3);
  std::atomic<int> passed{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < 3; ++i) {
    ts.emplace_back([&] {
      l.arrive_and_wait_blocking();
      passed.fetch_add(1);
    });
  }
  for (auto &t : ts) {
    t.join();
  }
  EXPECT_EQ(passed.load(), 3);
  latch open(0);
  open.wait_blocking(); // open at once
}

INSTANTIATE_TEST_SUITE_P(every_scheduler, latch_test, ::testing::ValuesIn(all_schedulers()),
                         sched_name{});

} // namespace
