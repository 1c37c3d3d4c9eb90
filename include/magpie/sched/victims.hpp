#pragma once
// magpie/sched/victims.hpp — how a thief picks the worker it tries to steal from.
//
// uniform:  every other worker with the same probability (the classic choice; the default).
// weighted: the libfork paper's distance weighting. Worker i picks j with probability
//           proportional to 1 / (n_ij · r_ij²), where r_ij is the distance between their PUs in
//           the topology tree (below) and n_ij the number of workers at that distance from i. So
//           each distance class as a whole gets weight 1/r², shared evenly within it: most
//           attempts stay near (same core, L3, NUMA node), yet every worker is tried now and then.
//
// Distance: the number of tree levels (package, NUMA node, L3, core, PU) at which the two PUs lie
// in different groups, counting only levels that separate some of the pool's workers that the
// level above does not (a level that merely repeats another adds nothing); at least 1. Workers on
// the same PU, or unpinned workers (their PU is unknown), are at distance 1 from everyone.
//
// Cost: the tables are built once per pool (O(P²) memory: P² 8-byte cells); each attempt is O(1):
// one 64-bit random number, a multiply-shift for the column of the worker's alias table and one
// comparison (Walker/Vose alias method).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "magpie/sched/topology.hpp"

namespace magpie::sched {

/// Which victim-selection policy a pool uses.
enum class victim_policy : std::uint8_t {
  uniform,  ///< every other worker equally likely
  weighted, ///< weight 1/(n_ij · r_ij²) by topological distance (see the top of this file)
};

/// "uniform" or "weighted".
std::string_view to_string(victim_policy p) noexcept;
/// Parses "uniform" or "weighted"; throws std::invalid_argument otherwise.
victim_policy parse_victim_policy(std::string_view text);

/// A pool's victim tables: for each worker, its distances to the others, the designed
/// probabilities and an alias table to draw from them. Immutable once built; any thread may call
/// the const members concurrently.
class victim_selector {
public:
  /// `policy` over `worker_pu.size()` workers whose PUs (logical indices in `topo`, or -1 for
  /// unknown) are given. Throws std::bad_alloc; std::invalid_argument for no workers.
  victim_selector(victim_policy policy, topology const &topo, std::vector<long> const &worker_pu)
      : victim_selector(policy, &topo, worker_pu) {}
  /// `policy` over `workers` unpinned workers (all at distance 1: both policies draw uniformly).
  victim_selector(victim_policy policy, std::size_t workers)
      : victim_selector(policy, nullptr, std::vector<long>(workers, -1)) {}

  /// The policy.
  victim_policy policy() const noexcept { return m_policy; }
  /// Number of workers.
  std::size_t workers() const noexcept { return m_n; }

  /// The victim for thief `self` (never `self`), from 64 random bits. Requires workers() ≥ 2.
  std::size_t pick(std::size_t self, std::uint64_t random) const noexcept {
    std::size_t const n = m_n;
    auto const column = static_cast<std::size_t>(((random >> 32) * n) >> 32); // uniform in [0, n)
    if (m_policy == victim_policy::uniform) {
      auto v = static_cast<std::size_t>(((random >> 32) * (n - 1)) >> 32); // uniform in [0, n−1)
      return v + (v >= self ? 1 : 0);
    }
    cell const c = m_alias[self * n + column];
    return static_cast<std::uint32_t>(random) < c.threshold ? column : c.alias;
  }

  /// The designed probability that thief `self` picks `victim` (0 for itself).
  double probability(std::size_t self, std::size_t victim) const {
    return m_probability.at(self * m_n + victim);
  }
  /// The distance between workers `a` and `b` (0 if a == b), as defined at the top of this file.
  unsigned distance(std::size_t a, std::size_t b) const { return m_distance.at(a * m_n + b); }
  /// The other workers, nearest first (ties: in index order starting after `self`). Where roots
  /// and resumed tasks submitted from worker `self` look for an idle worker.
  std::vector<std::size_t> const &nearest(std::size_t self) const { return m_nearest.at(self); }

private:
  victim_selector(victim_policy policy, topology const *topo, std::vector<long> const &worker_pu);

  struct cell {
    std::uint32_t threshold; ///< take the column if the low 32 random bits are below this
    std::uint32_t alias;     ///< else take this worker
  };
  void build_alias(std::size_t self);

  victim_policy m_policy;
  std::size_t m_n;
  std::vector<cell> m_alias;         // n × n
  std::vector<double> m_probability; // n × n
  std::vector<std::uint8_t> m_distance;
  std::vector<std::vector<std::size_t>> m_nearest;
};

} // namespace magpie::sched
