#pragma once
// tests/sync/timed_support.hpp — helpers shared by the tests of timed waits (timed_wait_test:
// event, latch, counter; timed_lock_test: mutex, semaphore), Linux.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <thread>

#include <gtest/gtest.h>

#include "common/test_support.hpp"
#include "magpie/io.hpp"
#include "sync/sync_support.hpp"

namespace magpie::test {

/// Timers pending in the reactor (zero again after each test: nothing left armed).
inline std::size_t pending_timers() { return magpie::io::reactor_statistics().pending_timers; }

/// A spread of durations in [lo, lo + span) µs, by index (no shared generator between tasks).
inline std::chrono::microseconds spread(int i, int lo, int span) {
  auto const h = static_cast<std::uint32_t>(i) * 2654435761u;
  return std::chrono::microseconds(lo + static_cast<int>(h % static_cast<std::uint32_t>(span)));
}

/// How the tests wait on a primitive `P` with a deadline; each test specialises it:
///   static std::unique_ptr<P> make_closed();  // a `P` that lets no wait pass
///   static auto take(P &, std::chrono::microseconds);  // a task's timed wait (co_await it)
///   static bool take_blocking(P &, std::chrono::microseconds);  // a plain thread's
template <typename P>
struct timed_ops;

/// A task's timed wait on a primitive nothing will open: counts how it ended.
template <typename P>
magpie::task<long> take_doomed(int i, P *p, std::atomic<int> *abandoned,
                               std::atomic<int> *timed_out) {
  try {
    bool const passed = co_await timed_ops<P>::take(*p, spread(i, 300, 1500));
    EXPECT_FALSE(passed) << "nothing let the wait pass";
    timed_out->fetch_add(1);
  } catch (magpie::abandoned_wait const &) {
    abandoned->fetch_add(1);
  }
  co_return 1;
}

/// take_doomed for a plain thread.
template <typename P>
void thread_takes_doomed(int i, P *p, std::atomic<int> *abandoned, std::atomic<int> *timed_out) {
  try {
    EXPECT_FALSE(timed_ops<P>::take_blocking(*p, spread(i, 300, 1500)))
        << "nothing let the wait pass";
    timed_out->fetch_add(1);
  } catch (magpie::abandoned_wait const &) {
    abandoned->fetch_add(1);
  }
}

/// The primitive destroyed while its timed waiters' deadlines expire (tasks and two threads, or
/// with `with_threads` false tasks only: a counter's threads must not wait as it goes): each
/// wait ends exactly once, by its deadline (false) or by the destructor (abandoned_wait), and
/// nothing touches the primitive after it is gone (ASan).
template <typename P>
void destroyed_as_deadlines_expire(any_scheduler &sched, bool with_threads = true) {
  int const n = scaled(32, 8);
  int const threads = with_threads ? 2 : 0;
  int total_abandoned = 0;
  for (int round = 0; round < scaled(30, 6); ++round) {
    std::unique_ptr<P> p = timed_ops<P>::make_closed();
    std::atomic<int> abandoned{0};
    std::atomic<int> timed_out{0};
    {
      std::optional<side_thread> t0;
      std::optional<side_thread> t1;
      if (with_threads) {
        t0.emplace([&] { thread_takes_doomed(round, p.get(), &abandoned, &timed_out); });
        t1.emplace([&] { thread_takes_doomed(round + 3, p.get(), &abandoned, &timed_out); });
      }
      side_thread destroyer([&] {
        // Destroy only once every waiter is queued or done (a waiter that has not reached the
        // primitive yet would use it after free: the test's fault, not the primitive's). Read
        // the count of those done first: a waiter leaves the queue before it counts itself, so
        // the sum never counts one twice (read the other way round it could, and the primitive
        // was destroyed before a thread had reached it: a null dereference in the test, 3 runs
        // in 25 on a loaded machine).
        ASSERT_TRUE(wait_until([&] {
          int const done = timed_out.load();
          return static_cast<int>(p->waiting()) + done == n + threads;
        }));
        std::this_thread::sleep_for(spread(round, 0, 1200));
        p.reset();
      });
      EXPECT_EQ(
          sched.run(fork_n<decltype(&take_doomed<P>), P *, std::atomic<int> *, std::atomic<int> *>,
                    n, &take_doomed<P>, p.get(), &abandoned, &timed_out),
          n);
    }
    EXPECT_EQ(abandoned.load() + timed_out.load(), n + threads);
    total_abandoned += abandoned.load();
  }
  EXPECT_EQ(pending_timers(), 0u);
  std::printf("[ info ] %d waits abandoned, the others timed out\n", total_abandoned);
}

} // namespace magpie::test
