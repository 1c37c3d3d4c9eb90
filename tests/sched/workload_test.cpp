// The classic fork–join workloads on every scheduler, each compared with its serial projection:
// fib, skynet, nqueens, seeded random trees (fan-out from a hash of the node's path), chains of
// depth 100,000 (fork and call), and the exact serial execution order of the inline scheduler and
// of one-worker pools.

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/steal_probe.hpp"
#include "common/test_support.hpp"

namespace {

using namespace magpie::test;
using magpie::call;
using magpie::fork;
using magpie::join;
using magpie::task;

class workload : public scheduler_test {
protected:
  /// Pools of two or more workers: the test's programs were stolen from. Whether a particular
  /// run is depends on timing (a thief may not get a core on a loaded machine), so if none was,
  /// the steal probe (tests/common/steal_probe.hpp) must show that this pool steals: a pool that
  /// never steals fails every test that calls this, one that does never fails it.
  void expect_steals() {
    if (m_sched.workers() < 2) {
      return;
    }
    std::uint64_t const natural = m_sched.total_stats().steals;
    if (natural == 0) {
      ASSERT_TRUE(continuation_is_stolen(*m_sched.pool()))
          << "nothing was stolen, not even the probe's continuation: the pool does not steal";
    }
    EXPECT_GT(m_sched.total_stats().steals, 0u) << "steals are not counted";
    std::printf("[ info     ] %s: %llu steals%s\n", to_string(GetParam()).c_str(),
                static_cast<unsigned long long>(natural),
                natural == 0 ? " (none by the test's programs; the probe's was)" : "");
  }
};

// --- fib
// ----------------------------------------------------------------------------------------------

TEST_P(workload, fib) {
  for (int n : {0, 1, 2, 10, fib_n}) {
    EXPECT_EQ(m_sched.run(fib, n), serial_fib(n)) << "fib(" << n << ")";
  }
  expect_steals();
}

TEST_P(workload, fib_repeatedly) {
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(m_sched.run(fib, 15 + i % 4), serial_fib(15 + i % 4));
  }
}

// --- skynet: a 10-ary tree; the leaves return their number
// ----------------------------------------------

task<long> skynet(long num, long size) {
  if (size == 1) {
    co_return num;
  }
  std::array<long, 10> parts{};
  long const sub = size / 10;
  for (long i = 0; i < 9; ++i) {
    co_await fork(&parts[static_cast<std::size_t>(i)], skynet, num + i * sub, sub);
  }
  co_await call(&parts[9], skynet, num + 9 * sub, sub);
  co_await join();
  long sum = 0;
  for (long p : parts) {
    sum += p;
  }
  co_return sum;
}

TEST_P(workload, skynet) {
  for (long leaves : {10L, 1000L, 100000L}) {
    EXPECT_EQ(m_sched.run(skynet, 0L, leaves), leaves * (leaves - 1) / 2) << leaves << " leaves";
  }
  expect_steals();
}

// --- nqueens: the board travels by value
// -------------------------------------------------------------------

using board = std::array<char, 12>;

bool queen_ok(board const &b, int row, int col) {
  for (int r = 0; r < row; ++r) {
    int const c = b[static_cast<std::size_t>(r)];
    if (c == col || c - col == row - r || col - c == row - r) {
      return false;
    }
  }
  return true;
}

task<long> nqueens(int n, int row, board b) {
  if (row == n) {
    co_return 1;
  }
  std::array<long, 12> counts{};
  for (int col = 0; col < n; ++col) {
    if (queen_ok(b, row, col)) {
      board next = b;
      next[static_cast<std::size_t>(row)] = static_cast<char>(col);
      co_await fork(&counts[static_cast<std::size_t>(col)], nqueens, n, row + 1, next);
    }
  }
  co_await join();
  long total = 0;
  for (long c : counts) {
    total += c;
  }
  co_return total;
}

TEST_P(workload, nqueens) {
  EXPECT_EQ(m_sched.run(nqueens, 1, 0, board{}), 1);
  EXPECT_EQ(m_sched.run(nqueens, 4, 0, board{}), 2);
  EXPECT_EQ(m_sched.run(nqueens, 8, 0, board{}), 92);
  if (!sanitized || m_sched.workers() <= 3) {
    EXPECT_EQ(m_sched.run(nqueens, 10, 0, board{}), 724);
  }
}

// --- seeded random trees
// ------------------------------------------------------------------------------------

std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

/// The hash of a child's path from its parent's hash.
std::uint64_t child_path(std::uint64_t path, int i) {
  return mix(path * 31 + static_cast<std::uint64_t>(i) + 1);
}

/// The fan-out of a node (0 = leaf): mostly small, sometimes wide, never below `max_depth`; the
/// top levels always branch so that no tree is trivial.
int fan_out(std::uint64_t path, int depth, int max_depth) {
  if (depth >= max_depth) {
    return 0;
  }
  std::uint64_t const h = mix(path ^ 0xabcdef);
  int const r = depth < 3 ? 30 + static_cast<int>(h % 70) : static_cast<int>(h % 100);
  if (r < 30) {
    return 0;
  }
  if (r < 90) {
    return 1 + static_cast<int>((h >> 8) % 3); // 1–3
  }
  return 4 + static_cast<int>((h >> 16) % 9); // 4–12
}

struct tree_result {
  long leaves = 0;
  std::uint64_t sum = 0;
  bool operator==(tree_result const &) const = default;
};

tree_result serial_tree(std::uint64_t path, int depth, int max_depth) {
  int const k = fan_out(path, depth, max_depth);
  if (k == 0) {
    return {1, path % 1000003};
  }
  tree_result out;
  for (int i = 0; i < k; ++i) {
    tree_result const r = serial_tree(child_path(path, i), depth + 1, max_depth);
    out.leaves += r.leaves;
    out.sum += r.sum;
  }
  return out;
}

/// The same tree as tasks. How children are spawned also comes from the hash: all forked, the
/// last one called, or split in two join scopes.
task<tree_result> random_tree(std::uint64_t path, int depth, int max_depth) {
  int const k = fan_out(path, depth, max_depth);
  if (k == 0) {
    co_return tree_result{1, path % 1000003};
  }
  std::array<tree_result, 12> parts{};
  int const style = static_cast<int>(mix(path) % 3);
  auto const idx = [](int i) { return static_cast<std::size_t>(i); };
  if (style == 0) {
    for (int i = 0; i < k; ++i) {
      co_await fork(&parts[idx(i)], random_tree, child_path(path, i), depth + 1, max_depth);
    }
    co_await join();
  } else if (style == 1) {
    for (int i = 0; i + 1 < k; ++i) {
      co_await fork(&parts[idx(i)], random_tree, child_path(path, i), depth + 1, max_depth);
    }
    co_await call(&parts[idx(k - 1)], random_tree, child_path(path, k - 1), depth + 1, max_depth);
    co_await join();
  } else {
    int const half = k / 2;
    for (int i = 0; i < half; ++i) {
      co_await fork(&parts[idx(i)], random_tree, child_path(path, i), depth + 1, max_depth);
    }
    co_await join();
    for (int i = half; i < k; ++i) {
      co_await fork(&parts[idx(i)], random_tree, child_path(path, i), depth + 1, max_depth);
    }
    co_await join();
  }
  tree_result out;
  for (int i = 0; i < k; ++i) {
    out.leaves += parts[idx(i)].leaves;
    out.sum += parts[idx(i)].sum;
  }
  co_return out;
}

TEST_P(workload, random_trees_match_their_serial_projection) {
  long total_leaves = 0;
  int const max_depth = scaled(14, 13);
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    std::uint64_t const root = mix(seed * 1000003);
    tree_result const expect = serial_tree(root, 0, max_depth);
    tree_result const got = m_sched.run(random_tree, root, 0, max_depth);
    EXPECT_EQ(got.leaves, expect.leaves) << "seed " << seed;
    EXPECT_EQ(got.sum, expect.sum) << "seed " << seed;
    total_leaves += expect.leaves;
  }
  EXPECT_GT(total_leaves, 1000) << "the trees are too small to test anything";
  std::printf("[ info     ] 12 random trees, %ld leaves in all\n", total_leaves);
  expect_steals();
}

// --- chains of depth 100,000
// ---------------------------------------------------------------------------------

task<long> fork_chain(int n) {
  if (n == 0) {
    co_return 0;
  }
  long r = 0;
  co_await fork(&r, fork_chain, n - 1);
  co_await join();
  co_return r + 1;
}

task<long> call_chain(int n) {
  if (n == 0) {
    co_return 0;
  }
  long r = 0;
  co_await call(&r, call_chain, n - 1);
  co_return r + 1;
}

task<void> void_chain(std::atomic<long> *count, int n) {
  count->fetch_add(1, std::memory_order_relaxed);
  if (n > 0) {
    co_await fork(void_chain, count, n - 1);
    co_await join();
  }
}

int const chain_depth = 100000;

TEST_P(workload, fork_chain_of_depth_100000) {
  EXPECT_EQ(m_sched.run(fork_chain, chain_depth), chain_depth);
}

TEST_P(workload, call_chain_of_depth_100000) {
  EXPECT_EQ(m_sched.run(call_chain, chain_depth), chain_depth);
}

TEST_P(workload, void_fork_chain_of_depth_100000) {
  std::atomic<long> count{0};
  m_sched.run(void_chain, &count, chain_depth);
  EXPECT_EQ(count.load(), chain_depth + 1);
}

// --- one very wide scope
// ----------------------------------------------------------------------------------

task<long> leaf(long i) { co_return i; }

/// Forks `n` children in one scope: the deque grows to `n` entries, and on several workers the
/// split join counter sees many steals of the same task before one join.
task<long> wide(long n) {
  std::vector<long> out(static_cast<std::size_t>(n));
  for (long i = 0; i < n; ++i) {
    co_await fork(&out[static_cast<std::size_t>(i)], leaf, i);
  }
  co_await join();
  long sum = 0;
  for (long v : out) {
    sum += v;
  }
  co_return sum;
}

TEST_P(workload, fifty_thousand_children_in_one_scope) {
  long const n = 50000;
  EXPECT_EQ(m_sched.run(wide, n), n * (n - 1) / 2);
  expect_steals();
}

// --- greedy scheduling: an idle worker takes the continuation of a blocked task
// --------------------------

/// Waits (spinning, up to a limit) until `flag` is set by a sibling forked after it. That sibling
/// can only start if another worker steals our parent's continuation.
task<long> wait_for_sibling(std::atomic<int> *flag) {
  auto const deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(sanitized ? 40 : 20);
  while (flag->load() == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      co_return 0; // not stolen: the test fails instead of hanging
    }
    std::this_thread::yield();
  }
  co_return 1;
}

task<long> set_flag(std::atomic<int> *flag) {
  flag->store(1);
  co_return 1;
}

task<long> needs_a_thief() {
  std::atomic<int> flag{0};
  long a = 0;
  long b = 0;
  co_await fork(&a, wait_for_sibling, &flag);
  co_await fork(&b, set_flag, &flag);
  co_await join();
  co_return a + b;
}

TEST_P(workload, an_idle_worker_steals_from_a_busy_one) {
  if (m_sched.workers() < 2) {
    GTEST_SKIP() << "needs two workers";
  }
  for (int round = 0; round < 5; ++round) {
    if (round % 2 == 1) {
      // Let a lazy pool's workers fall asleep first: the submission must wake one, and that one
      // must make sure another is awake to steal.
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_EQ(m_sched.run(needs_a_thief), 2)
        << "round " << round << ": the continuation was not stolen";
  }
  EXPECT_GE(m_sched.total_stats().steals, 5u) << "each round needs a steal: they were not counted";
}

// --- exact serial order
// --------------------------------------------------------------------------------------

/// Records the order in which tasks are entered. Locked: on multi-worker pools entries race.
struct entry_log {
  std::mutex mutex;
  std::vector<std::uint64_t> order;
  void enter(std::uint64_t id) {
    std::lock_guard lock(mutex);
    order.push_back(id);
  }
};

void serial_order(entry_log &log, std::uint64_t path, int depth, int max_depth) {
  log.enter(path);
  int const k = fan_out(path, depth, max_depth);
  for (int i = 0; i < k; ++i) {
    serial_order(log, child_path(path, i), depth + 1, max_depth);
  }
}

task<void> logged_tree(entry_log &log, std::uint64_t path, int depth, int max_depth) {
  log.enter(path);
  int const k = fan_out(path, depth, max_depth);
  int const style = static_cast<int>(mix(path) % 3);
  for (int i = 0; i < k; ++i) {
    if (style == 1 && i % 2 == 1) {
      co_await call(logged_tree, log, child_path(path, i), depth + 1, max_depth);
    } else {
      co_await fork(logged_tree, log, child_path(path, i), depth + 1, max_depth);
    }
    if (style == 2 && i == k / 2) {
      co_await join();
    }
  }
  co_await join();
}

TEST_P(workload, entry_order_is_the_serial_order_on_one_worker) {
  int const max_depth = 12;
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    std::uint64_t const root = mix(seed * 77);
    entry_log expect;
    serial_order(expect, root, 0, max_depth);
    entry_log got;
    m_sched.run(logged_tree, got, root, 0, max_depth);
    ASSERT_GT(expect.order.size(), 100u) << "seed " << seed << ": tree too small";
    if (m_sched.serial()) {
      EXPECT_EQ(got.order, expect.order) << "seed " << seed << ": not the serial order";
    } else {
      // Several workers may interleave, but every task runs exactly once.
      std::sort(expect.order.begin(), expect.order.end());
      std::sort(got.order.begin(), got.order.end());
      EXPECT_EQ(got.order, expect.order) << "seed " << seed << ": some task ran twice or never";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(all, workload, ::testing::ValuesIn(all_schedulers()), sched_name{});

} // namespace
