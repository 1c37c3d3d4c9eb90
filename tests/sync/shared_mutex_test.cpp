// magpie::shared_mutex: readers exclude writers and writers exclude everyone under stress (tasks
// and plain threads mixed), the FIFO policy (a queued writer stops new readers; a run of queued
// readers is granted together; nobody overtakes), guards through exceptions, destruction with
// waiters, misuse. The inline scheduler runs them all (see mutex_test.cpp for what deadlocks).

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

/// Writers keep `a == b` outside their sections (they write them apart, with a pause between);
/// readers check it and count torn reads. Occupancy counters catch a writer beside anyone.
struct rw_state {
  magpie::shared_mutex m;
  long a = 0; // NOT atomic: guarded by m
  long b = 0;
  std::atomic<int> writers{0};
  std::atomic<int> readers{0};
  std::atomic<long> violations{0};
  std::atomic<long> torn{0};
  std::atomic<int> max_readers{0};

  void write() {
    if (writers.fetch_add(1) != 0 || readers.load() != 0) {
      violations.fetch_add(1);
    }
    long const v = a + 1;
    a = v;
    spin_work(30);
    b = v;
    writers.fetch_sub(1);
  }
  void read() {
    int const r = readers.fetch_add(1) + 1;
    if (writers.load() != 0) {
      violations.fetch_add(1);
    }
    int m = max_readers.load();
    while (r > m && !max_readers.compare_exchange_weak(m, r)) {
    }
    long const x = a;
    spin_work(30);
    if (b != x) {
      torn.fetch_add(1);
    }
    readers.fetch_sub(1);
  }
};

task<void> mixed_user(rw_state *s, int rounds, int i) {
  for (int r = 0; r < rounds; ++r) {
    if ((i + r) % 4 == 0) {
      auto g = co_await s->m.scoped_lock();
      s->write();
    } else {
      auto g = co_await s->m.scoped_lock_shared();
      s->read();
    }
  }
}

using shared_mutex_test = scheduler_test;

TEST_P(shared_mutex_test, readers_and_writers_exclude_each_other) {
  rw_state s;
  int const tasks = scaled(48, 12);
  int const rounds = scaled(400, 40);
  long expected_writes = 0;
  for (int i = 0; i < tasks; ++i) {
    for (int r = 0; r < rounds; ++r) {
      expected_writes += (i + r) % 4 == 0 ? 1 : 0;
    }
  }
  std::thread writer_thread([&] {
    for (int r = 0; r < rounds; ++r) {
      s.m.lock_blocking();
      s.write();
      s.m.unlock();
      s.m.lock_shared_blocking();
      s.read();
      s.m.unlock_shared();
    }
  });
  m_sched.run(fan_out<decltype(&mixed_user), rw_state *, int>, &mixed_user, 0, tasks, &s, rounds);
  writer_thread.join();
  EXPECT_EQ(s.a, expected_writes + rounds);
  EXPECT_EQ(s.b, s.a);
  EXPECT_EQ(s.violations.load(), 0);
  EXPECT_EQ(s.torn.load(), 0);
  EXPECT_TRUE(s.m.try_lock()); // all released
  s.m.unlock();
}

/// Where each task got the lock, in a global sequence (written by readers concurrently).
struct turns {
  std::atomic<int> next{0};
  std::vector<int> at;
  explicit turns(int n) : at(static_cast<std::size_t>(n), -1) {}
};

task<void> take_as(magpie::shared_mutex *m, turns *t, int i, bool exclusive) {
  if (exclusive) {
    co_await m->lock();
    t->at[static_cast<std::size_t>(i)] = t->next.fetch_add(1);
    m->unlock();
  } else {
    co_await m->lock_shared();
    t->at[static_cast<std::size_t>(i)] = t->next.fetch_add(1);
    m->unlock_shared();
  }
}

// The parent holds the lock (exclusively or shared) and queues `kinds` one by one; then unlocks.
task<int> queue_kinds(magpie::shared_mutex *m, turns *t, std::vector<bool> const *kinds,
                      bool parent_exclusive) {
  if (parent_exclusive) {
    co_await m->lock();
  } else {
    co_await m->lock_shared();
  }
  int refused = 0;
  for (std::size_t i = 0; i < kinds->size(); ++i) {
    co_await fork(take_as, m, t, static_cast<int>(i), static_cast<bool>((*kinds)[i]));
    if (!wait_count([m] { return m->waiting(); }, i + 1)) {
      throw std::runtime_error("a child never queued");
    }
    // With anybody queued, neither kind may pass at once (no barging past the queue).
    refused += m->try_lock_shared() ? 0 : 1;
  }
  if (parent_exclusive) {
    m->unlock();
  } else {
    m->unlock_shared();
  }
  co_await join();
  co_return refused;
}

TEST_P(shared_mutex_test, a_queued_writer_stops_new_readers) {
  magpie::shared_mutex m;
  std::vector<bool> const kinds{true, false, false}; // W, R, R behind a reader who holds it
  turns t(3);
  EXPECT_EQ(m_sched.run(queue_kinds, &m, &t, &kinds, false), 3);
  EXPECT_EQ(t.at[0], 0); // the writer first, although readers held the lock when R queued
  EXPECT_GT(t.at[1], 0);
  EXPECT_GT(t.at[2], 0);
}

TEST_P(shared_mutex_test, fifo_with_runs_of_readers_granted_together) {
  magpie::shared_mutex m;
  //                             R     R      R     W     R      W     W     R
  std::vector<bool> const kinds{false, false, false, true, false, true, true, false};
  turns t(static_cast<int>(kinds.size()));
  EXPECT_EQ(m_sched.run(queue_kinds, &m, &t, &kinds, true), static_cast<int>(kinds.size()));
  // Phases: {0,1,2} together, then 3, then 4, then 5, then 6, then 7.
  for (int r : {0, 1, 2}) {
    EXPECT_LT(t.at[static_cast<std::size_t>(r)], t.at[3]);
  }
  EXPECT_LT(t.at[3], t.at[4]);
  EXPECT_LT(t.at[4], t.at[5]);
  EXPECT_LT(t.at[5], t.at[6]);
  EXPECT_LT(t.at[6], t.at[7]);
}

task<void> throw_with(magpie::shared_mutex *m, bool exclusive) {
  if (exclusive) {
    auto g = co_await m->scoped_lock();
    throw std::runtime_error("writer");
  }
  auto g = co_await m->scoped_lock_shared();
  throw std::runtime_error("reader");
}

task<int> throwers(magpie::shared_mutex *m, int n) {
  int caught = 0;
  for (int i = 0; i < n; ++i) {
    try {
      co_await fork(throw_with, m, i % 2 == 0);
      co_await fork(throw_with, m, false);
      co_await fork(throw_with, m, true);
      co_await join();
    } catch (std::runtime_error const &) {
      ++caught;
    }
  }
  bool const free_now = m->try_lock();
  if (free_now) {
    m->unlock();
  }
  co_return free_now ? caught : -1;
}

TEST_P(shared_mutex_test, an_exception_inside_a_guard_unlocks) {
  magpie::shared_mutex m;
  int const n = scaled(40, 10);
  EXPECT_EQ(m_sched.run(throwers, &m, n), n);
}

task<int> lock_expecting_abandon(magpie::shared_mutex *m, int i) {
  try {
    if (i % 2 == 0) {
      co_await m->lock();
    } else {
      co_await m->lock_shared();
    }
  } catch (magpie::abandoned_wait const &) {
    co_return 1;
  }
  co_return 0;
}

TEST_P(shared_mutex_test, destroyed_while_tasks_wait_releases_them_with_abandoned_wait) {
  auto m = std::make_unique<magpie::shared_mutex>();
  ASSERT_TRUE(m->try_lock());
  int const n = scaled(16, 4);
  std::thread destroyer([&] {
    ASSERT_TRUE(wait_count([&] { return m->waiting(); }, static_cast<std::size_t>(n)));
    m.reset();
  });
  EXPECT_EQ(m_sched.run(fork_sum<decltype(&lock_expecting_abandon), magpie::shared_mutex *>,
                        &lock_expecting_abandon, n, m.get()),
            n);
  destroyer.join();
}

task<void> nothing() { co_return; }

task<int> lock_inside_scope(magpie::shared_mutex *m) {
  int caught = 0;
  co_await fork(nothing);
  try {
    co_await m->lock_shared(); // throws: the forked child is not joined yet
  } catch (std::logic_error const &) {
    caught = 1;
  }
  co_await join();
  co_return caught;
}

TEST_P(shared_mutex_test, waiting_inside_an_unjoined_scope_throws_logic_error) {
  magpie::shared_mutex m;
  EXPECT_EQ(m_sched.run(lock_inside_scope, &m), 1);
  EXPECT_TRUE(m.try_lock());
  m.unlock();
}

INSTANTIATE_TEST_SUITE_P(every_scheduler, shared_mutex_test, ::testing::ValuesIn(all_schedulers()),
                         sched_name{});

task<void> block_inside_task(magpie::shared_mutex *m) {
  m->lock_blocking();
  co_return;
}

TEST(shared_mutex, try_forms) {
  magpie::shared_mutex m;
  EXPECT_TRUE(m.try_lock_shared());
  EXPECT_TRUE(m.try_lock_shared());
  EXPECT_FALSE(m.try_lock());
  m.unlock_shared();
  EXPECT_FALSE(m.try_lock());
  m.unlock_shared();
  EXPECT_TRUE(m.try_lock());
  EXPECT_FALSE(m.try_lock_shared());
  EXPECT_FALSE(m.try_lock());
  m.unlock();
  EXPECT_THROW(
      {
        magpie::inline_scheduler s;
        magpie::sync_wait(s, block_inside_task, &m); // refused: it would block the worker
      },
      std::logic_error);
}

TEST(shared_mutex_death, unlock_without_the_lock_stops_the_program) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        magpie::shared_mutex m;
        m.unlock();
      },
      "not locked exclusively");
  EXPECT_DEATH(
      {
        magpie::shared_mutex m;
        m.unlock_shared();
      },
      "not locked shared");
  EXPECT_DEATH(
      {
        magpie::shared_mutex m;
        m.lock_shared_blocking();
        m.unlock();
      },
      "not locked exclusively");
}

} // namespace
