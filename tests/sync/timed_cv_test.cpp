// magpie::condition_variable::wait_for / wait_until (tasks) and wait_blocking_for / _until
// (plain threads), Linux: a deadline that passes returns timeout, never early, holding the mutex
// again; a wait that times out while another holds the mutex waits for it (it never returns
// without it); a notify before the deadline returns no_timeout and cancels the timer; a past
// deadline neither suspends nor unlocks; the predicate forms (pred's last value; an exception
// from pred propagates with the mutex held); FIFO order across timed and untimed waiters, an
// expired waiter leaving the queue; the hunt — notifies racing deadlines on every scheduler, with
// exclusion checked and every ticket taken once; the condition variable destroyed while deadlines
// expire (each wait ends once, by its deadline or abandoned_wait, holding the mutex; nothing
// touched after free: ASan); misuse; the reactor's heaps empty after each.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex> // std::adopt_lock
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_support.hpp"
#include "magpie/io.hpp"
#include "sync/lock_support.hpp"
#include "sync/sync_support.hpp"
#include "sync/timed_support.hpp"

namespace {

using namespace magpie::test;
using namespace std::chrono_literals;
using magpie::condition_variable;
using magpie::mutex;
using magpie::task;
using magpie::io::clock;
using std::cv_status;

using timed_cv_test = scheduler_test;

TEST_P(timed_cv_test, a_deadline_returns_timeout_never_early_holding_the_mutex) {
  mutex m;
  condition_variable cv;
  auto body = [](mutex *mx, condition_variable *c) -> task<int> {
    auto g = co_await mx->scoped_lock();
    auto const start = clock::now();
    cv_status const s = co_await c->wait_for(g, 5ms);
    bool const late_enough = clock::now() - start >= 5ms;
    cv_status const s2 = co_await c->wait_until(g, clock::now() + 2ms);
    co_return (s == cv_status::timeout ? 1 : 0) + (late_enough ? 2 : 0) +
        (s2 == cv_status::timeout ? 4 : 0) + (g.owns_lock() && mx->is_locked() ? 8 : 0);
  };
  EXPECT_EQ(m_sched.run(body, &m, &cv), 15);
  EXPECT_FALSE(m.is_locked());
  EXPECT_EQ(cv.waiting(), 0u);
  EXPECT_EQ(pending_timers(), 0u);
}

TEST_P(timed_cv_test, a_notify_before_the_deadline_returns_no_timeout_and_cancels_the_timer) {
  mutex m;
  condition_variable cv;
  bool ready = false; // guarded by m
  side_thread notifier([&] {
    ASSERT_TRUE(wait_until([&] { return cv.waiting() == 1; }));
    auto g = m.scoped_lock_blocking();
    ready = true;
    cv.notify_one();
  });
  auto body = [](mutex *mx, condition_variable *c, bool *r) -> task<int> {
    auto g = co_await mx->scoped_lock();
    cv_status const s = co_await c->wait_for(g, std::chrono::hours::max()); // saturates
    co_return (s == cv_status::no_timeout ? 1 : 0) + (*r ? 2 : 0) +
        (g.owns_lock() && mx->is_locked() ? 4 : 0);
  };
  EXPECT_EQ(m_sched.run(body, &m, &cv, &ready), 7);
  EXPECT_FALSE(m.is_locked());
  EXPECT_EQ(pending_timers(), 0u); // the notify cancelled the timer
}

TEST_P(timed_cv_test, a_past_deadline_neither_suspends_nor_unlocks) {
  mutex m;
  condition_variable cv;
  auto body = [](mutex *mx, condition_variable *c) -> task<int> {
    auto g = co_await mx->scoped_lock();
    int ok = 0;
    cv_status const a = co_await c->wait_for(g, 0s);
    ok += a == cv_status::timeout ? 1 : 0;
    cv_status const b = co_await c->wait_for(g, -5ms);
    ok += b == cv_status::timeout ? 1 : 0;
    cv_status const d = co_await c->wait_until(g, clock::now() - 1s);
    ok += d == cv_status::timeout ? 1 : 0;
    // Not unlocked meanwhile: a try_lock from here still fails.
    ok += !mx->try_lock() ? 1 : 0;
    // The predicate form with a past deadline evaluates pred once more.
    int calls = 0;
    bool const p = co_await c->wait_for(g, 0s, [&] {
      ++calls;
      return false;
    });
    ok += !p && calls == 2 ? 1 : 0;
    co_return ok + (c->waiting() == 0 ? 1 : 0);
  };
  EXPECT_EQ(m_sched.run(body, &m, &cv), 6);
  EXPECT_EQ(pending_timers(), 0u);
}

TEST_P(timed_cv_test, a_timeout_waits_for_the_mutex_held_by_another) {
  // The task's deadline (50 ms) passes while a thread holds the mutex: its wait returns only
  // once the thread unlocks (a timed-out wait holds the mutex when it returns).
  mutex m;
  condition_variable cv;
  std::atomic<bool> unlocked{false};
  side_thread holder([&] {
    ASSERT_TRUE(wait_until([&] { return cv.waiting() == 1; }));
    m.lock_blocking();
    ASSERT_TRUE(wait_until([&] { return m.waiting() == 1; })) // the timed-out task, queued
        << "the task never queued for the mutex";
    std::this_thread::sleep_for(2ms);
    unlocked.store(true);
    m.unlock();
  });
  auto body = [](mutex *mx, condition_variable *c, std::atomic<bool> *u) -> task<int> {
    auto g = co_await mx->scoped_lock();
    cv_status const s = co_await c->wait_for(g, 50ms);
    co_return (s == cv_status::timeout ? 1 : 0) + (u->load() ? 2 : 0) +
        (g.owns_lock() && mx->is_locked() ? 4 : 0);
  };
  EXPECT_EQ(m_sched.run(body, &m, &cv, &unlocked), 7);
  EXPECT_FALSE(m.is_locked());
  EXPECT_EQ(pending_timers(), 0u);
}

TEST_P(timed_cv_test, the_predicate_forms_return_its_last_value) {
  mutex m;
  condition_variable cv;
  int state = 0; // guarded by m
  side_thread setter([&] {
    ASSERT_TRUE(wait_until([&] { return cv.waiting() == 1; }));
    {
      auto g = m.scoped_lock_blocking();
      state = 1; // not yet what the waiter wants: it waits again
    }
    cv.notify_one();
    ASSERT_TRUE(wait_until([&] { return cv.waiting() == 1; }));
    {
      auto g = m.scoped_lock_blocking();
      state = 2;
    }
    cv.notify_all();
  });
  auto body = [](mutex *mx, condition_variable *c, int *st) -> task<int> {
    auto g = co_await mx->scoped_lock();
    int ok = 0;
    bool const got = co_await c->wait_for(g, 60s, [st] { return *st == 2; });
    ok += got ? 1 : 0;
    auto const start = clock::now();
    bool const never = co_await c->wait_until(g, clock::now() + 3ms, [st] { return *st == 3; });
    ok += !never && clock::now() - start >= 3ms ? 2 : 0;
    try {
      bool const b = co_await c->wait_for(g, 60s, []() -> bool { throw std::runtime_error("p"); });
      static_cast<void>(b);
    } catch (std::runtime_error const &) {
      ok += g.owns_lock() && mx->is_locked() ? 4 : 0;
    }
    co_return ok;
  };
  EXPECT_EQ(m_sched.run(body, &m, &cv, &state), 7);
  EXPECT_FALSE(m.is_locked());
  EXPECT_EQ(pending_timers(), 0u);
}

// The hunt: consumers wait with short deadlines (spread, so that many expire while the producer
// notifies), half of them locking the mutex with a deadline too; each ticket the producer publishes
// under the mutex is taken exactly once, under exclusion, and every wait ends.
struct ticket_state {
  mutex m;
  condition_variable cv;
  long tickets = 0; // published, not yet taken (guarded by m)
  long taken = 0;   // guarded by m
  long total = 0;
  critical_state s;
  std::atomic<long> timeouts{0};
  std::atomic<long> notified{0};
};

task<long> take_tickets(int i, ticket_state *st) {
  long mine = 0;
  for (int round = 0;; ++round) {
    // Odd consumers lock with a (long) deadline: the mutex's queue then holds timed waiters
    // beside the waiters the condition variable moves there.
    magpie::unique_guard<mutex> g;
    if (i % 2 == 1) {
      bool const locked = co_await st->m.try_lock_for(60s);
      if (!locked) {
        co_return -1'000'000; // never: nobody holds the mutex that long
      }
      g = magpie::unique_guard<mutex>(st->m, std::adopt_lock);
    } else {
      g = co_await st->m.scoped_lock();
    }
    while (st->tickets == 0 && st->taken < st->total) {
      cv_status const s = co_await st->cv.wait_for(g, spread(i * 31 + round, 20, 400));
      (s == cv_status::timeout ? st->timeouts : st->notified).fetch_add(1);
    }
    st->s.enter();
    bool const done = st->taken == st->total;
    if (!done) {
      --st->tickets;
      ++st->taken;
      ++mine;
    }
    st->s.leave();
    if (done) {
      co_return mine;
    }
  }
}

void publish_tickets(ticket_state *st, bool all) {
  for (long k = 0; k < st->total; ++k) {
    {
      auto g = st->m.scoped_lock_blocking();
      st->s.enter();
      ++st->tickets;
      st->s.leave();
    }
    if (all || k + 1 == st->total) {
      st->cv.notify_all(); // the last one wakes every consumer to see the end
    } else {
      st->cv.notify_one();
    }
    if (k % 16 == 0) {
      std::this_thread::sleep_for(spread(static_cast<int>(k), 0, 200));
    }
  }
}

TEST_P(timed_cv_test, notifies_racing_deadlines_lose_no_ticket_and_keep_exclusion) {
  for (bool const all : {false, true}) {
    ticket_state st;
    st.total = scaled(3000, 400);
    int const consumers = 6;
    long taken_by_tasks = 0;
    {
      side_thread producer([&] { publish_tickets(&st, all); });
      taken_by_tasks = m_sched.run(fork_n<decltype(&take_tickets), ticket_state *>, consumers,
                                   &take_tickets, &st);
    }
    EXPECT_EQ(taken_by_tasks, st.total);
    EXPECT_EQ(st.taken, st.total);
    EXPECT_EQ(st.tickets, 0);
    EXPECT_EQ(st.s.overlaps.load(), 0);
    EXPECT_FALSE(st.m.is_locked());
    EXPECT_EQ(st.cv.waiting(), 0u);
    std::printf("[ info ] notify_%s: %ld waits timed out, %ld notified\n", all ? "all" : "one",
                st.timeouts.load(), st.notified.load());
  }
  EXPECT_EQ(pending_timers(), 0u);
}

// The condition variable destroyed while its timed waiters' deadlines expire (tasks and two
// threads): each wait ends exactly once, by its deadline (timeout) or by the destructor
// (abandoned_wait), holding the mutex either way; nothing touches the condition variable after it
// is gone (ASan).
task<long> wait_doomed(int i, mutex *m, condition_variable *cv, std::atomic<int> *abandoned,
                       std::atomic<int> *timed_out) {
  auto g = co_await m->scoped_lock();
  try {
    cv_status const s = co_await cv->wait_for(g, spread(i, 300, 1500));
    EXPECT_EQ(s, cv_status::timeout) << "nobody notifies";
    timed_out->fetch_add(1);
  } catch (magpie::abandoned_wait const &) {
    abandoned->fetch_add(1);
  }
  co_return g.owns_lock() && m->is_locked() ? 1 : 100;
}

void thread_waits_doomed(int i, mutex *m, condition_variable *cv, std::atomic<int> *abandoned,
                         std::atomic<int> *timed_out) {
  auto g = m->scoped_lock_blocking();
  try {
    EXPECT_EQ(cv->wait_blocking_for(g, spread(i, 300, 1500)), cv_status::timeout);
    timed_out->fetch_add(1);
  } catch (magpie::abandoned_wait const &) {
    abandoned->fetch_add(1);
  }
  EXPECT_TRUE(g.owns_lock() && m->is_locked());
}

TEST_P(timed_cv_test, destroyed_while_deadlines_expire_every_wait_ends_once_holding_the_mutex) {
  int const n = scaled(32, 8);
  int const threads = 2;
  int total_abandoned = 0;
  for (int round = 0; round < scaled(30, 6); ++round) {
    mutex m; // outlives the condition variable's waiters
    auto cv = std::make_unique<condition_variable>();
    std::atomic<int> abandoned{0};
    std::atomic<int> timed_out{0};
    {
      side_thread t0([&] { thread_waits_doomed(round, &m, cv.get(), &abandoned, &timed_out); });
      side_thread t1([&] { thread_waits_doomed(round + 3, &m, cv.get(), &abandoned, &timed_out); });
      side_thread destroyer([&] {
        // Only once every waiter is queued or done (read the count of those done first: see
        // timed_support.hpp); a waiter that timed out counts itself while it holds the mutex,
        // after it left the queue.
        ASSERT_TRUE(wait_until([&] {
          int const done = timed_out.load();
          return static_cast<int>(cv->waiting()) + done == n + threads;
        }));
        std::this_thread::sleep_for(spread(round, 0, 1200));
        cv.reset();
      });
      EXPECT_EQ(m_sched.run(fork_n<decltype(&wait_doomed), mutex *, condition_variable *,
                                   std::atomic<int> *, std::atomic<int> *>,
                            n, &wait_doomed, &m, cv.get(), &abandoned, &timed_out),
                n);
    }
    EXPECT_EQ(abandoned.load() + timed_out.load(), n + threads);
    EXPECT_FALSE(m.is_locked());
    total_abandoned += abandoned.load();
  }
  EXPECT_EQ(pending_timers(), 0u);
  std::printf("[ info ] %d waits abandoned, the others timed out\n", total_abandoned);
}

TEST_P(timed_cv_test, misuse_is_refused) {
  mutex m;
  condition_variable cv;
  auto body = [](mutex *mx, condition_variable *c) -> task<int> {
    auto g = co_await mx->scoped_lock();
    int refused = 0;
    // A blocking form on a worker would block it.
    try {
      (void)c->wait_blocking_for(g, 1ms);
    } catch (std::logic_error const &) {
      ++refused;
    }
    try {
      (void)c->wait_blocking_until(g, clock::now() + 1ms, [] { return false; });
    } catch (std::logic_error const &) {
      ++refused;
    }
    // A timed wait inside an unjoined fork-join scope.
    long r = 0;
    co_await magpie::fork(&r, fib, 5);
    try {
      cv_status const s = co_await c->wait_for(g, 1ms);
      static_cast<void>(s);
    } catch (std::logic_error const &) {
      ++refused;
    }
    try {
      bool const b = co_await c->wait_for(g, 1ms, [] { return false; });
      static_cast<void>(b);
    } catch (std::logic_error const &) {
      ++refused;
    }
    co_await magpie::join();
    co_return r == serial_fib(5) && g.owns_lock() && mx->is_locked() ? refused : -1;
  };
  EXPECT_EQ(m_sched.run(body, &m, &cv), 4);
  EXPECT_FALSE(m.is_locked());
  EXPECT_EQ(cv.waiting(), 0u);
  EXPECT_EQ(pending_timers(), 0u);
}

INSTANTIATE_TEST_SUITE_P(every_scheduler, timed_cv_test, ::testing::ValuesIn(all_schedulers()),
                         sched_name{});

TEST(timed_cv_order, timed_and_untimed_waiters_keep_fifo_order_and_expired_ones_leave_it) {
  // A (untimed), B (deadline far), C (deadline 300 ms) and D (untimed) queue in that order. C
  // times out and leaves; notify_one then wakes A, and notify_all B and D, in that order.
  watchdog dog(current_test_name());
  magpie::lazy_pool pool(handoff_options(1)); // roots run on the one worker
  mutex m;
  condition_variable cv; // destroyed first: a failed assertion below releases the tasks
  order_log log;
  auto waiter = [](mutex *mx, condition_variable *c, order_log *lg, int tag,
                   std::chrono::milliseconds d) -> task<int> {
    auto g = co_await mx->scoped_lock();
    cv_status s = cv_status::no_timeout;
    if (d == 0ms) {
      co_await c->wait(g);
    } else {
      s = co_await c->wait_for(g, d);
    }
    lg->add(tag);
    co_return s == cv_status::timeout ? 1 : 0;
  };
  std::vector<magpie::future<int>> fs;
  std::chrono::milliseconds const deadlines[] = {0ms, 60000ms, 300ms, 0ms};
  for (int tag = 0; tag < 4; ++tag) {
    fs.push_back(magpie::spawn(pool, waiter, &m, &cv, &log, tag, deadlines[tag]));
    ASSERT_TRUE(wait_until([&] { return cv.waiting() == static_cast<std::size_t>(tag) + 1; }))
        << "C timed out before D queued: the test's window was too short";
  }
  EXPECT_EQ(fs[2].get(), 1); // C timed out: the others still wait
  EXPECT_EQ(cv.waiting(), 3u);
  cv.notify_one();
  EXPECT_EQ(fs[0].get(), 0);
  EXPECT_EQ(cv.waiting(), 2u);
  cv.notify_all();
  EXPECT_EQ(fs[1].get(), 0);
  EXPECT_EQ(fs[3].get(), 0);
  EXPECT_EQ(log.order, (std::vector<int>{2, 0, 1, 3}));
  EXPECT_FALSE(m.is_locked());
  EXPECT_EQ(pending_timers(), 0u);
}

TEST(timed_cv_order, a_waiter_moved_to_the_mutex_keeps_its_place_before_later_timed_lockers) {
  // A waits on the condition variable with a deadline and is moved to the mutex (held by this
  // thread) — by a notify, or by its deadline; then B queues for the mutex with a deadline. The
  // unlock goes to A first: a moved waiter is an untimed mutex waiter, whatever its cv wait was.
  watchdog dog(current_test_name());
  magpie::lazy_pool pool(handoff_options(1)); // roots run on the one worker
  mutex m;
  condition_variable cv;
  for (bool const by_deadline : {false, true}) {
    order_log log;
    auto a = magpie::spawn(
        pool,
        [](mutex *mx, condition_variable *c, order_log *lg, bool short_deadline) -> task<int> {
          auto g = co_await mx->scoped_lock();
          cv_status const s = co_await c->wait_for(g, short_deadline ? 20ms : 60000ms);
          lg->add(1);
          co_return s == cv_status::timeout ? 1 : 0;
        },
        &m, &cv, &log, by_deadline);
    ASSERT_TRUE(wait_until([&] { return cv.waiting() == 1; }));
    m.lock_blocking();
    if (!by_deadline) {
      cv.notify_one();
    }
    ASSERT_TRUE(wait_until([&] { return m.waiting() == 1; })); // A, moved to the mutex
    auto b = magpie::spawn(
        pool,
        [](mutex *mx, order_log *lg) -> task<int> {
          bool const locked = co_await mx->try_lock_for(60s);
          lg->add(2);
          if (locked) {
            mx->unlock();
          }
          co_return locked ? 1 : 0;
        },
        &m, &log);
    ASSERT_TRUE(wait_until([&] { return m.waiting() == 2; }));
    m.unlock();
    EXPECT_EQ(a.get(), by_deadline ? 1 : 0);
    EXPECT_EQ(b.get(), 1);
    EXPECT_EQ(log.order, (std::vector<int>{1, 2})) << (by_deadline ? "by deadline" : "by notify");
  }
  EXPECT_FALSE(m.is_locked());
  EXPECT_EQ(pending_timers(), 0u);
}

TEST(timed_cv_thread, a_thread_times_out_holding_the_mutex_or_is_notified) {
  mutex m;
  condition_variable cv;
  {
    auto g = m.scoped_lock_blocking();
    auto const start = clock::now();
    EXPECT_EQ(cv.wait_blocking_for(g, 3ms), cv_status::timeout);
    EXPECT_GE(clock::now() - start, 3ms);
    EXPECT_TRUE(g.owns_lock() && m.is_locked());
    EXPECT_EQ(cv.wait_blocking_until(g, clock::now() - 1s), cv_status::timeout); // no wait
    EXPECT_FALSE(cv.wait_blocking_for(g, 1ms, [] { return false; }));
    EXPECT_EQ(cv.waiting(), 0u);
  }
  bool ready = false;                         // guarded by m
  magpie::lazy_pool pool(handoff_options(1)); // roots run on the one worker
  {
    auto g = m.scoped_lock_blocking();
    auto f = magpie::spawn(
        pool,
        [](mutex *mx, condition_variable *c, bool *r) -> task<void> {
          auto lk = co_await mx->scoped_lock();
          *r = true;
          c->notify_one();
        },
        &m, &cv, &ready);
    EXPECT_TRUE(cv.wait_blocking_for(g, 60s, [&] { return ready; }));
    EXPECT_TRUE(g.owns_lock() && m.is_locked());
    g.unlock();
    f.get();
  }
  // A thread that times out while a task holds the mutex waits for it.
  std::atomic<bool> unlocked{false};
  auto g = m.scoped_lock_blocking();
  auto holder = magpie::spawn(
      pool,
      [](mutex *mx, condition_variable *c, std::atomic<bool> *u) -> task<void> {
        while (c->waiting() == 0) {
          co_await magpie::io::sleep_for(100us);
        }
        co_await mx->lock();
        // The thread's deadline passes meanwhile: it queues for the mutex.
        while (mx->waiting() == 0) {
          co_await magpie::io::sleep_for(100us);
        }
        u->store(true);
        mx->unlock();
      },
      &m, &cv, &unlocked);
  EXPECT_EQ(cv.wait_blocking_for(g, 50ms), cv_status::timeout);
  EXPECT_TRUE(unlocked.load());
  EXPECT_TRUE(g.owns_lock() && m.is_locked());
  g.unlock();
  holder.get();
  EXPECT_EQ(pending_timers(), 0u);
}

} // namespace
