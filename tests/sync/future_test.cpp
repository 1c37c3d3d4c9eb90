// magpie::spawn and magpie::future: reading from tasks (every scheduler) and threads, helping,
// exceptions through every path, argument lifetimes, futures destroyed unread, the pool's
// destructor waiting for spawned tasks, and misuse.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_support.hpp"
#include "sync/sync_support.hpp"

namespace {

using namespace magpie::test;
using magpie::task;

task<long> sum_of_fibs(magpie::pool *p, int n) {
  std::vector<magpie::future<long>> fs;
  for (int i = 0; i < n; ++i) {
    fs.push_back(magpie::spawn(*p, fib, 10 + i % 8));
  }
  long sum = 0;
  for (auto &f : fs) {
    sum += co_await f;
    EXPECT_FALSE(f.valid());
  }
  co_return sum;
}

using future_test = scheduler_test;

TEST_P(future_test, tasks_read_spawned_futures) {
  spawn_target t(m_sched);
  int const n = scaled(200, 40);
  long expect = 0;
  for (int i = 0; i < n; ++i) {
    expect += serial_fib(10 + i % 8);
  }
  EXPECT_EQ(m_sched.run(sum_of_fibs, t.m_pool, n), expect);
}

task<int> throws_after(int v) {
  if (v >= 0) {
    throw counted_error(v);
  }
  co_return v;
}

task<int> read_error(magpie::pool *p, int v) {
  auto f = magpie::spawn(*p, throws_after, v);
  try {
    co_await f;
  } catch (counted_error const &e) {
    co_return e.id;
  }
  co_return -1;
}

TEST_P(future_test, an_exception_reaches_the_awaiting_task) {
  spawn_target t(m_sched);
  EXPECT_EQ(m_sched.run(read_error, t.m_pool, 7), 7);
  EXPECT_EQ(counted_error::live().load(), 0);
}

task<void> blocked_until(std::atomic<int> *go) {
  wait_for(*go);
  co_return;
}

task<int> value_after_flag(std::atomic<int> *go, int v) {
  wait_for(*go);
  co_return v;
}

task<int> await_running(magpie::pool *p, std::atomic<int> *started, std::atomic<int> *go) {
  auto f = magpie::spawn(
      *p,
      [](std::atomic<int> *s, std::atomic<int> *g) -> task<int> {
        s->store(1);
        int v = 0;
        co_await magpie::call(&v, value_after_flag, g, 5);
        co_return v;
      },
      started, go);
  // Make sure the task has started elsewhere (not helped) before we wait: then we park.
  wait_for(*started);
  co_return co_await f;
}

TEST(future, a_task_parks_on_a_running_future_and_is_woken) {
  watchdog dog(current_test_name());
  magpie::lazy_pool pool(2);
  std::atomic<int> started{0}, go{0};
  std::thread releaser([&] {
    wait_for(started);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    go.store(1);
  });
  EXPECT_EQ(magpie::sync_wait(pool, await_running, &pool, &started, &go), 5);
  releaser.join();
}

INSTANTIATE_TEST_SUITE_P(every_scheduler, future_test, ::testing::ValuesIn(all_schedulers()),
                         sched_name{});

// -------------------------------------------------------------------------------------------
// Plain threads.

TEST(future, get_wait_and_wait_for_from_a_thread) {
  watchdog dog(current_test_name());
  magpie::busy_pool pool(2);
  std::atomic<int> go{0};
  auto f = magpie::spawn(pool, value_after_flag, &go, 42);
  EXPECT_EQ(f.wait_for(std::chrono::milliseconds(10)), std::future_status::timeout);
  EXPECT_FALSE(f.is_ready());
  go.store(1);
  f.wait();
  EXPECT_TRUE(f.is_ready());
  EXPECT_EQ(f.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  EXPECT_EQ(f.get(), 42);
  EXPECT_FALSE(f.valid());
}

TEST(future, get_rethrows_and_void_and_move_only_values_work) {
  watchdog dog(current_test_name());
  magpie::lazy_pool pool(2);
  auto e = magpie::spawn(pool, throws_after, 3);
  EXPECT_THROW(e.get(), counted_error);
  int out = 0;
  auto v = magpie::spawn(
      pool,
      [](int *o) -> task<void> {
        *o = 9;
        co_return;
      },
      &out);
  v.get();
  EXPECT_EQ(out, 9);
  auto u = magpie::spawn(
      pool, [](int x) -> task<std::unique_ptr<int>> { co_return std::make_unique<int>(x); }, 11);
  EXPECT_EQ(*u.get(), 11);
  EXPECT_EQ(counted_error::live().load(), 0);
}

TEST(future, spawn_from_many_threads_and_tasks_at_once) {
  watchdog dog(current_test_name());
  magpie::lazy_pool pool(3);
  int const threads = 4;
  int const per = scaled(300, 40);
  std::atomic<long> total{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      if (t % 2 == 0) {
        total += magpie::sync_wait(pool, sum_of_fibs, &pool, per); // spawns from a task
      } else {
        std::vector<magpie::future<long>> fs;
        for (int i = 0; i < per; ++i) {
          fs.push_back(magpie::spawn(pool, fib, 10 + i % 8));
        }
        for (auto &f : fs) {
          total += f.get();
        }
      }
    });
  }
  for (auto &t : ts) {
    t.join();
  }
  long one = 0;
  for (int i = 0; i < per; ++i) {
    one += serial_fib(10 + i % 8);
  }
  EXPECT_EQ(total.load(), one * threads);
}

// -------------------------------------------------------------------------------------------
// Helping.

task<int> child_sees(std::atomic<int> *parent_waiting, std::atomic<int> *helped, int v) {
  // Runs inside the parent's co_await if helped (one worker: the parent is not parked).
  if (parent_waiting->load() == 1) {
    helped->fetch_add(1);
  }
  co_return v;
}

task<long> await_unstarted(magpie::pool *p, std::atomic<int> *helped, int n) {
  std::atomic<int> waiting{0};
  std::vector<magpie::future<int>> fs;
  for (int i = 0; i < n; ++i) {
    fs.push_back(magpie::spawn(*p, child_sees, &waiting, helped, i));
  }
  long sum = 0;
  for (auto &f : fs) {
    waiting.store(1);
    sum += co_await f;
    waiting.store(0);
  }
  co_return sum;
}

task<long> many_awaiters(magpie::pool *p, std::atomic<int> *helped, int tasks, int n) {
  std::vector<long> out(static_cast<std::size_t>(tasks));
  for (int t = 0; t < tasks; ++t) {
    co_await magpie::fork(&out[static_cast<std::size_t>(t)], await_unstarted, p, helped, n);
  }
  co_await magpie::join();
  long s = 0;
  for (long v : out) {
    s += v;
  }
  co_return s;
}

TEST(future, one_worker_helps_every_unstarted_future_without_parking) {
  watchdog dog(current_test_name());
  for (auto policy : {magpie::idle_policy::busy, magpie::idle_policy::lazy}) {
    magpie::pool pool(handoff_options(1), policy); // the root runs on the worker
    std::atomic<int> helped{0};
    int const tasks = 8, n = scaled(50, 10);
    long const r = magpie::sync_wait(pool, many_awaiters, &pool, &helped, tasks, n);
    EXPECT_EQ(r, static_cast<long>(tasks) * n * (n - 1) / 2);
    EXPECT_EQ(helped.load(), tasks * n);     // every child ran inside its reader's co_await
    EXPECT_EQ(pool.stats()[0].handoffs, 0u); // and no reader parked
  }
}

task<int> record_pool(std::atomic<magpie::pool *> *where) {
  where->store(magpie::pool::current());
  co_return 1;
}

task<int> await_other_pool(magpie::pool *other, std::atomic<magpie::pool *> *where) {
  auto f = magpie::spawn(*other, record_pool, where);
  co_return co_await f;
}

TEST(future, a_future_of_another_pool_is_not_helped) {
  watchdog dog(current_test_name());
  magpie::lazy_pool a(1), b(1);
  std::atomic<magpie::pool *> where{nullptr};
  EXPECT_EQ(magpie::sync_wait(a, await_other_pool, &b, &where), 1);
  EXPECT_EQ(where.load(), &b); // it ran where it was sent
}

// -------------------------------------------------------------------------------------------
// Lifetimes.

task<long> take_tracked(tracked t, tracked const &r) { co_return t.value() + r.value(); }

TEST(future, arguments_are_decay_copied_once_and_destroyed_once) {
  watchdog dog(current_test_name());
  magpie::lazy_pool pool(2);
  tracked_counters().reset();
  {
    tracked a(1), b(2);
    auto f = magpie::spawn(pool, take_tracked, a, b); // both copied into the state
    EXPECT_EQ(f.get(), 3);
    EXPECT_EQ(tracked_counters().copies.load(), 2); // each exactly once; then moved (by value)
    auto g = magpie::spawn(pool, take_tracked, std::move(a), std::cref(b)); // moved; a reference
    EXPECT_EQ(g.get(), 3);
    EXPECT_EQ(tracked_counters().copies.load(), 2);
  }
  EXPECT_EQ(tracked_counters().live(), 0);
  EXPECT_EQ(tracked_counters().errors.load(), 0);
}

// A coroutine lambda's captures live in its closure, and its coroutine reaches them through the
// closure's address: spawn and task_group::spawn must keep the copy they call alive until the
// task completes, across suspensions, on both paths — the pool's job and the helping reader —
// even after the caller's lambda (a temporary, or a local that goes out of scope) is gone. A
// capture read after its closure died trips `tracked`'s check (and ASan).
TEST(future, a_spawned_lambdas_captures_live_until_its_task_completes) {
  watchdog dog(current_test_name());
  tracked_counters().reset();
  for (std::size_t workers : {std::size_t{1}, std::size_t{2}}) {
    magpie::lazy_pool pool(workers);
    magpie::event go;
    std::atomic<long> group_sum{0};
    magpie::future<long> parked;
    magpie::task_group g(pool);
    {
      tracked t(7);
      auto lam = [t, &go]() -> task<long> {
        co_await go.wait(); // suspended: the caller's lambda is destroyed meanwhile
        co_return t.value();
      };
      parked = magpie::spawn(pool, lam);
      for (long i = 0; i < 4; ++i) {
        g.spawn([t, i, &go, &group_sum]() -> task<void> {
          co_await go.wait();
          group_sum += t.value() + i;
        });
      }
    } // lam and t destroyed here
    // Helped: a task awaits the future of a temporary lambda before the pool's job runs it.
    long const helped = magpie::sync_wait(pool, [&]() -> task<long> {
      auto f = magpie::spawn(pool, [u = tracked(5)]() -> task<long> { co_return u.value(); });
      co_return co_await f;
    });
    EXPECT_EQ(helped, 5);
    go.set();
    EXPECT_EQ(parked.get(), 7);
    g.wait();
    EXPECT_EQ(group_sum.load(), 4 * 7 + 0 + 1 + 2 + 3);
  }
  EXPECT_EQ(tracked_counters().live(), 0);
  EXPECT_EQ(tracked_counters().errors.load(), 0);
}

task<void> bump(int &x) {
  ++x;
  co_return;
}

TEST(future, std_ref_passes_a_reference) {
  watchdog dog(current_test_name());
  magpie::busy_pool pool(2);
  int x = 1;
  magpie::spawn(pool, bump, std::ref(x)).get();
  EXPECT_EQ(x, 2);
}

struct throws_on_move {
  throws_on_move() = default;
  throws_on_move(throws_on_move const &) = default;
  throws_on_move(throws_on_move &&) { throw std::runtime_error("move failed"); }
};

task<int> takes_throwing(throws_on_move) { co_return 1; }

TEST(future, an_argument_that_throws_when_moved_into_the_task_reaches_the_reader) {
  watchdog dog(current_test_name());
  magpie::lazy_pool pool(1);
  throws_on_move x;
  auto f = magpie::spawn(pool, takes_throwing, x); // copied: fine; moved into the frame: throws
  EXPECT_THROW(f.get(), std::runtime_error);
  EXPECT_THROW((void)magpie::spawn(pool, takes_throwing, throws_on_move{}), std::runtime_error);
}

// -------------------------------------------------------------------------------------------
// Detached futures and unread exceptions.

std::atomic<int> unobserved_count{0};
std::mutex unobserved_mutex;
std::string unobserved_what; // guarded by unobserved_mutex (reports come from any worker)

void count_unobserved(std::exception_ptr e) noexcept {
  try {
    std::rethrow_exception(e);
  } catch (std::exception const &x) {
    std::lock_guard lock(unobserved_mutex);
    unobserved_what = x.what();
  }
  unobserved_count.fetch_add(1);
}

TEST(future, a_future_destroyed_unread_detaches_and_its_exception_is_reported_once) {
  watchdog dog(current_test_name());
  auto old = magpie::set_unobserved_exception_handler(&count_unobserved);
  unobserved_count = 0;
  std::atomic<int> ran{0}, go{0};
  {
    magpie::lazy_pool pool(2);
    // Destroyed unread before the task finished (it waits for `go`), and after:
    {
      auto f = magpie::spawn(
          pool,
          [](std::atomic<int> *g) -> task<int> {
            wait_for(*g);
            throw counted_error(1);
            co_return 0;
          },
          &go);
    }
    auto done = magpie::spawn(pool, throws_after, 2);
    done.wait();
    { auto moved = std::move(done); }
    for (int i = 0; i < 10; ++i) {
      (void)magpie::spawn(
          pool,
          [](std::atomic<int> *r, std::atomic<int> *g) -> task<void> {
            wait_for(*g);
            r->fetch_add(1);
            co_return;
          },
          &ran, &go);
    }
    go.store(1);
  } // the destructor waits for the detached tasks
  EXPECT_EQ(ran.load(), 10);
  EXPECT_EQ(unobserved_count.load(), 2);
  EXPECT_EQ(unobserved_what.rfind("counted_error ", 0), 0u) << unobserved_what;
  EXPECT_EQ(counted_error::live().load(), 0);
  magpie::set_unobserved_exception_handler(old);
}

TEST(future, the_pool_destructor_waits_for_spawned_tasks_and_spawns_from_them) {
  watchdog dog(current_test_name());
  std::atomic<int> ran{0};
  {
    magpie::lazy_pool pool(2);
    for (int i = 0; i < 20; ++i) {
      (void)magpie::spawn(
          pool,
          [](magpie::pool *p, std::atomic<int> *r) -> task<void> {
            spin_work(20000);
            // Spawning while the destructor waits is allowed from the pool's own tasks.
            (void)magpie::spawn(
                *p,
                [](std::atomic<int> *r2) -> task<void> {
                  r2->fetch_add(1);
                  co_return;
                },
                r);
            r->fetch_add(1);
            co_return;
          },
          &pool, &ran);
    }
  }
  EXPECT_EQ(ran.load(), 40);
}

// The destructor's handshake with the counts its workers keep (protocols §9.1): local roots take
// and end holds — a contended magpie::mutex, whose waiters park on a worker and are resumed by
// another task's unlock on a worker, both counted there without a lock — and finish while the
// destructor starts waiting. A hold it missed would let it free the pool under a parked task
// (ASan; a lost round), an end or a finish it missed would leave it waiting (the watchdog).
struct locked_count {
  magpie::mutex m;
  long count = 0;
};

task<void> lock_and_count(locked_count *c, std::atomic<int> *done) {
  for (int k = 0; k < 20; ++k) {
    co_await c->m.lock();
    ++c->count;
    (void)spin_work(200); // held a while: the others park
    c->m.unlock();
  }
  done->fetch_add(1);
}

task<void> spawn_lockers(magpie::pool *p, locked_count *c, std::atomic<int> *done) {
  for (int i = 0; i < 8; ++i) {
    (void)magpie::spawn(*p, lock_and_count, c, done); // local roots: counted on the worker
  }
  co_return;
}

TEST(future, the_pool_destructor_races_holds_and_finishes_of_its_own_tasks) {
  watchdog dog(current_test_name());
  int const rounds = scaled(100, 30);
  for (int round = 0; round < rounds; ++round) {
    locked_count c;
    std::atomic<int> done{0};
    {
      magpie::lazy_pool pool(2);
      (void)magpie::spawn(pool, spawn_lockers, &pool, &c, &done);
    } // destroyed at once: the lockers are still locking
    ASSERT_EQ(done.load(), 8) << "round " << round;
    ASSERT_EQ(c.count, 160) << "round " << round;
  }
}

// Roots spawned from plain threads are counted in flight by their submitters (under the pool's
// mutex) and finished on the count of the worker that completed them (protocols §9.1): the
// destructor, started while two threads' spawns are still running, must wait for every one. A
// finish it counted before its spawn, or a spawn it missed, would let it free the pool under a
// running task (ASan) or return early (a lost count below).
TEST(future, the_pool_destructor_waits_for_roots_spawned_from_plain_threads) {
  watchdog dog(current_test_name());
  int const rounds = scaled(200, 40);
  for (int round = 0; round < rounds; ++round) {
    std::atomic<int> ran{0};
    {
      magpie::lazy_pool pool(round % 2 == 0 ? 1 : 2);
      auto const spawn_some = [&] {
        for (int i = 0; i < 25; ++i) {
          (void)magpie::spawn(
              pool,
              [](std::atomic<int> *r) -> task<void> {
                (void)spin_work(50);
                r->fetch_add(1);
                co_return;
              },
              &ran);
        }
      };
      std::thread other(spawn_some);
      spawn_some();
      other.join();
    } // destroyed at once: most of the 50 are queued or running
    ASSERT_EQ(ran.load(), 50) << "round " << round;
  }
}

// -------------------------------------------------------------------------------------------
// Misuse.

task<int> await_empty() {
  magpie::future<int> f;
  try {
    co_await f;
  } catch (std::future_error const &e) {
    co_return e.code() == std::future_errc::no_state ? 1 : 2;
  }
  co_return 0;
}

task<int> blocking_get_inside(magpie::pool *p, std::atomic<int> *go) {
  auto f = magpie::spawn(*p, value_after_flag, go, 1);
  int r = 0;
  try {
    (void)f.get(); // not ready: would block this worker
  } catch (std::logic_error const &) {
    r = 1;
  }
  go->store(1);
  co_return r + co_await f;
}

TEST(future, misuse_is_reported) {
  watchdog dog(current_test_name());
  magpie::lazy_pool pool(2);
  auto f = magpie::spawn(pool, fib, 5);
  EXPECT_EQ(f.get(), 5);
  EXPECT_THROW(f.get(), std::future_error);
  EXPECT_THROW(f.wait(), std::future_error);
  EXPECT_EQ(magpie::sync_wait(pool, await_empty), 1);
  std::atomic<int> go{0};
  EXPECT_EQ(magpie::sync_wait(pool, blocking_get_inside, &pool, &go), 2);
}

TEST(future, spawn_into_a_closing_pool_throws_pool_closed) {
  watchdog dog(current_test_name());
  std::atomic<int> go{0};
  auto pool = std::make_unique<magpie::lazy_pool>(1);
  magpie::pool *raw = pool.get(); // alive until the blocked task is released
  (void)magpie::spawn(*pool, blocked_until, &go);
  std::thread destroyer([&] { pool.reset(); });
  ASSERT_TRUE(wait_until([&] { return !raw->accepting(); }));
  EXPECT_THROW((void)magpie::spawn(*raw, fib, 3), magpie::pool_closed);
  go.store(1);
  destroyer.join();
}

} // namespace
