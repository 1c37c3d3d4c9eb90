// Priorities of spawned tasks: highest first, FIFO within a level, resumed tasks before new
// ones, and the starvation rule (every 8th root a queue hands out comes, in rotation, from a
// lower non-empty level). One-worker pools make the order of picks exact.

#include <atomic>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_support.hpp"
#include "sync/sync_support.hpp"

namespace {

using namespace magpie::test;
using magpie::priority;
using magpie::task;

task<void> hold_worker(std::atomic<int> *started, std::atomic<int> *go) {
  started->store(1);
  wait_for(*go);
  co_return;
}

/// A one-worker pool whose worker is held by a first root (pick 1) while the test queues jobs.
/// One worker, held by a task until release(). `callers_run_roots` false: a plain thread's
/// normal-priority group children go to the worker's queue too, not to a caller slot.
magpie::pool_options one_worker(bool callers_run_roots) {
  magpie::pool_options o;
  o.workers = 1;
  o.callers_run_roots = callers_run_roots;
  return o;
}

struct held_pool {
  explicit held_pool(magpie::idle_policy policy, bool callers_run_roots = true)
      : pool(one_worker(callers_run_roots), policy) {
    (void)magpie::spawn(pool, hold_worker, &started, &go);
    EXPECT_TRUE(wait_for(started));
  }
  void release() { go.store(1); }
  std::atomic<int> started{0}, go{0};
  magpie::pool pool;
};

class priority_test : public ::testing::TestWithParam<magpie::idle_policy> {
protected:
  watchdog m_dog{current_test_name()};
};

TEST_P(priority_test, highest_first_fifo_within_a_level) {
  order_log log;
  magpie::counter c;
  {
    held_pool h(GetParam());
    for (int i = 0; i < 2; ++i) {
      magpie::spawn(h.pool, priority::low, c, log_tag, &log, 30 + i);
      magpie::spawn(h.pool, priority::normal, c, log_tag, &log, 20 + i);
      magpie::spawn(h.pool, priority::high, c, log_tag, &log, 10 + i);
    }
    h.release();
    c.wait();
  }
  // Picks 2..7: no starvation pick (the 8th) among them.
  EXPECT_EQ(log.order, (std::vector<int>{10, 11, 20, 21, 30, 31}));
}

TEST_P(priority_test, every_eighth_pick_goes_to_a_starving_lower_level) {
  order_log log;
  magpie::counter c;
  {
    held_pool h(GetParam());
    for (int i = 0; i < 4; ++i) {
      magpie::spawn(h.pool, priority::low, c, log_tag, &log, 300 + i);
    }
    for (int i = 0; i < 64; ++i) {
      magpie::spawn(h.pool, priority::high, c, log_tag, &log, 100 + i);
    }
    h.release();
    c.wait();
  }
  ASSERT_EQ(log.order.size(), 68u);
  // The holder was pick 1, so picks 8, 16, 24, 32 (log positions 6, 14, 22, 30) take the low
  // jobs, oldest first; everything else runs high jobs in FIFO order.
  std::vector<int> expect;
  int high = 0, low = 0;
  for (std::size_t pos = 0; pos < 68; ++pos) {
    bool const starving_pick = (pos + 2) % 8 == 0 && low < 4;
    expect.push_back(starving_pick ? 300 + low++ : 100 + high++);
  }
  EXPECT_EQ(log.order, expect);
}

TEST_P(priority_test, starvation_picks_rotate_among_lower_levels) {
  order_log log;
  magpie::counter c;
  {
    held_pool h(GetParam());
    for (int i = 0; i < 2; ++i) {
      magpie::spawn(h.pool, priority::low, c, log_tag, &log, 300 + i);
      magpie::spawn(h.pool, priority::normal, c, log_tag, &log, 200 + i);
    }
    for (int i = 0; i < 40; ++i) {
      magpie::spawn(h.pool, priority::high, c, log_tag, &log, 100 + i);
    }
    h.release();
    c.wait();
  }
  // Starvation picks at log positions 6, 14, 22, 30: normal, low, normal, low (rotation).
  EXPECT_EQ(log.order[6], 200);
  EXPECT_EQ(log.order[14], 300);
  EXPECT_EQ(log.order[22], 201);
  EXPECT_EQ(log.order[30], 301);
}

task<void> parks_then_logs(order_log *log, magpie::resume_handle *out, std::atomic<int> *parked) {
  co_await magpie::suspend([&](magpie::resume_handle h) {
    *out = std::move(h);
    parked->store(1);
  });
  log->add(1);
}

TEST_P(priority_test, a_resumed_task_runs_before_new_high_priority_roots) {
  order_log log;
  magpie::counter c;
  magpie::resume_handle handle;
  std::atomic<int> parked{0};
  {
    magpie::pool pool(1, GetParam());
    magpie::spawn(pool, c, parks_then_logs, &log, &handle, &parked);
    ASSERT_TRUE(wait_for(parked));
    std::atomic<int> started{0}, go{0};
    magpie::spawn(pool, c, hold_worker, &started, &go);
    ASSERT_TRUE(wait_for(started));
    for (int i = 0; i < 3; ++i) {
      magpie::spawn(pool, priority::high, c, log_tag, &log, 10 + i);
    }
    handle.resume(); // queued as a resumed task, after the high roots
    go.store(1);
    c.wait();
  }
  EXPECT_EQ(log.order, (std::vector<int>{1, 10, 11, 12}));
}

TEST_P(priority_test, group_children_take_the_group_priority) {
  order_log log;
  {
    held_pool h(GetParam(), false);
    magpie::task_group low(h.pool, priority::low), high(h.pool, priority::high);
    low.spawn(log_tag, &log, 3);
    high.spawn(log_tag, &log, 1);
    low.spawn(priority::normal, log_tag, &log, 2);
    h.release();
    low.wait();
    high.wait();
  }
  EXPECT_EQ(log.order, (std::vector<int>{1, 2, 3}));
}

// With caller slots (the default), a plain thread's normal-priority children go to its slot, and
// its wait() runs them while the worker is still held; the queued ones keep their order.
TEST_P(priority_test, a_plain_threads_normal_children_are_run_by_its_wait_before_queued_roots) {
  order_log log;
  {
    held_pool h(GetParam());
    magpie::task_group low(h.pool, priority::low), high(h.pool, priority::high), mid(h.pool);
    low.spawn(log_tag, &log, 3);
    high.spawn(log_tag, &log, 1);
    mid.spawn(log_tag, &log, 2);
    mid.wait(); // the worker is held: only this thread can have run it
    h.release();
    low.wait();
    high.wait();
  }
  EXPECT_EQ(log.order, (std::vector<int>{2, 1, 3}));
}

INSTANTIATE_TEST_SUITE_P(pools, priority_test,
                         ::testing::Values(magpie::idle_policy::busy, magpie::idle_policy::lazy),
                         [](auto const &info) {
                           return info.param == magpie::idle_policy::busy ? "busy" : "lazy";
                         });

} // namespace
