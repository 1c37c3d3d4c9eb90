// tests/stress/robustness_test.cpp — misuse and bad input at run time: a clear diagnostic, and
// nothing lost (no frame, argument, exception object or stacklet leaks; the scheduler stays
// usable).
//
//   * sync_wait from inside a worker of the same scheduler throws std::logic_error;
//   * a pool destroyed while another thread's sync_wait is in flight finishes that root; a
//     submission (sync_wait, resume_on) after destruction began throws pool_closed;
//   * an argument whose copy throws: the exception reaches sync_wait's caller (root) or the
//     parent's fork/call expression; no frame leaks;
//   * stacklet allocation failure (injected through core::set_stacklet_allocator) while a stack
//     grows — for frames and for stack_alloc, on the owner and on thieves, swept over every
//     allocation of a run: the std::bad_alloc reaches the caller, every stacklet comes back, and
//     the pool computes correct results afterwards.
//
// Library limitations found by this suite have their own tests in known_bugs_test.cpp.

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/lifetime.hpp"
#include "common/workloads.hpp"
#include "magpie/magpie.hpp"

namespace {

using magpie::lifetime::copy_bomb;
using magpie::lifetime::copy_bomb_error;
using magpie::lifetime::stacklet_ledger;
using magpie::lifetime::tracked;

enum class kind { inline_, busy, lazy };

struct param {
  kind k;
  std::size_t workers;
};

std::string name(::testing::TestParamInfo<param> const &info) {
  char const *n[] = {"inline", "busy", "lazy"};
  return std::string(n[static_cast<int>(info.param.k)]) + "_" + std::to_string(info.param.workers);
}

/// A scheduler created after the stacklet ledger (if any) and destroyed before it.
struct scheduler {
  explicit scheduler(param p) {
    if (p.k == kind::inline_) {
      inl = std::make_unique<magpie::inline_scheduler>();
    } else if (p.k == kind::busy) {
      pool = std::make_unique<magpie::busy_pool>(p.workers);
    } else {
      pool = std::make_unique<magpie::lazy_pool>(p.workers);
    }
  }
  template <typename Fn, typename... Args>
  decltype(auto) run(Fn &&fn, Args &&...args) {
    if (inl) {
      return magpie::sync_wait(*inl, std::forward<Fn>(fn), std::forward<Args>(args)...);
    }
    return magpie::sync_wait(*pool, std::forward<Fn>(fn), std::forward<Args>(args)...);
  }
  std::unique_ptr<magpie::inline_scheduler> inl;
  std::unique_ptr<magpie::pool> pool;
};

using magpie::test::fib; // tests/common/workloads.hpp
constexpr long fib_of(int n) { return n < 2 ? n : fib_of(n - 1) + fib_of(n - 2); }

class robustness : public ::testing::TestWithParam<param> {
protected:
  void SetUp() override {
    m_live = magpie::lifetime::live();
    m_errors = magpie::lifetime::errors();
  }
  void TearDown() override {
    EXPECT_EQ(magpie::lifetime::live(), m_live) << "tracked values (arguments, frames) leaked";
    EXPECT_EQ(magpie::lifetime::errors(), m_errors)
        << "lifetime error: "
        << (magpie::lifetime::first_error() ? magpie::lifetime::first_error() : "");
  }
  long m_live = 0;
  long m_errors = 0;
};

// ---------------------------------------------------------------------------------------------
// sync_wait from inside a worker.

template <typename S>
magpie::task<int> nested_sync_wait(S *s) {
  try {
    (void)magpie::sync_wait(*s, fib, 3);
  } catch (std::logic_error const &e) {
    co_return std::string(e.what()).find("worker") != std::string::npos ? 1 : 2;
  }
  co_return 0;
}

TEST_P(robustness, SyncWaitFromAWorkerThrowsLogicError) {
  scheduler s(GetParam());
  int r = -1;
  if (s.inl) {
    r = s.run(nested_sync_wait<magpie::inline_scheduler>, s.inl.get());
  } else {
    r = s.run(nested_sync_wait<magpie::pool>, s.pool.get());
  }
  EXPECT_EQ(r, 1) << "expected std::logic_error naming the worker (1), got " << r;
  EXPECT_EQ(s.run(fib, 10), fib_of(10)) << "the scheduler is not usable afterwards";
}

/// A task of one pool may block in sync_wait on another pool: that is not a self-wait.
magpie::task<long> sync_wait_elsewhere(magpie::pool *other) {
  co_return magpie::sync_wait(*other, fib, 12);
}

TEST(robustness_pools, SyncWaitOnAnotherPoolFromAWorkerWorks) {
  magpie::lazy_pool a(2);
  magpie::busy_pool b(2);
  EXPECT_EQ(magpie::sync_wait(a, sync_wait_elsewhere, static_cast<magpie::pool *>(&b)), fib_of(12));
}

// ---------------------------------------------------------------------------------------------
// Destroying a pool with work in flight.

struct shutdown_probe {
  magpie::pool *pool = nullptr;
  std::atomic<bool> started{false};
  std::atomic<bool> saw_closing{false};
  std::atomic<bool> outsider_done{false};
  std::atomic<int> resume_on_result{0}; // 1: threw pool_closed
};

magpie::task<long> outlive_destructor(shutdown_probe *p) {
  p->started.store(true);
  auto const give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (p->pool->accepting() &&
         std::chrono::steady_clock::now() < give_up) { // the destructor began?
    std::this_thread::yield();
  }
  p->saw_closing.store(!p->pool->accepting());
  try {
    co_await magpie::resume_on(*p->pool, 0); // explicit scheduling into a closing pool
    p->resume_on_result.store(2);
  } catch (magpie::pool_closed const &) {
    p->resume_on_result.store(1);
  }
  while (!p->outsider_done.load() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::yield();
  }
  long r = 0;
  co_await magpie::call(&r, fib, 15); // the in-flight root still runs to completion
  co_return r;
}

TEST(robustness_pools, DestructorFinishesInFlightRootsAndRefusesNewOnes) {
  for (bool lazy : {false, true}) {
    std::unique_ptr<magpie::pool> pool;
    if (lazy) {
      pool = std::make_unique<magpie::lazy_pool>(2);
    } else {
      pool = std::make_unique<magpie::busy_pool>(2);
    }
    shutdown_probe probe;
    probe.pool = pool.get();
    long result = -1;
    std::thread waiter(
        [&] { result = magpie::sync_wait(*probe.pool, outlive_destructor, &probe); });
    while (!probe.started.load()) {
      std::this_thread::yield();
    }
    // The outsider submits once destruction has begun. The pool object stays alive meanwhile:
    // its destructor is blocked until the in-flight root (which waits for the outsider) is done.
    std::thread outsider([&] {
      while (probe.pool->accepting()) {
        std::this_thread::yield();
      }
      EXPECT_THROW((void)magpie::sync_wait(*probe.pool, fib, 5), magpie::pool_closed);
      probe.outsider_done.store(true);
    });
    pool.reset(); // blocks until the in-flight root completed, then joins the workers
    waiter.join();
    outsider.join();
    EXPECT_TRUE(probe.saw_closing.load()) << (lazy ? "lazy" : "busy");
    EXPECT_EQ(probe.resume_on_result.load(), 1)
        << "resume_on into a closing pool must throw pool_closed";
    EXPECT_EQ(result, fib_of(15)) << "the in-flight root was not finished";
  }
}

// ---------------------------------------------------------------------------------------------
// Arguments whose copy throws.

magpie::task<int> take_bomb(copy_bomb b, tracked<int> witness) {
  co_return b.value() + witness.value();
}

magpie::task<int> fork_with_bomb(bool fork, bool armed) {
  copy_bomb bomb(armed, 7);
  int r = 0;
  int outcome = 0;
  try {
    if (fork) {
      co_await magpie::fork(&r, take_bomb, bomb, tracked<int>(1)); // copies `bomb`: may throw
    } else {
      co_await magpie::call(&r, take_bomb, bomb, tracked<int>(1));
    }
    outcome = 1; // no throw: the child ran (fork: maybe still running)
  } catch (copy_bomb_error const &) {
    outcome = 2; // thrown at the fork/call expression, in the parent's body
  }
  co_await magpie::join();
  co_return outcome == 1 ? 100 + r : outcome;
}

TEST_P(robustness, ThrowingArgumentCopyReachesTheForkExpression) {
  stacklet_ledger ledger;
  {
    scheduler s(GetParam());
    for (bool fork : {true, false}) {
      EXPECT_EQ(s.run(fork_with_bomb, fork, true), 2) << (fork ? "fork" : "call");
      EXPECT_EQ(s.run(fork_with_bomb, fork, false), 108) << (fork ? "fork" : "call");
    }
    // At the root: the copy happens on the worker; the exception reaches sync_wait's caller.
    copy_bomb armed(true, 1);
    EXPECT_THROW((void)s.run(take_bomb, armed, tracked<int>(1)), copy_bomb_error);
    copy_bomb safe(false, 1);
    EXPECT_EQ(s.run(take_bomb, safe, tracked<int>(2)), 3);
    EXPECT_EQ(s.run(fib, 12), fib_of(12));
  }
  EXPECT_EQ(ledger.live(), 0u) << "stacklets leaked";
  EXPECT_EQ(ledger.errors(), 0u);
}

// ---------------------------------------------------------------------------------------------
// Stacklet allocation failure while a stack grows.

/// Recursion that crosses stacklet boundaries (frames) and makes stack arrays of growing size.
magpie::task<long> grow(int depth, std::size_t array, tracked<int> witness) {
  if (depth == 0) {
    co_return witness.value();
  }
  long sum = 0;
  {
    auto a = co_await magpie::stack_alloc<long>(array); // may need a new stacklet
    for (std::size_t i = 0; i < array; ++i) {
      a[i] = static_cast<long>(i);
    }
    for (std::size_t i = 0; i < array; ++i) {
      sum += a[i];
    }
  }
  long x = 0;
  long y = 0;
  co_await magpie::fork(&x, grow, depth - 1, array + 1500, tracked<int>(1));
  co_await magpie::call(&y, grow, depth - 1, array / 2 + 700, tracked<int>(1));
  co_await magpie::join();
  co_return x + y + sum - static_cast<long>(array * (array - 1) / 2);
}

long grow_expected(int depth, std::size_t array) {
  if (depth == 0) {
    return 1;
  }
  return grow_expected(depth - 1, array + 1500) + grow_expected(depth - 1, array / 2 + 700);
}

TEST_P(robustness, AllocationFailureWhileGrowingLosesNothing) {
  int const depth = 7;
  long const expected = grow_expected(depth, 100);
  stacklet_ledger ledger;
  std::size_t failures = 0;
  std::size_t successes = 0;
  {
    // Sweep: fail the n-th stacklet allocation of a run, for every n until a run needs fewer.
    // Each run starts on a fresh scheduler: warm stacks would not allocate at all.
    for (long n = 0; n < 200; ++n) {
      scheduler fresh(GetParam());
      ledger.fail_after(n);
      bool failed = false;
      try {
        EXPECT_EQ(fresh.run(grow, depth, std::size_t{100}, tracked<int>(1)), expected)
            << "n = " << n;
      } catch (std::bad_alloc const &) {
        failed = true;
      }
      ledger.disarm();
      // The scheduler is still usable, with correct results.
      EXPECT_EQ(fresh.run(fib, 15), fib_of(15)) << "after failing allocation " << n;
      EXPECT_EQ(fresh.run(grow, 3, std::size_t{100}, tracked<int>(1)), grow_expected(3, 100));
      if (failed) {
        ++failures;
      } else {
        ++successes;
        if (ledger.injected() == failures) { // the run made fewer than n allocations: done
          break;
        }
      }
    }
  }
  EXPECT_GT(failures, 0u) << "no allocation failure reached sync_wait's caller";
  EXPECT_GT(successes, 0u);
  EXPECT_EQ(ledger.live(), 0u) << "stacklets leaked";
  EXPECT_EQ(ledger.errors(), 0u) << "stacklets freed twice or with a wrong size";
  std::printf(
      "  %zu runs failed with an injected bad_alloc, %zu completed; %zu stacklets allocated\n",
      failures, successes, ledger.allocations());
}

INSTANTIATE_TEST_SUITE_P(schedulers, robustness,
                         ::testing::Values(param{kind::inline_, 1}, param{kind::busy, 1},
                                           param{kind::busy, 2}, param{kind::lazy, 2},
                                           param{kind::lazy, 3}, param{kind::busy, 8}),
                         name);

} // namespace
