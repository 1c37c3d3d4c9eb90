// magpie::future::await_for / await_until (tasks, Linux): a deadline that passes returns
// timeout, never early, and leaves the future to be read later; a result before the deadline
// returns ready and cancels the timer; a ready future or a past deadline does not suspend; the
// completion/deadline hunt on every scheduler (each wait ends once, never early, every value read
// once, waits repeated on one future); deadlines of 1-3 µs on futures that do not complete (a
// timeout lost in the arm-to-queue window would leave a task asleep: bites a withdraw that gives
// up on a word still pending); exceptions wait to be read; no helping; an empty future; a
// fork-join scope; threads and tasks taking turns on one future; a pool destroyed while a timed
// wait is pending; the blocking wait refused on a worker; and the reactor's heaps empty again.

#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "common/test_support.hpp"
#include "magpie/io.hpp"
#include "sync/sync_support.hpp"
#include "sync/timed_support.hpp"

namespace {

using namespace magpie::test;
using namespace std::chrono_literals;
using magpie::event;
using magpie::task;
using magpie::io::clock;
using std::future_status;

/// A spawned task that returns `v` once `go` is set.
task<long> value_when_set(event *go, long v) {
  co_await go->wait();
  co_return v;
}

/// A spawned task that returns `v` after sleeping `d`.
task<long> value_after(std::chrono::microseconds d, long v) {
  co_await magpie::io::sleep_for(d);
  co_return v;
}

using future_timed_test = scheduler_test;

TEST_P(future_timed_test, a_deadline_that_passes_returns_timeout_never_early_and_keeps_the_future) {
  spawn_target t(m_sched);
  event go;
  auto body = [](magpie::pool *p, event *e) -> task<long> {
    magpie::future<long> f = magpie::spawn(*p, value_when_set, e, 42L);
    auto const start = clock::now();
    future_status const s = co_await f.await_for(5ms);
    bool const on_time = clock::now() - start >= 5ms;
    if (s != future_status::timeout || !on_time || !f.valid() || f.is_ready()) {
      co_return -1;
    }
    e->set();
    co_return co_await f; // still readable after the timeout
  };
  EXPECT_EQ(m_sched.run(body, t.m_pool, &go), 42);
  EXPECT_EQ(pending_timers(), 0u);
}

TEST_P(future_timed_test, a_result_before_the_deadline_returns_ready_and_cancels_the_timer) {
  spawn_target t(m_sched);
  auto body = [](magpie::pool *p) -> task<long> {
    magpie::future<long> f = magpie::spawn(*p, value_after, 2000us, 7L);
    auto const start = clock::now();
    future_status const s = co_await f.await_until(clock::now() + 60s);
    if (s != future_status::ready || clock::now() - start > 30s || !f.is_ready()) {
      co_return -1;
    }
    co_return co_await f;
  };
  EXPECT_EQ(m_sched.run(body, t.m_pool), 7);
  EXPECT_EQ(pending_timers(), 0u) << "the 60 s deadline was left armed";
}

TEST_P(future_timed_test, a_ready_future_or_a_past_deadline_does_not_suspend) {
  spawn_target t(m_sched);
  event go;
  auto body = [](magpie::pool *p, event *e) -> task<int> {
    magpie::future<long> ready = magpie::spawn(*p, value_after, 0us, 3L);
    while (!ready.is_ready()) {
      co_await magpie::io::sleep_for(100us);
    }
    int score = 0;
    // Ready wins over a deadline already reached (as std::future::wait_for(0s)).
    future_status const a = co_await ready.await_for(0s);
    future_status const b = co_await ready.await_until(clock::now() - 1h);
    score += a == future_status::ready && b == future_status::ready ? 1 : 0;
    magpie::future<long> later = magpie::spawn(*p, value_when_set, e, 4L);
    auto const start = clock::now();
    future_status const c = co_await later.await_for(-5ms);
    future_status const d = co_await later.await_until(std::chrono::system_clock::now() - 1s);
    score += c == future_status::timeout && d == future_status::timeout ? 2 : 0;
    score += clock::now() - start < 1s ? 4 : 0;
    e->set();
    long const sum = co_await ready + co_await later;
    score += sum == 7 ? 8 : 0;
    co_return score;
  };
  EXPECT_EQ(m_sched.run(body, t.m_pool, &go), 15);
  EXPECT_EQ(pending_timers(), 0u);
}

/// Waits for the future of a task that finishes around its deadline, again and again on
/// timeout, then reads it: the value must arrive exactly once, whatever the race.
task<long> wait_until_ready(int i, magpie::pool *p, std::atomic<int> *timeouts,
                            std::atomic<int> *bad) {
  magpie::future<long> f = magpie::spawn(*p, value_after, spread(i, 0, 400), long{i});
  for (int k = 0;; ++k) { // the task ends within 400 µs: the loop ends
    auto const d = spread(i + k, 0, 300);
    auto const start = clock::now();
    future_status const s = co_await f.await_for(d);
    if (s == future_status::ready) {
      break;
    }
    if (clock::now() - start < d) {
      bad->fetch_add(1); // timed out early
    }
    timeouts->fetch_add(1);
  }
  if (!f.is_ready()) {
    bad->fetch_add(1); // "ready" while not
  }
  long const v = co_await f;
  co_return v == i ? 1 : 0;
}

TEST_P(future_timed_test, completions_racing_deadlines_end_every_wait_once) {
  spawn_target t(m_sched);
  int const n = scaled(48, 12);
  std::atomic<int> timeouts{0};
  std::atomic<int> bad{0};
  for (int round = 0; round < scaled(100, 10); ++round) {
    EXPECT_EQ(m_sched.run(fork_n<decltype(&wait_until_ready), magpie::pool *, std::atomic<int> *,
                                 std::atomic<int> *>,
                          n, &wait_until_ready, t.m_pool, &timeouts, &bad),
              n);
  }
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(pending_timers(), 0u);
  std::printf("[ info ] %d timeouts\n", timeouts.load());
}

/// Waits `waits` times with deadlines of 1–3 µs for a future that does not complete meanwhile
/// (its task waits for `go`), then lets it detach; returns the waits that timed out. Deadlines
/// this short often pass before the wait has queued (the reactor then waits out the arm-to-queue
/// window; a timeout lost there would leave this task asleep until `go`).
task<long> time_out_again_and_again(int i, magpie::pool *p, event *go, int waits,
                                    std::atomic<int> *finished) {
  magpie::future<long> f = magpie::spawn(*p, value_when_set, go, 0L);
  long timeouts = 0;
  for (int k = 0; k < waits; ++k) {
    future_status const s = co_await f.await_for(spread(i * waits + k, 1, 3));
    timeouts += s == future_status::timeout ? 1 : 0;
  }
  finished->fetch_add(1);
  // Read it once `go` is set (the opener sets it when every task got here): a detached task that
  // had not started yet could otherwise wait on `go` after the test destroyed it.
  (void)co_await f;
  co_return timeouts;
}

TEST_P(future_timed_test, tiny_deadlines_on_a_future_that_does_not_complete_all_time_out) {
  spawn_target t(m_sched);
  int const n = scaled(16, 4);
  int const waits = scaled(200, 40);
  event go;
  std::atomic<int> finished{0};
  // A lost timeout leaves its task asleep: `go` is then set after 10 s, and it counts as ready.
  side_thread opener([&] {
    (void)wait_until([&] { return finished.load() == n; });
    go.set();
  });
  long const timeouts = m_sched.run(
      fork_n<decltype(&time_out_again_and_again), magpie::pool *, event *, int, std::atomic<int> *>,
      n, &time_out_again_and_again, t.m_pool, &go, waits, &finished);
  EXPECT_EQ(timeouts, long{n} * waits) << "a wait returned ready before `go` (a lost timeout)";
}

TEST_P(future_timed_test, an_exception_waits_to_be_read) {
  spawn_target t(m_sched);
  auto body = [](magpie::pool *p) -> task<int> {
    magpie::future<long> f = magpie::spawn(
        *p,
        [](std::chrono::microseconds d) -> task<long> {
          co_await magpie::io::sleep_for(d);
          throw std::runtime_error("spawned");
        },
        1000us);
    future_status const s = co_await f.await_for(60s); // does not throw
    try {
      (void)co_await f;
    } catch (std::runtime_error const &) {
      co_return s == future_status::ready ? 1 : 0;
    }
    co_return 0;
  };
  EXPECT_EQ(m_sched.run(body, t.m_pool), 1);
  EXPECT_EQ(pending_timers(), 0u);
}

TEST_P(future_timed_test, an_empty_future_throws_and_a_fork_join_scope_refuses) {
  spawn_target t(m_sched);
  auto body = [](magpie::pool *p) -> task<int> {
    int score = 0;
    magpie::future<long> empty;
    try {
      future_status const s = co_await empty.await_for(1ms);
      static_cast<void>(s);
    } catch (std::future_error const &e) {
      score += e.code() == std::future_errc::no_state ? 1 : 0;
    }
    magpie::future<long> f = magpie::spawn(*p, value_after, 0us, 1L);
    long r = 0;
    co_await magpie::fork(&r, fib, 5);
    try {
      future_status const s = co_await f.await_for(1ms);
      static_cast<void>(s);
    } catch (std::logic_error const &) {
      score += 2;
    }
    co_await magpie::join();
    score += r == serial_fib(5) && co_await f == 1 ? 4 : 0;
    co_return score;
  };
  EXPECT_EQ(m_sched.run(body, t.m_pool), 7);
  EXPECT_EQ(pending_timers(), 0u);
}

INSTANTIATE_TEST_SUITE_P(every_scheduler, future_timed_test, ::testing::ValuesIn(all_schedulers()),
                         sched_name{});

/// Reads, on one worker, the future of an unstarted low-priority child after spawning a
/// high-priority marker: with `co_await f` first (Timed false) the reader runs the child at once,
/// before the marker; with `await_for` first it suspends, and the worker starts what its queue
/// holds, highest first: the marker, then the child. Returns whether the child saw the marker.
template <bool Timed>
task<int> child_saw_the_marker(magpie::pool *p) {
  std::atomic<bool> marker_ran{false};
  auto child = [](std::atomic<bool> *m) -> task<long> { co_return m->load() ? 1 : 0; };
  auto marker = [](std::atomic<bool> *m) -> task<void> {
    m->store(true);
    co_return;
  };
  magpie::future<long> f = magpie::spawn(*p, magpie::priority::low, child, &marker_ran);
  magpie::future<void> g = magpie::spawn(*p, magpie::priority::high, marker, &marker_ran);
  if constexpr (Timed) {
    future_status const s = co_await f.await_for(60s);
    if (s != future_status::ready) {
      co_return -1;
    }
  }
  long const saw = co_await f;
  co_await g;
  co_return static_cast<int>(saw);
}

TEST(future_timed, an_unstarted_task_is_not_helped_but_runs_while_the_reader_waits) {
  watchdog dog(current_test_name());
  magpie::busy_pool pool(handoff_options(1)); // roots run on the one worker
  EXPECT_EQ(magpie::sync_wait(pool, child_saw_the_marker<false>, &pool), 0)
      << "control: co_await f runs the unstarted child at once";
  EXPECT_EQ(magpie::sync_wait(pool, child_saw_the_marker<true>, &pool), 1)
      << "await_for ran the child before the queued high-priority marker: it helped";
  EXPECT_EQ(pending_timers(), 0u);
}

TEST(future_timed, threads_and_tasks_take_turns_waiting_on_one_future) {
  // The word goes back to pending after a task's timeout: a thread's blocking wait and read then
  // work, and a task may wait again after the thread's wait timed out.
  watchdog dog(current_test_name());
  magpie::lazy_pool pool(2);
  event go;
  magpie::future<long> f = magpie::spawn(pool, value_when_set, &go, 9L);
  auto body = [](magpie::future<long> *fut) -> task<int> {
    future_status const s = co_await fut->await_for(2ms);
    co_return s == future_status::timeout ? 1 : 0;
  };
  EXPECT_EQ(magpie::sync_wait(pool, body, &f), 1);
  EXPECT_EQ(f.wait_for(1ms), future_status::timeout);
  // And a task times out again after the thread's timed-out wait left its mark in the word.
  EXPECT_EQ(magpie::sync_wait(pool, body, &f), 1);
  go.set();
  EXPECT_EQ(f.get(), 9);
  EXPECT_EQ(pending_timers(), 0u);
}

TEST(future_timed, a_pool_destroyed_while_a_timed_wait_is_pending_waits_for_it) {
  watchdog dog(current_test_name());
  event go;
  std::atomic<int> result{-1};
  auto const start = clock::now();
  {
    magpie::lazy_pool other(1);
    magpie::future<long> never = magpie::spawn(other, value_when_set, &go, 1L);
    {
      magpie::lazy_pool pool(2);
      auto f = magpie::spawn(
          pool,
          [](magpie::future<long> *g, std::atomic<int> *r) -> task<void> {
            future_status const s = co_await g->await_for(30ms);
            r->store(s == future_status::timeout ? 1 : 0);
          },
          &never, &result);
      (void)f; // detached when it goes out of scope, before the pool
    }          // the pool's destructor must wait for the 30 ms wait to time out
    EXPECT_EQ(result.load(), 1) << "the pool's destructor returned before the timed wait ended";
    EXPECT_GE(clock::now() - start, 30ms);
    go.set(); // `never` detaches; `other` drains
  }
  EXPECT_EQ(pending_timers(), 0u);
}

TEST(future_timed, waits_from_a_plain_thread_are_refused_on_a_worker_and_named) {
  // The blocking wait_for on a worker of the future's pool is refused, naming the task form.
  watchdog dog(current_test_name());
  magpie::lazy_pool pool(1);
  event go;
  magpie::future<long> f = magpie::spawn(pool, value_when_set, &go, 5L);
  auto body = [](magpie::future<long> *fut) -> task<int> {
    try {
      (void)fut->wait_for(1ms);
    } catch (std::logic_error const &e) {
      co_return std::string(e.what()).find("await_for") != std::string::npos ? 1 : 0;
    }
    co_return 0;
  };
  EXPECT_EQ(magpie::sync_wait(pool, body, &f), 1);
  go.set();
  EXPECT_EQ(f.get(), 5);
}

} // namespace
