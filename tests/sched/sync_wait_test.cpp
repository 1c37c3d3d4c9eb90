// sync_wait and pools: many threads waiting on one pool at once (no hang, no lost wake-up),
// sync_wait from a worker of the same scheduler (std::logic_error, scheduler still usable),
// nesting across schedulers, statistics, pools' lifetime (stacklets all come back), and idle
// lazy pools that must wake for every submission.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/steal_probe.hpp"
#include "common/test_support.hpp"

namespace {

using namespace magpie::test;
using magpie::call;
using magpie::fork;
using magpie::join;
using magpie::task;

class sync_wait_test : public scheduler_test {};

/// skynet over 10^depth leaves: many small steals on multi-worker pools.
task<long> skynet_like(long num, int depth) {
  if (depth == 0) {
    co_return num;
  }
  long parts[10] = {};
  long sub = 1;
  for (int d = 1; d < depth; ++d) {
    sub *= 10;
  }
  for (int i = 0; i < 10; ++i) {
    co_await fork(&parts[i], skynet_like, num + i * sub, depth - 1);
  }
  co_await join();
  long sum = 0;
  for (long p : parts) {
    sum += p;
  }
  co_return sum;
}

// --- many threads
// --------------------------------------------------------------------------------------

template <typename Sched>
void hammer(Sched &s, int threads, int iterations) {
  std::atomic<long> wrong{0};
  std::atomic<long> done{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < iterations; ++i) {
        int const n = (t + i) % 3 == 0 ? 2 : 8 + (t + i) % 6; // some trivial roots, some not
        if (magpie::sync_wait(s, fib, n) != serial_fib(n)) {
          ++wrong;
        }
        ++done;
      }
    });
  }
  for (auto &t : ts) {
    t.join();
  }
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(done.load(), static_cast<long>(threads) * iterations);
}

TEST_P(sync_wait_test, eight_threads_in_a_loop) {
  int const iterations = scaled(300, 150);
  if (m_sched.is_inline()) {
    hammer(*m_sched.inline_sched(), 8, iterations); // serialised by the scheduler's mutex
  } else {
    hammer(*m_sched.pool(), 8, iterations);
    EXPECT_EQ(m_sched.total_stats().jobs, 8u * static_cast<unsigned>(iterations))
        << "every root is exactly one job";
  }
}

TEST(sync_wait, lazy_pool_sleeps_between_roots_and_always_wakes) {
  // The workers go to sleep between submissions; each submission must wake one. A lost wake-up
  // shows as a hang (caught by the watchdog).
  watchdog dog(current_test_name());
  for (std::size_t workers : {1u, 2u, 3u}) {
    magpie::lazy_pool pool(magpie::test::handoff_options(workers)); // a worker runs each root
    auto total_sleeps = [&] {
      std::uint64_t n = 0;
      for (auto const &s : pool.stats()) {
        n += s.sleeps;
      }
      return n;
    };
    std::uint64_t seen = 0;
    for (int i = 0; i < scaled(8, 4); ++i) {
      // Let the workers fall asleep again (they give up about 1 ms after their last work): wait
      // for a new sleep, then a little longer for the others.
      auto const deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (total_sleeps() <= seen && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      ASSERT_GT(total_sleeps(), seen) << "idle lazy workers did not go to sleep within 10 s";
      seen = total_sleeps();
      ASSERT_EQ(magpie::sync_wait(pool, fib, 12), serial_fib(12));
    }
  }
}

TEST(sync_wait, submissions_race_workers_on_their_way_to_sleep) {
  // Three threads submit roots after pauses of 0 to 3 ms, around the time (1 ms after its last
  // work) a lazy worker stops looking and goes to sleep: submissions meet workers that are
  // looking, storing their sleep word, re-checking, waiting, and being woken by another
  // submitter's CAS. Each root goes to a worker (hand-off), so each one needs a worker awake. A
  // lost wake-up hangs (the watchdog); the pool is destroyed right after the last root, while
  // its workers may be on their way to sleep (protocols §6, "Stopping").
  watchdog dog(current_test_name());
  for (std::size_t workers : {1u, 2u, 4u}) {
    std::uint64_t sleeps = 0;
    {
      magpie::lazy_pool pool(magpie::test::handoff_options(workers));
      std::vector<std::thread> threads;
      std::atomic<int> wrong{0};
      for (unsigned t = 0; t < 3; ++t) {
        threads.emplace_back([&, t] {
          std::uint32_t state = 0x9e3779b9U * (t + 1);
          for (int i = 0; i < scaled(40, 15); ++i) {
            state = state * 1664525U + 1013904223U;
            std::this_thread::sleep_for(std::chrono::microseconds((state >> 8) % 3000));
            if (magpie::sync_wait(pool, fib, 10) != serial_fib(10)) {
              wrong.fetch_add(1, std::memory_order_relaxed);
            }
          }
        });
      }
      for (auto &th : threads) {
        th.join();
      }
      // Whether the random pauses above met a sleeping worker depends on the machine's load (on
      // a loaded one the submissions can keep every worker looking); a pause far longer than the
      // 1 ms a worker keeps looking makes sure one root meets sleeping workers.
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (magpie::sync_wait(pool, fib, 10) != serial_fib(10)) {
        wrong.fetch_add(1, std::memory_order_relaxed);
      }
      EXPECT_EQ(wrong.load(), 0);
      for (auto const &s : pool.stats()) {
        sleeps += s.sleeps;
      }
    }
    // The last pause outlasts the 1 ms a worker keeps looking: some workers slept between roots
    // and were woken.
    EXPECT_GT(sleeps, 0U) << workers << " workers never slept between roots";
  }
}

TEST(sync_wait, many_threads_on_small_lazy_and_busy_pools) {
  watchdog dog(current_test_name());
  int const iterations = scaled(400, 150);
  {
    magpie::lazy_pool pool(1);
    hammer(pool, 8, iterations);
  }
  {
    magpie::lazy_pool pool(2);
    hammer(pool, 8, iterations);
  }
  {
    magpie::busy_pool pool(2);
    hammer(pool, 8, iterations);
  }
}

// The caller polls for its thread's budget (4 to 100 µs, adapted to its recent waits) before it
// sleeps (protocols §9.1, "sync_wait's caller"): roots that end before, around and after that
// moment, from three threads at once, each root's job on its caller's stack; the longest (~1 ms)
// end after any budget, so every caller also sleeps and is woken, with a budget that the
// shorter roots have raised. A completer that touched the job after its exchange of `done` would
// touch a returned caller's frame (ASan, TSan); a lost wake-up would leave a caller asleep (the
// watchdog).
task<long> busy_for(std::uint64_t iters, long v) {
  (void)spin_work(iters);
  co_return v;
}

TEST(sync_wait, roots_that_end_while_the_caller_polls_or_sleeps) {
  watchdog dog(current_test_name());
  int const iterations = scaled(600, 150);
  // From nothing to well past the polling window (a few ns per iteration).
  std::uint64_t const lengths[] = {0, 100, 500, 1000, 2000, 4000, 20000, 300000};
  auto const run = [&](magpie::pool &pool) {
    std::atomic<long> wrong{0};
    auto const caller = [&](int seed) {
      for (int i = 0; i < iterations; ++i) {
        long const v = seed * 100000L + i;
        std::uint64_t const len = lengths[static_cast<std::size_t>(i + seed) % std::size(lengths)];
        if (magpie::sync_wait(pool, busy_for, len, v) != v) {
          wrong.fetch_add(1);
        }
      }
    };
    std::thread a(caller, 1);
    std::thread b(caller, 2);
    caller(3);
    a.join();
    b.join();
    EXPECT_EQ(wrong.load(), 0);
  };
  {
    magpie::busy_pool pool(2);
    run(pool);
  }
  {
    magpie::lazy_pool pool(1);
    run(pool);
  }
}

task<long> sleep_then(std::chrono::milliseconds d, long v) {
  std::this_thread::sleep_for(d); // blocks the worker, not the caller: the caller must sleep too
  co_return v;
}

// The polling budget adapts (core/detail/thread_wait.hpp): waits that sleep yet end within the
// ceiling raise it, a wait longer than the ceiling halves it, and it stays between floor and
// ceiling. Roots of ~20 µs (spin_work calibrated here: sanitizers slow it down): on a loaded
// machine some take longer, so the test asks only that the budget rose above the floor at some
// point.
TEST(sync_wait, the_polling_budget_rises_for_short_waits_and_falls_after_a_long_one) {
  watchdog dog(current_test_name());
  using magpie::core::detail::poll_budget;
  using magpie::core::detail::poll_ceiling;
  using magpie::core::detail::poll_floor;
  std::uint64_t const probe = 100000;
  long probe_ns = 0; // the fastest of three: a preempted probe would shorten the roots
  for (int i = 0; i < 3; ++i) {
    auto const t0 = std::chrono::steady_clock::now();
    (void)spin_work(probe);
    long const ns = static_cast<long>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
            .count());
    probe_ns = i == 0 ? ns : std::min(probe_ns, ns);
  }
  std::uint64_t const short_iters =
      std::max<std::uint64_t>(1, probe * 20'000 / static_cast<std::uint64_t>(probe_ns + 1));
  magpie::lazy_pool pool(magpie::test::handoff_options(1)); // the caller waits for a worker
  poll_budget() = poll_floor;
  auto highest = poll_budget();
  // Until one rises (at most 2,000 roots, ~0.1 s): a wait on a core shared with another process
  // (ctest runs several) or preempted past the ceiling rightly leaves the budget at the floor.
  for (int i = 0; i < 2000 && highest == poll_floor; ++i) {
    ASSERT_EQ(magpie::sync_wait(pool, busy_for, short_iters, long{i}), i);
    highest = std::max(highest, poll_budget());
    ASSERT_GE(poll_budget(), poll_floor);
    ASSERT_LE(poll_budget(), poll_ceiling);
  }
  EXPECT_GT(highest, poll_floor) << "no wait of ~20 µs raised the budget";
  poll_budget() = poll_ceiling;
  // 2 ms, far longer than the ceiling: the budget halves.
  ASSERT_EQ(magpie::sync_wait(pool, sleep_then, std::chrono::milliseconds(2), long{7}), 7);
  EXPECT_LE(poll_budget(), poll_ceiling / 2);
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(magpie::sync_wait(pool, sleep_then, std::chrono::milliseconds(2), long{i}), i);
  }
  EXPECT_EQ(poll_budget(), poll_floor) << "long waits bring the budget back to the floor";
}

// The budget's arithmetic (adapt_poll): a wait that slept yet ended within the ceiling sets the
// budget to twice its length (never lower, never above the ceiling), one that ended while
// polling keeps it, one on a shared core drops it to the floor, one longer than the ceiling
// halves it, down to the floor.
TEST(sync_wait, the_polling_budget_follows_the_waits) {
  using magpie::core::detail::adapt_poll;
  using magpie::core::detail::poll_budget;
  using magpie::core::detail::poll_ceiling;
  using magpie::core::detail::poll_floor;
  using magpie::core::detail::wait_end;
  using us = std::chrono::microseconds;
  poll_budget() = poll_floor;
  adapt_poll(us(30), wait_end::slept);
  EXPECT_EQ(poll_budget(), us(60));
  adapt_poll(us(10), wait_end::slept); // shorter than the budget already is: kept
  EXPECT_EQ(poll_budget(), us(60));
  adapt_poll(us(90), wait_end::polled); // ended while polling: kept
  EXPECT_EQ(poll_budget(), us(60));
  adapt_poll(us(80), wait_end::slept);
  EXPECT_EQ(poll_budget(), poll_ceiling);
  adapt_poll(us(500), wait_end::slept);
  EXPECT_EQ(poll_budget(), poll_ceiling / 2);
  adapt_poll(us(500), wait_end::polled); // a long wait, however it ended
  EXPECT_EQ(poll_budget(), poll_ceiling / 4);
  adapt_poll(us(12), wait_end::shared); // spinning beside the worker it waits for: stop that
  EXPECT_EQ(poll_budget(), poll_floor);
  adapt_poll(us(40), wait_end::slept);
  EXPECT_EQ(poll_budget(), us(80));
  for (int i = 0; i < 10; ++i) {
    adapt_poll(std::chrono::milliseconds(5), wait_end::slept);
  }
  EXPECT_EQ(poll_budget(), poll_floor);
}

// A caller whose budget is at its ceiling still sleeps through a long root: over 300 ms of
// waiting its thread uses about the budget (0.1 ms) of CPU, not the 300 ms an unbounded poll
// would. Bound: 30 ms (a sleeping thread uses none; margin for a loaded machine).
TEST(sync_wait, a_caller_with_a_raised_budget_still_sleeps_through_a_long_root) {
  watchdog dog(current_test_name());
  magpie::lazy_pool pool(magpie::test::handoff_options(1)); // the caller waits for a worker
  magpie::core::detail::poll_budget() = magpie::core::detail::poll_ceiling;
  auto const cpu0 = magpie::core::detail::thread_cpu_now();
  ASSERT_EQ(magpie::sync_wait(pool, sleep_then, std::chrono::milliseconds(300), long{5}), 5);
  auto const used = magpie::core::detail::thread_cpu_now() - cpu0;
  EXPECT_LT(used, std::chrono::milliseconds(30))
      << "the waiting thread used " << used.count() / 1000 << " µs of CPU";
}

// --- sync_wait from inside
// --------------------------------------------------------------------------------

template <typename Sched>
task<long> wait_on_own_scheduler(Sched *s) {
  long caught = 0;
  try {
    (void)magpie::sync_wait(*s, fib, 5);
  } catch (std::logic_error const &e) {
    caught = std::string(e.what()).find("co_await magpie::call") != std::string::npos ? 1 : 2;
  }
  long f = 0;
  co_await fork(&f, fib, 10); // the task goes on normally
  co_await join();
  co_return caught * 1000 + f;
}

TEST_P(sync_wait_test, from_a_worker_of_the_same_scheduler_throws_logic_error) {
  long const expect = 1000 + serial_fib(10);
  if (m_sched.is_inline()) {
    EXPECT_EQ(m_sched.run(wait_on_own_scheduler<magpie::inline_scheduler>, m_sched.inline_sched()),
              expect);
  } else {
    EXPECT_EQ(m_sched.run(wait_on_own_scheduler<magpie::pool>, m_sched.pool()), expect);
  }
  EXPECT_EQ(m_sched.run(fib, fib_n), serial_fib(fib_n)) << "the scheduler is still usable";
}

template <typename Sched>
task<long> wait_on_other_scheduler(Sched *other) {
  long f = 0;
  co_await fork(&f, fib, 10);
  co_await join();
  long const g =
      magpie::sync_wait(*other, fib, 15); // blocks this worker; allowed across schedulers
  co_return f + g;
}

TEST_P(sync_wait_test, from_a_task_onto_another_scheduler) {
  long const expect = serial_fib(10) + serial_fib(15);
  magpie::lazy_pool other_pool(2);
  EXPECT_EQ(
      m_sched.run(wait_on_other_scheduler<magpie::pool>, static_cast<magpie::pool *>(&other_pool)),
      expect);
  magpie::inline_scheduler other_inline;
  EXPECT_EQ(m_sched.run(wait_on_other_scheduler<magpie::inline_scheduler>, &other_inline), expect);
  EXPECT_EQ(m_sched.run(fib, 12), serial_fib(12));
}

// --- statistics and lifetime
// --------------------------------------------------------------------------------

TEST_P(sync_wait_test, statistics_count_roots_and_steals) {
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(m_sched.run(fib, fib_n), serial_fib(fib_n));
  }
  auto const total = m_sched.total_stats();
  if (m_sched.is_inline()) {
    EXPECT_EQ(total.steals, 0u);
    return;
  }
  EXPECT_EQ(total.jobs, 5u) << "five roots, five jobs";
  if (m_sched.workers() == 1) {
    EXPECT_EQ(total.steals, 0u) << "a lone worker has nobody to steal from";
    EXPECT_EQ(total.handoffs, 0u);
  }
  std::printf("[ info     ] %s: steals %llu, failed steal attempts %llu, stack hand-offs %llu, "
              "sleeps %llu\n",
              to_string(GetParam()).c_str(), static_cast<unsigned long long>(total.steals),
              static_cast<unsigned long long>(total.steal_fails),
              static_cast<unsigned long long>(total.handoffs),
              static_cast<unsigned long long>(total.sleeps));
  if (m_sched.workers() >= 2) {
    // Whether five small fibs were stolen from depends on timing; the probe's steal does not
    // (tests/common/steal_probe.hpp): exactly one steal, and the child that finds its parent
    // stolen hands its chain (the parent's frame is on it) to the parent: one hand-off.
    ASSERT_TRUE(continuation_is_stolen(*m_sched.pool()))
        << "no worker stole the probe's continuation: the pool does not steal";
    auto const after = m_sched.total_stats();
    EXPECT_EQ(after.steals, total.steals + 1) << "the probe's steal was not counted (once)";
    EXPECT_EQ(after.handoffs, total.handoffs + 1) << "the probe's hand-off was not counted";
    EXPECT_EQ(after.jobs, 6u);
    EXPECT_GT(after.steal_fails, 0u) << "idle workers made no (failed) steal attempts";
  }
}

TEST_P(sync_wait_test, every_stacklet_comes_back_when_the_scheduler_dies) {
  auto const before = magpie::core::get_stack_stats();
  {
    any_scheduler s(GetParam());
    for (int i = 0; i < 4; ++i) {
      ASSERT_EQ(s.run(fib, fib_n), serial_fib(fib_n));
    }
    ASSERT_EQ(s.run(skynet_like, 0L, 4), 10000L * 9999 / 2);
  }
  auto const after = magpie::core::get_stack_stats();
  EXPECT_EQ(after.stacklets_live, before.stacklets_live) << "stacklets leaked";
  EXPECT_EQ(after.bytes_live, before.bytes_live);
}

// --- submissions to a closing pool
// ---------------------------------------------------------------------------

/// Runs until `release` is set, then checks that moving onto the (closing) pool is refused.
task<long> hold_the_pool_open(magpie::pool *p, std::atomic<int> *started,
                              std::atomic<int> *release) {
  started->store(1);
  auto const deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (release->load() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  long refused = 0;
  try {
    co_await magpie::resume_on(*p, 0);
  } catch (magpie::pool_closed const &) {
    refused = 1;
  }
  co_return refused;
}

TEST(sync_wait, submissions_to_a_closing_pool_throw_pool_closed) {
  watchdog dog(current_test_name());
  for (bool lazy : {true, false}) {
    std::unique_ptr<magpie::pool> pool;
    if (lazy) {
      pool = std::make_unique<magpie::lazy_pool>(2);
    } else {
      pool = std::make_unique<magpie::busy_pool>(2);
    }
    EXPECT_EQ(magpie::sync_wait(*pool, fib, 10), 55);
    std::atomic<int> started{0};
    std::atomic<int> release{0};
    long held = -1;
    magpie::pool *raw = pool.get(); // stays valid until `release`: the destructor waits for A
    // A: a root that keeps the pool's destructor waiting until we have been refused.
    std::thread a(
        [&] { held = magpie::sync_wait(*raw, hold_the_pool_open, raw, &started, &release); });
    while (started.load() == 0) {
      std::this_thread::yield();
    }
    // D: destroys the pool; it refuses new work at once, then waits for A's root.
    std::thread d([&] { pool.reset(); });
    while (raw->accepting()) {
      std::this_thread::yield();
    }
    bool refused = false;
    try {
      (void)magpie::sync_wait(*raw, fib, 3);
    } catch (magpie::pool_closed const &) {
      refused = true;
    }
    release.store(1);
    a.join();
    d.join();
    EXPECT_TRUE(refused) << "sync_wait on a closing pool did not throw pool_closed";
    EXPECT_EQ(held, 1) << "resume_on onto a closing pool was not refused with pool_closed";
  }
}

// --- a root must not wait behind another root while workers are idle
// --------------------------------------------

/// Occupies its worker until released (or until a deadline, which the test reports).
task<long> occupy_a_worker(std::atomic<int> *started, std::atomic<int> *release) {
  started->store(1);
  auto const deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (release->load() == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      co_return 1; // nobody released us: the submitter was stuck behind us
    }
    std::this_thread::yield();
  }
  co_return 0;
}

TEST_P(sync_wait_test, a_root_does_not_wait_behind_a_long_root_while_workers_are_idle) {
  if (m_sched.workers() < 2) {
    GTEST_SKIP() << "needs an idle worker besides the occupied one";
  }
  magpie::pool &pool = *m_sched.pool();
  std::atomic<int> started{0};
  std::atomic<int> release{0};
  long timed_out = -1;
  std::thread a([&] { timed_out = magpie::sync_wait(pool, occupy_a_worker, &started, &release); });
  while (started.load() == 0) {
    std::this_thread::yield();
  }
  // 200 trivial roots, one after another, while one worker is busy and the others idle: each
  // should start at once on an idle worker.
  int completed = 0;
  for (int i = 0; i < 200; ++i) {
    completed += magpie::sync_wait(pool, fib, 2) == 1 ? 1 : 0;
  }
  release.store(1);
  a.join();
  EXPECT_EQ(completed, 200);
  EXPECT_EQ(timed_out, 0) << "200 trivial roots took more than 3 s with idle workers available: a "
                             "root was queued on the busy worker and waited for its task to finish";
}

TEST(sync_wait, pools_can_be_created_and_destroyed_quickly) {
  watchdog dog(current_test_name());
  for (int i = 0; i < scaled(30, 15); ++i) {
    magpie::lazy_pool lazy(static_cast<std::size_t>(1 + i % 4));
    magpie::busy_pool busy(static_cast<std::size_t>(1 + i % 3));
    if (i % 2 == 0) {
      EXPECT_EQ(magpie::sync_wait(lazy, fib, 10), 55);
      EXPECT_EQ(magpie::sync_wait(busy, fib, 10), 55);
    }
  } // some destroyed without ever running anything
}

TEST(sync_wait, default_pools_use_every_core) {
  magpie::lazy_pool lazy;
  EXPECT_EQ(lazy.size(), std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_EQ(lazy.policy(), magpie::idle_policy::lazy);
  magpie::busy_pool busy(3);
  EXPECT_EQ(busy.size(), 3u);
  EXPECT_EQ(busy.policy(), magpie::idle_policy::busy);
  EXPECT_FALSE(lazy.is_worker_thread());
  EXPECT_EQ(magpie::this_worker_index(), -1);
}

INSTANTIATE_TEST_SUITE_P(all, sync_wait_test, ::testing::ValuesIn(all_schedulers()), sched_name{});

} // namespace
