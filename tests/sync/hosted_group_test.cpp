// A task group filled from a plain thread: its children go onto a caller slot that the thread
// holds between calls (pool::open_host … close_host, docs/protocols.md §5.4). Covered: every
// child runs once (lazy and busy pools, 1 to 4 workers, repeated); wait() runs the children still
// there on the calling thread, and nothing else; children the thread never waits for still run on
// workers that slept (no lost wake-up); more groups than slots; other threads spawning into a
// held group; exceptions; children that suspend or fork while the thread runs them; timed waits;
// a group destroyed without a wait, on its thread or another; an observer; and a pool destroyed
// while a thread holds a slot (its destructor waits for the group's wait, and says so after a
// second; later spawns throw).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_support.hpp"

namespace {

using namespace magpie::test;
using magpie::task;

task<void> add_index(std::atomic<long> *sum, int i) {
  sum->fetch_add(i);
  co_return;
}

/// Records where it ran: -1 on a guest (the calling thread), else a worker's index.
task<void> where(std::atomic<int> *on_guest, std::atomic<int> *on_worker) {
  (magpie::this_worker_index() < 0 ? on_guest : on_worker)->fetch_add(1);
  co_return;
}

/// Where the children of fill_and_wait ran.
struct where_counts {
  std::atomic<int> on_guest{0};
  std::atomic<int> on_worker{0};
};

/// Fills a group on `pool` with `n` children that record where they ran, from this thread, and
/// waits for them.
void fill_and_wait(magpie::pool &pool, int n, where_counts &c) {
  magpie::task_group g(pool);
  for (int i = 0; i < n; ++i) {
    g.spawn(where, &c.on_guest, &c.on_worker);
  }
  g.wait();
}

/// Keeps a worker busy until `release` is set (out of line: see test_support's wait_for).
task<void> blocker(std::atomic<int> *started, std::atomic<int> *release) {
  started->store(1);
  EXPECT_TRUE(wait_for(*release));
  co_return;
}

long triangle(int n) { return long{n} * (n - 1) / 2; }

task<int> failing(int id) {
  throw counted_error(id);
  co_return 0;
}

std::unique_ptr<magpie::pool> make_pool(bool busy, std::size_t workers,
                                        magpie::pool_options o = {}) {
  o.workers = workers;
  if (busy) {
    return std::make_unique<magpie::busy_pool>(o);
  }
  return std::make_unique<magpie::lazy_pool>(o);
}

TEST(hosted_group, every_child_runs_once_on_every_pool) {
  watchdog dog(current_test_name());
  int const rounds = scaled(40, 8);
  for (bool busy : {false, true}) {
    for (std::size_t workers : {1u, 2u, 4u}) {
      auto pool = make_pool(busy, workers);
      for (int r = 0; r < rounds; ++r) {
        int const n = 1 + (r * 37) % 500;
        std::atomic<long> sum{0};
        magpie::task_group g(*pool);
        for (int i = 0; i < n; ++i) {
          g.spawn(add_index, &sum, i);
        }
        g.wait();
        ASSERT_EQ(sum.load(), triangle(n)) << (busy ? "busy " : "lazy ") << workers;
        EXPECT_EQ(g.unfinished(), 0u);
      }
    }
  }
}

// The one worker is held by another task: only the calling thread can run the group's children,
// so wait() returning at all shows that it runs them; each ran on the guest (index -1), and the
// task queued for the worker did not run on the caller meanwhile.
TEST(hosted_group, wait_runs_the_children_left_on_the_calling_thread_and_nothing_else) {
  watchdog dog(current_test_name());
  for (bool busy : {false, true}) {
    auto pool = make_pool(busy, 1);
    std::atomic<int> started{0};
    std::atomic<int> release{0};
    auto held = magpie::spawn(*pool, blocker, &started, &release);
    ASSERT_TRUE(wait_for(started));
    std::atomic<int> other_ran{0};
    std::thread other([&] { // a root from another thread, queued for the busy worker
      magpie::counter c;    // (a counter's wait blocks; a future's get() would run it here)
      magpie::spawn(
          *pool, c,
          [](std::atomic<int> *ran) -> task<void> {
            ran->store(1);
            co_return;
          },
          &other_ran);
      c.wait();
    });
    where_counts ran;
    fill_and_wait(*pool, 100, ran);
    EXPECT_EQ(ran.on_guest.load(), 100);
    EXPECT_EQ(ran.on_worker.load(), 0);
    EXPECT_EQ(other_ran.load(), 0); // still queued behind the blocker
    release.store(1);
    held.get();
    other.join();
    EXPECT_EQ(other_ran.load(), 1);
  }
}

// Children the thread never waits for (it only watches their effect) still run: the push wakes a
// worker that went to sleep (a lazy worker sleeps 1 ms after its last work; the rounds sleep 3).
TEST(hosted_group, children_the_thread_does_not_wait_for_wake_a_sleeping_worker) {
  watchdog dog(current_test_name());
  int const rounds = scaled(30, 10);
  for (std::size_t workers : {1u, 2u}) {
    magpie::lazy_pool pool(workers);
    magpie::task_group g(pool);
    for (int r = 0; r < rounds; ++r) {
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
      std::atomic<int> flag{0};
      g.spawn(
          [](std::atomic<int> *f) -> task<void> {
            f->store(1);
            co_return;
          },
          &flag);
      ASSERT_TRUE(wait_for(flag)) << "a hosted child never ran: round " << r;
    }
    g.wait();
  }
}

// One slot per worker: a thread with more groups than slots hosts the first ones and hands the
// others' children to workers' queues; all finish, in any order of waits.
TEST(hosted_group, more_groups_than_slots_and_other_threads_spawning_into_a_held_group) {
  watchdog dog(current_test_name());
  magpie::lazy_pool pool(2);
  int const n = scaled(300, 100);
  std::vector<std::unique_ptr<magpie::task_group>> groups;
  std::vector<std::unique_ptr<std::atomic<long>>> sums;
  for (int k = 0; k < 4; ++k) {
    groups.push_back(std::make_unique<magpie::task_group>(pool));
    sums.push_back(std::make_unique<std::atomic<long>>(0));
  }
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < 4; ++k) {
      groups[k]->spawn(add_index, sums[k].get(), i);
    }
  }
  // Another thread spawns into group 0, which this thread holds, while this one goes on.
  std::atomic<long> extra{0};
  std::thread t([&] {
    for (int i = 0; i < n; ++i) {
      groups[0]->spawn(add_index, &extra, i);
    }
  });
  for (int i = 0; i < n; ++i) {
    groups[0]->spawn(add_index, sums[0].get(), i);
  }
  t.join();
  for (int k : {2, 0, 3, 1}) {
    groups[k]->wait();
  }
  EXPECT_EQ(sums[0]->load(), 2 * triangle(n));
  for (int k = 1; k < 4; ++k) {
    EXPECT_EQ(sums[k]->load(), triangle(n));
  }
  EXPECT_EQ(extra.load(), triangle(n));
  // The slots came back: a root still runs on the caller.
  EXPECT_EQ(magpie::sync_wait(pool, []() -> task<long> { co_return magpie::this_worker_index(); }),
            -1);
}

TEST(hosted_group, the_first_exception_is_rethrown_and_the_group_reused) {
  watchdog dog(current_test_name());
  for (std::size_t workers : {1u, 2u}) {
    magpie::lazy_pool pool(workers);
    magpie::task_group g(pool);
    for (int round = 0; round < 3; ++round) {
      std::atomic<long> sum{0};
      for (int i = 0; i < 50; ++i) {
        g.spawn(add_index, &sum, i);
        if (i == 10 || i == 20) {
          g.spawn(failing, i);
        }
      }
      EXPECT_THROW(g.wait(), counted_error);
      EXPECT_EQ(sum.load(), triangle(50));
      EXPECT_EQ(g.dropped_exceptions(), static_cast<std::size_t>(round + 1));
    }
    g.wait(); // nothing left: no exception
  }
  EXPECT_EQ(counted_error::live().load(), 0);
}

// Children that wait (an event another thread sets) and children that fork, run partly by the
// calling thread in wait(): the waiting ones finish on workers, the forked ones are joined.
TEST(hosted_group, children_that_suspend_or_fork_while_the_thread_runs_them) {
  watchdog dog(current_test_name());
  for (std::size_t workers : {1u, 2u}) {
    magpie::lazy_pool pool(workers);
    magpie::event ev;
    std::atomic<long> fibs{0};
    std::atomic<int> woke{0};
    magpie::task_group g(pool);
    for (int i = 0; i < 40; ++i) {
      if (i % 4 == 0) {
        g.spawn(
            [](magpie::event *e, std::atomic<int> *w) -> task<void> {
              co_await e->wait();
              w->fetch_add(1);
            },
            &ev, &woke);
      } else {
        g.spawn(
            [](std::atomic<long> *out) -> task<void> {
              long r = 0;
              co_await magpie::call(&r, fib, 15);
              out->fetch_add(r);
            },
            &fibs);
      }
    }
    std::thread setter([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      ev.set();
    });
    g.wait();
    setter.join();
    EXPECT_EQ(woke.load(), 10);
    EXPECT_EQ(fibs.load(), 30 * serial_fib(15));
  }
}

// A timed wait never runs children: with the one worker held it runs out of time; the children
// then run on the caller at the next wait().
TEST(hosted_group, a_timed_wait_does_not_run_children) {
  watchdog dog(current_test_name());
  magpie::lazy_pool pool(1);
  std::atomic<int> started{0};
  std::atomic<int> release{0};
  auto held = magpie::spawn(pool, blocker, &started, &release);
  ASSERT_TRUE(wait_for(started));
  std::atomic<int> on_guest{0};
  std::atomic<int> on_worker{0};
  magpie::task_group g(pool);
  for (int i = 0; i < 10; ++i) {
    g.spawn(where, &on_guest, &on_worker);
  }
  EXPECT_FALSE(g.wait_blocking_for(std::chrono::milliseconds(20)));
  EXPECT_EQ(on_guest.load() + on_worker.load(), 0);
  g.wait();
  EXPECT_EQ(on_guest.load(), 10);
  release.store(1);
  held.get();
}

// Destroyed without a wait: on its own thread the destructor runs the children left and waits;
// on another thread (after the spawning thread is done) it waits for the workers to run them.
TEST(hosted_group, a_group_destroyed_without_a_wait_on_its_thread_or_another) {
  watchdog dog(current_test_name());
  for (std::size_t workers : {1u, 2u}) {
    magpie::lazy_pool pool(workers);
    std::atomic<long> sum{0};
    {
      magpie::task_group g(pool);
      for (int i = 0; i < 200; ++i) {
        g.spawn(add_index, &sum, i);
      }
    }
    EXPECT_EQ(sum.load(), triangle(200));
    sum = 0;
    auto g = std::make_unique<magpie::task_group>(pool);
    std::thread spawner([&] {
      for (int i = 0; i < 200; ++i) {
        g->spawn(add_index, &sum, i);
      }
    });
    spawner.join(); // the slot's holder has left; its children are on the slot
    g.reset();
    EXPECT_EQ(sum.load(), triangle(200));
  }
}

// With an observer (count_tasks) every root runs on a worker: no slot is held.
TEST(hosted_group, an_observed_pool_hands_the_children_to_workers) {
  watchdog dog(current_test_name());
  magpie::pool_options o;
  o.count_tasks = true;
  auto pool = make_pool(false, 2, o);
  where_counts ran;
  fill_and_wait(*pool, 100, ran);
  EXPECT_EQ(ran.on_guest.load(), 0);
  EXPECT_EQ(ran.on_worker.load(), 100);
}

// Another thread destroys the pool while this one holds a slot: the destructor waits for the
// group's wait (the slot is an open submission), a spawn after it began throws pool_closed, and
// the children spawned before all run.
TEST(hosted_group, a_pool_destroyed_while_a_thread_holds_a_slot_waits_for_the_groups_wait) {
  watchdog dog(current_test_name());
  for (std::size_t workers : {1u, 2u}) {
    auto pool = std::make_unique<magpie::lazy_pool>(workers);
    magpie::pool *p = pool.get();
    std::atomic<long> sum{0};
    std::atomic<int> waited{0};
    std::atomic<int> destroyed{0};
    auto g = std::make_unique<magpie::task_group>(*p);
    for (int i = 0; i < 100; ++i) {
      g->spawn(add_index, &sum, i);
    }
    std::thread destroyer([&] {
      pool.reset();
      EXPECT_EQ(waited.load(), 1) << "the destructor returned before the group's wait";
      destroyed.store(1);
    });
    bool const long_wait = workers == 1; // once: the destructor says why it waits after 1 s
    if (long_wait) {
      ::testing::internal::CaptureStderr();
    }
    ASSERT_TRUE(wait_until([&] { return !p->accepting(); }));
    EXPECT_THROW(g->spawn(add_index, &sum, 1000), magpie::pool_closed);
    std::this_thread::sleep_for(std::chrono::milliseconds(long_wait ? 1300 : 10));
    EXPECT_EQ(destroyed.load(), 0);
    waited.store(1);
    g->wait();
    destroyer.join();
    if (long_wait) {
      std::string const said = ::testing::internal::GetCapturedStderr();
      EXPECT_NE(said.find("1 task_group(s) that a plain thread filled"), std::string::npos) << said;
    }
    EXPECT_EQ(destroyed.load(), 1);
    EXPECT_EQ(sum.load(), triangle(100));
    g.reset(); // after the pool: the group holds no slot any more and touches nothing
  }
}

} // namespace
