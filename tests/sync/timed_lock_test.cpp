// magpie::mutex::try_lock_for / try_lock_until and magpie::semaphore::try_acquire_for /
// try_acquire_until (tasks), and their plain-thread forms (*_blocking_for / _until), Linux: a
// deadline that passes returns false, never early, and leaves the lock as it was; an unlock
// before it hands the lock over (true) and cancels the timer; a past deadline does not suspend;
// semaphore permits are never lost to waiters timing out at the same moment, and never given
// twice (the hunt); mutual exclusion under timed, untimed and thread locks mixed with revoked
// hand-offs; FIFO order across timed and untimed waiters; the primitive destroyed while
// deadlines expire (each wait ends once: false or abandoned_wait; nothing touched after free:
// ASan); misuse (a task's blocking form, a fork-join scope); the reactor's heaps empty after each.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_support.hpp"
#include "magpie/io.hpp"
#include "sync/sync_support.hpp"
#include "sync/timed_support.hpp"

// The locks with timed takes, for the shared tests of sync/timed_support.hpp: a closed mutex is
// held, a closed semaphore has no permit.
template <>
struct magpie::test::timed_ops<magpie::mutex> {
  static std::unique_ptr<magpie::mutex> make_closed() {
    auto m = std::make_unique<magpie::mutex>();
    m->lock_blocking();
    return m;
  }
  static auto take(magpie::mutex &m, std::chrono::microseconds d) { return m.try_lock_for(d); }
  static bool take_blocking(magpie::mutex &m, std::chrono::microseconds d) {
    return m.try_lock_blocking_for(d);
  }
};
template <>
struct magpie::test::timed_ops<magpie::semaphore> {
  static std::unique_ptr<magpie::semaphore> make_closed() {
    return std::make_unique<magpie::semaphore>(0);
  }
  static auto take(magpie::semaphore &s, std::chrono::microseconds d) {
    return s.try_acquire_for(d);
  }
  static bool take_blocking(magpie::semaphore &s, std::chrono::microseconds d) {
    return s.try_acquire_blocking_for(d);
  }
};

namespace {

using namespace magpie::test;
using namespace std::chrono_literals;
using magpie::mutex;
using magpie::semaphore;
using magpie::task;
using magpie::io::clock;

using timed_lock_test = scheduler_test;

TEST_P(timed_lock_test, a_held_mutex_times_out_never_early_and_stays_held) {
  mutex m;
  ASSERT_TRUE(m.try_lock()); // held by this thread (ownership is not tied to a thread)
  auto body = [](mutex *mx) -> task<bool> {
    auto const start = clock::now();
    bool const locked = co_await mx->try_lock_for(5ms);
    co_return !locked && clock::now() - start >= 5ms;
  };
  EXPECT_TRUE(m_sched.run(body, &m));
  EXPECT_TRUE(m.is_locked());
  EXPECT_EQ(m.waiting(), 0u);
  EXPECT_EQ(pending_timers(), 0u);
  m.unlock();
  // Free now: a timed lock takes it at once, and an untimed one works afterwards.
  auto take = [](mutex *mx) -> task<bool> {
    bool const locked = co_await mx->try_lock_until(clock::now() + 5ms);
    bool const held = mx->is_locked();
    mx->unlock();
    co_await mx->lock();
    mx->unlock();
    co_return locked &&held;
  };
  EXPECT_TRUE(m_sched.run(take, &m));
  EXPECT_FALSE(m.is_locked());
}

TEST_P(timed_lock_test, an_unlock_before_the_deadline_hands_the_mutex_over) {
  mutex m;
  ASSERT_TRUE(m.try_lock());
  side_thread unlocker([&] {
    ASSERT_TRUE(wait_until([&] { return m.waiting() == 1; }));
    m.unlock();
  });
  auto body = [](mutex *mx) -> task<bool> {
    bool const locked = co_await mx->try_lock_for(std::chrono::hours::max()); // saturates
    bool const held = mx->is_locked();
    mx->unlock();
    co_return locked &&held;
  };
  EXPECT_TRUE(m_sched.run(body, &m));
  EXPECT_FALSE(m.is_locked());
  EXPECT_EQ(pending_timers(), 0u); // the hand-off cancelled the timer
}

TEST_P(timed_lock_test, a_release_before_the_deadline_hands_a_permit_over) {
  semaphore s(0);
  side_thread releaser([&] {
    ASSERT_TRUE(wait_until([&] { return s.waiting() == 1; }));
    s.release();
  });
  auto body = [](semaphore *sem) -> task<bool> {
    bool const took = co_await sem->try_acquire_for(60s);
    co_return took;
  };
  EXPECT_TRUE(m_sched.run(body, &s));
  EXPECT_EQ(s.count(), 0u);
  EXPECT_EQ(s.waiting(), 0u);
  EXPECT_EQ(pending_timers(), 0u);
}

TEST_P(timed_lock_test, a_past_deadline_does_not_suspend) {
  mutex m;
  semaphore s(1);
  auto body = [](mutex *mx, semaphore *sem) -> task<int> {
    int ok = 0;
    bool const a = co_await mx->try_lock_for(0s); // free: taken without waiting
    ok += a ? 1 : 0;
    bool const b = co_await mx->try_lock_for(-1s); // held: false without waiting
    ok += b ? 0 : 1;
    bool const c = co_await mx->try_lock_until(std::chrono::system_clock::now() - 1s);
    ok += c ? 0 : 1;
    mx->unlock();
    bool const d = co_await sem->try_acquire_until(clock::now() - 1s); // a permit is free
    ok += d ? 1 : 0;
    bool const e = co_await sem->try_acquire_for(0ns);
    ok += e ? 0 : 1;
    co_return ok;
  };
  auto const before = m_sched.total_stats().handoffs;
  EXPECT_EQ(m_sched.run(body, &m, &s), 5);
  EXPECT_EQ(m_sched.total_stats().handoffs, before); // a park hands the worker's stack off
  EXPECT_FALSE(m.is_locked());
  EXPECT_EQ(s.count(), 0u);
  EXPECT_EQ(pending_timers(), 0u);
}

/// Acquires `sem` with short deadlines until `target` acquires were counted.
task<long> short_acquires(int i, semaphore *sem, std::atomic<int> *took, std::atomic<int> *timeouts,
                          int target) {
  for (int k = 0; took->load() < target; ++k) {
    bool const ok = co_await sem->try_acquire_for(spread(i * 131 + k, 0, 300));
    if (ok) {
      took->fetch_add(1);
    } else {
      timeouts->fetch_add(1);
    }
  }
  co_return 1;
}

TEST_P(timed_lock_test, permits_are_never_lost_to_deadlines_nor_given_twice) {
  // Each release() must let exactly one acquire pass: the oldest waiter the semaphore can still
  // claim, or the next acquire through the count. A release that handed its permit to a waiter
  // whose deadline had just claimed it (which then returns false) would lose the permit and stall
  // the releaser; one that woke a waiter twice would overcount.
  semaphore s(0);
  std::atomic<int> took{0};
  std::atomic<int> timeouts{0};
  int const releases = scaled(2000, 300);
  int const waiters = 4;
  side_thread releaser([&] {
    for (int i = 0; i < releases; ++i) {
      s.release();
      ASSERT_TRUE(wait_until([&] { return took.load() >= i + 1; }))
          << "release " << i << " was lost: no acquire passed";
      ASSERT_EQ(took.load(), i + 1) << "one release let two acquires pass";
      if (i % 8 == 0) {
        std::this_thread::sleep_for(spread(i, 0, 200)); // let deadlines expire around releases
      }
    }
  });
  EXPECT_EQ(m_sched.run(fork_n<decltype(&short_acquires), semaphore *, std::atomic<int> *,
                               std::atomic<int> *, int>,
                        waiters, &short_acquires, &s, &took, &timeouts, releases),
            waiters);
  EXPECT_EQ(took.load(), releases);
  EXPECT_EQ(s.count(), 0u);
  EXPECT_EQ(s.waiting(), 0u);
  EXPECT_EQ(pending_timers(), 0u);
  std::printf("[ info ] %d releases, %d timeouts\n", releases, timeouts.load());
}

/// The shared state of the exclusion test: a section count kept without atomics (a lost
/// exclusion shows as a wrong count, and to TSan as a race) and an occupancy flag.
struct section_state {
  mutex m;
  long sections = 0;               // guarded by m
  std::uint64_t sink = 0;          // guarded by m
  std::atomic<bool> inside{false}; // set while anyone is in a section
  std::atomic<int> overlaps{0};
  std::atomic<long> entered{0};
  std::atomic<long> timeouts{0};
  void enter() {
    if (inside.exchange(true)) {
      overlaps.fetch_add(1);
    }
    ++sections;
    entered.fetch_add(1, std::memory_order_relaxed);
    sink += spin_work(50); // a window for an overlap to show
    inside.store(false);
  }
};

/// Locks `st->m` `rounds` times: two thirds timed with short deadlines, one third untimed.
task<long> timed_sections(int i, section_state *st, int rounds) {
  for (int k = 0; k < rounds; ++k) {
    if (k % 3 == 2) {
      co_await st->m.lock();
    } else {
      bool const locked = co_await st->m.try_lock_for(spread(i * 977 + k, 0, 60));
      if (!locked) {
        st->timeouts.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
    }
    st->enter();
    st->m.unlock();
  }
  co_return 1;
}

TEST_P(timed_lock_test, timed_untimed_and_thread_locks_exclude_each_other) {
  // Tasks > workers lock with short deadlines, or untimed (a task of the same pool may take back
  // a hand-off to either; a timed waiter so revoked waits on, untimed), while a plain thread
  // locks with deadlines too. Every section must run alone, and the count must match the
  // sections entered.
  section_state st;
  int const tasks = 8;
  int const rounds = scaled(400, 60);
  std::atomic<bool> done{false};
  long thread_sections = 0;
  {
    side_thread locker([&] {
      for (int k = 0; !done.load(); ++k) {
        if (st.m.try_lock_blocking_for(spread(k, 0, 80))) {
          st.enter();
          ++thread_sections;
          st.m.unlock();
        } else {
          st.timeouts.fetch_add(1, std::memory_order_relaxed);
        }
      }
    });
    EXPECT_EQ(m_sched.run(fork_n<decltype(&timed_sections), section_state *, int>, tasks,
                          &timed_sections, &st, rounds),
              tasks);
    done.store(true);
  }
  EXPECT_EQ(st.overlaps.load(), 0);
  EXPECT_EQ(st.sections, st.entered.load());
  EXPECT_GE(st.sections, static_cast<long>(tasks) * (rounds / 3)); // the untimed ones at least
  EXPECT_FALSE(st.m.is_locked());
  EXPECT_EQ(st.m.waiting(), 0u);
  EXPECT_EQ(pending_timers(), 0u);
  std::printf("[ info ] %ld sections (%ld by the thread), %ld timeouts\n", st.sections,
              thread_sections, st.timeouts.load());
}

TEST_P(timed_lock_test, destroying_a_mutex_while_deadlines_expire_ends_every_wait_once) {
  destroyed_as_deadlines_expire<mutex>(m_sched);
}

TEST_P(timed_lock_test, destroying_a_semaphore_while_deadlines_expire_ends_every_wait_once) {
  destroyed_as_deadlines_expire<semaphore>(m_sched);
}

TEST_P(timed_lock_test, misuse_is_refused) {
  mutex m;
  semaphore s(0);
  auto body = [](mutex *mx, semaphore *sem) -> task<int> {
    int refused = 0;
    // A blocking form on a worker would block it.
    try {
      (void)mx->try_lock_blocking_for(1ms);
    } catch (std::logic_error const &) {
      ++refused;
    }
    try {
      (void)sem->try_acquire_blocking_until(clock::now() + 1ms);
    } catch (std::logic_error const &) {
      ++refused;
    }
    // A timed wait inside an unjoined fork-join scope.
    long r = 0;
    co_await magpie::fork(&r, fib, 5);
    try {
      bool const b = co_await sem->try_acquire_for(1ms);
      static_cast<void>(b);
    } catch (std::logic_error const &) {
      ++refused;
    }
    co_await magpie::join();
    co_return r == serial_fib(5) ? refused : -1;
  };
  EXPECT_EQ(m_sched.run(body, &m, &s), 3);
  EXPECT_FALSE(m.is_locked());
  EXPECT_EQ(s.waiting(), 0u);
  EXPECT_EQ(pending_timers(), 0u);
}

INSTANTIATE_TEST_SUITE_P(every_scheduler, timed_lock_test, ::testing::ValuesIn(all_schedulers()),
                         sched_name{});

TEST(timed_lock_order, timed_and_untimed_waiters_keep_fifo_order_and_expired_ones_leave_it) {
  // A (deadline 300 ms), B (untimed) and C (deadline far) queue in that order. A times out and
  // leaves; the next release goes to B, not C, and the one after to C.
  watchdog dog(current_test_name());
  magpie::lazy_pool pool(handoff_options(1)); // roots run on the one worker
  semaphore s(0); // destroyed first: a failed assertion below releases the tasks, no hang
  auto a = magpie::spawn(
      pool,
      [](semaphore *sem) -> task<bool> {
        // Long enough for B and C to queue behind it on a loaded machine (checked below).
        bool const took = co_await sem->try_acquire_for(300ms);
        co_return took;
      },
      &s);
  ASSERT_TRUE(wait_until([&] { return s.waiting() == 1; }));
  std::atomic<int> b_done{0};
  auto b = magpie::spawn(
      pool,
      [](semaphore *sem, std::atomic<int> *done) -> task<void> {
        co_await sem->acquire();
        done->store(1);
      },
      &s, &b_done);
  ASSERT_TRUE(wait_until([&] { return s.waiting() == 2; }));
  auto c = magpie::spawn(
      pool,
      [](semaphore *sem) -> task<bool> {
        bool const took = co_await sem->try_acquire_for(60s);
        co_return took;
      },
      &s);
  ASSERT_TRUE(wait_until([&] { return s.waiting() == 3; }))
      << "A timed out before B and C queued: the test's window was too short";
  EXPECT_FALSE(a.get()); // timed out: B and C still queued
  EXPECT_EQ(s.waiting(), 2u);
  s.release();
  b.get();
  EXPECT_EQ(b_done.load(), 1);
  EXPECT_EQ(s.waiting(), 1u); // C still waits
  s.release();
  EXPECT_TRUE(c.get());
  EXPECT_EQ(s.count(), 0u);
  EXPECT_EQ(pending_timers(), 0u);
}

TEST(timed_lock_order, a_mutex_hand_off_to_a_timed_waiter_is_revoked_and_handed_again) {
  // One worker: T waits with a deadline; U unlocks (T becomes the heir, its resumption queued
  // behind U) and locks again at once, taking the lock back from T (a mutex's revoker must
  // unlock, which hands it to T again). T's wait returns true, after U's second section.
  watchdog dog(current_test_name());
  magpie::lazy_pool pool(handoff_options(1)); // roots run on the one worker
  mutex m; // destroyed first: a failed assertion below releases the tasks, no hang
  order_log log;
  ASSERT_TRUE(m.try_lock());
  auto t = magpie::spawn(
      pool,
      [](mutex *mx, order_log *lg) -> task<bool> {
        bool const locked = co_await mx->try_lock_for(60s);
        lg->add(2);
        if (locked) {
          mx->unlock();
        }
        co_return locked;
      },
      &m, &log);
  ASSERT_TRUE(wait_until([&] { return m.waiting() == 1; }));
  auto u = magpie::spawn(
      pool,
      [](mutex *mx, order_log *lg) -> task<bool> {
        mx->unlock();                                     // hands the mutex to T
        bool const again = co_await mx->try_lock_for(0s); // takes it back: T has not run
        lg->add(1);
        if (again) {
          mx->unlock(); // hands it to T again
        }
        co_return again;
      },
      &m, &log);
  EXPECT_TRUE(u.get());
  EXPECT_TRUE(t.get());
  EXPECT_EQ(log.order, (std::vector<int>{1, 2}));
  EXPECT_FALSE(m.is_locked());
  EXPECT_EQ(pending_timers(), 0u);
}

TEST(timed_lock_order, a_semaphore_hand_off_to_a_timed_waiter_is_never_revoked) {
  // As above with a semaphore: U's take after its release must not revoke T's permit (U might
  // never release it again, and T, its deadline's claim spent, could not time out).
  watchdog dog(current_test_name());
  magpie::lazy_pool pool(handoff_options(1)); // roots run on the one worker
  semaphore s(0); // destroyed first: a failed assertion below releases the tasks, no hang
  auto t = magpie::spawn(
      pool,
      [](semaphore *sem) -> task<bool> {
        bool const took = co_await sem->try_acquire_for(60s);
        co_return took;
      },
      &s);
  ASSERT_TRUE(wait_until([&] { return s.waiting() == 1; }));
  auto u = magpie::spawn(
      pool,
      [](semaphore *sem) -> task<bool> {
        sem->release();                                       // hands the permit to T
        bool const again = co_await sem->try_acquire_for(0s); // must not take it back
        co_return again;
      },
      &s);
  EXPECT_FALSE(u.get());
  EXPECT_TRUE(t.get());
  EXPECT_EQ(s.count(), 0u);
  EXPECT_EQ(pending_timers(), 0u);
}

TEST(timed_lock_thread, try_lock_blocking_for_times_out_never_early_or_is_handed_the_lock) {
  watchdog dog(current_test_name());
  mutex m;
  EXPECT_TRUE(m.try_lock_blocking_for(0s)); // free: taken without waiting
  auto const start = clock::now();
  EXPECT_FALSE(m.try_lock_blocking_for(5ms)); // held (by us: not recursive)
  EXPECT_GE(clock::now() - start, 5ms);
  EXPECT_EQ(m.waiting(), 0u);
  EXPECT_FALSE(m.try_lock_blocking_until(std::chrono::system_clock::now() - 1s));
  {
    side_thread unlocker([&] {
      ASSERT_TRUE(wait_until([&] { return m.waiting() == 1; }));
      m.unlock();
    });
    EXPECT_TRUE(m.try_lock_blocking_for(std::chrono::hours::max())); // handed over
  }
  EXPECT_TRUE(m.is_locked());
  m.unlock();
  semaphore s(1);
  EXPECT_TRUE(s.try_acquire_blocking_until(clock::now() - 1s)); // a free permit, no wait
  EXPECT_FALSE(s.try_acquire_blocking_for(1ms));
  EXPECT_EQ(s.count(), 0u);
}

TEST(timed_lock_thread, permits_are_never_lost_to_thread_deadlines_nor_given_twice) {
  // As the task hunt: plain threads with short deadlines; each release must let exactly one
  // acquire pass.
  watchdog dog(current_test_name());
  semaphore s(0);
  std::atomic<int> took{0};
  std::atomic<int> timeouts{0};
  int const releases = scaled(3000, 300);
  auto taker = [&](int i) {
    for (int k = 0; took.load() < releases; ++k) {
      if (s.try_acquire_blocking_for(spread(i * 131 + k, 0, 300))) {
        took.fetch_add(1);
      } else {
        timeouts.fetch_add(1);
      }
    }
  };
  {
    side_thread a([&] { taker(0); });
    side_thread b([&] { taker(1); });
    side_thread c([&] { taker(2); });
    for (int i = 0; i < releases; ++i) {
      s.release();
      ASSERT_TRUE(wait_until([&] { return took.load() >= i + 1; }))
          << "release " << i << " was lost: no acquire passed";
      ASSERT_EQ(took.load(), i + 1) << "one release let two acquires pass";
    }
  }
  EXPECT_EQ(took.load(), releases);
  EXPECT_EQ(s.count(), 0u);
  EXPECT_EQ(s.waiting(), 0u);
  std::printf("[ info ] %d releases, %d timeouts\n", releases, timeouts.load());
}

} // namespace
