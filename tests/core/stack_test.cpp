// Tests of core::stack, the geometric segmented stack: FILO bump allocation, geometric growth,
// the one-stacklet cache against hot splitting, release/adopt of whole chains (the stack hand-off
// of the join protocol), the context's spare chain, and the allocator hooks.
//
// Statistics are process-wide; this executable runs no pool, so every change is ours.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <vector>

#include <gtest/gtest.h>

#include "magpie/core/context.hpp"
#include "magpie/core/stack.hpp"

namespace {

using magpie::core::context;
using magpie::core::get_stack_stats;
using magpie::core::stack;
using magpie::core::stacklet;

struct block {
  std::byte *ptr;
  std::size_t bytes;
  unsigned char fill;
};

void fill(block const &b) { std::memset(b.ptr, b.fill, b.bytes); }
bool intact(block const &b) {
  return std::all_of(b.ptr, b.ptr + b.bytes, [&](std::byte x) { return x == std::byte{b.fill}; });
}

TEST(stack, filo_allocations_are_aligned_disjoint_and_intact) {
  auto const before = get_stack_stats();
  {
    stack s;
    EXPECT_TRUE(s.empty());
    std::vector<block> blocks;
    std::size_t total = 0;
    for (int i = 0; total < 4 * stack::initial_capacity; ++i) {
      std::size_t const bytes = 1 + (static_cast<std::size_t>(i) * 37) % 700;
      auto *p = static_cast<std::byte *>(s.allocate(bytes));
      ASSERT_NE(p, nullptr);
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % stacklet::alignment, 0u);
      EXPECT_TRUE(s.is_top(p, bytes));
      blocks.push_back({p, bytes, static_cast<unsigned char>(i)});
      fill(blocks.back());
      total += bytes;
      EXPECT_FALSE(s.empty());
    }
    // No two live blocks overlap.
    std::vector<block> sorted = blocks;
    std::sort(sorted.begin(), sorted.end(),
              [](block const &a, block const &b) { return a.ptr < b.ptr; });
    for (std::size_t i = 1; i < sorted.size(); ++i) {
      EXPECT_LE(sorted[i - 1].ptr + sorted[i - 1].bytes, sorted[i].ptr);
    }
    // Free in FILO order; each block is still intact when it is freed, and the next one down is
    // the top afterwards.
    while (!blocks.empty()) {
      block const b = blocks.back();
      blocks.pop_back();
      EXPECT_TRUE(intact(b)) << "block of " << b.bytes << " bytes was overwritten";
      EXPECT_TRUE(s.is_top(b.ptr, b.bytes));
      s.deallocate(b.ptr);
      if (!blocks.empty()) {
        EXPECT_TRUE(s.is_top(blocks.back().ptr, blocks.back().bytes));
      }
    }
    EXPECT_TRUE(s.empty());
    EXPECT_GT(get_stack_stats().stacklets_allocated - before.stacklets_allocated, 1u)
        << "four stacklets' worth of data should have needed several stacklets";
  }
  EXPECT_EQ(get_stack_stats().stacklets_live, before.stacklets_live)
      << "the stack leaked stacklets";
  EXPECT_EQ(get_stack_stats().bytes_live, before.bytes_live);
}

TEST(stack, growth_is_geometric) {
  auto const before = get_stack_stats();
  stack s;
  std::vector<void *> ptrs;
  std::vector<std::size_t> sizes; // bytes of each new stacklet, from the statistics
  auto last = get_stack_stats();
  while (sizes.size() < 8) {
    ptrs.push_back(s.allocate(512));
    auto const now = get_stack_stats();
    if (now.stacklets_allocated != last.stacklets_allocated) {
      ASSERT_EQ(now.stacklets_allocated, last.stacklets_allocated + 1);
      sizes.push_back(now.bytes_live - last.bytes_live);
    }
    last = now;
  }
  EXPECT_GE(sizes[0], stack::initial_capacity) << "the first stacklet has the initial capacity";
  for (std::size_t i = 1; i < sizes.size(); ++i) {
    EXPECT_GE(sizes[i], 2 * sizes[i - 1])
        << "stacklet " << i << " is not twice as large as the previous";
  }
  EXPECT_GE(get_stack_stats().bytes_peak, get_stack_stats().bytes_live);
  for (auto it = ptrs.rbegin(); it != ptrs.rend(); ++it) {
    s.deallocate(*it);
  }
  EXPECT_TRUE(s.empty());
  // All but the first stacklet and at most one cached successor are gone.
  EXPECT_LE(get_stack_stats().stacklets_live - before.stacklets_live, 2u);
}

TEST(stack, allocation_larger_than_twice_the_top_gets_a_stacklet_that_fits) {
  auto const before = get_stack_stats();
  {
    stack s;
    void *small = s.allocate(64);
    std::size_t const huge = 20 * stack::initial_capacity + 3;
    auto *p = static_cast<std::byte *>(s.allocate(huge));
    EXPECT_TRUE(s.is_top(p, huge));
    std::memset(p, 0xab, huge); // ASan: the whole block is addressable
    EXPECT_GE(get_stack_stats().bytes_live - before.bytes_live, huge);
    s.deallocate(p);
    EXPECT_TRUE(s.is_top(small, 64));
    s.deallocate(small);
    EXPECT_TRUE(s.empty());
  }
  EXPECT_EQ(get_stack_stats().stacklets_live, before.stacklets_live);
}

TEST(stack, hot_splitting_at_a_boundary_does_not_allocate_again) {
  stack s;
  s.ensure();
  // Fill the first stacklet exactly, so that every further allocation crosses the boundary.
  void *bottom = s.allocate(stack::initial_capacity);
  ASSERT_TRUE(s.is_top(bottom, stack::initial_capacity));
  // Warm-up: the first crossing creates the second stacklet.
  s.deallocate(s.allocate(256));
  auto const warm = get_stack_stats();
  for (int i = 0; i < 10000; ++i) {
    void *a = s.allocate(256);
    void *b = s.allocate(128);
    s.deallocate(b);
    s.deallocate(a);
  }
  auto const after = get_stack_stats();
  EXPECT_EQ(after.stacklets_allocated, warm.stacklets_allocated)
      << "crossing a stacklet boundary back and forth allocated new stacklets";
  EXPECT_EQ(after.stacklets_live, warm.stacklets_live);
  s.deallocate(bottom);
  EXPECT_TRUE(s.empty());
}

TEST(stack, at_most_one_empty_stacklet_is_cached) {
  auto const before = get_stack_stats();
  stack s;
  std::vector<void *> ptrs;
  // Grow to five stacklets, then free everything.
  while (get_stack_stats().stacklets_allocated - before.stacklets_allocated < 5) {
    ptrs.push_back(s.allocate(1024));
  }
  for (auto it = ptrs.rbegin(); it != ptrs.rend(); ++it) {
    s.deallocate(*it);
  }
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(get_stack_stats().stacklets_live - before.stacklets_live, 2u)
      << "an empty stack keeps its first stacklet and one cached successor";
  // A cached stacklet too small for a big request is replaced, not kept beside the new one.
  void *fill_first = s.allocate(stack::initial_capacity);
  void *big = s.allocate(64 * stack::initial_capacity);
  EXPECT_EQ(get_stack_stats().stacklets_live - before.stacklets_live, 2u);
  s.deallocate(big);
  s.deallocate(fill_first);
}

TEST(stack, release_and_adopt_move_a_chain_between_stacks) {
  auto const before = get_stack_stats();
  {
    stack a;
    std::vector<block> blocks;
    for (int i = 0; i < 40; ++i) { // spans several stacklets
      std::size_t const bytes = 900;
      blocks.push_back(
          {static_cast<std::byte *>(a.allocate(bytes)), bytes, static_cast<unsigned char>(i + 1)});
      fill(blocks.back());
    }
    stacklet *chain = a.release();
    ASSERT_NE(chain, nullptr);
    EXPECT_TRUE(a.empty()) << "a stack without a chain is empty";

    // `a` continues on a fresh chain, independent of the released one.
    auto const mid = get_stack_stats();
    void *fresh = a.allocate(100);
    EXPECT_EQ(get_stack_stats().stacklets_allocated, mid.stacklets_allocated + 1);
    EXPECT_TRUE(a.is_top(fresh, 100));

    // `b` adopts the chain and carries on exactly where `a` left it.
    stack b;
    b.adopt(chain);
    EXPECT_FALSE(b.empty());
    EXPECT_TRUE(b.is_top(blocks.back().ptr, blocks.back().bytes));
    void *more = b.allocate(5000);
    std::memset(more, 0, 5000);
    b.deallocate(more);
    while (!blocks.empty()) {
      EXPECT_TRUE(intact(blocks.back()));
      EXPECT_TRUE(b.is_top(blocks.back().ptr, blocks.back().bytes));
      b.deallocate(blocks.back().ptr);
      blocks.pop_back();
    }
    EXPECT_TRUE(b.empty());
    a.deallocate(fresh);
    EXPECT_TRUE(a.empty());

    // A released empty chain can be freed directly.
    stacklet *empty_chain = a.release();
    ASSERT_NE(empty_chain, nullptr);
    stacklet::destroy_empty_chain(empty_chain);
  }
  EXPECT_EQ(get_stack_stats().stacklets_live, before.stacklets_live) << "a chain leaked";
  EXPECT_EQ(get_stack_stats().bytes_live, before.bytes_live);
}

TEST(stack, a_chain_begun_after_a_park_starts_with_an_exact_stacklet) {
  auto const before = get_stack_stats();
  {
    stack s;
    s.ensure();
    void *parked_frame = s.allocate(300);
    void *probe = s.allocate(20000); // grows the chain: a cached segment stays above once freed
    s.deallocate(probe);
    auto const at_park = get_stack_stats();
    stacklet *parked = s.release(/*small_next=*/true);
    EXPECT_EQ(get_stack_stats().stacklets_live, at_park.stacklets_live - 1)
        << "a parked chain kept its cached empty segment";
    EXPECT_EQ(parked->prev(), nullptr);

    // The next chain's first stacklet is exactly the first frame (rounded to 16) plus a header.
    auto const mid = get_stack_stats();
    void *first = s.allocate(200);
    EXPECT_EQ(get_stack_stats().stacklets_allocated, mid.stacklets_allocated + 1);
    EXPECT_EQ(get_stack_stats().bytes_live,
              mid.bytes_live + sizeof(stacklet) + stack::round_up(200));
    // The segment above it has at least handoff_capacity bytes, not twice a tiny one.
    void *second = s.allocate(16);
    EXPECT_EQ(get_stack_stats().bytes_live, mid.bytes_live + 2 * sizeof(stacklet) +
                                                stack::round_up(200) + stack::handoff_capacity);
    std::memset(first, 1, 200);
    std::memset(second, 2, 16);
    s.deallocate(second);
    s.deallocate(first);
    EXPECT_TRUE(s.empty());

    // A frame larger than everything still fits in one exact stacklet.
    stacklet *chain = s.release(/*small_next=*/true);
    auto const big_mid = get_stack_stats();
    void *big = s.allocate(40000);
    EXPECT_EQ(get_stack_stats().bytes_live, big_mid.bytes_live + sizeof(stacklet) + 40000);
    s.deallocate(big);
    stacklet::destroy_empty_chain(chain);

    // A release that is not a park keeps the full-sized first stacklet for the next chain.
    stacklet *again = s.release();
    auto const full_mid = get_stack_stats();
    void *q = s.allocate(64);
    EXPECT_EQ(get_stack_stats().bytes_live,
              full_mid.bytes_live + sizeof(stacklet) + stack::initial_capacity);
    s.deallocate(q);
    stacklet::destroy_empty_chain(again);

    stack other;
    other.adopt(parked);
    EXPECT_TRUE(other.is_top(parked_frame, 300));
    other.deallocate(parked_frame);
  }
  EXPECT_EQ(get_stack_stats().stacklets_live, before.stacklets_live) << "a chain leaked";
  EXPECT_EQ(get_stack_stats().bytes_live, before.bytes_live);
}

TEST(stack, context_reuses_its_spare_chain) {
  auto const before = get_stack_stats();
  {
    context ctx;
    void *frame = ctx.stack().allocate(128);
    // Hand the chain away (as when a task suspends on it): the worker continues with no chain...
    stacklet *given = ctx.release_stack();
    EXPECT_TRUE(ctx.stack().empty());
    // ...and adopts another one later; its own empty chain becomes the spare.
    stack other;
    other.ensure();
    void *theirs = other.allocate(64);
    stacklet *taken = other.release();
    void *mine = ctx.stack().allocate(32); // a fresh chain for the worker meanwhile
    ctx.stack().deallocate(mine);
    ctx.adopt_stack(taken);
    EXPECT_TRUE(ctx.stack().is_top(theirs, 64));
    ctx.stack().deallocate(theirs);
    // Giving this chain away now uses the spare: no allocation.
    auto const mid = get_stack_stats();
    stacklet *again = ctx.release_stack();
    void *p = ctx.stack().allocate(64);
    EXPECT_EQ(get_stack_stats().stacklets_allocated, mid.stacklets_allocated)
        << "release_stack did not continue on the spare chain";
    ctx.stack().deallocate(p);
    stacklet::destroy_empty_chain(again);
    // Finally take the first chain back and free its frame.
    ctx.adopt_stack(given);
    EXPECT_TRUE(ctx.stack().is_top(frame, 128));
    ctx.stack().deallocate(frame);
    EXPECT_TRUE(ctx.stack().empty());
  }
  EXPECT_EQ(get_stack_stats().stacklets_live, before.stacklets_live) << "a chain leaked";
}

// Allocator hooks: count calls, and inject a failure.
std::size_t g_hook_allocs = 0;
std::size_t g_hook_frees = 0;
bool g_hook_fail = false;

void *counting_allocate(std::size_t bytes) {
  if (g_hook_fail) {
    throw std::bad_alloc();
  }
  ++g_hook_allocs;
  return ::operator new(bytes, std::align_val_t{64});
}
void counting_deallocate(void *p, std::size_t) noexcept {
  ++g_hook_frees;
  ::operator delete(p, std::align_val_t{64});
}

TEST(stack, allocator_hooks_see_every_stacklet_and_failures_leave_the_stack_usable) {
  auto const old = magpie::core::set_stacklet_allocator({&counting_allocate, &counting_deallocate});
  g_hook_allocs = g_hook_frees = 0;
  {
    stack s;
    void *a = s.allocate(stack::initial_capacity); // fills the first stacklet
    EXPECT_EQ(g_hook_allocs, 1u);
    g_hook_fail = true;
    EXPECT_THROW((void)s.allocate(64), std::bad_alloc);
    g_hook_fail = false;
    EXPECT_TRUE(s.is_top(a, stack::initial_capacity)) << "a failed allocation changed the stack";
    void *b = s.allocate(64);
    EXPECT_EQ(g_hook_allocs, 2u);
    s.deallocate(b);
    s.deallocate(a);
  }
  EXPECT_EQ(g_hook_allocs, g_hook_frees)
      << "stacklets allocated through the hook were not freed through it";
  magpie::core::set_stacklet_allocator(old);
}

} // namespace
