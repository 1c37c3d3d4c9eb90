// Roots spawned by a pool's own tasks (docs/protocols.md §9.1, §9.2): they go to the spawning
// worker's local deque, which that worker runs newest first (depth first) and thieves take
// oldest first. What must hold, and what each test would catch:
//   - a tree of spawn-then-await futures keeps O(depth · fan-out) states alive, not one per task
//     (the helper trims the claimed jobs it leaves at the bottom of its deque; without that every
//     helped task's state lives until the worker returns to its loop);
//   - a task-group tree runs depth first on one worker (a FIFO of roots would hold the whole
//     breadth-first frontier: 8^5 queued children here);
//   - priorities still hold against local spawns: high before the local normal roots, low after
//     (the deque counts as the normal level);
//   - tasks resumed by a task of the pool (its worker's own `resumed` deque) run before queued
//     roots, oldest resumption first;
//   - claimed jobs still in a deque when the pool is destroyed are dropped, not leaked (ASan and
//     LeakSanitizer presets), and the pool's destructor waits for local roots spawned by tasks
//     that already finished (per-worker counts).
// Every pool here hands its roots to a worker (callers_run_roots off): the worker-local path is
// what is tested; a caller running its root sends its spawns to the workers (caller_runs_test).

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_support.hpp"
#include "sync/sync_support.hpp"

namespace {

using namespace magpie::test;
using magpie::priority;
using magpie::task;

/// A value whose live instances are counted, with the peak: moved-from ones count until they are
/// destroyed (a future's state keeps its moved-from value until the state is freed).
struct counted {
  static inline std::atomic<long> live{0};
  static inline std::atomic<long> peak{0};
  static void reset() {
    live = 0;
    peak = 0;
  }
  static void born() {
    long const now = live.fetch_add(1) + 1;
    long seen = peak.load();
    while (now > seen && !peak.compare_exchange_weak(seen, now)) {
    }
  }
  long value = 0;
  counted() { born(); }
  explicit counted(long v) : value(v) { born(); }
  counted(counted const &o) : value(o.value) { born(); }
  counted(counted &&o) noexcept : value(o.value) { born(); }
  counted &operator=(counted const &) = default;
  counted &operator=(counted &&) noexcept = default;
  ~counted() { live.fetch_sub(1); }
};

constexpr int fan_out = 4;

task<counted> future_tree(magpie::pool *p, int depth) {
  if (depth == 0) {
    co_return counted(1);
  }
  std::array<magpie::future<counted>, fan_out> f;
  for (auto &x : f) {
    x = magpie::spawn(*p, future_tree, p, depth - 1);
  }
  long sum = 0;
  for (auto &x : f) {
    counted v = co_await x;
    sum += v.value;
  }
  co_return counted(sum);
}

class local_spawn_test : public ::testing::TestWithParam<magpie::idle_policy> {
protected:
  watchdog m_dog{current_test_name()};
};

TEST_P(local_spawn_test, a_spawn_then_await_tree_keeps_few_states_alive) {
  counted::reset();
  constexpr int depth = 7; // 4^7 = 16,384 leaves, 21,845 tasks
  {
    magpie::pool pool(handoff_options(1), GetParam());
    counted const r = magpie::sync_wait(pool, future_tree, &pool, depth);
    EXPECT_EQ(r.value, 16384);
  }
  // Every state holds one counted value (default-made, then assigned, then moved from) until it
  // is freed. Trimmed: a handful per level. Untrimmed: one per task (21,845).
  EXPECT_LT(counted::peak.load(), 400) << "claimed jobs of helped futures were not trimmed";
  EXPECT_EQ(counted::live.load(), 0);
}

task<void> group_tree(magpie::pool *p, int depth, counted token, std::atomic<long> *leaves) {
  (void)token; // alive from spawn (decay-copied into the state) to the task's completion
  if (depth == 0) {
    leaves->fetch_add(1);
    co_return;
  }
  magpie::task_group g(*p);
  for (int i = 0; i < 8; ++i) {
    g.spawn(group_tree, p, depth - 1, counted(i), leaves);
  }
  co_await g.wait();
}

TEST_P(local_spawn_test, a_task_group_tree_runs_depth_first_on_its_worker) {
  counted::reset();
  std::atomic<long> leaves{0};
  {
    magpie::pool pool(handoff_options(1), GetParam());
    magpie::task_group g(pool);
    g.spawn(group_tree, &pool, 5, counted(0), &leaves); // 8^5 = 32,768 leaves
    g.wait();
  }
  EXPECT_EQ(leaves.load(), 32768);
  // Depth first: at most 8 queued children per level on the path (plus the running ones).
  // Breadth first (a FIFO of roots) holds the frontier: up to 8^5 children queued at once.
  EXPECT_LT(counted::peak.load(), 200) << "spawned children ran breadth first";
  EXPECT_EQ(counted::live.load(), 0);
}

task<void> spawn_mixed(magpie::pool *p, magpie::counter *c, order_log *log) {
  for (int i = 0; i < 2; ++i) {
    magpie::spawn(*p, priority::low, *c, log_tag, log, 30 + i);
    magpie::spawn(*p, priority::normal, *c, log_tag, log, 20 + i); // the local deque
    magpie::spawn(*p, priority::high, *c, log_tag, log, 10 + i);
  }
  co_return;
}

TEST_P(local_spawn_test, priorities_hold_against_local_spawns) {
  order_log log;
  magpie::counter c;
  {
    magpie::pool pool(handoff_options(1), GetParam());
    magpie::sync_wait(pool, spawn_mixed, &pool, &c, &log);
    c.wait();
  }
  // High (FIFO), then the local normal roots newest first, then low (FIFO).
  EXPECT_EQ(log.order, (std::vector<int>{10, 11, 21, 20, 30, 31}));
}

task<long> leaf(long v) { co_return v; }

task<long> spawn_and_help(magpie::pool *p, int n) {
  long sum = 0;
  for (int i = 0; i < n; ++i) {
    auto f = magpie::spawn(*p, leaf, i); // helped at once: its job stays in the deque, claimed
    (void)magpie::spawn(*p, leaf, -1);   // unread (detached), newer: stops the trimming
    sum += co_await f;
  }
  co_return sum;
}

TEST_P(local_spawn_test, claimed_jobs_left_in_a_deque_are_dropped_at_shutdown) {
  for (std::size_t workers : {1u, 2u}) {
    magpie::pool pool(handoff_options(workers), GetParam());
    EXPECT_EQ(magpie::sync_wait(pool, spawn_and_help, &pool, 100), 4950);
  } // the pool's destructor: every job, claimed or not, runs or is dropped (no leak under LSan)
}

/// Burns ~`us` microseconds (out of line: a loop in a coroutine body may be dropped by GCC 12).
[[gnu::noinline]] void burn_us(int us) {
  auto const end = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < end) {
  }
}

task<void> slow_count(std::atomic<long> *done) {
  burn_us(20);
  done->fetch_add(1);
  co_return;
}

task<void> spawner(magpie::pool *p, std::atomic<long> *done, int n) {
  for (int i = 0; i < n; ++i) {
    (void)magpie::spawn(*p, slow_count, done); // detached
  }
  co_return;
}

TEST_P(local_spawn_test, the_destructor_waits_for_local_roots_of_finished_tasks) {
  for (int round = 0; round < 20; ++round) {
    std::atomic<long> done{0};
    {
      magpie::pool pool(handoff_options(2), GetParam());
      magpie::sync_wait(pool, spawner, &pool, &done, 16); // returns before its spawns finish
    } // must wait for all 16, spawned and finished on either worker
    ASSERT_EQ(done.load(), 16) << "round " << round;
  }
}

task<void> parks_then_logs(order_log *log, int tag, magpie::resume_handle *out,
                           std::atomic<int> *parked) {
  co_await magpie::suspend([&](magpie::resume_handle h) {
    *out = std::move(h);
    parked->fetch_add(1);
  });
  log->add(tag);
}

task<void> resume_in_order(magpie::pool *p, magpie::counter *c, order_log *log,
                           std::array<magpie::resume_handle, 3> *handles) {
  for (int i = 0; i < 2; ++i) {
    magpie::spawn(*p, priority::high, *c, log_tag, log, 10 + i); // queued roots
  }
  for (auto &h : *handles) {
    h.resume(); // from a task of the pool: the worker's own resumed deque
  }
  co_return;
}

TEST_P(local_spawn_test, tasks_resumed_by_a_task_run_first_and_in_order) {
  order_log log;
  magpie::counter c;
  std::array<magpie::resume_handle, 3> handles;
  std::atomic<int> parked{0};
  {
    magpie::pool pool(handoff_options(1), GetParam());
    for (int i = 0; i < 3; ++i) {
      magpie::spawn(pool, c, parks_then_logs, &log, 1 + i, &handles[i], &parked);
      ASSERT_TRUE(wait_until([&] { return parked.load() == i + 1; }));
    }
    magpie::sync_wait(pool, resume_in_order, &pool, &c, &log, &handles);
    c.wait();
  }
  // Resumed tasks before new roots, oldest resumption first; then the high roots.
  EXPECT_EQ(log.order, (std::vector<int>{1, 2, 3, 10, 11}));
}

/// A function object the state stores (its call runs on the stored copy): `this` is in the state.
struct alignas(128) wide_fn {
  long value = 0;
  task<long> operator()() const {
    co_return reinterpret_cast<std::uintptr_t>(this) % alignof(wide_fn) == 0 ? value : -1;
  }
};

task<long> sum_wide(magpie::pool *p) {
  long sum = 0;
  for (long i = 1; i <= 8; ++i) {
    wide_fn const fn{i};
    auto f = magpie::spawn(*p, fn);
    (void)magpie::spawn(*p, fn); // a newer one: this first is not helped at once
    sum += co_await f;
  }
  co_return sum;
}

TEST_P(local_spawn_test, an_over_aligned_callable_keeps_its_alignment) {
  magpie::pool pool(handoff_options(1), GetParam());
  EXPECT_EQ(magpie::sync_wait(pool, sum_wide, &pool), 36);
  wide_fn const fn{5};
  EXPECT_EQ(magpie::spawn(pool, fn).get(), 5); // from a plain thread too
}

INSTANTIATE_TEST_SUITE_P(pools, local_spawn_test,
                         ::testing::Values(magpie::idle_policy::busy, magpie::idle_policy::lazy),
                         [](auto const &info) {
                           return info.param == magpie::idle_policy::busy ? "busy" : "lazy";
                         });

} // namespace
