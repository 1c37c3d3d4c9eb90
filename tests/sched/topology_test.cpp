// Topology logic on synthetic trees (hwloc's when built with it, magpie's parser otherwise):
// worker → PU maps for each placement, distances, the victim distribution over 10⁶ draws against
// the designed weights, locality of steal attempts under a simulated load; then real pinning on
// this machine (skipped with a message where the kernel refuses).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#if defined(__linux__)
#  include <sched.h>
#endif

#include "common/test_support.hpp"
#include "magpie/magpie.hpp"

namespace {

using magpie::sched::level;
using magpie::sched::placement;
using magpie::sched::topology;
using magpie::sched::victim_policy;
using magpie::sched::victim_selector;

constexpr char const *big_tree = "pack:2 numa:2 l3:2 core:4 pu:2"; // 64 PUs
char const *const trees[] = {big_tree, "pack:2 core:8 pu:2", "numa:4 core:4 pu:1",
                             "pack:1 l3:4 core:2 pu:2", "pack:4 numa:1 l3:2 core:3 pu:1"};

std::vector<long> identity_map(std::size_t n) {
  std::vector<long> m(n);
  for (std::size_t i = 0; i < n; ++i) {
    m[i] = static_cast<long>(i);
  }
  return m;
}

TEST(topology, synthetic_trees_read_as_described) {
  topology const t = topology::synthetic(big_tree);
  ASSERT_EQ(t.pus(), 64u);
  EXPECT_EQ(t.groups(level::package), 2u);
  EXPECT_EQ(t.groups(level::numa), 4u);
  EXPECT_EQ(t.groups(level::l3), 8u);
  EXPECT_EQ(t.groups(level::core), 32u);
  EXPECT_EQ(t.groups(level::pu), 64u);
  EXPECT_EQ(t.pu(37).group[static_cast<int>(level::core)], 18u);
  EXPECT_EQ(t.pu(37).group[static_cast<int>(level::numa)], 2u);
  EXPECT_EQ(t.find_os_index(37), 37);
  EXPECT_EQ(t.from_hwloc(), magpie::sched::have_hwloc());
  EXPECT_THROW((void)topology::synthetic("pack:2 bogus:3 pu:2"), std::invalid_argument);
}

TEST(topology, hwloc_and_magpie_parsers_agree) {
  if (!magpie::sched::have_hwloc()) {
    GTEST_SKIP() << "magpie was built without hwloc: only its own parser is there to test";
  }
  for (char const *d : trees) {
    topology const a = topology::synthetic(d);
    topology const b = topology::parse_synthetic(d);
    ASSERT_EQ(a.pus(), b.pus()) << d;
    for (std::size_t i = 0; i < a.pus(); ++i) {
      EXPECT_EQ(a.pu(i).os_index, b.pu(i).os_index) << d << " PU " << i;
      EXPECT_EQ(a.pu(i).group, b.pu(i).group) << d << " PU " << i;
    }
  }
}

TEST(topology, placements_map_workers_to_pus) {
  topology const t = topology::synthetic(big_tree);
  EXPECT_EQ(placement::one_per_pu().map_workers(t, 64), identity_map(64));
  std::vector<long> cores(32);
  for (std::size_t i = 0; i < 32; ++i) {
    cores[i] = static_cast<long>(2 * i); // the first PU of core i
  }
  EXPECT_EQ(placement::one_per_core().map_workers(t, 32), cores);
  // More workers than slots wrap around.
  EXPECT_EQ(placement::one_per_core().map_workers(t, 34)[32], 0);
  EXPECT_EQ(placement::one_per_core().map_workers(t, 34)[33], 2);
  // NUMA node 1 holds PUs 16…31: one per core first, then the second PU of each core.
  std::vector<long> node1;
  for (long p = 16; p < 32; p += 2) {
    node1.push_back(p);
  }
  for (long p = 17; p < 32; p += 2) {
    node1.push_back(p);
  }
  EXPECT_EQ(placement::numa_node(1).map_workers(t, 16), node1);
  EXPECT_EQ(placement::numa_node(1).slots(t).size(), 16u);
  EXPECT_EQ(placement::cpus({40, 3, 5, 999}).map_workers(t, 3), (std::vector<long>{3, 5, 40}));
  EXPECT_EQ(placement::unpinned().map_workers(t, 3), (std::vector<long>{-1, -1, -1}));
  EXPECT_THROW((void)placement::numa_node(9).slots(t), std::invalid_argument);
  // The names read back.
  for (char const *name : {"unpinned", "cores", "pus", "numa:3", "cpus:1,4,7"}) {
    EXPECT_EQ(placement::parse(name).name(), name);
  }
  EXPECT_THROW((void)placement::parse("everywhere"), std::invalid_argument);
}

TEST(topology, distances_count_the_levels_that_separate_workers) {
  topology const t = topology::synthetic(big_tree);
  victim_selector const per_pu(victim_policy::weighted, t, identity_map(64));
  EXPECT_EQ(per_pu.distance(0, 0), 0u);
  EXPECT_EQ(per_pu.distance(0, 1), 1u);  // same core
  EXPECT_EQ(per_pu.distance(0, 2), 2u);  // same L3
  EXPECT_EQ(per_pu.distance(0, 8), 3u);  // same NUMA node
  EXPECT_EQ(per_pu.distance(0, 16), 4u); // same package
  EXPECT_EQ(per_pu.distance(0, 63), 5u); // other package
  EXPECT_EQ(per_pu.nearest(0).front(), 1u);
  EXPECT_EQ(per_pu.nearest(0).back(), 63u);
  // One worker per core: the PU level separates no two workers and counts for nothing.
  victim_selector const per_core(victim_policy::weighted, t,
                                 placement::one_per_core().map_workers(t, 32));
  EXPECT_EQ(per_core.distance(0, 1), 1u);  // same L3
  EXPECT_EQ(per_core.distance(0, 4), 2u);  // same NUMA node
  EXPECT_EQ(per_core.distance(0, 31), 4u); // other package
  // Unpinned workers: all at distance 1, hence uniform.
  victim_selector const unpinned(victim_policy::weighted, t, std::vector<long>(8, -1));
  EXPECT_EQ(unpinned.distance(2, 7), 1u);
  EXPECT_NEAR(unpinned.probability(2, 7), 1.0 / 7, 1e-12);
}

/// Draws 10⁶ victims for `self` and checks them against the designed probabilities: every
/// victim's and every distance class's frequency within 2 % (relative) of its weight where the
/// weight is large enough to measure so, and a chi-square statistic below the 0.1 % critical
/// value (the seed is fixed: the test is deterministic).
void check_distribution(victim_selector const &v, std::size_t self) {
  constexpr std::size_t draws = 1'000'000;
  std::size_t const n = v.workers();
  std::vector<std::size_t> hits(n, 0);
  std::mt19937_64 random(12345 + self);
  for (std::size_t k = 0; k < draws; ++k) {
    ++hits[v.pick(self, random())];
  }
  EXPECT_EQ(hits[self], 0u) << "a thief picked itself";
  double chi2 = 0;
  std::size_t cells = 0;
  std::vector<double> class_expected(8, 0.0);
  std::vector<double> class_seen(8, 0.0);
  for (std::size_t j = 0; j < n; ++j) {
    if (j == self) {
      continue;
    }
    double const expected = v.probability(self, j) * draws;
    class_expected[v.distance(self, j)] += expected;
    class_seen[v.distance(self, j)] += static_cast<double>(hits[j]);
    double const seen = static_cast<double>(hits[j]);
    chi2 += (seen - expected) * (seen - expected) / expected;
    ++cells;
    if (expected >= 40'000) { // 2 % is > 10 standard deviations here
      EXPECT_NEAR(hits[j], expected, 0.02 * expected) << "victim " << j;
    }
  }
  for (std::size_t r = 1; r < class_expected.size(); ++r) {
    if (class_expected[r] > 0) {
      EXPECT_NEAR(class_seen[r], class_expected[r], 0.02 * class_expected[r]) << "distance " << r;
    }
  }
  // Chi-square critical values at p = 0.001 (Wilson–Hilferty approximation, df = cells − 1).
  double const df = static_cast<double>(cells - 1);
  double const z = 3.09;
  double const critical = df * std::pow(1 - 2 / (9 * df) + z * std::sqrt(2 / (9 * df)), 3);
  EXPECT_LT(chi2, critical) << "chi-square over " << cells << " victims";
}

TEST(topology, weighted_victims_match_the_designed_weights) {
  for (char const *d : trees) {
    SCOPED_TRACE(d);
    topology const t = topology::synthetic(d);
    for (placement const &p : {placement::one_per_pu(), placement::one_per_core()}) {
      std::vector<long> const map = p.map_workers(t, p.slots(t).size());
      if (map.size() < 2) {
        continue;
      }
      victim_selector const v(victim_policy::weighted, t, map);
      // The design: each distance class gets total weight ∝ 1/r², split evenly inside it.
      std::vector<double> mass(8, 0.0);
      for (std::size_t j = 1; j < map.size(); ++j) {
        mass[v.distance(0, j)] += v.probability(0, j);
      }
      for (std::size_t r = 2; r < mass.size(); ++r) {
        if (mass[r] > 0 && mass[r - 1] > 0) {
          EXPECT_NEAR(mass[r] / mass[r - 1], double((r - 1) * (r - 1)) / double(r * r), 1e-12);
        }
      }
      check_distribution(v, 0);
      check_distribution(v, map.size() / 2 + 1);
    }
  }
}

TEST(topology, uniform_victims_are_uniform) {
  topology const t = topology::synthetic(big_tree);
  victim_selector const v(victim_policy::uniform, t, identity_map(64));
  check_distribution(v, 0);
  check_distribution(v, 63);
  victim_selector const two(victim_policy::weighted, t, identity_map(2));
  for (std::uint64_t r = 0; r < 1000; ++r) {
    EXPECT_EQ(two.pick(0, r * 0x9E3779B97F4A7C15ULL), 1u);
  }
}

/// A simulated load: in each round every worker has work with probability 1/2; each idle worker
/// makes one steal attempt. Counted are the attempts of thieves whose own group (the level's
/// group) holds work; returned is the share of those aimed inside the group.
double share_within_group(victim_selector const &v, topology const &t, std::vector<long> const &map,
                          level group_level) {
  std::mt19937_64 random(99);
  std::size_t const n = map.size();
  auto group = [&](std::size_t w) {
    return t.pu(static_cast<std::size_t>(map[w])).group[static_cast<int>(group_level)];
  };
  std::size_t counted = 0;
  std::size_t inside = 0;
  std::vector<bool> busy(n);
  for (int round = 0; round < 20'000; ++round) {
    for (std::size_t w = 0; w < n; ++w) {
      busy[w] = (random() & 1) != 0;
    }
    for (std::size_t w = 0; w < n; ++w) {
      if (busy[w]) {
        continue;
      }
      bool work_in_group = false;
      for (std::size_t o = 0; o < n; ++o) {
        work_in_group = work_in_group || (o != w && busy[o] && group(o) == group(w));
      }
      if (!work_in_group) {
        continue;
      }
      ++counted;
      inside += group(v.pick(w, random())) == group(w) ? 1 : 0;
    }
  }
  return static_cast<double>(inside) / static_cast<double>(counted);
}

TEST(topology, steal_attempts_stay_in_the_group_under_load) {
  topology const t = topology::synthetic(big_tree);
  std::vector<long> const per_pu = placement::one_per_pu().map_workers(t, 64);
  std::vector<long> const per_core = placement::one_per_core().map_workers(t, 32);
  victim_selector const w_pu(victim_policy::weighted, t, per_pu);
  victim_selector const w_core(victim_policy::weighted, t, per_core);
  double const pu_l3 = share_within_group(w_pu, t, per_pu, level::l3);
  double const core_numa = share_within_group(w_core, t, per_core, level::numa);
  EXPECT_GE(pu_l3, 0.80) << "one worker per PU: attempts within the own L3";
  EXPECT_GE(core_numa, 0.80) << "one worker per core: attempts within the own NUMA node";
  // Uniform stealing, for contrast, leaves the group most of the time.
  victim_selector const u_pu(victim_policy::uniform, t, per_pu);
  EXPECT_LT(share_within_group(u_pu, t, per_pu, level::l3), 0.2);
  std::printf("within own group under load: weighted %.3f (PU, L3), %.3f (core, NUMA)\n", pu_l3,
              core_numa);
}

// ---------------------------------------------------------------------------------------------
// Real pools.

magpie::task<int> cpu_of_this_worker() { co_return magpie::sched::current_cpu(); }

TEST(topology, pools_pin_their_workers_on_this_machine) {
  topology const &machine = topology::machine();
  std::printf("machine: %s\n", machine.summary().c_str());
  magpie::lazy_pool pool(placement::one_per_pu());
  std::printf("%s", pool.describe().c_str());
  ASSERT_EQ(pool.size(), machine.pus());
  for (std::size_t i = 0; i < pool.size(); ++i) {
    EXPECT_EQ(pool.worker_pu(i), static_cast<long>(i));
    EXPECT_EQ(pool.worker_cpu(i), static_cast<long>(machine.pu(i).os_index));
  }
  if (pool.pin_error(0) != 0) {
    GTEST_SKIP() << "the kernel refused to pin a worker (" << pool.pin_error(0)
                 << "): pinning cannot be tested here";
  }
  EXPECT_NE(pool.describe().find("pinned"), std::string::npos);
  // A pinned worker runs on its CPU: every root reports a CPU that is some worker's.
  for (int k = 0; k < 20; ++k) {
    int const cpu = magpie::sync_wait(pool, cpu_of_this_worker);
    bool found = false;
    for (std::size_t i = 0; i < pool.size(); ++i) {
      found = found || (pool.pin_error(i) == 0 && pool.worker_cpu(i) == cpu);
    }
    EXPECT_TRUE(found) << "a task ran on CPU " << cpu << ", which no pinned worker has";
  }
}

TEST(topology, weighted_pools_compute_correctly) {
  topology const t = topology::synthetic("pack:2 core:2 pu:1");
  for (victim_policy v : {victim_policy::uniform, victim_policy::weighted}) {
    magpie::pool_options o(placement::one_per_pu());
    o.topo = &t;
    o.victims = v;
    magpie::busy_pool pool(o);
    ASSERT_EQ(pool.size(), 4u);
    EXPECT_EQ(pool.victims().policy(), v);
    // CPUs this machine lacks leave their workers unpinned, and describe() says so.
    for (std::size_t i = 0; i < pool.size(); ++i) {
      if (pool.pin_error(i) != 0) {
        EXPECT_NE(pool.describe().find("NOT pinned"), std::string::npos);
      }
    }
    EXPECT_EQ(magpie::sync_wait(pool, magpie::test::fib, 22), magpie::test::serial_fib(22));
  }
}

TEST(topology, roots_prefer_the_submitters_worker) {
#if defined(__linux__)
  topology const &machine = topology::machine();
  if (machine.pus() < 2) {
    GTEST_SKIP() << "one CPU: no choice to make";
  }
  magpie::lazy_pool pool(placement::one_per_pu());
  unsigned const cpu = machine.pu(1).os_index;
  cpu_set_t old;
  CPU_ZERO(&old);
  ASSERT_EQ(sched_getaffinity(0, sizeof(old), &old), 0);
  if (pool.pin_error(1) != 0 || magpie::sched::pin_this_thread(cpu) != 0) {
    GTEST_SKIP() << "the kernel refused to pin: cannot test locality here";
  }
  double load = 0;
  if (getloadavg(&load, 1) == 1 && load > 2.0 * static_cast<double>(machine.pus())) {
    sched_setaffinity(0, sizeof(old), &old);
    GTEST_SKIP() << "the machine is overloaded (load " << load << " on " << machine.pus()
                 << " CPUs): other processes decide which worker gets to run first";
  }
  // Idle thieves may take a root from its worker's queue, and on a loaded machine the
  // submitter's worker may not run for a while: most roots, not all, must stay. Best of three
  // rounds of 40 (without the preference a round reaches 28 with probability < 1 %).
  int best = 0;
  for (int round = 0; round < 3 && best < 28; ++round) {
    int on_submitters_cpu = 0;
    for (int k = 0; k < 40; ++k) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5)); // the workers go idle
      on_submitters_cpu += magpie::sync_wait(pool, cpu_of_this_worker) == static_cast<int>(cpu);
    }
    best = std::max(best, on_submitters_cpu);
  }
  sched_setaffinity(0, sizeof(old), &old);
  EXPECT_GE(best, 28) << "roots submitted from CPU " << cpu << " (best of three rounds of 40)";
#else
  GTEST_SKIP() << "no thread affinity on this platform";
#endif
}

} // namespace
