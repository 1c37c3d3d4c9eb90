// magpie::task_group and magpie::counter: waiting from tasks (every pool) and threads, children
// spawning into their own group, exceptions (first rethrown, the others counted), destruction
// with unfinished children, counters by hand, and misuse.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_support.hpp"

namespace {

using namespace magpie::test;
using magpie::task;

/// A tree of `depth` levels, `fanout` children each, spawned into one group by its own nodes.
task<void> tree(magpie::task_group *g, std::atomic<long> *nodes, int depth, int fanout) {
  nodes->fetch_add(1);
  if (depth > 0) {
    for (int i = 0; i < fanout; ++i) {
      g->spawn(tree, g, nodes, depth - 1, fanout);
    }
  }
  co_return;
}

long tree_size(int depth, int fanout) {
  long n = 1, level = 1;
  for (int d = 0; d < depth; ++d) {
    level *= fanout;
    n += level;
  }
  return n;
}

task<long> group_in_task(int depth, int fanout) {
  magpie::task_group g; // the task's own pool
  std::atomic<long> nodes{0};
  g.spawn(tree, &g, &nodes, depth, fanout);
  co_await g.wait();
  EXPECT_EQ(g.unfinished(), 0u);
  co_return nodes.load();
}

using task_group_test = scheduler_test;

TEST_P(task_group_test, children_spawn_into_their_group_and_one_wait_gathers_them) {
  if (m_sched.is_inline()) {
    GTEST_SKIP() << "task_group g; needs a pool (the inline scheduler has none)";
  }
  int const depth = scaled(4, 3);
  EXPECT_EQ(m_sched.run(group_in_task, depth, 5), tree_size(depth, 5));
}

task<int> failing(int id) {
  spin_work(1000);
  throw counted_error(id);
  co_return 0;
}

task<long> first_error_in_task(magpie::pool *p, int n) {
  magpie::task_group g(*p);
  for (int i = 0; i < n; ++i) {
    g.spawn(failing, i);
  }
  long caught = 0;
  try {
    co_await g.wait();
  } catch (counted_error const &) {
    caught = 1;
  }
  EXPECT_EQ(g.dropped_exceptions(), static_cast<std::size_t>(n - 1));
  co_await g.wait(); // cleared: nothing more to rethrow
  co_return caught;
}

TEST_P(task_group_test, the_first_exception_is_rethrown_and_the_others_counted) {
  std::unique_ptr<magpie::pool> own;
  magpie::pool *p = m_sched.pool();
  if (p == nullptr) {
    own = std::make_unique<magpie::lazy_pool>(2);
    p = own.get();
  }
  EXPECT_EQ(m_sched.run(first_error_in_task, p, 10), 1);
  EXPECT_EQ(counted_error::live().load(), 0);
}

task<int> waits_for_counter(magpie::counter *c) {
  co_await c->wait();
  co_return 1;
}

task<int> many_wait_for_counter(magpie::counter *c, int n) {
  std::vector<int> out(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    co_await magpie::fork(&out[static_cast<std::size_t>(i)], waits_for_counter, c);
  }
  co_await magpie::join();
  int s = 0;
  for (int v : out) {
    s += v;
  }
  co_return s;
}

TEST_P(task_group_test, a_counter_counted_down_by_a_thread_releases_every_waiting_task) {
  magpie::counter c(3);
  int const n = scaled(32, 8);
  std::thread t([&] {
    for (int i = 0; i < 3; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      c.count_down();
    }
  });
  EXPECT_EQ(m_sched.run(many_wait_for_counter, &c, n), n);
  t.join();
  EXPECT_EQ(c.value(), 0u);
}

INSTANTIATE_TEST_SUITE_P(every_scheduler, task_group_test, ::testing::ValuesIn(all_schedulers()),
                         sched_name{});

TEST(task_group, from_a_thread_with_counter_and_group_spawns) {
  watchdog dog(current_test_name());
  magpie::lazy_pool pool(2);
  std::atomic<long> nodes{0};
  magpie::task_group g(pool, magpie::priority::low);
  g.spawn(tree, &g, &nodes, 3, 4);
  g.wait();
  EXPECT_EQ(nodes.load(), tree_size(3, 4));
  magpie::counter c;
  std::atomic<int> ran{0};
  for (int i = 0; i < 50; ++i) {
    magpie::spawn(
        pool, c,
        [](std::atomic<int> *r) -> task<void> {
          r->fetch_add(1);
          co_return;
        },
        &ran);
  }
  c.wait();
  EXPECT_EQ(ran.load(), 50);
  EXPECT_THROW({ magpie::task_group bad; }, std::logic_error); // no pool on a plain thread
}

TEST(task_group, a_group_destroyed_on_a_thread_waits_for_its_children) {
  watchdog dog(current_test_name());
  magpie::lazy_pool pool(2);
  std::atomic<int> done{0};
  {
    magpie::task_group g(pool);
    for (int i = 0; i < 8; ++i) {
      g.spawn(
          [](std::atomic<int> *d) -> task<void> {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
            d->fetch_add(1);
            co_return;
          },
          &done);
    }
  }
  EXPECT_EQ(done.load(), 8);
}

std::atomic<int> unobserved{0};
void count_unobserved(std::exception_ptr) noexcept { unobserved.fetch_add(1); }

TEST(task_group, exceptions_nobody_waited_for_are_reported) {
  watchdog dog(current_test_name());
  auto old = magpie::set_unobserved_exception_handler(&count_unobserved);
  unobserved = 0;
  {
    magpie::lazy_pool pool(2);
    { // a group destroyed holding its first exception: reported; the second was counted
      magpie::task_group g(pool);
      g.spawn(failing, 1);
      g.spawn(failing, 2);
    }
    EXPECT_EQ(unobserved.load(), 1);
    magpie::counter c; // a counter's task: reported
    magpie::spawn(pool, c, failing, 3);
    c.wait();
    EXPECT_EQ(unobserved.load(), 2);
  }
  magpie::set_unobserved_exception_handler(old);
  EXPECT_EQ(counted_error::live().load(), 0);
}

task<int> abandoned(magpie::counter *c) {
  try {
    co_await c->wait();
  } catch (magpie::abandoned_wait const &) {
    co_return 1;
  }
  co_return 0;
}

TEST(task_group, a_counter_destroyed_with_waiting_tasks_fails_them) {
  watchdog dog(current_test_name());
  magpie::lazy_pool pool(1);
  auto c = std::make_unique<magpie::counter>(1);
  auto f = magpie::spawn(pool, abandoned, c.get());
  // Wait until the task is queued on the counter. (Waiting for its worker's hand-off was not
  // enough: the hand-off comes before the enqueue, and TSan caught the worker reading the counter
  // after this thread had destroyed it.)
  ASSERT_TRUE(wait_until([&] { return c->waiting() == 1; }));
  c.reset();
  EXPECT_EQ(f.get(), 1);
}

// -------------------------------------------------------------------------------------------
// Misuse (the program stops with a message).

class task_group_death : public ::testing::Test {
protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

task<void> value_after_flag_void(std::atomic<int> *go) {
  wait_for(*go);
  co_return;
}

task<void> leaves_children(std::atomic<int> *go) {
  magpie::task_group g;
  g.spawn(value_after_flag_void, go);
  co_return; // destroyed unfinished inside a task
}

task<void> forgets_co_await(magpie::counter *c) {
  (void)c->wait();
  co_return;
}

TEST_F(task_group_death, destroyed_in_a_task_with_unfinished_children) {
  EXPECT_DEATH(
      {
        magpie::lazy_pool pool(1);
        std::atomic<int> go{0};
        magpie::sync_wait(pool, leaves_children, &go);
      },
      "destroyed inside a task with unfinished children");
}

TEST_F(task_group_death, wait_in_a_task_not_co_awaited) {
  EXPECT_DEATH(
      {
        magpie::lazy_pool pool(1);
        magpie::counter c(1);
        magpie::sync_wait(pool, forgets_co_await, &c);
      },
      "must be co_awaited");
}

TEST_F(task_group_death, count_down_below_zero) {
  EXPECT_DEATH(
      {
        magpie::counter c;
        c.count_down();
      },
      "below zero");
}

// The spawned-state cache's depot: blocks freed on one thread past its cache's capacity are handed
// out again, in batches, to another thread, each exactly once. Thread A allocates, B frees all
// (overflowing into the depot), A allocates again: every block A holds at once is distinct, and a
// pattern written to each survives until it is freed (two owners of one block would overwrite).
TEST(state_cache, blocks_freed_on_one_thread_are_reused_on_another_exactly_once) {
  using cache = magpie::sync::detail::state_cache;
  constexpr std::size_t bytes = 184; // a future<long>'s state
  constexpr std::size_t n = 6000;    // several caches' worth
  std::vector<void *> blocks(n);
  for (int round = 0; round < 3; ++round) {
    for (auto &b : blocks) {
      b = cache::allocate(bytes);
    }
    for (std::size_t i = 0; i < n; ++i) {
      auto *w = static_cast<std::uint64_t *>(blocks[i]);
      for (std::size_t k = 0; k < bytes / 8; ++k) {
        w[k] = i * 1000 + k;
      }
    }
    std::vector<void *> sorted = blocks;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "round " << round;
    long damaged = 0;
    for (std::size_t i = 0; i < n; ++i) {
      auto const *w = static_cast<std::uint64_t const *>(blocks[i]);
      for (std::size_t k = 0; k < bytes / 8; ++k) {
        damaged += w[k] != i * 1000 + k ? 1 : 0;
      }
    }
    EXPECT_EQ(damaged, 0) << "round " << round;
    std::thread([&] {
      for (auto *b : blocks) {
        cache::deallocate(b, bytes);
      }
    }).join();
  }
}

magpie::task<void> add_index(std::atomic<long> *sum, int i) {
  sum->fetch_add(i);
  co_return;
}

// Plain threads fill groups that the workers run (states allocated on one thread, freed on
// another, through the depot), while a task on the pool does the same: every child runs once.
TEST(task_group, threads_that_spawn_while_workers_finish_share_the_state_depot) {
  watchdog dog(current_test_name());
  magpie::lazy_pool pool(2);
  int const n = scaled(3000, 600);
  auto fill = [&](int rounds) {
    for (int r = 0; r < rounds; ++r) {
      std::atomic<long> sum{0};
      magpie::task_group g(pool);
      for (int i = 0; i < n; ++i) {
        g.spawn(add_index, &sum, i);
      }
      g.wait();
      EXPECT_EQ(sum.load(), long{n} * (n - 1) / 2);
    }
  };
  std::thread a(fill, 4);
  std::thread b(fill, 4);
  fill(2);
  a.join();
  b.join();
}

} // namespace
