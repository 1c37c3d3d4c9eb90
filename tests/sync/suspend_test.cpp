// magpie::suspend and resume_handle: the suspension primitive. Resumption from another thread,
// from inside fn, while fn still runs, onto a chosen worker; a dropped handle, a throwing fn,
// suspension inside a fork-join scope, a double resumption; many tasks parked with one worker;
// a pool destroyed while a task is parked.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_support.hpp"

namespace {

using namespace magpie::test;
using magpie::call;
using magpie::fork;
using magpie::join;
using magpie::resume_handle;
using magpie::suspend;
using magpie::task;

/// Handles parked by tasks, for a test thread to resume.
class parking_lot {
public:
  void park(resume_handle h) {
    std::lock_guard lock(m_mutex);
    m_handles.push_back(std::move(h));
    m_count.fetch_add(1);
  }
  /// Waits until `n` tasks have parked in total; returns false on timeout.
  bool wait_parked(std::size_t n) {
    return wait_until([&] { return m_count.load() >= n; });
  }
  std::vector<resume_handle> take() {
    std::lock_guard lock(m_mutex);
    return std::exchange(m_handles, {});
  }

private:
  std::mutex m_mutex;
  std::vector<resume_handle> m_handles;
  std::atomic<std::size_t> m_count{0};
};

/// Resumes whatever parks in `lot` until `stop`, from its own thread.
class resumer {
public:
  explicit resumer(parking_lot &lot)
      : m_thread([this, &lot] {
          while (!m_stop.load()) {
            for (auto &h : lot.take()) {
              h.resume();
            }
            std::this_thread::yield();
          }
          for (auto &h : lot.take()) {
            h.resume();
          }
        }) {}
  ~resumer() {
    m_stop = true;
    m_thread.join();
  }

private:
  std::atomic<bool> m_stop{false};
  std::thread m_thread;
};

task<long> park_then_fib(parking_lot *lot, int n) {
  co_await suspend([lot](resume_handle h) { lot->park(std::move(h)); });
  long a = 0;
  long b = 0;
  co_await fork(&a, fib, n - 1);
  co_await call(&b, fib, n - 2);
  co_await join();
  co_return a + b;
}

/// Forks `count` children that each park once and then compute fib(n); sums them.
task<long> many_parkers(parking_lot *lot, int count, int n) {
  std::vector<long> out(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    co_await fork(&out[static_cast<std::size_t>(i)], park_then_fib, lot, n);
  }
  co_await join();
  long sum = 0;
  for (long v : out) {
    sum += v;
  }
  co_return sum;
}

using suspend_test = scheduler_test;

TEST_P(suspend_test, resumed_from_another_thread) {
  parking_lot lot;
  resumer r(lot);
  int const count = scaled(200, 40);
  EXPECT_EQ(m_sched.run(many_parkers, &lot, count, 12), count * serial_fib(12));
}

// The resumer thread starts only after every task has parked: with one worker, this shows that
// a parked task blocks no worker (the worker went on to fork the next child each time).
TEST_P(suspend_test, every_task_parks_before_any_resumes) {
  parking_lot lot;
  int const count = scaled(100, 20);
  std::thread release([&] {
    ASSERT_TRUE(lot.wait_parked(static_cast<std::size_t>(count)));
    for (auto &h : lot.take()) {
      h.resume();
    }
  });
  EXPECT_EQ(m_sched.run(many_parkers, &lot, count, 10), count * serial_fib(10));
  release.join();
}

task<int> resume_inside_fn() {
  int fn_calls = 0;
  co_await suspend([&](resume_handle h) {
    ++fn_calls;
    h.resume(); // before fn returns: takes effect when fn returns
    ++fn_calls; // the task has not run yet: its frame (fn_calls) is still ours to touch
  });
  co_return fn_calls;
}

TEST_P(suspend_test, resumed_before_fn_returns) { EXPECT_EQ(m_sched.run(resume_inside_fn), 2); }

MAGPIE_NOINLINE void pause_a_little() { std::this_thread::sleep_for(std::chrono::milliseconds(2)); }

task<int> resume_while_fn_runs(int rounds) {
  int ok = 0;
  for (int i = 0; i < rounds; ++i) {
    std::atomic<bool> fn_returned{false};
    std::thread other;
    co_await suspend([&](resume_handle h) {
      other = std::thread([h = std::move(h)]() mutable { h.resume(); });
      pause_a_little(); // the other thread resumes now, while fn still runs
      fn_returned = true;
    });
    // The task must not have continued before fn returned.
    ok += fn_returned.load() ? 1 : 0;
    other.join();
  }
  co_return ok;
}

TEST_P(suspend_test, resumed_from_another_thread_while_fn_runs) {
  int const rounds = scaled(20, 5);
  EXPECT_EQ(m_sched.run(resume_while_fn_runs, rounds), rounds);
}

task<int> throwing_fn() {
  co_await suspend([](resume_handle) { throw std::runtime_error("from fn"); });
  co_return 0;
}

TEST_P(suspend_test, exception_from_fn_is_rethrown) {
  EXPECT_THROW(
      {
        try {
          m_sched.run(throwing_fn);
        } catch (std::runtime_error const &e) {
          EXPECT_STREQ(e.what(), "from fn");
          throw;
        }
      },
      std::runtime_error);
}

task<int> dropped_handle() {
  co_await suspend([](resume_handle h) { resume_handle gone = std::move(h); });
  co_return 0;
}

TEST_P(suspend_test, dropped_handle_resumes_with_abandoned_wait) {
  EXPECT_THROW(m_sched.run(dropped_handle), magpie::abandoned_wait);
}

task<int> dropped_on_another_thread(parking_lot *lot) {
  try {
    co_await suspend([lot](resume_handle h) { lot->park(std::move(h)); });
  } catch (magpie::abandoned_wait const &) {
    co_return 1;
  }
  co_return 0;
}

TEST_P(suspend_test, handle_dropped_on_another_thread) {
  parking_lot lot;
  std::thread dropper([&] {
    ASSERT_TRUE(lot.wait_parked(1));
    lot.take(); // destroyed here, unresumed
  });
  EXPECT_EQ(m_sched.run(dropped_on_another_thread, &lot), 1);
  dropper.join();
}

task<int> resumed_with_error(parking_lot *lot) {
  co_await suspend([lot](resume_handle h) { lot->park(std::move(h)); });
  co_return 0;
}

TEST_P(suspend_test, resume_with_throws_into_the_task) {
  parking_lot lot;
  std::thread thrower([&] {
    ASSERT_TRUE(lot.wait_parked(1));
    for (auto &h : lot.take()) {
      h.resume_with(std::make_exception_ptr(std::out_of_range("injected")));
    }
  });
  EXPECT_THROW(m_sched.run(resumed_with_error, &lot), std::out_of_range);
  thrower.join();
}

task<void> noop() { co_return; }

task<int> suspend_in_scope() {
  co_await fork(noop);
  int caught = 0;
  try {
    co_await suspend([](resume_handle h) { h.resume(); });
  } catch (std::logic_error const &) {
    caught = 1;
  }
  co_await join();
  co_return caught;
}

TEST_P(suspend_test, suspend_inside_fork_join_scope_throws) {
  EXPECT_EQ(m_sched.run(suspend_in_scope), 1);
}

task<int> hop_to(std::size_t target, int rounds) {
  int on_target = 0;
  for (int i = 0; i < rounds; ++i) {
    std::thread other;
    co_await suspend([&other, target](resume_handle h) {
      other = std::thread([h = std::move(h), target]() mutable { h.resume_on(target); });
    });
    other.join();
    on_target += magpie::this_worker_index() == static_cast<std::ptrdiff_t>(target) ? 1 : 0;
  }
  co_return on_target;
}

TEST_P(suspend_test, resume_on_a_chosen_worker) {
  std::size_t const target = m_sched.workers() - 1;
  EXPECT_EQ(m_sched.run(hop_to, target, 10), 10);
}

task<int> bad_worker_index(std::size_t index) {
  int threw = 0;
  co_await suspend([&](resume_handle h) {
    try {
      h.resume_on(index);
    } catch (std::out_of_range const &) {
      threw = 1;
      h.resume(); // the handle was kept
    }
  });
  co_return threw;
}

TEST_P(suspend_test, resume_on_a_worker_that_does_not_exist_throws) {
  EXPECT_EQ(m_sched.run(bad_worker_index, m_sched.workers()), 1);
}

INSTANTIATE_TEST_SUITE_P(every_scheduler, suspend_test, ::testing::ValuesIn(all_schedulers()),
                         sched_name{});

// ---------------------------------------------------------------------------------------------

task<int> resume_twice() {
  co_await suspend([](resume_handle h) {
    resume_handle copy = std::move(h);
    copy.resume();
    h.resume(); // moved from: empty
  });
  co_return 0;
}

TEST(suspend_misuse, resuming_twice_stops_the_program) {
  EXPECT_DEATH(
      {
        magpie::lazy_pool pool(1);
        (void)magpie::sync_wait(pool, resume_twice);
      },
      "resume_handle used twice");
}

// A pool destroyed while one of its tasks is parked: the destructor waits for the task, says so
// on stderr after a second, and returns once the handle is dropped (the task then sees
// abandoned_wait, its root rethrows it, and nothing is left behind).
TEST(suspend_shutdown, pool_destroyed_while_a_task_is_parked) {
  watchdog dog(current_test_name());
  parking_lot lot;
  auto pool = std::make_unique<magpie::lazy_pool>(2);
  std::atomic<int> outcome{-1};
  std::thread root([&] {
    try {
      outcome = magpie::sync_wait(*pool, resumed_with_error, &lot);
    } catch (magpie::abandoned_wait const &) {
      outcome = 2;
    }
  });
  ASSERT_TRUE(lot.wait_parked(1));
  std::atomic<bool> destroyed{false};
  std::thread destroyer([&] {
    // The root is in flight, so the destructor waits for it.
    pool.reset();
    destroyed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(destroyed.load()); // still waiting for the parked task (may be slow: not a timing)
  lot.take();                     // drop the handle: the task resumes with abandoned_wait
  root.join();
  destroyer.join();
  EXPECT_TRUE(destroyed.load());
  EXPECT_EQ(outcome.load(), 2);
}

} // namespace
