// Work/span analysis (magpie/trace/work_span.hpp) on programs whose work and span are known:
// counted in units the tasks charge (deterministic), and timed with the steady clock (only what
// holds whatever the machine does). Built twice (tests/trace/CMakeLists.txt): against the default
// library, where the probe must refuse clearly, and against the MAGPIE_OBSERVE_TASKS build.

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "magpie/magpie.hpp"

#include "common/test_support.hpp"

namespace {

using magpie::trace::work_span;
using magpie::trace::work_span_clock;
using magpie::trace::work_span_options;

constexpr work_span_options units{work_span_clock::units, 0};

/// fib with one unit of work per task: T1 = tasks = 2 fib(n+1) − 1, T∞ = n (n ≥ 1).
magpie::task<long> unit_fib(int n) {
  magpie::trace::charge(1);
  if (n < 2) {
    co_return n;
  }
  long a = 0;
  long b = 0;
  co_await magpie::fork(&a, unit_fib, n - 1);
  co_await magpie::call(&b, unit_fib, n - 2);
  co_await magpie::join();
  co_return a + b;
}

long serial_fib(int n) { return n < 2 ? n : serial_fib(n - 1) + serial_fib(n - 2); }

/// A chain of `depth` calls, each charging `cost` before it calls the next.
magpie::task<void> called_chain(int depth, std::uint64_t cost) {
  magpie::trace::charge(cost);
  if (depth > 1) {
    co_await magpie::call(called_chain, depth - 1, cost);
  }
}

/// A chain of `depth` forks, each joined at once: no parallelism either.
magpie::task<void> forked_chain(int depth, std::uint64_t cost) {
  magpie::trace::charge(cost);
  if (depth > 1) {
    co_await magpie::fork(forked_chain, depth - 1, cost);
    co_await magpie::join();
  }
}

/// A chain of calls burning real time (for the steady clock).
magpie::task<void> spinning_chain(int depth) {
  (void)magpie::test::spin_work(2000);
  if (depth > 1) {
    co_await magpie::call(spinning_chain, depth - 1);
  }
}

magpie::task<void> leaf(std::uint64_t cost) {
  magpie::trace::charge(cost);
  co_return;
}

/// `k` independent leaves of `cost` units each, forked in a loop, then one join.
magpie::task<void> leaves(int k, std::uint64_t cost) {
  for (int i = 0; i < k; ++i) {
    co_await magpie::fork(leaf, cost);
  }
  co_await magpie::join();
}

class work_span_test : public ::testing::Test {
protected:
  void SetUp() override {
    if constexpr (!magpie::core::observes_tasks) {
      GTEST_SKIP() << "needs MAGPIE_OBSERVE_TASKS (tasks.work_span_test.* runs it)";
    }
  }
};

TEST_F(work_span_test, serial_chain_has_parallelism_one) {
  for (int depth : {1, 2, 10, 100}) {
    work_span const c = magpie::trace::measure_work_span(units, called_chain, depth, 3);
    EXPECT_EQ(c.work, 3u * depth);
    EXPECT_EQ(c.span, 3u * depth);
    EXPECT_EQ(c.parallelism(), 1.0);
    EXPECT_EQ(c.calls, static_cast<unsigned>(depth - 1));
    work_span const f = magpie::trace::measure_work_span(units, forked_chain, depth, 3);
    EXPECT_EQ(f.work, 3u * depth);
    EXPECT_EQ(f.span, 3u * depth);
    EXPECT_EQ(f.parallelism(), 1.0);
    EXPECT_EQ(f.forks, static_cast<unsigned>(depth - 1));
    EXPECT_EQ(f.joins, static_cast<unsigned>(depth - 1));
    EXPECT_EQ(f.speedup_upper(64), 1.0);
    // Each fork burdens its continuation, and its child's return edge: one burden per level.
    work_span const b =
        magpie::trace::measure_work_span({work_span_clock::units, 2}, forked_chain, depth, 3);
    EXPECT_EQ(b.burdened_span, 3u * depth + 2u * (depth - 1));
  }
}

TEST_F(work_span_test, serial_chain_has_parallelism_one_in_time) {
  // Exact whatever the clock reads: without forks every ns is on the one path. (A forked chain
  // is not quite serial in time: the continuation between a child's return and the join runs
  // in parallel with the child in the DAG.)
  work_span const r = magpie::trace::measure_work_span({}, spinning_chain, 50);
  EXPECT_EQ(r.clock, work_span_clock::steady);
  EXPECT_GT(r.work, 0u);
  EXPECT_EQ(r.span, r.work);
  EXPECT_EQ(r.parallelism(), 1.0);
  EXPECT_EQ(r.burden, magpie::trace::default_burden_ns);
  EXPECT_EQ(r.burdened_span, r.work); // no fork, no burden
  EXPECT_GT(r.event_cost, 0u);        // calibrated: a clock read costs something
  work_span const cpu =
      magpie::trace::measure_work_span({work_span_clock::thread_cpu, -1}, spinning_chain, 50);
  EXPECT_EQ(cpu.clock, work_span_clock::thread_cpu);
  EXPECT_GT(cpu.work, 0u);
  EXPECT_EQ(cpu.span, cpu.work);
  EXPECT_EQ(cpu.tasks, 50u);
}

TEST_F(work_span_test, independent_leaves_have_parallelism_k) {
  for (int k : {1, 2, 8, 64}) {
    work_span const r = magpie::trace::measure_work_span(units, leaves, k, 10);
    EXPECT_EQ(r.work, 10u * k);
    EXPECT_EQ(r.span, 10u);
    EXPECT_EQ(r.parallelism(), static_cast<double>(k));
    EXPECT_EQ(r.tasks, static_cast<unsigned>(k + 1));
    EXPECT_EQ(r.forks, static_cast<unsigned>(k));
    EXPECT_EQ(r.joins, 1u);
  }
  // Burdened: each fork burdens the continuation, the last child's return edge too: k·b + cost.
  work_span const b =
      magpie::trace::measure_work_span({work_span_clock::units, 5}, leaves, 8, std::uint64_t{10});
  EXPECT_EQ(b.burden, 5u);
  EXPECT_EQ(b.burdened_span, 8u * 5 + 10);
  EXPECT_DOUBLE_EQ(b.burdened_parallelism(), 80.0 / 50.0);
}

TEST_F(work_span_test, predicted_speedups) {
  work_span const r = magpie::trace::measure_work_span(units, leaves, 8, std::uint64_t{10});
  EXPECT_DOUBLE_EQ(r.speedup_upper(1), 1.0);
  EXPECT_DOUBLE_EQ(r.speedup_upper(2), 2.0);
  EXPECT_DOUBLE_EQ(r.speedup_upper(64), 8.0);
  // Greedy bound with the (here unburdened) span: T1 / (T1/P + T∞) = 80 / (40 + 10).
  EXPECT_DOUBLE_EQ(r.speedup_lower(2), 1.6);
  EXPECT_DOUBLE_EQ(r.speedup_lower(1), 80.0 / 90.0);
  for (unsigned p : work_span::worker_counts()) {
    EXPECT_LE(r.speedup_lower(p), r.speedup_upper(p)) << p;
  }
  std::string const json = r.to_json();
  EXPECT_NE(json.find("\"clock\":\"units\",\"work\":80,\"span\":10,"), std::string::npos) << json;
  EXPECT_NE(json.find("{\"workers\":2,\"lower\":1.6,\"upper\":2}"), std::string::npos) << json;
  EXPECT_NE(json.find("{\"workers\":64,\"lower\":"), std::string::npos) << json;
  std::string const table = r.to_table();
  EXPECT_NE(table.find("parallelism            8.00"), std::string::npos) << table;
  EXPECT_NE(table.find("      2      1.60 .. 2.00"), std::string::npos) << table;
}

TEST_F(work_span_test, fib_span_grows_linearly) {
  std::vector<std::uint64_t> spans;
  for (int n = 15; n <= 25; ++n) {
    work_span const r = magpie::trace::measure_work_span(units, unit_fib, n);
    std::uint64_t const tasks = 2 * static_cast<std::uint64_t>(serial_fib(n + 1)) - 1;
    EXPECT_EQ(r.work, tasks) << n;
    EXPECT_EQ(r.tasks, tasks) << n;
    EXPECT_EQ(r.forks, (tasks - 1) / 2) << n;
    EXPECT_EQ(r.calls, (tasks - 1) / 2) << n;
    EXPECT_EQ(r.joins, (tasks - 1) / 2) << n; // one per inner task
    EXPECT_EQ(r.span, static_cast<std::uint64_t>(n)) << n;
    spans.push_back(r.span);
  }
  for (std::size_t i = 1; i < spans.size(); ++i) {
    EXPECT_EQ(spans[i] - spans[i - 1], 1u); // a line of slope one task per level
  }
  // Burden 3 per fork: each level adds its own unit and one burden (the forked branch is the
  // deeper one): 1 + 4 (n − 1).
  for (int n : {1, 2, 10, 20}) {
    work_span const r = magpie::trace::measure_work_span({work_span_clock::units, 3}, unit_fib, n);
    EXPECT_EQ(r.burdened_span, 4u * static_cast<unsigned>(n) - 3) << n;
  }
}

TEST_F(work_span_test, fib_in_time_is_consistent) {
  work_span const r = magpie::trace::measure_work_span({}, magpie::test::fib, 18);
  EXPECT_GT(r.work, 0u);
  EXPECT_LE(r.span, r.work); // whatever the clock reads: the span is a part of the work
  // Every path crosses the root's fork (a burden on either edge); the leftmost one 17 forks.
  EXPECT_GE(r.burdened_span, r.span + r.burden);
  EXPECT_GE(r.burdened_span, 17 * r.burden);
  EXPECT_EQ(r.tasks, 2 * static_cast<std::uint64_t>(serial_fib(19)) - 1);
  EXPECT_EQ(r.roots, 1u);
  EXPECT_EQ(r.broken, 0u);
}

TEST_F(work_span_test, roots_compose_in_sequence) {
  magpie::lazy_pool one(1);
  magpie::trace::work_span_probe probe(one, units);
  magpie::sync_wait(one, leaves, 4, std::uint64_t{5});
  magpie::sync_wait(one, called_chain, 3, std::uint64_t{2});
  work_span const r = probe.stop();
  EXPECT_EQ(r.roots, 2u);
  EXPECT_EQ(r.work, 20u + 6u);
  EXPECT_EQ(r.span, 5u + 6u);
  work_span const again = probe.stop(); // idempotent
  EXPECT_EQ(again.work, r.work);
  magpie::sync_wait(one, leaves, 4, std::uint64_t{5}); // after stop: not measured
  EXPECT_EQ(probe.stop().roots, 2u);
}

magpie::task<void> throwing_leaf() {
  magpie::trace::charge(2);
  throw std::runtime_error("leaf");
  co_return;
}

magpie::task<void> catches(int k) {
  for (int i = 0; i < k; ++i) {
    co_await magpie::fork(leaf, std::uint64_t{1});
  }
  co_await magpie::fork(throwing_leaf);
  try {
    co_await magpie::join();
  } catch (std::runtime_error const &) {
    magpie::trace::charge(5); // after the join: on the path after every child
  }
}

TEST_F(work_span_test, exceptions_keep_the_tree) {
  magpie::lazy_pool one(1);
  magpie::trace::work_span_probe probe(one, units);
  magpie::sync_wait(one, catches, 3);
  EXPECT_THROW(magpie::sync_wait(one, throwing_leaf), std::runtime_error);
  work_span const r = probe.stop();
  EXPECT_EQ(r.broken, 0u);
  EXPECT_EQ(r.roots, 2u);
  EXPECT_EQ(r.tasks, 6u);
  EXPECT_EQ(r.work, 3u + 2 + 5 + 2);
  EXPECT_EQ(r.span, 2u + 5 + 2); // the throwing leaf, then the handler; the second root
}

magpie::task<void> hops(magpie::lazy_pool *pool) {
  magpie::trace::charge(7);
  co_await magpie::resume_on(*pool); // suspends: not serial fork–join any more
  magpie::trace::charge(7);
}

TEST_F(work_span_test, a_root_that_suspends_is_left_out) {
  magpie::lazy_pool one(1);
  magpie::trace::work_span_probe probe(one, units);
  magpie::sync_wait(one, hops, &one);
  magpie::sync_wait(one, leaves, 3, std::uint64_t{1});
  work_span const r = probe.stop();
  EXPECT_EQ(r.broken, 1u);
  EXPECT_EQ(r.roots, 1u);
  EXPECT_EQ(r.work, 3u);
  EXPECT_EQ(r.span, 1u);
  EXPECT_NE(r.to_table().find("left out               1 roots"), std::string::npos);
}

TEST_F(work_span_test, misuse_is_refused) {
  magpie::lazy_pool two(2);
  EXPECT_THROW({ magpie::trace::work_span_probe p(two, units); }, std::logic_error);
  magpie::lazy_pool one(1);
  one.count_tasks(true);
  EXPECT_THROW({ magpie::trace::work_span_probe p(one, units); }, std::logic_error);
  one.count_tasks(false);
  magpie::trace::work_span_probe first(one, units);
  EXPECT_THROW({ magpie::trace::work_span_probe p(one, units); }, std::logic_error);
}

TEST(work_span_build, default_build_refuses_with_a_reason) {
  if constexpr (magpie::core::observes_tasks) {
    GTEST_SKIP() << "this build reports per-task events";
  }
  magpie::lazy_pool one(1);
  try {
    magpie::trace::work_span_probe probe(one);
    ADD_FAILURE() << "a probe was made in a build without per-task events";
  } catch (std::logic_error const &e) {
    EXPECT_NE(std::string(e.what()).find("MAGPIE_OBSERVE_TASKS=ON"), std::string::npos);
  }
}

} // namespace
