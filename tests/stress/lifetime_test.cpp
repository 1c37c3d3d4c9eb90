// tests/stress/lifetime_test.cpp — the instruments of tests/common/lifetime.hpp (and the `tracked`
// of tests/common/test_support.hpp that the unit tests use) can fail: each kind of lifetime error
// they exist to catch is provoked here by hand and must be reported.

#include <cstddef>
#include <memory>
#include <new>
#include <stdexcept>

#include <gtest/gtest.h>

#include "common/lifetime.hpp"
#include "common/test_support.hpp"
#include "magpie/magpie.hpp"

// The test below reads objects after their destructor ran, on purpose.
#if defined(__GNUC__) && !defined(__clang__)
#  pragma GCC diagnostic ignored "-Wuninitialized"
#  pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace {

using magpie::lifetime::stacklet_ledger;
using magpie::lifetime::tracked;
using magpie::lifetime::tracked_error;

TEST(lifetime, TrackedCountsConstructionAndDestruction) {
  long const live = magpie::lifetime::live();
  {
    tracked<int> a(1);
    tracked<int> b = a;            // copy
    tracked<int> c = std::move(a); // move
    EXPECT_EQ(magpie::lifetime::live(), live + 3);
    b = c;
    EXPECT_EQ(b.value(), 1);
  }
  EXPECT_EQ(magpie::lifetime::live(), live);
}

TEST(lifetime, TrackedDetectsDoubleDestructionAndUseAfterDestruction) {
  long const errors = magpie::lifetime::errors();
  alignas(tracked<int>) std::byte storage[sizeof(tracked<int>)];
  auto *t = ::new (storage) tracked<int>(7);
  t->~tracked();
  EXPECT_FALSE(t->alive());
  (void)t->value(); // read of a destroyed object
  EXPECT_EQ(magpie::lifetime::errors(), errors + 1);
  t->~tracked(); // double destruction
  EXPECT_EQ(magpie::lifetime::errors(), errors + 2);
  *t = tracked<int>(3); // assignment to a destroyed object
  EXPECT_EQ(magpie::lifetime::errors(), errors + 3);
  EXPECT_NE(magpie::lifetime::first_error(), nullptr);
  magpie::lifetime::reset_errors();
  // Rebalance the counters for the tests that follow (the double destruction counted twice).
  ::new (storage) tracked<int>(0);
}

/// Ends `t`'s lifetime out of line, as a frame's destruction does: the optimiser sees a store to an
/// object whose lifetime ends right after, which -flifetime-dse lets it remove unless it is
/// volatile (a plain store survived in GCC 12 only while an atomic increment followed it).
template <typename T>
[[gnu::noinline]] void destroy_out_of_line(T *t) {
  t->~T();
}

TEST(lifetime, TestSupportTrackedDetectsDoubleDestructionAndUseAfterDestruction) {
  using magpie::test::tracked_counters;
  using support_tracked = magpie::test::tracked;
  auto &c = tracked_counters();
  long const errors = c.errors.load();
  long const live = c.live();
  alignas(support_tracked) std::byte storage[sizeof(support_tracked)];
  auto *t = ::new (storage) support_tracked(7);
  EXPECT_TRUE(t->alive());
  destroy_out_of_line(t);
  EXPECT_EQ(c.errors.load(), errors) << "a first destruction is not an error";
  EXPECT_FALSE(t->alive()) << "the destructor's mark of death was optimised away";
  (void)t->value(); // read of a destroyed object
  EXPECT_EQ(c.errors.load(), errors + 1) << "a use after destruction was not reported";
  destroy_out_of_line(t); // double destruction
  EXPECT_EQ(c.errors.load(), errors + 2) << "a double destruction was not reported";
  *t = support_tracked(3); // assignment to a destroyed object
  EXPECT_EQ(c.errors.load(), errors + 3) << "an assignment to a destroyed object was not reported";
  // Rebalance the counters (the double destruction counted twice) and clear the errors.
  ::new (storage) support_tracked(0);
  EXPECT_EQ(c.live(), live);
  c.errors = errors;
}

TEST(lifetime, TrackedErrorCountsLiveExceptionObjects) {
  EXPECT_EQ(tracked_error::live(), 0);
  std::exception_ptr p;
  try {
    throw tracked_error(42);
  } catch (...) {
    p = std::current_exception();
  }
  EXPECT_EQ(tracked_error::live(), 1); // held by the exception_ptr
  p = nullptr;
  EXPECT_EQ(tracked_error::live(), 0);
}

TEST(lifetime, LedgerDetectsBadFreesAndLeaks) {
  stacklet_ledger ledger;
  // Reach the installed hooks by swapping them out and back.
  auto hooks = magpie::core::set_stacklet_allocator({nullptr, nullptr});
  magpie::core::set_stacklet_allocator(hooks);
  void *p = hooks.allocate(4096);
  EXPECT_EQ(ledger.live(), 1u);
  hooks.deallocate(p, 1024); // wrong size
  EXPECT_EQ(ledger.errors(), 1u);
  EXPECT_EQ(ledger.live(), 0u);
  int not_a_stacklet = 0;
  hooks.deallocate(&not_a_stacklet, 64); // unknown pointer (a double free looks like this)
  EXPECT_EQ(ledger.errors(), 2u);
  void *q = hooks.allocate(4096);
  EXPECT_EQ(ledger.live(), 1u); // a leak shows as a live stacklet
  hooks.deallocate(q, 4096);
  EXPECT_EQ(ledger.live(), 0u);
}

TEST(lifetime, LedgerInjectsFailures) {
  stacklet_ledger ledger;
  auto hooks = magpie::core::set_stacklet_allocator({nullptr, nullptr});
  magpie::core::set_stacklet_allocator(hooks);
  ledger.fail_after(1);
  void *p = hooks.allocate(128); // the first succeeds
  EXPECT_THROW(hooks.allocate(128), std::bad_alloc);
  void *q = hooks.allocate(128); // disarmed after firing
  hooks.deallocate(p, 128);
  hooks.deallocate(q, 128);
  EXPECT_EQ(ledger.injected(), 1u);
  EXPECT_EQ(ledger.live(), 0u);
  EXPECT_EQ(ledger.errors(), 0u);
}

TEST(lifetime, LedgerSeesEveryStackletOfAPool) {
  stacklet_ledger ledger;
  {
    magpie::lazy_pool pool(3);
    EXPECT_GE(ledger.live(), 3u); // every worker's first stacklet
  }
  EXPECT_EQ(ledger.live(), 0u);
  EXPECT_EQ(ledger.errors(), 0u);
  EXPECT_EQ(ledger.allocations(), ledger.deallocations());
}

} // namespace
