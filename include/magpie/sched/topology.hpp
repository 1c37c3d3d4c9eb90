#pragma once
// magpie/sched/topology.hpp — the machine's tree (packages, NUMA nodes, L3 groups, cores, PUs) and
// where a pool's workers are placed in it.
//
// With hwloc (Debian libhwloc-dev, found at configure time; MAGPIE_HAVE_HWLOC) the tree is read
// from the machine; without it the machine is flat: one group holding the CPUs this process may
// run on. Synthetic trees in hwloc's syntax ("pack:2 numa:2 l3:2 core:4 pu:2") are built by hwloc
// when it is there and by a small parser of the same syntax otherwise, so that the scheduler's
// topology logic can be tested on any tree without the hardware.
//
// A placement says which processing units (PUs) a pool's workers run on; the pool pins each
// worker's thread to its PU (Linux sched_setaffinity) when it starts. See docs/topology.md.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace magpie::sched {

/// The levels of the tree that magpie distinguishes, coarsest first.
enum class level : std::uint8_t { package, numa, l3, core, pu };

/// Number of levels in `level`.
inline constexpr std::size_t level_count = 5;

/// One processing unit (a hardware thread): the operating system's CPU number and, for each
/// level, the index of the group containing it (0 where the tree has no such level).
struct processing_unit {
  unsigned os_index = 0;                          ///< the CPU number the kernel uses
  std::array<std::uint32_t, level_count> group{}; ///< group index per level (see `level`)
};

/// A machine's tree, flattened to its PUs in the tree's (logical) order. Immutable; cheap to
/// query; copying copies the PU table.
class topology {
public:
  /// The machine this process runs on, read once (thread-safe): from hwloc if magpie was built
  /// with it, else flat over the CPUs in this process's affinity mask.
  static topology const &machine();

  /// `pus` PUs (CPUs 0 … pus−1), each its own core, with no level above: every two PUs are at
  /// the same distance.
  static topology flat(std::size_t pus);

  /// A tree described in hwloc's synthetic syntax: space-separated `type:count` items from the
  /// root down, types pack|package|socket, numa|node|numanode, l3|l3cache, l2|l2cache,
  /// l1|l1cache, core, pu (which must come last); e.g. "pack:2 numa:2 l3:2 core:4 pu:2". Built by
  /// hwloc when present, else by magpie's own parser (the same PU order). PU i has CPU number i.
  /// Throws std::invalid_argument on a description it cannot read.
  static topology synthetic(std::string_view description);

  /// magpie's own reader of the synthetic syntax, which synthetic() uses without hwloc (with it,
  /// tests compare the two). Throws std::invalid_argument as synthetic().
  static topology parse_synthetic(std::string_view description);

  /// Number of PUs.
  std::size_t pus() const noexcept { return m_pus.size(); }
  /// PU `i` (logical order: PUs sharing a core, L3, NUMA node or package are contiguous).
  processing_unit const &pu(std::size_t i) const { return m_pus.at(i); }
  /// Number of groups at level `l` (1 where the tree has no such level).
  std::size_t groups(level l) const noexcept { return m_groups[static_cast<std::size_t>(l)]; }
  /// The logical index of the PU whose CPU number is `os_index`, or -1 if there is none.
  long find_os_index(unsigned os_index) const noexcept;
  /// True if the tree was read by hwloc (from the machine or a synthetic description).
  bool from_hwloc() const noexcept { return m_from_hwloc; }
  /// One line: the source and the count of groups per level, e.g. "hwloc: 2 packages, 4 NUMA
  /// nodes, 8 L3, 32 cores, 64 PUs".
  std::string summary() const;

  /// Builds a topology from its PU table (groups numbered from 0 at each level). For tests and
  /// for trees from elsewhere; `source` names it in summary().
  topology(std::vector<processing_unit> pus, bool from_hwloc, std::string source);

private:
  std::vector<processing_unit> m_pus;
  std::array<std::size_t, level_count> m_groups{};
  bool m_from_hwloc = false;
  std::string m_source;
};

/// True if magpie was built with hwloc.
bool have_hwloc() noexcept;

/// Where a pool's workers run. The default is unpinned (the kernel schedules the threads).
/// A pinned placement orders the PUs it allows ("slots"); worker i runs on slot i mod (number of
/// slots), and a pool given no worker count gets one worker per slot.
class placement {
public:
  /// What a placement selects.
  enum class kind : std::uint8_t {
    unpinned,     ///< no pinning; the kernel places the threads
    one_per_core, ///< the first PU of each core, in tree order
    one_per_pu,   ///< every PU, in tree order
    cpus,         ///< the PUs with the given CPU numbers, in tree order
    numa_node, ///< the PUs of one NUMA node: the first PU of each of its cores, then the second …
  };

  /// No pinning (the default).
  static placement unpinned() noexcept { return placement(kind::unpinned); }
  /// One worker per core (its first PU): no two workers share a core.
  static placement one_per_core() noexcept { return placement(kind::one_per_core); }
  /// One worker per PU (hardware thread).
  static placement one_per_pu() noexcept { return placement(kind::one_per_pu); }
  /// The PUs with these CPU numbers (as in `taskset`); numbers the topology lacks are ignored.
  static placement cpus(std::vector<unsigned> os_indices);
  /// The PUs of NUMA node `node` (its logical index): one per core first, then hyperthreads.
  static placement numa_node(unsigned node) noexcept;

  /// Parses "unpinned" (or "none"), "cores", "pus", "numa:N", "cpus:A,B,C" (benchmarks' option).
  /// Throws std::invalid_argument otherwise.
  static placement parse(std::string_view text);

  /// What this placement selects.
  kind what() const noexcept { return m_kind; }
  /// The name parse() reads back, e.g. "numa:0".
  std::string name() const;

  /// The PU slots (logical indices in `topo`), in the order workers take them; empty for
  /// unpinned. Throws std::invalid_argument if a pinned placement selects no PU of `topo`.
  std::vector<std::size_t> slots(topology const &topo) const;

  /// For each of `workers` workers, the logical index of its PU in `topo`, or -1 (unpinned).
  std::vector<long> map_workers(topology const &topo, std::size_t workers) const;

private:
  explicit placement(kind k) noexcept : m_kind(k) {}

  kind m_kind = kind::unpinned;
  unsigned m_node = 0;
  std::vector<unsigned> m_cpus;
};

/// Pins the calling thread to CPU `os_index`. Returns 0, or the errno value with which the kernel
/// refused (EINVAL for a CPU this process may not use or that does not exist, ENOSYS where the
/// platform has no affinity call).
int pin_this_thread(unsigned os_index) noexcept;

/// The CPU the calling thread runs on now, or -1 if unknown. A hint: it may change at once.
int current_cpu() noexcept;

} // namespace magpie::sched
