// Tests of task/fork/call/join semantics on every scheduler: return values of non-trivial types,
// void tasks and discarded values, reference arguments into the parent's frame, the lifetime of
// by-value arguments, several join scopes in one task.

#include <array>
#include <atomic>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_support.hpp"

namespace {

using namespace magpie::test;
using magpie::call;
using magpie::fork;
using magpie::join;
using magpie::task;

class task_test : public scheduler_test {};

// --- non-trivial return values --------------------------------------------------------------

task<std::string> tree_string(int depth) {
  if (depth == 0) {
    co_return std::string("leaf-with-a-long-enough-text-to-defeat-sso");
  }
  std::string left;
  std::string right;
  co_await fork(&left, tree_string, depth - 1);
  co_await call(&right, tree_string, depth - 1);
  co_await join();
  co_return "(" + left + "," + right + ")";
}

std::string serial_tree_string(int depth) {
  if (depth == 0) {
    return "leaf-with-a-long-enough-text-to-defeat-sso";
  }
  return "(" + serial_tree_string(depth - 1) + "," + serial_tree_string(depth - 1) + ")";
}

TEST_P(task_test, string_results_through_fork_and_call) {
  EXPECT_EQ(m_sched.run(tree_string, 0), serial_tree_string(0));
  EXPECT_EQ(m_sched.run(tree_string, 7), serial_tree_string(7));
}

task<std::vector<int>> range_vector(int lo, int hi) {
  if (hi - lo <= 16) {
    std::vector<int> v(static_cast<std::size_t>(hi - lo));
    std::iota(v.begin(), v.end(), lo);
    co_return v;
  }
  int const mid = lo + (hi - lo) / 2;
  std::vector<int> a;
  std::vector<int> b;
  co_await fork(&a, range_vector, lo, mid);
  co_await call(&b, range_vector, mid, hi);
  co_await join();
  a.insert(a.end(), b.begin(), b.end());
  co_return a;
}

TEST_P(task_test, vector_results_through_fork_and_call) {
  std::vector<int> const v = m_sched.run(range_vector, 3, 3000);
  ASSERT_EQ(v.size(), 2997u);
  for (std::size_t i = 0; i < v.size(); ++i) {
    ASSERT_EQ(v[i], static_cast<int>(i) + 3);
  }
}

// --- void tasks, discarded values -------------------------------------------------------------

task<void> count_leaves(std::atomic<long> *counter, int depth) {
  if (depth == 0) {
    counter->fetch_add(1, std::memory_order_relaxed);
    co_return;
  }
  for (int i = 0; i < 3; ++i) {
    co_await fork(count_leaves, counter, depth - 1); // no return pointer: task<void>
  }
  co_await call(count_leaves, counter, depth - 1);
  co_await join();
}

TEST_P(task_test, void_tasks_through_fork_and_call_without_pointer) {
  std::atomic<long> counter{0};
  m_sched.run(count_leaves, &counter, 6);
  EXPECT_EQ(counter.load(), 4096); // 4^6
}

task<long> discard_some(std::atomic<long> *ran) {
  long kept = 0;
  co_await fork(fib, 15); // value discarded
  co_await call(fib, 12); // value discarded
  co_await fork(&kept, fib, 16);
  co_await join();
  ran->fetch_add(1);
  co_return kept;
}

TEST_P(task_test, discarded_values) {
  std::atomic<long> ran{0};
  EXPECT_EQ(m_sched.run(discard_some, &ran), serial_fib(16));
  EXPECT_EQ(ran.load(), 1);
}

// --- references into the parent's frame ------------------------------------------------------

task<void> fib_into(long &slot, int n) { co_await call(&slot, fib, n); }

task<long> sum_range(std::vector<long> const &data, std::size_t lo, std::size_t hi) {
  if (hi - lo <= 64) {
    co_return std::accumulate(data.begin() + static_cast<std::ptrdiff_t>(lo),
                              data.begin() + static_cast<std::ptrdiff_t>(hi), 0L);
  }
  std::size_t const mid = lo + (hi - lo) / 2;
  long a = 0;
  long b = 0;
  co_await fork(&a, sum_range, data, lo, mid); // `data` is passed by reference all the way down
  co_await call(&b, sum_range, data, mid, hi);
  co_await join();
  co_return a + b;
}

task<long> reference_arguments() {
  std::array<long, 12> slots{};
  for (std::size_t i = 0; i < slots.size(); ++i) {
    co_await fork(fib_into, slots[i], static_cast<int>(i) + 5); // a reference into our frame
  }
  co_await join();
  for (std::size_t i = 0; i < slots.size(); ++i) {
    EXPECT_EQ(slots[i], serial_fib(static_cast<int>(i) + 5)) << "slot " << i;
  }
  std::vector<long> data(10000);
  std::iota(data.begin(), data.end(), 1);
  long sum = 0;
  co_await call(&sum, sum_range, data, std::size_t{0}, data.size());
  co_return sum;
}

TEST_P(task_test, reference_arguments_into_the_parent_frame) {
  EXPECT_EQ(m_sched.run(reference_arguments), 10000L * 10001 / 2);
}

TEST_P(task_test, sync_wait_arguments_by_reference) {
  std::vector<long> data(5000, 3);
  EXPECT_EQ(m_sched.run(sum_range, data, std::size_t{0}, data.size()), 15000);
}

// --- several join scopes in one task ------------------------------------------------------------

task<long> many_scopes(int scopes) {
  long total = 0;
  for (int s = 0; s < scopes; ++s) {
    long a = 0;
    long b = 0;
    long c = 0;
    co_await fork(&a, fib, 10 + s % 5);
    co_await fork(&b, fib, 9);
    co_await call(&c, fib, 8);
    co_await join();
    total += a + b + c;
    if (s % 3 == 0) {
      co_await join(); // an empty join is harmless
    }
  }
  co_return total;
}

TEST_P(task_test, several_join_scopes_in_one_task) {
  long expect = 0;
  for (int s = 0; s < 40; ++s) {
    expect += serial_fib(10 + s % 5) + serial_fib(9) + serial_fib(8);
  }
  EXPECT_EQ(m_sched.run(many_scopes, 40), expect);
}

// --- lifetime of by-value arguments -------------------------------------------------------------

task<long> consume(tracked t, int depth) {
  if (depth == 0) {
    co_return t.value();
  }
  long a = 0;
  long b = 0;
  long c = 0;
  co_await fork(&a, consume, t, depth - 1);              // copy of our parameter
  co_await fork(&b, consume, tracked{depth}, depth - 1); // a temporary, moved
  tracked local{2 * depth};
  co_await call(&c, consume, std::move(local), depth - 1); // moved from a local
  co_await join();
  co_return a + b + c + t.value();
}

long serial_consume(long t, int depth) {
  if (depth == 0) {
    return t;
  }
  return serial_consume(t, depth - 1) + serial_consume(depth, depth - 1) +
         serial_consume(2 * depth, depth - 1) + t;
}

task<tracked> make_tracked(long v) { co_return tracked{v}; }

task<long> tracked_results(int n) {
  std::vector<tracked> out(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    co_await fork(&out[static_cast<std::size_t>(i)], make_tracked, long{i});
  }
  co_await join();
  long sum = 0;
  for (auto const &t : out) {
    sum += t.value();
  }
  co_return sum;
}

TEST_P(task_test, by_value_arguments_are_destroyed_exactly_once) {
  tracked_counters().reset();
  {
    tracked root{7};
    EXPECT_EQ(m_sched.run(consume, root, 6), serial_consume(7, 6));
    EXPECT_EQ(m_sched.run(consume, tracked{1}, 5), serial_consume(1, 5));
    EXPECT_EQ(m_sched.run(tracked_results, 50), 50 * 49 / 2);
    tracked const r = m_sched.run(make_tracked, 99L);
    EXPECT_EQ(r.value(), 99);
  }
  EXPECT_GT(tracked_counters().constructed.load(), 1000) << "the test did not exercise anything";
  EXPECT_EQ(tracked_counters().live(), 0) << "constructions and destructions do not balance";
  EXPECT_EQ(tracked_counters().errors.load(), 0)
      << "a destroyed object was used or destroyed again";
}

std::atomic<int> g_no_parameter_calls{0};
task<void> no_parameters() {
  g_no_parameter_calls.fetch_add(1);
  co_return;
}
task<int> one_value() { co_return 5; }

task<int> fork_functions_without_parameters() {
  int v = 0;
  co_await fork(no_parameters); // once rejected by Clang while checking argument lifetimes
  co_await fork(&v, one_value);
  co_await call(no_parameters);
  co_await join();
  co_return v;
}

TEST_P(task_test, fork_and_call_functions_without_parameters) {
  g_no_parameter_calls = 0;
  EXPECT_EQ(m_sched.run(fork_functions_without_parameters), 5);
  EXPECT_EQ(g_no_parameter_calls.load(), 2);
}

INSTANTIATE_TEST_SUITE_P(all, task_test, ::testing::ValuesIn(all_schedulers()), sched_name{});

} // namespace
