// magpie::semaphore: a bound on concurrent holders under stress, permits released by plain
// threads to waiting tasks, FIFO hand-off, release(n) waking n waiters, blocking acquire from
// threads, destruction with waiters, misuse.
//
// The inline scheduler runs every test: a task that finds no permit parks and the inline thread
// goes on with its parent's continuation. What deadlocks there is a task that waits for a permit
// only a later sibling would release when nothing else can run that sibling — e.g. a child that
// the waiting task itself *calls* afterwards.

#include <atomic>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_support.hpp"
#include "sync/lock_support.hpp"

namespace {

using namespace magpie::test;
using magpie::fork;
using magpie::join;
using magpie::task;

struct bounded {
  explicit bounded(int limit) : sem(static_cast<std::size_t>(limit)), limit(limit) {}
  magpie::semaphore sem;
  int limit;
  critical_state s;
  std::atomic<long> done{0};
};

task<void> use_slot(bounded *b, int rounds, int) {
  for (int r = 0; r < rounds; ++r) {
    co_await b->sem.acquire();
    b->s.enter(b->limit);
    spin_work(50);
    b->s.leave();
    b->done.fetch_add(1);
    b->sem.release();
  }
}

using semaphore_test = scheduler_test;

TEST_P(semaphore_test, never_more_holders_than_permits) {
  for (int limit : {1, 2, 3}) {
    bounded b(limit);
    int const tasks = scaled(48, 12);
    int const rounds = scaled(300, 40);
    m_sched.run(fan_out<decltype(&use_slot), bounded *, int>, &use_slot, 0, tasks, &b, rounds);
    EXPECT_EQ(b.done.load(), long{tasks} * rounds);
    EXPECT_EQ(b.s.overlaps.load(), 0) << "limit " << limit;
    EXPECT_LE(b.s.max_inside.load(), limit);
    EXPECT_EQ(b.sem.count(), static_cast<std::size_t>(limit)); // every permit came back
  }
}

task<void> acquire_and_count(magpie::semaphore *s, std::atomic<int> *got, int) {
  co_await s->acquire();
  got->fetch_add(1);
}

// Tasks wait on an empty semaphore; a plain thread releases one permit at a time, and sometimes
// several at once (release(n) hands one to each of the n oldest waiters).
TEST_P(semaphore_test, plain_thread_releases_to_waiting_tasks) {
  magpie::semaphore s(0);
  std::atomic<int> got{0};
  int const n = scaled(64, 16);
  std::thread releaser([&] {
    int given = 0;
    while (given < n) {
      ASSERT_TRUE(wait_count([&] { return s.waiting() + static_cast<std::size_t>(got.load()); },
                             static_cast<std::size_t>(given + 1)));
      int const k = (given % 3 == 2 && given + 2 <= n) ? 2 : 1;
      s.release(static_cast<std::size_t>(k));
      given += k;
    }
  });
  m_sched.run(fan_out<decltype(&acquire_and_count), magpie::semaphore *, std::atomic<int> *>,
              &acquire_and_count, 0, n, &s, &got);
  releaser.join();
  EXPECT_EQ(got.load(), n);
  EXPECT_EQ(s.count(), 0u);
}

task<void> take_turn(magpie::semaphore *s, std::vector<int> *order, int i) {
  co_await s->acquire();
  order->push_back(i); // one permit in all: only one task at a time gets here
  s->release();
}

task<void> queue_then_release(magpie::semaphore *s, std::vector<int> *order, int n) {
  co_await s->acquire(); // take the only permit
  for (int i = 0; i < n; ++i) {
    co_await fork(take_turn, s, order, i);
    if (!wait_count([s] { return s->waiting(); }, static_cast<std::size_t>(i + 1))) {
      throw std::runtime_error("a child never queued");
    }
  }
  EXPECT_FALSE(s->try_acquire()); // nobody barges past the queue, even with no permit racing
  order->push_back(-1);
  s->release();
  co_await join();
}

TEST_P(semaphore_test, waiters_are_served_in_fifo_order) {
  magpie::semaphore s(1);
  std::vector<int> order;
  int const n = scaled(40, 10);
  m_sched.run(queue_then_release, &s, &order, n);
  ASSERT_EQ(order.size(), static_cast<std::size_t>(n + 1));
  EXPECT_EQ(order.front(), -1);
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(order[static_cast<std::size_t>(i + 1)], i);
  }
  EXPECT_EQ(s.count(), 1u);
}

task<int> acquire_expecting_abandon(magpie::semaphore *s, int) {
  try {
    co_await s->acquire();
  } catch (magpie::abandoned_wait const &) {
    co_return 1;
  }
  co_return 0;
}

TEST_P(semaphore_test, destroyed_while_tasks_wait_releases_them_with_abandoned_wait) {
  auto s = std::make_unique<magpie::semaphore>(0);
  int const n = scaled(16, 4);
  std::thread destroyer([&] {
    ASSERT_TRUE(wait_count([&] { return s->waiting(); }, static_cast<std::size_t>(n)));
    s.reset();
  });
  EXPECT_EQ(m_sched.run(fork_sum<decltype(&acquire_expecting_abandon), magpie::semaphore *>,
                        &acquire_expecting_abandon, n, s.get()),
            n);
  destroyer.join();
}

task<int> acquire_inside_scope(magpie::semaphore *s) {
  int caught = 0;
  std::atomic<int> got{0};
  co_await fork(acquire_and_count, s, &got, 0);
  try {
    co_await s->acquire(); // throws: the forked child is not joined yet
  } catch (std::logic_error const &) {
    caught = 1;
  }
  co_await join();
  co_return caught;
}

TEST_P(semaphore_test, misuse_inside_a_task_throws_logic_error) {
  magpie::semaphore s(5);
  EXPECT_EQ(m_sched.run(acquire_inside_scope, &s), 1);
  EXPECT_EQ(s.count(), 4u); // the child took one; the refused acquire took none
}

INSTANTIATE_TEST_SUITE_P(every_scheduler, semaphore_test, ::testing::ValuesIn(all_schedulers()),
                         sched_name{});

TEST(semaphore, plain_threads_block_and_are_handed_permits) {
  magpie::semaphore s(0);
  std::atomic<int> passed{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&] {
      s.acquire_blocking();
      passed.fetch_add(1);
    });
  }
  ASSERT_TRUE(wait_count([&] { return s.waiting(); }, 3));
  EXPECT_EQ(passed.load(), 0);
  s.release(2);
  ASSERT_TRUE(wait_until([&] { return passed.load() == 2; }));
  s.release();
  for (auto &t : threads) {
    t.join();
  }
  EXPECT_EQ(passed.load(), 3);
  EXPECT_EQ(s.count(), 0u);
  EXPECT_FALSE(s.try_acquire());
  s.release(5);
  EXPECT_EQ(s.count(), 5u);
  EXPECT_TRUE(s.try_acquire());
  EXPECT_EQ(s.count(), 4u);
}

TEST(semaphore_death, release_beyond_max_stops_the_program) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        magpie::semaphore s(magpie::semaphore::max());
        s.release();
      },
      "above max");
}

} // namespace
