// magpie/src/topology.cpp — reading the machine's tree (hwloc, optional), synthetic trees,
// placements and thread pinning.

#include "magpie/sched/topology.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <stdexcept>
#include <utility>

#if defined(__linux__)
#  include <pthread.h>
#  include <sched.h>
#endif

#if MAGPIE_HAVE_HWLOC
#  include <hwloc.h>
#endif

namespace magpie::sched {

namespace {

constexpr std::size_t index_of(level l) noexcept { return static_cast<std::size_t>(l); }

std::string trimmed(std::string_view s) {
  while (!s.empty() && s.front() == ' ') {
    s.remove_prefix(1);
  }
  while (!s.empty() && s.back() == ' ') {
    s.remove_suffix(1);
  }
  return std::string(s);
}

unsigned parse_number(std::string_view s, char const *what) {
  unsigned value = 0;
  auto const [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) {
    throw std::invalid_argument(std::string("magpie: ") + what + ": not a number: '" +
                                std::string(s) + "'");
  }
  return value;
}

/// The level a synthetic item type names; `counted` is false for cache levels magpie ignores
/// (they still multiply the PUs).
bool synthetic_level(std::string_view type, level &out, bool &counted) {
  counted = true;
  if (type == "pack" || type == "package" || type == "socket") {
    out = level::package;
  } else if (type == "numa" || type == "node" || type == "numanode") {
    out = level::numa;
  } else if (type == "l3" || type == "l3cache") {
    out = level::l3;
  } else if (type == "core") {
    out = level::core;
  } else if (type == "pu") {
    out = level::pu;
  } else if (type == "l2" || type == "l2cache" || type == "l1" || type == "l1cache" ||
             type == "group") {
    counted = false;
  } else {
    return false;
  }
  return true;
}

} // namespace

topology topology::parse_synthetic(std::string_view description) {
  struct item {
    level l;
    bool counted;
    unsigned count;
  };
  std::vector<item> items;
  std::string const text = trimmed(description);
  std::string_view rest = text;
  while (!rest.empty()) {
    std::size_t const space = rest.find(' ');
    std::string_view token = rest.substr(0, space);
    rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
    if (token.empty()) {
      continue;
    }
    std::size_t const colon = token.find(':');
    if (colon == std::string_view::npos) {
      throw std::invalid_argument("magpie: synthetic topology: expected type:count, got '" +
                                  std::string(token) + "'");
    }
    std::string type(token.substr(0, colon));
    std::transform(type.begin(), type.end(), type.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    item it{};
    if (!synthetic_level(type, it.l, it.counted)) {
      throw std::invalid_argument("magpie: synthetic topology: unknown type '" + type + "'");
    }
    it.count = parse_number(token.substr(colon + 1), "synthetic topology");
    if (it.count == 0) {
      throw std::invalid_argument("magpie: synthetic topology: a count of 0");
    }
    items.push_back(it);
  }
  if (items.empty() || !items.back().counted || items.back().l != level::pu) {
    throw std::invalid_argument("magpie: synthetic topology: the last item must be pu:N");
  }
  std::size_t total = 1;
  for (item const &it : items) {
    total *= it.count;
  }
  std::vector<processing_unit> pus(total);
  for (std::size_t p = 0; p < total; ++p) {
    pus[p].os_index = static_cast<unsigned>(p);
    // The group of PU p at the level of item k is p divided by the PUs under one object of k.
    std::size_t below = total;
    for (item const &it : items) {
      below /= it.count;
      if (it.counted) {
        pus[p].group[index_of(it.l)] = static_cast<std::uint32_t>(p / below);
      }
    }
  }
  return topology(std::move(pus), false, "synthetic");
}

namespace {

#if MAGPIE_HAVE_HWLOC
/// The PU table of a loaded hwloc topology.
std::vector<processing_unit> read_hwloc(hwloc_topology_t t) {
  int const n = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU);
  std::vector<processing_unit> pus;
  pus.reserve(n > 0 ? static_cast<std::size_t>(n) : 0);
  int const numa_nodes = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < n; ++i) {
    hwloc_obj_t pu = hwloc_get_obj_by_type(t, HWLOC_OBJ_PU, static_cast<unsigned>(i));
    processing_unit u;
    u.os_index = pu->os_index;
    auto ancestor = [&](hwloc_obj_type_t type) -> std::uint32_t {
      hwloc_obj_t a = hwloc_get_ancestor_obj_by_type(t, type, pu);
      return a != nullptr ? a->logical_index : 0;
    };
    u.group[index_of(level::package)] = ancestor(HWLOC_OBJ_PACKAGE);
    u.group[index_of(level::l3)] = ancestor(HWLOC_OBJ_L3CACHE);
    u.group[index_of(level::core)] = ancestor(HWLOC_OBJ_CORE);
    u.group[index_of(level::pu)] = pu->logical_index;
    // NUMA nodes are memory children in hwloc 2, not ancestors: find the one whose CPUs hold us.
    for (int k = 0; k < numa_nodes; ++k) {
      hwloc_obj_t node = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(k));
      if (node->cpuset != nullptr && hwloc_bitmap_isset(node->cpuset, pu->os_index)) {
        u.group[index_of(level::numa)] = node->logical_index;
        break;
      }
    }
    pus.push_back(u);
  }
  return pus;
}

/// Loads a topology (the machine's, or a synthetic one) with hwloc; empty on failure.
std::vector<processing_unit> load_hwloc(char const *synthetic) {
  hwloc_topology_t t = nullptr;
  if (hwloc_topology_init(&t) != 0) {
    return {};
  }
  std::vector<processing_unit> pus;
  bool ok = true;
  if (synthetic != nullptr) {
    ok = hwloc_topology_set_synthetic(t, synthetic) == 0;
  }
  if (ok && hwloc_topology_load(t) == 0) {
    pus = read_hwloc(t);
  }
  hwloc_topology_destroy(t);
  return pus;
}
#endif

/// The CPUs this process may run on, as a flat topology.
topology flat_affinity() {
  std::vector<processing_unit> pus;
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (unsigned c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) {
        processing_unit u;
        u.os_index = c;
        u.group[index_of(level::core)] = static_cast<std::uint32_t>(pus.size());
        u.group[index_of(level::pu)] = static_cast<std::uint32_t>(pus.size());
        pus.push_back(u);
      }
    }
  }
#endif
  if (pus.empty()) {
    return topology::flat(1);
  }
  return topology(std::move(pus), false, "flat (no hwloc)");
}

} // namespace

topology::topology(std::vector<processing_unit> pus, bool from_hwloc, std::string source)
    : m_pus(std::move(pus)), m_from_hwloc(from_hwloc), m_source(std::move(source)) {
  if (m_pus.empty()) {
    throw std::invalid_argument("magpie: a topology needs at least one PU");
  }
  for (std::size_t l = 0; l < level_count; ++l) {
    std::uint32_t top = 0;
    for (auto const &u : m_pus) {
      top = std::max(top, u.group[l]);
    }
    m_groups[l] = std::size_t{top} + 1;
  }
}

topology topology::flat(std::size_t pus) {
  std::vector<processing_unit> table(std::max<std::size_t>(pus, 1));
  for (std::size_t i = 0; i < table.size(); ++i) {
    table[i].os_index = static_cast<unsigned>(i);
    table[i].group[index_of(level::core)] = static_cast<std::uint32_t>(i);
    table[i].group[index_of(level::pu)] = static_cast<std::uint32_t>(i);
  }
  return topology(std::move(table), false, "flat");
}

topology topology::synthetic(std::string_view description) {
#if MAGPIE_HAVE_HWLOC
  std::string const text(description);
  std::vector<processing_unit> pus = load_hwloc(text.c_str());
  if (pus.empty()) {
    throw std::invalid_argument("magpie: hwloc could not read the synthetic topology '" + text +
                                "'");
  }
  return topology(std::move(pus), true, "hwloc synthetic");
#else
  return parse_synthetic(description);
#endif
}

topology const &topology::machine() {
  static topology const t = [] {
#if MAGPIE_HAVE_HWLOC
    std::vector<processing_unit> pus = load_hwloc(nullptr);
    if (!pus.empty()) {
      return topology(std::move(pus), true, "hwloc");
    }
#endif
    return flat_affinity();
  }();
  return t;
}

long topology::find_os_index(unsigned os_index) const noexcept {
  for (std::size_t i = 0; i < m_pus.size(); ++i) {
    if (m_pus[i].os_index == os_index) {
      return static_cast<long>(i);
    }
  }
  return -1;
}

std::string topology::summary() const {
  static constexpr char const *names[level_count] = {"packages", "NUMA nodes", "L3", "cores",
                                                     "PUs"};
  std::string s = m_source + ":";
  for (std::size_t l = 0; l < level_count; ++l) {
    s += l == 0 ? " " : ", "; // appended piecewise: GCC 12 warns (-Wrestrict) on "…" + string
    s += std::to_string(m_groups[l]);
    s += ' ';
    s += names[l];
  }
  return s;
}

bool have_hwloc() noexcept { return MAGPIE_HAVE_HWLOC != 0; }

placement placement::cpus(std::vector<unsigned> os_indices) {
  placement p(kind::cpus);
  p.m_cpus = std::move(os_indices);
  return p;
}

placement placement::numa_node(unsigned node) noexcept {
  placement p(kind::numa_node);
  p.m_node = node;
  return p;
}

placement placement::parse(std::string_view text) {
  if (text == "unpinned" || text == "none") {
    return unpinned();
  }
  if (text == "cores") {
    return one_per_core();
  }
  if (text == "pus") {
    return one_per_pu();
  }
  if (text.substr(0, 5) == "numa:") {
    return numa_node(parse_number(text.substr(5), "placement numa:N"));
  }
  if (text.substr(0, 5) == "cpus:") {
    std::vector<unsigned> list;
    std::string_view rest = text.substr(5);
    while (!rest.empty()) {
      std::size_t const comma = rest.find(',');
      list.push_back(parse_number(rest.substr(0, comma), "placement cpus:A,B"));
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
    return cpus(std::move(list));
  }
  throw std::invalid_argument("magpie: unknown placement '" + std::string(text) +
                              "' (unpinned, cores, pus, numa:N, cpus:A,B,...)");
}

std::string placement::name() const {
  switch (m_kind) {
  case kind::unpinned:
    return "unpinned";
  case kind::one_per_core:
    return "cores";
  case kind::one_per_pu:
    return "pus";
  case kind::numa_node:
    return "numa:" + std::to_string(m_node);
  case kind::cpus:
    break;
  }
  std::string s = "cpus:";
  for (std::size_t i = 0; i < m_cpus.size(); ++i) {
    s += i == 0 ? "" : ",";
    s += std::to_string(m_cpus[i]);
  }
  return s;
}

std::vector<std::size_t> placement::slots(topology const &topo) const {
  std::vector<std::size_t> out;
  std::size_t const core = index_of(level::core);
  switch (m_kind) {
  case kind::unpinned:
    return out;
  case kind::one_per_pu:
    for (std::size_t i = 0; i < topo.pus(); ++i) {
      out.push_back(i);
    }
    break;
  case kind::one_per_core:
    for (std::size_t i = 0; i < topo.pus(); ++i) {
      if (i == 0 || topo.pu(i).group[core] != topo.pu(i - 1).group[core]) {
        out.push_back(i); // the first PU of each core (PUs of a core are contiguous)
      }
    }
    break;
  case kind::cpus:
    for (std::size_t i = 0; i < topo.pus(); ++i) {
      if (std::find(m_cpus.begin(), m_cpus.end(), topo.pu(i).os_index) != m_cpus.end()) {
        out.push_back(i);
      }
    }
    break;
  case kind::numa_node: {
    // Rank r of each PU within its core: first PUs of every core of the node, then second ones …
    std::vector<std::pair<std::size_t, std::size_t>> ranked; // (rank within core, PU)
    std::size_t rank = 0;
    for (std::size_t i = 0; i < topo.pus(); ++i) {
      rank = (i != 0 && topo.pu(i).group[core] == topo.pu(i - 1).group[core]) ? rank + 1 : 0;
      if (topo.pu(i).group[index_of(level::numa)] == m_node) {
        ranked.emplace_back(rank, i);
      }
    }
    std::sort(ranked.begin(), ranked.end()); // by rank, then by PU: a total order
    for (auto const &[r, i] : ranked) {
      out.push_back(i);
    }
    break;
  }
  }
  if (out.empty()) {
    throw std::invalid_argument("magpie: placement '" + name() +
                                "' selects no PU of this machine (" + topo.summary() + ")");
  }
  return out;
}

std::vector<long> placement::map_workers(topology const &topo, std::size_t workers) const {
  std::vector<long> out(workers, -1);
  if (m_kind == kind::unpinned) {
    return out;
  }
  std::vector<std::size_t> const s = slots(topo);
  for (std::size_t w = 0; w < workers; ++w) {
    out[w] = static_cast<long>(s[w % s.size()]);
  }
  return out;
}

int pin_this_thread(unsigned os_index) noexcept {
#if defined(__linux__)
  if (os_index >= CPU_SETSIZE) {
    return EINVAL;
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(os_index, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
#else
  (void)os_index;
  return ENOSYS;
#endif
}

int current_cpu() noexcept {
#if defined(__linux__)
  return sched_getcpu();
#else
  return -1;
#endif
}

} // namespace magpie::sched
