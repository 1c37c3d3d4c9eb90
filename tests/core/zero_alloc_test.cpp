// No heap allocation per task once warm: this executable replaces the global operator new/delete
// with counting versions (so it must stay its own executable) and checks, with the counters:
//
//  * Serial schedulers (inline, 1-worker pools): after a warm-up run, a second run calls operator
//    new zero times — for fib (one stacklet), for runs whose frames or stack arrays cross a
//    stacklet boundary (the empty stacklet above the top is cached, so going back and forth over
//    the boundary reuses it), and for a task that crosses it 50 times in a loop (hot splitting).
//    Runs that go k > 2 stacklets deep re-allocate the k-2 stacklets above the cached one each
//    time (one cache, by design): O(log depth) per run, never per task — checked exactly.
//  * Pools with 2 and 3 workers (busy and lazy): operator new calls <= stack hand-offs (derivation
//    at `allocations_are_bounded_by_hand_offs`); steals allocate nothing. And tasks that move
//    between workers with resume_on and come back (hand-offs without steals) allocate nothing at
//    all once warm: the spare chain each worker caches absorbs every hand-off.
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_support.hpp"

#include "common/replace_new.hpp"

namespace {
std::atomic<long> g_news{0}; // every operator new since the process started
std::atomic<bool> g_counting{false};
} // namespace

// The hooks of the replaced operator new/delete (out of line so that GCC does not pair an inlined
// malloc with a free and warn about mismatched allocation functions).
[[maybe_unused]] __attribute__((noinline)) void *magpie_test_allocate(std::size_t bytes,
                                                                      std::size_t align) {
  if (g_counting.load(std::memory_order_relaxed)) {
    g_news.fetch_add(1, std::memory_order_relaxed);
  }
  return magpie::test::raw_allocate(bytes, align);
}
[[maybe_unused]] __attribute__((noinline)) void magpie_test_deallocate(void *p) noexcept {
  std::free(p);
}

namespace {

using namespace magpie::test;

/// operator new calls made (by any thread) during `fn()`.
template <typename Fn>
long news_during(Fn &&fn) {
  long const before = g_news.load();
  g_counting = true;
  fn();
  g_counting = false;
  return g_news.load() - before;
}

class zero_alloc : public scheduler_test {
protected:
  void SetUp() override {
    if (!MAGPIE_TEST_REPLACE_NEW) {
      GTEST_SKIP() << "operator new cannot be replaced under ThreadSanitizer";
    }
  }
};

TEST(zero_alloc_self_check, the_replacement_counts) {
  if (!MAGPIE_TEST_REPLACE_NEW) {
    GTEST_SKIP() << "operator new cannot be replaced under ThreadSanitizer";
  }
  EXPECT_EQ(news_during([] {
              int *volatile p = new int(3); // volatile: the new-expression cannot be elided
              delete p;
            }),
            1);
  EXPECT_EQ(news_during([] {
              ::operator delete(::operator new(100, std::align_val_t{64}), std::align_val_t{64});
            }),
            1);
}

/// A chain of `call`s: no forks, so nothing to steal.
magpie::task<long> call_chain(int n) {
  if (n == 0) {
    co_return 0;
  }
  long r = 0;
  co_await magpie::call(&r, call_chain, n - 1);
  co_return r + 1;
}

TEST(zero_alloc_self_check, stacklet_allocations_are_counted) {
  if (!MAGPIE_TEST_REPLACE_NEW) {
    GTEST_SKIP() << "operator new cannot be replaced under ThreadSanitizer";
  }
  // A chain deeper than the first stacklet must allocate: proves the counter sees the runtime.
  magpie::inline_scheduler s;
  long r = 0;
  EXPECT_GT(news_during([&] { r = magpie::sync_wait(s, call_chain, 20000); }), 0);
  EXPECT_EQ(r, 20000);
}

/// The counters summed over a scheduler's workers, and their difference over a stretch.
magpie::core::worker_stats operator-(magpie::core::worker_stats a,
                                     magpie::core::worker_stats const &b) {
  a.steals -= b.steals;
  a.steal_fails -= b.steal_fails;
  a.jobs -= b.jobs;
  a.handoffs -= b.handoffs;
  a.sleeps -= b.sleeps;
  return a;
}

/// The most operator new calls a stretch of fork–join runs may make: one fresh first stacklet per
/// hand-off in the stretch, plus one per worker for hand-offs made before it — a worker that gave
/// its chain away (with no spare) before the stretch began allocates its next chain inside it
/// (seen: 1 allocation with 0 hand-offs in the stretch, on busy_3 and lazy_2).
long handoff_budget(magpie::core::worker_stats const &d, std::size_t workers) {
  return static_cast<long>(d.handoffs + workers);
}

std::size_t stacklets_allocated() { return magpie::core::get_stack_stats().stacklets_allocated; }

// ---------------------------------------------------------------------------------------------
// Every scheduler: fib, and void tasks with stack arrays.

TEST_P(zero_alloc, second_fib_run_allocates_nothing) {
  int const n = 25;
  long r = 0;
  long const warm = news_during([&] { r = m_sched.run(fib, n); });
  EXPECT_EQ(r, serial_fib(n));
  long second = 0;
  auto const before = m_sched.total_stats(); // (stats() allocates: outside the counted stretch)
  long const steady = news_during([&] { second = m_sched.run(fib, n); });
  auto const d = m_sched.total_stats() - before;
  EXPECT_EQ(second, serial_fib(n));
  std::printf("[ info     ] %s: operator new calls: warm-up %ld, second run %ld (steals %llu, "
              "hand-offs %llu)\n",
              to_string(GetParam()).c_str(), warm, steady,
              static_cast<unsigned long long>(d.steals),
              static_cast<unsigned long long>(d.handoffs));
  if (m_sched.serial()) {
    EXPECT_EQ(steady, 0) << "a second fib(" << n << ") allocated on the heap";
  } else { // at most one fresh first stacklet per hand-off (see allocations_are_bounded_by_...)
    EXPECT_LE(steady, handoff_budget(d, m_sched.workers()));
  }
}

TEST_P(zero_alloc, steady_state_with_void_tasks_and_stack_arrays) {
  // A workload that also uses stack_alloc and discarded results.
  auto body = [](int n) -> magpie::task<void> {
    auto scratch = co_await magpie::stack_alloc<long>(64);
    co_await magpie::fork(fib, n);
    co_await magpie::call(fib, n - 1);
    co_await magpie::join();
    scratch[0] = n;
  };
  m_sched.run(body, 18);
  auto const before = m_sched.total_stats();
  long const steady = news_during([&] {
    for (int i = 0; i < 5; ++i) {
      m_sched.run(body, 18);
    }
  });
  auto const d = m_sched.total_stats() - before;
  std::printf("[ info     ] %s: operator new calls in 5 runs: %ld (hand-offs %llu)\n",
              to_string(GetParam()).c_str(), steady, static_cast<unsigned long long>(d.handoffs));
  if (m_sched.serial()) {
    EXPECT_EQ(steady, 0);
  } else {
    EXPECT_LE(steady, handoff_budget(d, m_sched.workers()));
  }
}

INSTANTIATE_TEST_SUITE_P(all, zero_alloc, ::testing::ValuesIn(all_schedulers()), sched_name{});

// ---------------------------------------------------------------------------------------------
// Serial schedulers: runs that cross stacklet boundaries.

class zero_alloc_serial : public zero_alloc {};

constexpr std::size_t s0 = magpie::core::stack::initial_capacity; // the first stacklet's bytes

/// `levels` nested calls, each holding a stack array of s0/4 bytes: 1.5·s0 at 6 levels, past the
/// first stacklet and well inside the second (2·s0). The leaf forks a little fib.
magpie::task<long> arrays_down(int levels) {
  auto buf = co_await magpie::stack_alloc<unsigned char>(s0 / 4);
  buf[0] = static_cast<unsigned char>(levels);
  long r = 0;
  if (levels > 0) {
    co_await magpie::call(&r, arrays_down, levels - 1);
  } else {
    co_await magpie::fork(&r, fib, 10);
    co_await magpie::join();
  }
  co_return r + buf[0];
}

/// A frame of about 1 KiB (the array lives across a suspension point, hence in the frame).
magpie::task<long> fat_frames(int depth) {
  std::array<unsigned char, 1024> pad{};
  pad[static_cast<std::size_t>(depth) % pad.size()] = 1;
  long r = 0;
  if (depth > 0) {
    co_await magpie::fork(&r, fat_frames, depth - 1);
    co_await magpie::join();
  }
  co_return r + pad[static_cast<std::size_t>(depth) % pad.size()];
}

/// Crosses the first stacklet's boundary `times` times from one task (hot splitting): each
/// child goes past the boundary and comes back.
magpie::task<long> cross_repeatedly(int times) {
  long sum = 0;
  for (int i = 0; i < times; ++i) {
    long r = 0;
    co_await magpie::call(&r, fat_frames, 24);
    sum += r;
  }
  co_return sum;
}

/// Runs `fn(args...)` twice on a fresh scheduler; the first run must have grown the stack (else
/// the test proves nothing), the second must not call operator new.
template <typename Fn, typename... Args>
void second_run_allocates_nothing(magpie::test::sched_param p, char const *what, long expect, Fn fn,
                                  Args... args) {
  any_scheduler s(p);
  std::size_t const stacklets_before = stacklets_allocated();
  long r = 0;
  long const warm = news_during([&] { r = s.run(fn, args...); });
  ASSERT_EQ(r, expect) << what;
  std::size_t const grown = stacklets_allocated() - stacklets_before;
  // Each workload crosses exactly one boundary, some of them many times: one stacklet, and no
  // other heap allocation, in the warm-up too.
  ASSERT_EQ(grown, 1u) << what << ": the warm-up run should cross one stacklet boundary";
  EXPECT_EQ(warm, 1) << what << ": the warm-up allocated more than the one stacklet it grew";
  long const second = news_during([&] { r = s.run(fn, args...); });
  ASSERT_EQ(r, expect) << what;
  std::printf("[ info     ] %s, %s: warm-up %ld operator new calls (%zu stacklets), second run "
              "%ld\n",
              to_string(s.param()).c_str(), what, warm, grown, second);
  EXPECT_EQ(second, 0) << what << ": the second run allocated although the stacklet above the "
                       << "first was cached";
}

TEST_P(zero_alloc_serial, runs_across_a_stacklet_boundary_allocate_nothing_once_warm) {
  m_sched.reset(); // each workload on a scheduler of its own, whose stacks are cold
  second_run_allocates_nothing(GetParam(), "stack arrays of s0/4 on 6 levels",
                               7 * 6 / 2 + serial_fib(10), arrays_down, 6);
  second_run_allocates_nothing(GetParam(), "24 frames of 1 KiB", 25, fat_frames, 24);
  second_run_allocates_nothing(GetParam(), "the boundary crossed 50 times by one task", 50L * 25,
                               cross_repeatedly, 50);
}

TEST_P(zero_alloc_serial, deep_runs_reallocate_only_the_stacklets_above_the_cached_one) {
  // One cached stacklet is the design (hot-split protection): a run that reaches the k-th
  // stacklet leaves the first with the second cached above it, and frees the rest on the way
  // back, so the next run allocates k-2 stacklets again: O(log depth) per run, none per task.
  int const depth = 20000;
  std::size_t const before = stacklets_allocated();
  ASSERT_EQ(m_sched.run(call_chain, depth), depth);
  std::size_t const k = stacklets_allocated() - before + 1; // the first stacklet existed
  ASSERT_GE(k, 4u) << "the chain should reach several stacklets";
  long r = 0;
  long const second = news_during([&] { r = m_sched.run(call_chain, depth); });
  ASSERT_EQ(r, depth);
  std::printf("[ info     ] %s: a chain of %d calls reaches %zu stacklets; the second run "
              "allocates %ld\n",
              to_string(GetParam()).c_str(), depth, k, second);
  EXPECT_EQ(second, static_cast<long>(k) - 2);
}

INSTANTIATE_TEST_SUITE_P(serial, zero_alloc_serial, ::testing::ValuesIn(serial_schedulers()),
                         sched_name{});

// ---------------------------------------------------------------------------------------------
// Pools with several workers.

class zero_alloc_pools : public zero_alloc {};

std::vector<magpie::test::sched_param> small_pools() { // (::sched_param is POSIX's)
  return {
      {sched_kind::busy, 2}, {sched_kind::busy, 3}, {sched_kind::lazy, 2}, {sched_kind::lazy, 3}};
}

TEST_P(zero_alloc_pools, allocations_are_bounded_by_hand_offs) {
  // Once every worker exists (each starts with a first stacklet), the only operator new a
  // fork-join run can make is a stacklet, and
  //  * a steal allocates nothing: the thief resumes the continuation where it lies (on the
  //    victim's chain) and puts the children it forks on its own chain;
  //  * a hand-off (the child that arrives at a stolen parent's join first gives its chain to the
  //    parent, docs/protocols.md) leaves the worker on its cached spare chain, or on none; with
  //    none, its next allocation creates one fresh first stacklet — at most one per hand-off,
  //    since the worker then has a chain again;
  //  * nothing else grows: fib(22)'s deepest chain (22 frames) fits in one first stacklet, the
  //    deques never hold more than 22 entries (< their initial 256 slots), and no task throws.
  // Hence operator new calls <= hand-offs (the multiple is 1), counting hand-offs made before the
  // measured stretch whose worker had not yet allocated again: at most one per worker, so the
  // stretch's budget is its hand-offs + P (handoff_budget). In practice they are far fewer: the
  // worker that adopts a chain keeps its own as the spare, so chains circulate.
  int const n = 22;
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(m_sched.run(fib, n), serial_fib(n));
  }
  int const runs = scaled(40, 10);
  auto const before = m_sched.total_stats();
  long wrong = 0;
  long const news = news_during([&] {
    for (int i = 0; i < runs; ++i) {
      wrong += m_sched.run(fib, n) != serial_fib(n) ? 1 : 0;
    }
  });
  auto const d = m_sched.total_stats() - before;
  EXPECT_EQ(wrong, 0);
  std::printf("[ info     ] %s: %d x fib(%d): %ld operator new calls, %llu steals, %llu "
              "hand-offs\n",
              to_string(GetParam()).c_str(), runs, n, news,
              static_cast<unsigned long long>(d.steals),
              static_cast<unsigned long long>(d.handoffs));
  EXPECT_LE(news, handoff_budget(d, m_sched.workers()))
      << "more heap allocations than stack hand-offs: something allocates per task or per steal";
}

/// Visits every other worker with resume_on and comes back home each time, calling a chain of
/// tasks on each: hand-offs without forks, so without steals.
magpie::task<long> round_trips(magpie::pool *p, int rounds) {
  if (magpie::this_worker_index() < 0) {
    // The caller runs its root (callers_run_roots): leave it for worker 0, taking the caller's
    // chain along. The worker that ends up with a chain too many gives it back to the caller's
    // guest slot, so that the caller's next root allocates nothing either.
    co_await magpie::resume_on(*p, 0);
  }
  auto const home = static_cast<std::size_t>(magpie::this_worker_index());
  long sum = 0;
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t w = 0; w < p->size(); ++w) {
      if (w == home) {
        continue;
      }
      co_await magpie::resume_on(*p, w);
      long x = 0;
      co_await magpie::call(&x, call_chain, 30);
      sum += x;
      co_await magpie::resume_on(*p, home);
    }
  }
  co_return sum;
}

TEST_P(zero_alloc_pools, resume_on_round_trips_allocate_nothing_once_warm) {
  // A task that leaves its home worker and comes back hands its chain over twice; the worker it
  // visits keeps its own chain as the spare while it holds the task's, and takes the spare back
  // when the task leaves. So every worker always has a chain when a root starts on it, whatever
  // worker the roots land on, and nothing is allocated. A worker that did not cache its chain
  // (or did not use its spare) would be left without one and allocate at its next root.
  magpie::pool &p = *m_sched.pool();
  long const per_root = 30L * static_cast<long>(p.size() - 1) * 2;
  // Two roots to warm up: a caller's first root that leaves it allocates the caller a new chain
  // at its second; from then on a worker gives one back each time.
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(m_sched.run(round_trips, &p, 2), per_root);
  }
  int const roots = scaled(400, 100);
  auto const before = m_sched.total_stats();
  long wrong = 0;
  long const news = news_during([&] {
    for (int i = 0; i < roots; ++i) {
      wrong += m_sched.run(round_trips, &p, 2) != per_root ? 1 : 0;
    }
  });
  auto const d = m_sched.total_stats() - before;
  EXPECT_EQ(wrong, 0);
  std::printf("[ info     ] %s: %d roots, %llu hand-offs: %ld operator new calls\n",
              to_string(GetParam()).c_str(), roots, static_cast<unsigned long long>(d.handoffs),
              news);
  EXPECT_GE(d.handoffs, static_cast<std::uint64_t>(roots) * 4 * (p.size() - 1));
  EXPECT_EQ(news, 0) << "resume_on round trips allocated: a worker was left without a chain";
}

INSTANTIATE_TEST_SUITE_P(pools, zero_alloc_pools, ::testing::ValuesIn(small_pools()), sched_name{});

} // namespace
