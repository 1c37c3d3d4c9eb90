// magpie::mutex: mutual exclusion under stress (tasks > workers, critical sections that fork and
// join while holding the lock, plain threads in the same FIFO), FIFO hand-off, exceptions inside
// the guard, destruction with waiters, misuse.
//
// The inline scheduler runs every test here: a task that finds the mutex held parks, and the
// inline thread goes on with the parent's continuation (which is what releases the mutex in these
// tests). What deadlocks there — and on every scheduler — is a holder that waits for a task that
// cannot run until the holder lets go: locking the mutex again from a child it *called* (the
// mutex is not recursive), or blocking its thread (not suspending) until a waiter has run.

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_support.hpp"
#include "sync/lock_support.hpp"

namespace {

using namespace magpie::test;
using magpie::call;
using magpie::fork;
using magpie::join;
using magpie::task;

struct locked_counter {
  magpie::mutex m;
  critical_state s;
};

task<void> bump_n(locked_counter *c, int rounds, int) {
  for (int r = 0; r < rounds; ++r) {
    auto g = co_await c->m.scoped_lock();
    c->s.enter();
    c->s.bump();
    c->s.leave();
  }
}

using mutex_test = scheduler_test;

TEST_P(mutex_test, mutual_exclusion_with_more_tasks_than_workers) {
  locked_counter c;
  int const tasks = scaled(64, 16);
  int const rounds = scaled(1000, 100);
  m_sched.run(fan_out<decltype(&bump_n), locked_counter *, int>, &bump_n, 0, tasks, &c, rounds);
  EXPECT_EQ(c.s.value, long{tasks} * rounds);
  EXPECT_EQ(c.s.overlaps.load(), 0);
  EXPECT_FALSE(c.m.is_locked());
}

task<void> add_one(long *x) {
  ++*x;
  co_return;
}

// The holder forks and joins inside its critical section, so it may come back on another worker
// while still holding the mutex; lock() / unlock() rather than the guard.
task<void> fork_while_holding(locked_counter *c, int rounds, int) {
  for (int r = 0; r < rounds; ++r) {
    co_await c->m.lock();
    c->s.enter();
    long const before = c->s.value;
    long a = 0;
    long b = 0;
    co_await fork(add_one, &a);
    co_await call(add_one, &b);
    co_await join();
    c->s.value = before + a + b - 1; // +1 in all, written late: an overlap would lose updates
    c->s.leave();
    c->m.unlock();
  }
}

TEST_P(mutex_test, critical_sections_that_fork_and_join) {
  locked_counter c;
  int const tasks = scaled(32, 8);
  int const rounds = scaled(400, 40);
  m_sched.run(fan_out<decltype(&fork_while_holding), locked_counter *, int>, &fork_while_holding, 0,
              tasks, &c, rounds);
  EXPECT_EQ(c.s.value, long{tasks} * rounds);
  EXPECT_EQ(c.s.overlaps.load(), 0);
}

TEST_P(mutex_test, plain_threads_and_tasks_share_the_lock) {
  locked_counter c;
  int const tasks = scaled(32, 8);
  int const rounds = scaled(1000, 100);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      for (int r = 0; r < rounds; ++r) {
        auto g = c.m.scoped_lock_blocking();
        c.s.enter();
        c.s.bump();
        c.s.leave();
      }
    });
  }
  m_sched.run(fan_out<decltype(&bump_n), locked_counter *, int>, &bump_n, 0, tasks, &c, rounds);
  for (auto &t : threads) {
    t.join();
  }
  EXPECT_EQ(c.s.value, long{tasks + 2} * rounds);
  EXPECT_EQ(c.s.overlaps.load(), 0);
}

task<void> record_turn(magpie::mutex *m, std::vector<int> *order, int i) {
  co_await m->lock();
  order->push_back(i);
  m->unlock();
}

// The parent holds the mutex while it forks n children that queue for it one after another
// (it waits for each to be queued before forking the next), then unlocks: direct FIFO hand-off
// must serve them in the order they queued, on every scheduler.
task<void> queue_then_release(magpie::mutex *m, std::vector<int> *order, int n) {
  co_await m->lock();
  for (int i = 0; i < n; ++i) {
    co_await fork(record_turn, m, order, i);
    if (!wait_count([m] { return m->waiting(); }, static_cast<std::size_t>(i + 1))) {
      throw std::runtime_error("a child never queued");
    }
  }
  order->push_back(-1);
  m->unlock();
  co_await join();
}

TEST_P(mutex_test, waiters_are_served_in_fifo_order) {
  magpie::mutex m;
  std::vector<int> order;
  int const n = scaled(50, 12);
  m_sched.run(queue_then_release, &m, &order, n);
  ASSERT_EQ(order.size(), static_cast<std::size_t>(n + 1));
  EXPECT_EQ(order.front(), -1);
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(order[static_cast<std::size_t>(i + 1)], i);
  }
}

task<void> throw_holding(magpie::mutex *m, int) {
  auto g = co_await m->scoped_lock();
  spin_work(100);
  throw std::runtime_error("thrown while holding the guard");
}

task<int> many_throwers(magpie::mutex *m, int n) {
  int caught = 0;
  for (int i = 0; i < n; ++i) {
    try {
      co_await fork(throw_holding, m, i);
      co_await fork(throw_holding, m, i);
      co_await join();
    } catch (std::runtime_error const &) {
      ++caught;
    }
  }
  // Every guard unlocked on the way out: the mutex is free, and a new lock passes at once.
  bool const free_now = m->try_lock();
  if (free_now) {
    m->unlock();
  }
  co_return free_now ? caught : -1;
}

TEST_P(mutex_test, an_exception_inside_the_guard_unlocks) {
  magpie::mutex m;
  int const n = scaled(50, 10);
  EXPECT_EQ(m_sched.run(many_throwers, &m, n), n);
  EXPECT_FALSE(m.is_locked());
}

task<int> lock_expecting_abandon(magpie::mutex *m, int) {
  try {
    co_await m->lock();
  } catch (magpie::abandoned_wait const &) {
    co_return 1;
  }
  co_return 0;
}

TEST_P(mutex_test, destroyed_while_tasks_wait_releases_them_with_abandoned_wait) {
  auto m = std::make_unique<magpie::mutex>();
  ASSERT_TRUE(m->try_lock()); // held by this thread, never unlocked
  int const n = scaled(16, 4);
  std::thread destroyer([&] {
    ASSERT_TRUE(wait_count([&] { return m->waiting(); }, static_cast<std::size_t>(n)));
    m.reset();
  });
  EXPECT_EQ(m_sched.run(fork_sum<decltype(&lock_expecting_abandon), magpie::mutex *>,
                        &lock_expecting_abandon, n, m.get()),
            n);
  destroyer.join();
}

task<int> lock_inside_scope(magpie::mutex *m) {
  long x = 0;
  int caught = 0;
  co_await fork(add_one, &x);
  try {
    co_await m->lock(); // throws: the forked child is not joined yet
    m->unlock();
  } catch (std::logic_error const &) {
    caught = 1;
  }
  co_await join();
  co_return caught + static_cast<int>(x);
}

TEST_P(mutex_test, waiting_inside_an_unjoined_scope_throws_logic_error) {
  magpie::mutex m;
  EXPECT_EQ(m_sched.run(lock_inside_scope, &m), 2);
  EXPECT_FALSE(m.is_locked());
}

task<int> block_in_task(magpie::mutex *m) {
  try {
    m->lock_blocking();
  } catch (std::logic_error const &) {
    co_return 1;
  }
  m->unlock();
  co_return 0;
}

TEST_P(mutex_test, blocking_lock_inside_a_task_throws_logic_error) {
  magpie::mutex m;
  EXPECT_EQ(m_sched.run(block_in_task, &m), 1);
}

INSTANTIATE_TEST_SUITE_P(every_scheduler, mutex_test, ::testing::ValuesIn(all_schedulers()),
                         sched_name{});

TEST(mutex, try_lock_and_unlock) {
  magpie::mutex m;
  EXPECT_FALSE(m.is_locked());
  EXPECT_TRUE(m.try_lock());
  EXPECT_TRUE(m.is_locked());
  EXPECT_FALSE(m.try_lock());
  m.unlock();
  EXPECT_TRUE(m.try_lock());
  m.unlock();
  {
    auto g = m.scoped_lock_blocking();
    EXPECT_TRUE(g.owns_lock());
    EXPECT_FALSE(m.try_lock());
    g.unlock();
    EXPECT_FALSE(g.owns_lock());
  }
  EXPECT_FALSE(m.is_locked());
}

TEST(mutex, a_plain_thread_waits_for_another_threads_unlock) {
  magpie::mutex m;
  m.lock_blocking();
  std::atomic<int> got{0};
  std::thread t([&] {
    m.lock_blocking();
    got = 1;
    m.unlock();
  });
  ASSERT_TRUE(wait_count([&] { return m.waiting(); }, 1));
  EXPECT_EQ(got.load(), 0);
  m.unlock(); // hands the mutex to the thread
  t.join();
  EXPECT_EQ(got.load(), 1);
  EXPECT_FALSE(m.is_locked());
}

TEST(mutex_death, unlock_of_an_unlocked_mutex_stops_the_program) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        magpie::mutex m;
        m.unlock();
      },
      "not locked");
  EXPECT_DEATH(
      {
        magpie::mutex m;
        m.lock_blocking();
        m.unlock();
        m.unlock();
      },
      "unlocked twice");
}

} // namespace
