// Arguments and parameters of children: every form that fork and call accept keeps its referents
// alive while the child runs, and every parameter is destroyed exactly once — also when the
// callable handed to fork/call is a plain adapter that returns another coroutine's task. The
// forms fork rejects are build-must-fail tests: tests/compile_fail/fork_*.cpp.

#include <cstddef>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_support.hpp"

namespace {

using namespace magpie::test;
using magpie::call;
using magpie::fork;
using magpie::join;
using magpie::task;

class argument_lifetime : public scheduler_test {};

// --- adapters: a plain function returning another coroutine's task ----------------------------

/// Parameters that need destroying: the frame of `impl` must be destroyed, not just released.
task<long> impl(int n, std::vector<int> v, tracked t) {
  long f = 0;
  co_await call(&f, fib, 8); // 21
  co_return n + static_cast<long>(v.size()) + t.value() + f;
}

/// The adapter's own parameters are trivial; only `impl`'s promise sees the real ones.
task<long> adapter(int n) {
  return impl(n, std::vector<int>(static_cast<std::size_t>(n)), tracked{n});
}

long adapter_value(int n) { return n + n + n + 21; }

task<long> fork_adapters(int n) {
  std::vector<long> r(static_cast<std::size_t>(n));
  auto lambda_adapter = [](int k) { return adapter(k); }; // an adapter that is a closure
  for (int i = 0; i < n; ++i) {
    if (i % 2 == 0) {
      co_await fork(&r[static_cast<std::size_t>(i)], adapter, i + 1);
    } else {
      co_await fork(&r[static_cast<std::size_t>(i)], lambda_adapter, i + 1);
    }
  }
  long c = 0;
  co_await call(&c, adapter, 5);
  co_await join();
  co_return std::accumulate(r.begin(), r.end(), c);
}

TEST_P(argument_lifetime, parameters_behind_an_adapter_are_destroyed_exactly_once) {
  tracked_counters().reset();
  long expect = adapter_value(5);
  for (int i = 0; i < 64; ++i) {
    expect += adapter_value(i + 1);
  }
  for (int round = 0; round < 8; ++round) {
    EXPECT_EQ(m_sched.run(fork_adapters, 64), expect);
    EXPECT_EQ(m_sched.run(adapter, 7), adapter_value(7)); // an adapter as the root
  }
  EXPECT_EQ(tracked_counters().constructed.load() - tracked_counters().moves.load(), 8 * 66)
      << "every adapter call makes one tracked value";
  EXPECT_EQ(tracked_counters().live(), 0) << "a parameter of impl() was never destroyed";
  EXPECT_EQ(tracked_counters().errors.load(), 0) << "a dead parameter was used or destroyed";
}

// --- reference parameters bound to the parent's lvalues ----------------------------------------

/// Reads its reference parameter after forking and joining (the parent has likely moved on).
task<long> read_after_join(int const &x, int work) {
  long f = 0;
  co_await fork(&f, fib, work);
  co_await join();
  co_return x + f;
}

task<long> fork_readers(int n) {
  std::vector<int> values(static_cast<std::size_t>(n));
  std::iota(values.begin(), values.end(), 1000);
  std::vector<long> r(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    // An lvalue in the parent's frame (the vector outlives the join): accepted by fork.
    co_await fork(&r[static_cast<std::size_t>(i)], read_after_join,
                  values[static_cast<std::size_t>(i)], 6);
  }
  co_await join();
  co_return std::accumulate(r.begin(), r.end(), 0L);
}

TEST_P(argument_lifetime, reference_parameters_bound_to_parent_lvalues_stay_valid) {
  constexpr int n = 200;
  long const expect = n * 1000L + n * (n - 1) / 2 + n * 8L; // fib(6) = 8
  for (int round = 0; round < 10; ++round) {
    ASSERT_EQ(m_sched.run(fork_readers, n), expect);
  }
}

// --- call may bind temporaries to reference parameters -----------------------------------------

task<long> call_with_temporaries(int n) {
  long sum = 0;
  for (int i = 0; i < n; ++i) {
    long r = 0;
    // The temporary i + 1000 lives until the end of this full-expression, which call does not
    // leave before the child returns, however the child's own forks are stolen.
    co_await call(&r, read_after_join, i + 1000, 5);
    sum += r;
  }
  co_return sum;
}

TEST_P(argument_lifetime, call_keeps_temporaries_alive_for_the_child) {
  constexpr int n = 200;
  long const expect = n * 1000L + n * (n - 1) / 2 + n * 5L; // fib(5) = 5
  for (int round = 0; round < 5; ++round) {
    ASSERT_EQ(m_sched.run(call_with_temporaries, n), expect);
  }
}

// --- named closures and member functions --------------------------------------------------------

struct accumulator {
  long base;
  task<long> add(int k) const {
    long f = 0;
    co_await fork(&f, fib, 5);
    co_await join();
    co_return base + k + f;
  }
};

task<long> closures_and_members(int n) {
  tracked const captured{100}; // captured by copy: the closure (a named local) owns it
  auto with_captures = [captured](int k) -> task<long> {
    long f = 0;
    co_await fork(&f, fib, 5);
    co_await join();
    co_return captured.value() + k + f;
  };
  accumulator const acc{200};
  std::vector<long> r(static_cast<std::size_t>(3 * n));
  for (int i = 0; i < n; ++i) {
    co_await fork(&r[static_cast<std::size_t>(3 * i)], with_captures, i);
    co_await fork(&r[static_cast<std::size_t>(3 * i + 1)], &accumulator::add, acc, i);
    co_await fork(&r[static_cast<std::size_t>(3 * i + 2)], &accumulator::add, &acc, i);
  }
  co_await join();
  co_return std::accumulate(r.begin(), r.end(), 0L);
}

TEST_P(argument_lifetime, named_closures_and_member_functions_outlive_their_children) {
  tracked_counters().reset();
  constexpr int n = 100;
  long const expect = n * (100L + 200L + 200L) + 3L * n * (n - 1) / 2 + 3L * n * 5L;
  for (int round = 0; round < 5; ++round) {
    ASSERT_EQ(m_sched.run(closures_and_members, n), expect);
  }
  EXPECT_EQ(tracked_counters().live(), 0);
  EXPECT_EQ(tracked_counters().errors.load(), 0) << "a capture was used after its closure died";
}

INSTANTIATE_TEST_SUITE_P(all, argument_lifetime, ::testing::ValuesIn(all_schedulers()),
                         sched_name{});

} // namespace
