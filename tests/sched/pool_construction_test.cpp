// A pool whose constructor fails half-way. This executable replaces the global
// operator new/delete (so it must stay a separate executable): the N-th allocation made by the
// constructing thread throws std::bad_alloc, for every N from 0 until construction succeeds, for
// busy and lazy pools of 1, 2 and 4 workers. The failures hit the allocation of a worker, of its
// stack or deque, and of a std::thread's state after earlier workers have started. Each must reach
// the caller as std::bad_alloc — not std::terminate (joinable threads destroyed), not a crash
// (started workers using a freed pool) — with every allocation given back (checked here by
// counting, and by LeakSanitizer under asan-ubsan), and pools made afterwards must work.

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>

#include <gtest/gtest.h>

#include "common/test_support.hpp"

#include "common/replace_new.hpp"

namespace {
std::atomic<long> g_live{0}; // allocations not yet freed, all threads (relaxed: a counter)

// Failure injection, for the constructing thread only (started workers never see it).
thread_local bool t_armed = false;
thread_local long t_countdown = 0; // allocations left before the one that fails
thread_local long t_seen = 0;      // allocations while armed
} // namespace

// The hooks of the replaced operator new/delete (common/replace_new.hpp).
[[maybe_unused]] __attribute__((noinline)) void *magpie_test_allocate(std::size_t bytes,
                                                                      std::size_t align) {
  if (t_armed) {
    ++t_seen;
    if (t_countdown-- == 0) {
      return nullptr; // the caller throws std::bad_alloc (or returns null for nothrow)
    }
  }
  void *p = magpie::test::raw_allocate(bytes, align);
  if (p != nullptr) {
    g_live.fetch_add(1, std::memory_order_relaxed); // a counter: no edge
  }
  return p;
}

[[maybe_unused]] __attribute__((noinline)) void magpie_test_deallocate(void *p) noexcept {
  if (p != nullptr) {
    g_live.fetch_sub(1, std::memory_order_relaxed); // a counter: no edge
  }
  std::free(p);
}

namespace {

using namespace magpie::test;

struct construction_param {
  sched_kind kind;
  std::size_t workers;
};

std::string construction_name(::testing::TestParamInfo<construction_param> const &info) {
  return to_string(magpie::test::sched_param{info.param.kind, info.param.workers});
}

std::unique_ptr<magpie::pool> make_pool(sched_kind kind, std::size_t workers) {
  if (kind == sched_kind::busy) {
    return std::make_unique<magpie::busy_pool>(workers);
  }
  return std::make_unique<magpie::lazy_pool>(workers);
}

class pool_construction : public ::testing::TestWithParam<construction_param> {
protected:
  pool_construction() : m_dog(current_test_name()) {}
  void SetUp() override {
    if (!MAGPIE_TEST_REPLACE_NEW) {
      GTEST_SKIP() << "operator new cannot be replaced under ThreadSanitizer";
    }
  }
  watchdog m_dog;
};

enum class outcome { built, bad_alloc, other };

/// Builds (and destroys) a pool whose construction's allocation number `fail_at` fails.
/// `allocations` gets the number of allocations the constructing thread attempted.
outcome build_failing_at(construction_param p, long fail_at, long &allocations) {
  t_seen = 0;
  t_countdown = fail_at;
  t_armed = true;
  outcome result = outcome::built;
  std::unique_ptr<magpie::pool> built;
  try {
    built = make_pool(p.kind, p.workers);
  } catch (std::bad_alloc const &) {
    result = outcome::bad_alloc;
  } catch (...) {
    result = outcome::other;
  }
  t_armed = false;
  allocations = t_seen;
  if (built) {
    // It must work, even though nothing failed this time.
    if (magpie::sync_wait(*built, fib, 12) != serial_fib(12)) {
      result = outcome::other;
    }
  }
  return result;
}

TEST(pool_construction_self_check, the_injection_fails_the_chosen_allocation) {
  if (!MAGPIE_TEST_REPLACE_NEW) {
    GTEST_SKIP() << "operator new cannot be replaced under ThreadSanitizer";
  }
  t_seen = 0;
  t_countdown = 1;
  t_armed = true;
  // Calls, not new-expressions: a compiler may elide a new-expression whose result is unused.
  void *first = ::operator new(sizeof(int)); // allocation 0 succeeds
  bool threw = false;
  try {
    ::operator delete(::operator new(sizeof(int))); // allocation 1 fails
  } catch (std::bad_alloc const &) {
    threw = true;
  }
  t_armed = false;
  ::operator delete(first);
  EXPECT_TRUE(threw);
  EXPECT_EQ(t_seen, 2);
}

TEST_P(pool_construction, every_failing_allocation_reaches_the_caller_and_leaks_nothing) {
  construction_param const p = GetParam();
  long failures = 0;
  long needed = -1; // allocations of a successful construction
  for (long n = 0; n < 10000; ++n) {
    long const live_before = g_live.load();
    long allocations = 0;
    outcome const o = build_failing_at(p, n, allocations);
    long const live_after = g_live.load();
    ASSERT_NE(o, outcome::other) << "allocation " << n << ": not std::bad_alloc, or a bad result";
    // Everything the attempt allocated was freed (started workers joined: their allocations too).
    ASSERT_EQ(live_after, live_before) << "allocation " << n << " failed: something leaked";
    if (o == outcome::built) {
      needed = allocations;
      break;
    }
    ++failures;
    ASSERT_EQ(allocations, n + 1) << "the attempt went on after allocation " << n << " failed";
  }
  // Construction succeeds exactly when no allocation fails, after one failure per allocation.
  EXPECT_EQ(failures, needed);
  // At least a worker, its stack and deque, and a thread's state per worker were tried.
  EXPECT_GE(needed, static_cast<long>(3 * p.workers));
  std::printf("[ info     ] %s: %ld allocations in a pool's construction, each failed once\n",
              construction_name({p, 0}).c_str(), needed);
  // The process keeps working.
  auto later = make_pool(p.kind, p.workers);
  EXPECT_EQ(magpie::sync_wait(*later, fib, 18), serial_fib(18));
}

std::vector<construction_param> construction_params() {
  std::vector<construction_param> out;
  for (sched_kind k : {sched_kind::busy, sched_kind::lazy}) {
    for (std::size_t n : {1, 2, 4}) {
      out.push_back({k, n});
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(pools, pool_construction, ::testing::ValuesIn(construction_params()),
                         construction_name);

} // namespace
