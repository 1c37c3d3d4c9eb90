// magpie::event::wait_for / wait_until (tasks, Linux): a deadline that passes returns false and
// never early; a set() before it returns true and cancels the timer; a set event or a past
// deadline does not suspend; auto-reset sets are never lost to waiters timing out at the same
// moment, and never release two waiters (lost-wake-up hunt); a manual set() racing deadlines;
// the event destroyed while its timed waiters' deadlines expire (each gets abandoned_wait or
// false, nothing is touched after free: ASan); waiting inside a fork-join scope; a pool
// destroyed while a timed wait is pending; and the reactor's heaps empty again after each test.
// The same for the latch, the counter (re-armed after zero too) and the task_group (a timed wait
// that runs out keeps the first exception; of many waiters racing the last child, exactly one
// rethrows it), and the plain-thread forms.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "common/test_support.hpp"
#include "magpie/io.hpp"
#include "sync/sync_support.hpp"
#include "sync/timed_support.hpp"

// The primitives with timed waits here, for the shared tests of sync/timed_support.hpp.
template <>
struct magpie::test::timed_ops<magpie::event> {
  static std::unique_ptr<magpie::event> make_closed() { return std::make_unique<magpie::event>(); }
  static auto take(magpie::event &e, std::chrono::microseconds d) { return e.wait_for(d); }
  static bool take_blocking(magpie::event &e, std::chrono::microseconds d) {
    return e.wait_blocking_for(d);
  }
};
template <>
struct magpie::test::timed_ops<magpie::latch> {
  static std::unique_ptr<magpie::latch> make_closed() { return std::make_unique<magpie::latch>(1); }
  static auto take(magpie::latch &l, std::chrono::microseconds d) { return l.wait_for(d); }
  static bool take_blocking(magpie::latch &l, std::chrono::microseconds d) {
    return l.wait_blocking_for(d);
  }
};
template <>
struct magpie::test::timed_ops<magpie::counter> {
  static std::unique_ptr<magpie::counter> make_closed() {
    return std::make_unique<magpie::counter>(1);
  }
  static auto take(magpie::counter &c, std::chrono::microseconds d) { return c.wait_for(d); }
  static bool take_blocking(magpie::counter &c, std::chrono::microseconds d) {
    return c.wait_blocking_for(d);
  }
};

namespace {

using namespace magpie::test;
using namespace std::chrono_literals;
using magpie::event;
using magpie::task;
using magpie::io::clock;

using event_timed_test = scheduler_test;

TEST_P(event_timed_test, a_deadline_that_passes_returns_false_and_never_early) {
  event ev;
  auto body = [](event *e) -> task<bool> {
    auto const start = clock::now();
    bool const passed = co_await e->wait_for(5ms);
    co_return !passed && clock::now() - start >= 5ms;
  };
  EXPECT_TRUE(m_sched.run(body, &ev));
  EXPECT_EQ(ev.waiting(), 0u);
  EXPECT_FALSE(ev.is_set());
  EXPECT_EQ(pending_timers(), 0u);
  // The event still works for an untimed wait afterwards.
  ev.set();
  m_sched.run([](event *e) -> task<void> { co_await e->wait(); }, &ev);
}

TEST_P(event_timed_test, a_set_before_the_deadline_returns_true_and_cancels_the_timer) {
  for (auto mode : {event::reset::manual, event::reset::automatic}) {
    event ev(mode);
    side_thread setter([&] {
      ASSERT_TRUE(wait_until([&] { return ev.waiting() == 1; }));
      ev.set();
    });
    auto body = [](event *e) -> task<bool> {
      bool const passed = co_await e->wait_until(clock::now() + 60s);
      co_return passed;
    };
    auto const start = clock::now();
    EXPECT_TRUE(m_sched.run(body, &ev));
    EXPECT_LT(clock::now() - start, 30s);
    EXPECT_EQ(ev.is_set(), mode == event::reset::manual); // automatic: the hand-off consumed it
    EXPECT_EQ(pending_timers(), 0u) << "the timer of a wait the event released stayed armed";
  }
}

TEST_P(event_timed_test, a_duration_past_the_end_of_the_clock_waits_for_the_set) {
  event ev;
  side_thread setter([&] {
    ASSERT_TRUE(wait_until([&] { return ev.waiting() == 1; }));
    std::this_thread::sleep_for(2ms);
    ev.set();
  });
  auto body = [](event *e) -> task<bool> {
    bool const passed = co_await e->wait_for(std::chrono::hours::max()); // saturates: never
    co_return passed;
  };
  EXPECT_TRUE(m_sched.run(body, &ev));
  EXPECT_EQ(pending_timers(), 0u);
}

TEST_P(event_timed_test, a_set_event_or_a_past_deadline_does_not_suspend) {
  auto const before = m_sched.total_stats().handoffs;
  event manual(event::reset::manual, true);
  event automatic(event::reset::automatic, true);
  event clear;
  auto body = [](event *m, event *a, event *c) -> task<int> {
    int score = 0;
    bool b = co_await m->wait_for(1h);
    score += b ? 1 : 0;
    b = co_await m->wait_for(0s); // set: passes even with no time left
    score += b ? 1 : 0;
    b = co_await a->wait_for(-1s); // consumes the flag
    score += b ? 1 : 0;
    b = co_await a->wait_for(0s); // consumed: times out at once
    score += b ? 0 : 1;
    b = co_await c->wait_until(clock::now() - 1s);
    score += b ? 0 : 1;
    b = co_await c->wait_until(std::chrono::system_clock::now() - 1s); // another clock
    score += b ? 0 : 1;
    co_return score;
  };
  EXPECT_EQ(m_sched.run(body, &manual, &automatic, &clear), 6);
  EXPECT_EQ(m_sched.total_stats().handoffs, before); // a park hands the worker's stack off
  EXPECT_EQ(pending_timers(), 0u);
}

/// Waits on `ev` with short deadlines until `target` passes were counted.
task<long> short_waits(int i, event *ev, std::atomic<int> *passes, std::atomic<int> *timeouts,
                       int target) {
  for (int k = 0; passes->load() < target; ++k) {
    bool const passed = co_await ev->wait_for(spread(i * 131 + k, 0, 300));
    if (passed) {
      passes->fetch_add(1);
    } else {
      timeouts->fetch_add(1);
    }
  }
  co_return 1;
}

TEST_P(event_timed_test, auto_reset_sets_are_never_lost_to_deadlines_nor_doubled) {
  // Each set() must let exactly one wait pass: the oldest waiter the event can still claim, or
  // the next wait through the flag. A set() that picked a waiter whose deadline had just claimed
  // it (and dropped the set), or woke it twice, would stall the setter or overcount.
  event ev(event::reset::automatic);
  std::atomic<int> passes{0};
  std::atomic<int> timeouts{0};
  int const sets = scaled(2000, 300);
  int const waiters = 4;
  side_thread setter([&] {
    for (int i = 0; i < sets; ++i) {
      ev.set();
      ASSERT_TRUE(wait_until([&] { return passes.load() >= i + 1; }))
          << "set() " << i << " was lost: no wait passed";
      ASSERT_EQ(passes.load(), i + 1) << "one set() let two waits pass";
      if (i % 8 == 0) {
        std::this_thread::sleep_for(spread(i, 0, 200)); // let deadlines expire around the sets
      }
    }
  });
  EXPECT_EQ(
      m_sched.run(
          fork_n<decltype(&short_waits), event *, std::atomic<int> *, std::atomic<int> *, int>,
          waiters, &short_waits, &ev, &passes, &timeouts, sets),
      waiters);
  EXPECT_EQ(passes.load(), sets);
  EXPECT_FALSE(ev.is_set());
  EXPECT_EQ(ev.waiting(), 0u);
  EXPECT_EQ(pending_timers(), 0u);
  std::printf("[ info ] %d sets, %d timeouts\n", sets, timeouts.load());
}

// The primitives with timed waits, for the tests below that apply to each: whether a wait
// passes now, and the step that lets every waiter pass.
bool is_open(event &e) { return e.is_set(); }
bool is_open(magpie::latch &l) { return l.try_wait(); }
bool is_open(magpie::counter &c) { return c.value() == 0; }
void open_up(event &e) { e.set(); }
void open_up(magpie::latch &l) { l.count_down(); }
void open_up(magpie::counter &c) { c.count_down(); }
template <typename P>
task<long> wait_around(int i, P *p, std::atomic<int> *bad) {
  auto const d = spread(i, 200, 2000);
  auto const start = clock::now();
  bool const passed = co_await p->wait_for(d);
  if (passed ? !is_open(*p) : clock::now() - start < d) {
    bad->fetch_add(1); // passed while closed, or timed out early
  }
  co_return 1;
}

/// Plain threads doing the same as wait_around (two of them, with their own deadlines).
template <typename P>
void thread_waits_around(int i, P *p, std::atomic<int> *bad) {
  auto const d = spread(i, 200, 2000);
  auto const start = clock::now();
  bool const passed = p->wait_blocking_for(d);
  if (passed ? !is_open(*p) : clock::now() - start < d) {
    bad->fetch_add(1);
  }
}

template <typename P>
void opening_races_deadlines(any_scheduler &sched) {
  int const n = scaled(64, 16);
  for (int round = 0; round < scaled(20, 4); ++round) {
    std::unique_ptr<P> p = timed_ops<P>::make_closed();
    std::atomic<int> bad{0};
    {
      side_thread t0([&] { thread_waits_around(round, p.get(), &bad); });
      side_thread t1([&] { thread_waits_around(round + 7, p.get(), &bad); });
      side_thread opener([&] {
        std::this_thread::sleep_for(spread(round, 100, 1500));
        open_up(*p);
      });
      EXPECT_EQ(sched.run(fork_n<decltype(&wait_around<P>), P *, std::atomic<int> *>, n,
                          &wait_around<P>, p.get(), &bad),
                n);
    }
    EXPECT_EQ(bad.load(), 0);
    EXPECT_EQ(p->waiting(), 0u);
  }
  EXPECT_EQ(pending_timers(), 0u);
}

TEST_P(event_timed_test, a_manual_set_racing_deadlines_releases_or_times_out_everyone) {
  opening_races_deadlines<event>(m_sched);
}

TEST_P(event_timed_test, a_latch_opening_as_deadlines_expire_releases_or_times_out_everyone) {
  opening_races_deadlines<magpie::latch>(m_sched);
}

TEST_P(event_timed_test, destroying_the_event_while_deadlines_expire_ends_every_wait_once) {
  destroyed_as_deadlines_expire<event>(m_sched);
}

TEST_P(event_timed_test, destroying_a_latch_while_deadlines_expire_ends_every_wait_once) {
  destroyed_as_deadlines_expire<magpie::latch>(m_sched);
}

TEST_P(event_timed_test, a_counter_reaching_zero_as_deadlines_expire_releases_or_times_out_all) {
  opening_races_deadlines<magpie::counter>(m_sched);
}

TEST_P(event_timed_test, destroying_a_counter_while_deadlines_expire_ends_every_wait_once) {
  destroyed_as_deadlines_expire<magpie::counter>(m_sched, false); // threads may not wait then
}

TEST_P(event_timed_test, a_counter_wait_for_times_out_then_passes_at_zero_and_again_once_rearmed) {
  magpie::counter count(2);
  std::atomic<int> stage{0};
  side_thread counter([&] {
    ASSERT_TRUE(wait_until([&] { return count.waiting() == 1; }));
    count.count_down();
    std::this_thread::sleep_for(10ms); // the first wait times out meanwhile
    count.count_down();
    ASSERT_TRUE(wait_until([&] { return stage.load() == 1 && count.waiting() == 1; }));
    count.count_down(); // the re-armed count
  });
  auto body = [](magpie::counter *c, std::atomic<int> *st) -> task<int> {
    auto const start = clock::now();
    bool const first = co_await c->wait_for(3ms); // count 2 → 1: not yet
    bool const early = clock::now() - start < 3ms;
    bool second = false;
    for (int k = 0; k < 1000 && !second; ++k) {
      second = co_await c->wait_until(clock::now() + 20ms);
    }
    bool const third = co_await c->wait_for(0s); // zero: passes without time
    c->add(1);                                   // re-armed: later waits wait again
    bool const fourth = co_await c->wait_for(0s);
    st->store(1);
    bool fifth = false;
    for (int k = 0; k < 1000 && !fifth; ++k) {
      fifth = co_await c->wait_for(20ms);
    }
    co_return (first ? 0 : 1) + (early ? 0 : 2) + (second ? 4 : 0) + (third ? 8 : 0) +
        (fourth ? 0 : 16) + (fifth ? 32 : 0);
  };
  EXPECT_EQ(m_sched.run(body, &count, &stage), 63);
  EXPECT_EQ(count.value(), 0u);
  EXPECT_EQ(pending_timers(), 0u);
}

/// A timed wait on `p` inside an unjoined fork–join scope: true if it threw std::logic_error
/// (nothing queued) and the scope's child still joined with its result.
template <typename P>
task<bool> timed_wait_in_a_scope(P *p) {
  long r = 0;
  co_await magpie::fork(&r, fib, 5);
  bool threw = false;
  try {
    bool const b = co_await p->wait_for(1ms);
    static_cast<void>(b);
  } catch (std::logic_error const &) {
    threw = true;
  }
  co_await magpie::join();
  co_return threw &&r == serial_fib(5);
}

TEST_P(event_timed_test, a_counter_timed_wait_inside_a_fork_join_scope_throws) {
  magpie::counter count(1);
  EXPECT_TRUE(m_sched.run(&timed_wait_in_a_scope<magpie::counter>, &count));
  EXPECT_EQ(count.waiting(), 0u);
}

/// A child of a group that waits for `go`, then throws.
task<void> throw_when(event *go, int tag) {
  co_await go->wait();
  throw std::runtime_error("child " + std::to_string(tag));
}

TEST_P(event_timed_test, a_group_wait_for_that_runs_out_keeps_the_exception_for_a_later_wait) {
  if (m_sched.is_inline()) {
    GTEST_SKIP() << "task_group g; needs a pool (the inline scheduler has none)";
  }
  auto body = []() -> task<int> {
    magpie::task_group g; // the task's own pool
    event go;
    g.spawn(throw_when, &go, 1);
    g.spawn(throw_when, &go, 2);
    bool const first = co_await g.wait_for(2ms); // both children wait for `go`
    std::size_t const left = g.unfinished();
    go.set();
    int caught = 0;
    bool done = false;
    for (int k = 0; k < 1000 && !done; ++k) {
      try {
        done = co_await g.wait_for(20ms);
      } catch (std::runtime_error const &) {
        ++caught;
        done = true;
      }
    }
    bool const again = co_await g.wait_for(0s); // the exception was taken: nothing rethrown
    co_return (first ? 0 : 1) + (left == 2 ? 2 : 0) + (caught == 1 ? 4 : 0) + (again ? 8 : 0) +
        (g.dropped_exceptions() == 1 ? 16 : 0);
  };
  EXPECT_EQ(m_sched.run(body), 31);
  EXPECT_EQ(pending_timers(), 0u);
}

/// A child of a group that sleeps a while (a timer: it does not hold its worker), then throws if
/// it is the chosen one.
task<void> sleep_then_maybe_throw(int i, int thrower) {
  co_await magpie::io::sleep_for(spread(i, 0, 800));
  if (i == thrower) {
    throw std::runtime_error("the one");
  }
}

/// Waits on `g` with short deadlines until every child finished: counts the timeouts, checks
/// that a pass is never early, and counts the exception if this wait is the one that rethrows it.
task<long> wait_out_group(int i, magpie::task_group *g, std::atomic<int> *caught,
                          std::atomic<int> *bad, std::atomic<int> *timeouts) {
  for (int k = 0;; ++k) {
    try {
      bool const done = co_await g->wait_for(spread(i * 31 + k, 0, 200));
      if (!done) {
        timeouts->fetch_add(1);
        continue;
      }
    } catch (std::runtime_error const &) {
      caught->fetch_add(1);
    }
    if (g->unfinished() != 0) {
      bad->fetch_add(1); // passed with children unfinished
    }
    co_return 1;
  }
}

TEST_P(event_timed_test, of_many_timed_waiters_racing_the_last_child_exactly_one_rethrows) {
  if (m_sched.is_inline()) {
    GTEST_SKIP() << "a task_group needs a pool (the inline scheduler has none)";
  }
  int const children = scaled(24, 8);
  int const waiters = scaled(8, 4);
  std::atomic<int> timeouts{0};
  for (int round = 0; round < scaled(20, 4); ++round) {
    magpie::task_group g(*m_sched.pool());
    std::atomic<int> caught{0};
    std::atomic<int> bad{0};
    for (int i = 0; i < children; ++i) {
      g.spawn(sleep_then_maybe_throw, i + round * children, round * children + round % children);
    }
    {
      side_thread t([&] { // a plain thread among the waiters
        for (int k = 0;; ++k) {
          try {
            if (!g.wait_blocking_for(spread(round + k, 0, 300))) {
              timeouts.fetch_add(1);
              continue;
            }
          } catch (std::runtime_error const &) {
            caught.fetch_add(1);
          }
          if (g.unfinished() != 0) {
            bad.fetch_add(1);
          }
          return;
        }
      });
      EXPECT_EQ(m_sched.run(fork_n<decltype(&wait_out_group), magpie::task_group *,
                                   std::atomic<int> *, std::atomic<int> *, std::atomic<int> *>,
                            waiters, &wait_out_group, &g, &caught, &bad, &timeouts),
                waiters);
    }
    EXPECT_EQ(caught.load(), 1) << "round " << round;
    EXPECT_EQ(bad.load(), 0) << "round " << round;
  }
  EXPECT_EQ(pending_timers(), 0u);
  std::printf("[ info ] %d timed waits ran out before the last child\n", timeouts.load());
}

TEST_P(event_timed_test, a_timed_wait_inside_a_fork_join_scope_throws) {
  event ev;
  EXPECT_TRUE(m_sched.run(&timed_wait_in_a_scope<event>, &ev));
  EXPECT_EQ(ev.waiting(), 0u);
}

task<long> timed_or_untimed(int i, event *ev, std::atomic<int> *passed) {
  bool ok = true;
  if (i % 2 == 0) {
    co_await ev->wait();
  } else {
    ok = co_await ev->wait_for(60s);
  }
  passed->fetch_add(ok ? 1 : 0);
  co_return 1;
}

TEST_P(event_timed_test, timed_and_untimed_waiters_share_the_queue_in_order) {
  // Auto-reset: one set() per waiter releases all of them, whichever kind; the timed ones' long
  // deadlines are cancelled.
  event ev(event::reset::automatic);
  std::atomic<int> passed{0};
  int const n = scaled(40, 10);
  side_thread setter([&] {
    ASSERT_TRUE(wait_until([&] { return ev.waiting() == static_cast<std::size_t>(n); }));
    for (int i = 0; i < n; ++i) {
      ev.set();
      ASSERT_TRUE(wait_until([&] { return passed.load() == i + 1; }));
    }
  });
  EXPECT_EQ(m_sched.run(fork_n<decltype(&timed_or_untimed), event *, std::atomic<int> *>, n,
                        &timed_or_untimed, &ev, &passed),
            n);
  EXPECT_EQ(passed.load(), n);
  EXPECT_EQ(pending_timers(), 0u);
}

TEST_P(event_timed_test, a_latch_wait_for_times_out_then_passes_once_counted_down) {
  magpie::latch done(2);
  side_thread counter([&] {
    ASSERT_TRUE(wait_until([&] { return done.waiting() == 1; }));
    done.count_down();
    std::this_thread::sleep_for(10ms); // the first wait times out meanwhile
    done.count_down();
  });
  auto body = [](magpie::latch *l) -> task<int> {
    bool const first = co_await l->wait_for(3ms); // count 2 → 1: not yet
    bool second = false;
    for (int k = 0; k < 1000 && !second; ++k) {
      second = co_await l->wait_until(clock::now() + 20ms);
    }
    bool const third = co_await l->wait_for(0s); // open: passes without time
    co_return (first ? 0 : 1) + (second ? 2 : 0) + (third ? 4 : 0);
  };
  EXPECT_EQ(m_sched.run(body, &done), 7);
  EXPECT_EQ(pending_timers(), 0u);
}

INSTANTIATE_TEST_SUITE_P(every_scheduler, event_timed_test, ::testing::ValuesIn(all_schedulers()),
                         sched_name{});

TEST(event_timed_lifetime, a_pool_destroyed_while_a_timed_wait_is_pending_waits_for_it) {
  watchdog dog(current_test_name());
  event ev;
  std::atomic<int> result{-1};
  auto const start = clock::now();
  {
    magpie::lazy_pool pool(2);
    auto f = magpie::spawn(
        pool,
        [](event *e, std::atomic<int> *r) -> task<void> {
          bool const passed = co_await e->wait_for(30ms);
          r->store(passed ? 1 : 0);
        },
        &ev, &result);
    (void)f; // detached when it goes out of scope, before the pool
  }
  EXPECT_EQ(result.load(), 0) << "the pool's destructor returned before the timed wait ended";
  EXPECT_GE(clock::now() - start, 30ms);
  EXPECT_EQ(pending_timers(), 0u);
}

} // namespace

namespace {

TEST(timed_wait_thread, an_event_wait_blocking_for_times_out_never_early_or_passes) {
  watchdog dog(current_test_name());
  event ev;
  auto const start = clock::now();
  EXPECT_FALSE(ev.wait_blocking_for(5ms));
  EXPECT_GE(clock::now() - start, 5ms);
  EXPECT_EQ(ev.waiting(), 0u);
  EXPECT_FALSE(ev.wait_blocking_for(0s));
  EXPECT_FALSE(ev.wait_blocking_until(std::chrono::system_clock::now() - 1s));
  {
    side_thread setter([&] {
      ASSERT_TRUE(wait_until([&] { return ev.waiting() == 1; }));
      ev.set();
    });
    EXPECT_TRUE(ev.wait_blocking_for(std::chrono::hours::max())); // saturates: no overflow
  }
  EXPECT_TRUE(ev.wait_blocking_for(0s)); // manual: stays set
  event automatic(event::reset::automatic, true);
  EXPECT_TRUE(automatic.wait_blocking_until(clock::now() - 1s)); // consumes the flag
  EXPECT_FALSE(automatic.wait_blocking_for(1ms));
}

TEST(timed_wait_thread, a_latch_wait_blocking_for_times_out_or_passes) {
  watchdog dog(current_test_name());
  magpie::latch l(1);
  EXPECT_FALSE(l.wait_blocking_for(2ms));
  side_thread counter([&] {
    ASSERT_TRUE(wait_until([&] { return l.waiting() == 1; }));
    l.count_down();
  });
  EXPECT_TRUE(l.wait_blocking_until(clock::now() + 60s));
  EXPECT_TRUE(l.wait_blocking_for(0s));
}

TEST(timed_wait_thread, a_counter_wait_blocking_for_times_out_never_early_or_passes) {
  watchdog dog(current_test_name());
  magpie::counter c(1);
  auto const start = clock::now();
  EXPECT_FALSE(c.wait_blocking_for(5ms));
  EXPECT_GE(clock::now() - start, 5ms);
  EXPECT_FALSE(c.wait_blocking_for(0s));
  EXPECT_FALSE(c.wait_blocking_until(std::chrono::system_clock::now() - 1s));
  {
    side_thread counter([&] {
      std::this_thread::sleep_for(2ms);
      c.count_down();
    });
    EXPECT_TRUE(c.wait_blocking_for(std::chrono::hours::max())); // saturates: no overflow
  }
  EXPECT_TRUE(c.wait_blocking_for(0s));
  EXPECT_TRUE(c.wait_blocking_until(clock::now() - 1s)); // zero now: passes without waiting
}

TEST(timed_wait_thread, a_group_wait_blocking_for_runs_out_then_rethrows_the_first_exception) {
  watchdog dog(current_test_name());
  magpie::lazy_pool pool(2);
  event go;
  magpie::task_group g(pool);
  g.spawn(throw_when, &go, 1);
  EXPECT_FALSE(g.wait_blocking_for(2ms));
  EXPECT_EQ(g.unfinished(), 1u);
  go.set();
  EXPECT_THROW((void)g.wait_blocking_until(clock::now() + 60s), std::runtime_error);
  EXPECT_TRUE(g.wait_blocking_for(0s)); // taken: nothing rethrown again
}

TEST(timed_wait_thread, counter_and_group_blocking_waits_are_refused_inside_a_task) {
  watchdog dog(current_test_name());
  magpie::lazy_pool pool(1);
  magpie::counter c(1);
  magpie::task_group g(pool);
  auto body = [](magpie::counter *cp, magpie::task_group *gp) -> task<int> {
    int refused = 0;
    try {
      (void)cp->wait_blocking_for(1ms);
    } catch (std::logic_error const &) {
      refused += 1;
    }
    try {
      (void)gp->wait_blocking_until(clock::now() + 1ms);
    } catch (std::logic_error const &) {
      refused += 2;
    }
    co_return refused;
  };
  EXPECT_EQ(magpie::sync_wait(pool, body, &c, &g), 3);
}

TEST(timed_wait_thread, auto_reset_sets_are_never_lost_to_thread_deadlines_nor_doubled) {
  // As the task version: plain threads with short deadlines; each set() must let exactly one
  // wait pass.
  watchdog dog(current_test_name());
  event ev(event::reset::automatic);
  std::atomic<int> passes{0};
  std::atomic<int> timeouts{0};
  int const sets = scaled(3000, 300);
  auto waiter = [&](int i) {
    for (int k = 0; passes.load() < sets; ++k) {
      if (ev.wait_blocking_for(spread(i * 131 + k, 0, 300))) {
        passes.fetch_add(1);
      } else {
        timeouts.fetch_add(1);
      }
    }
  };
  {
    side_thread a([&] { waiter(0); });
    side_thread b([&] { waiter(1); });
    side_thread c([&] { waiter(2); });
    for (int i = 0; i < sets; ++i) {
      ev.set();
      ASSERT_TRUE(wait_until([&] { return passes.load() >= i + 1; }))
          << "set() " << i << " was lost: no wait passed";
      ASSERT_EQ(passes.load(), i + 1) << "one set() let two waits pass";
    }
  }
  EXPECT_EQ(passes.load(), sets);
  EXPECT_FALSE(ev.is_set());
  EXPECT_EQ(ev.waiting(), 0u);
  std::printf("[ info ] %d sets, %d timeouts\n", sets, timeouts.load());
}

} // namespace
