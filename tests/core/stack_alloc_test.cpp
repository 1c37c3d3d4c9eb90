// stack_alloc on every scheduler: arrays of many sizes (up to several MiB, far larger than a
// stacklet), value-initialised, nested in FILO order, alive across fork–join scopes (the task may
// be stolen and resumed elsewhere in between), of non-trivial element types.

#include <atomic>
#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "common/test_support.hpp"

namespace {

using namespace magpie::test;
using magpie::call;
using magpie::fork;
using magpie::join;
using magpie::stack_alloc;
using magpie::task;

class stack_alloc_test : public scheduler_test {};

task<long> sizes_in_one_task() {
  long bad = 0;
  // 0 bytes to 4 MiB; the large ones need stacklets far bigger than the current one.
  for (std::size_t n :
       {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{100}, std::size_t{2047},
        std::size_t{4096}, std::size_t{1} << 17, std::size_t{1} << 19}) {
    auto a = co_await stack_alloc<std::uint64_t>(n);
    EXPECT_EQ(a.size(), n);
    EXPECT_EQ(a.empty(), n == 0);
    for (std::size_t i = 0; i < n; ++i) {
      bad += a[i] != 0 ? 1 : 0; // value-initialised
    }
    fill(a, static_cast<int>(n));
    long w = 0;
    co_await fork(&w, fib, 12); // a fork–join scope while the array lives
    co_await call(fib, 10);
    co_await join();
    bad += w == serial_fib(12) ? 0 : 1;
    bad += damaged(a, static_cast<int>(n));
  }
  co_return bad;
}

TEST_P(stack_alloc_test, arrays_of_many_sizes_survive_fork_join_scopes) {
  EXPECT_EQ(m_sched.run(sizes_in_one_task), 0);
}

/// Each level allocates an array, forks two children (which do the same), joins, checks it,
/// allocates a second nested array after the join, runs another scope, checks both.
task<long> array_tree(int level, int tag) {
  std::size_t const n1 =
      level == 5 ? (std::size_t{1} << 17) : 17 + static_cast<std::size_t>(level) * 301;
  auto first = co_await stack_alloc<std::uint64_t>(n1); // 1 MiB at the top
  fill(first, tag);
  long bad = 0;
  long left = 0;
  long right = 0;
  if (level > 0) {
    co_await fork(&left, array_tree, level - 1, 2 * tag);
    co_await call(&right, array_tree, level - 1, 2 * tag + 1);
    co_await join();
  }
  bad += damaged(first, tag);
  {
    auto second = co_await stack_alloc<std::uint64_t>(n1 / 2 + 5000); // nested: freed first
    fill(second, -tag);
    long w = 0;
    if (level > 0) {
      co_await fork(&w, fib, 11);
      co_await fork(fib, 9);
      co_await join();
      bad += w == serial_fib(11) ? 0 : 1;
    }
    bad += damaged(first, tag);
    bad += damaged(second, -tag);
  }
  auto third = co_await stack_alloc<std::uint64_t>(7); // reuses the space of `second`
  fill(third, tag + 1);
  bad += damaged(first, tag) + damaged(third, tag + 1);
  co_return bad + left + right;
}

/// stack_alloc_uninitialized skips the zero-fill: the bytes a freed array left are still there
/// (the stack reuses them, FILO), where stack_alloc would have zeroed them.
task<long> uninitialized_arrays(std::size_t n) {
  long bad = 0;
  {
    auto scratch = co_await stack_alloc<std::uint64_t>(n);
    for (auto &x : scratch) {
      x = 0xabababababababab;
    }
  }
  {
    auto raw = co_await magpie::stack_alloc_uninitialized<std::uint64_t>(n);
    EXPECT_EQ(raw.size(), n);
    for (auto x : raw) {
      bad += x == 0xabababababababab ? 0 : 1; // not zeroed: what the freed array left
    }
    fill(raw, 7); // usable as any array, across a fork–join scope
    long w = 0;
    co_await fork(&w, fib, 12);
    co_await join();
    bad += w == serial_fib(12) ? 0 : 1;
    bad += damaged(raw, 7);
  }
  auto zeroed = co_await stack_alloc<std::uint64_t>(n); // the same bytes, value-initialised
  for (auto x : zeroed) {
    bad += x == 0 ? 0 : 1;
  }
  co_return bad;
}

TEST_P(stack_alloc_test, uninitialized_arrays_are_not_zero_filled) {
  for (std::size_t n : {std::size_t{1}, std::size_t{100}, std::size_t{1} << 16}) {
    EXPECT_EQ(m_sched.run(uninitialized_arrays, n), 0) << n;
  }
}

TEST_P(stack_alloc_test, nested_arrays_in_a_tree_of_tasks) {
  EXPECT_EQ(m_sched.run(array_tree, 5, 1), 0);
  EXPECT_EQ(m_sched.run(array_tree, 5, 1), 0);
  EXPECT_GT(magpie::core::get_stack_stats().bytes_peak, std::size_t{1} << 20)
      << "the 1 MiB arrays should have needed stacklets of more than 1 MiB";
}

task<long> string_arrays(int n) {
  auto names = co_await stack_alloc<std::string>(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    EXPECT_TRUE(names[static_cast<std::size_t>(i)].empty());
    names[static_cast<std::size_t>(i)] =
        "name number " + std::to_string(i) + " long enough to be on the heap";
  }
  auto objects = co_await stack_alloc<tracked>(static_cast<std::size_t>(n));
  long w = 0;
  co_await fork(&w, fib, 13);
  co_await join();
  long ok = 0;
  for (int i = 0; i < n; ++i) {
    ok += names[static_cast<std::size_t>(i)] ==
                  "name number " + std::to_string(i) + " long enough to be on the heap"
              ? 1
              : 0;
    ok += objects[static_cast<std::size_t>(i)].alive() ? 1 : 0;
  }
  co_return ok + (w == serial_fib(13) ? 0 : -100000);
}

TEST_P(stack_alloc_test, non_trivial_element_types_are_constructed_and_destroyed) {
  tracked_counters().reset();
  EXPECT_EQ(m_sched.run(string_arrays, 300), 600);
  EXPECT_EQ(tracked_counters().constructed.load(), 300);
  EXPECT_EQ(tracked_counters().live(), 0) << "stack_array did not destroy its elements";
  EXPECT_EQ(tracked_counters().errors.load(), 0);
}

task<long> stack_alloc_in_forked_children(int depth) {
  // Children allocate too: their arrays sit above their frames on whichever stack runs them.
  auto mine = co_await stack_alloc<std::uint64_t>(64 + static_cast<std::size_t>(depth) * 10);
  fill(mine, depth);
  long sum = 0;
  if (depth > 0) {
    long parts[4] = {};
    for (long &p : parts) {
      co_await fork(&p, stack_alloc_in_forked_children, depth - 1);
    }
    co_await join();
    for (long p : parts) {
      sum += p;
    }
  }
  co_return sum + 1 + 1000000 * damaged(mine, depth);
}

TEST_P(stack_alloc_test, arrays_in_many_forked_children) {
  EXPECT_EQ(m_sched.run(stack_alloc_in_forked_children, 5), (1 + 4 + 16 + 64 + 256 + 1024));
}

// An exception unwinds arrays inside a fork–join scope whose continuation may have been stolen:
// the arrays' memory lies on the task's own chain, which the runtime must free only once the task
// has it back. Nothing may leak, crash, or be freed out of order.
task<long> busy_child(int n) {
  long r = 0;
  co_await call(&r, fib, n);
  co_return r;
}

task<long> arrays_then_throw(int id) {
  auto outer = co_await stack_alloc<std::uint64_t>(300);
  auto inner = co_await stack_alloc<std::uint64_t>(5000);
  fill(outer, 1);
  fill(inner, 2);
  for (int i = 0; i < 4; ++i) {
    co_await fork(busy_child, 13);
  }
  throw counted_error(id); // unwinds `inner`, then `outer`, inside the scope
}

task<long> catch_arrays_then_throw() {
  long caught = 0;
  auto keep = co_await stack_alloc<std::uint64_t>(100); // below the thrower's frame
  fill(keep, 3);
  for (int i = 0; i < 8; ++i) {
    try {
      co_await call(arrays_then_throw, i);
      co_await join();
    } catch (counted_error const &e) {
      caught += e.id == i ? 1 : 0;
    }
    long w = 0;
    co_await fork(&w, fib, 11); // the stack is consistent afterwards
    co_await join();
    caught += w == serial_fib(11) ? 0 : -1000;
  }
  co_return caught + damaged(keep, 3) * -1000;
}

TEST_P(stack_alloc_test, arrays_unwound_by_an_exception_inside_a_scope) {
  counted_error::live() = 0;
  auto const before = magpie::core::get_stack_stats();
  {
    any_scheduler s(GetParam());
    for (int round = 0; round < 3; ++round) {
      EXPECT_EQ(s.run(catch_arrays_then_throw), 8);
    }
  } // the scheduler's stacks are freed here
  EXPECT_EQ(counted_error::live().load(), 0);
  EXPECT_EQ(magpie::core::get_stack_stats().stacklets_live, before.stacklets_live)
      << "stacklets leaked";
  EXPECT_EQ(magpie::core::get_stack_stats().bytes_live, before.bytes_live);
}

INSTANTIATE_TEST_SUITE_P(all, stack_alloc_test, ::testing::ValuesIn(all_schedulers()),
                         sched_name{});

} // namespace
