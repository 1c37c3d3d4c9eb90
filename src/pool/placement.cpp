// magpie/src/pool/placement.cpp — a pool's placement: the worker → PU map, the victim tables, where
// submissions go first (choose_worker), and describe(). The worker loop itself is in sleep.cpp.

#include <cstdio>
#include <cstring>
#include <string>

#include "magpie/core/context.hpp"
#include "magpie/sched/pool.hpp"
#include "worker.hpp"

namespace magpie::sched {

void pool::configure_placement(topology const *topo, victim_policy victims, std::size_t workers) {
  m_worker_cpu.assign(workers, -1);
  m_pin_error.assign(workers, 0);
  if (topo == nullptr) { // unpinned: no tree to consult
    m_worker_pu.assign(workers, -1);
    m_victims = std::make_unique<victim_selector>(victims, workers);
  } else {
    m_topology_summary = topo->summary();
    m_worker_pu = m_placement.map_workers(*topo, workers);
    for (std::size_t i = 0; i < workers; ++i) {
      if (m_worker_pu[i] >= 0) {
        m_worker_cpu[i] = topo->pu(static_cast<std::size_t>(m_worker_pu[i])).os_index;
      }
    }
    m_victims = std::make_unique<victim_selector>(victims, *topo, m_worker_pu);
  }
  m_starting.store(workers, std::memory_order_relaxed); // before the threads start (no edge)
}

long pool::submitter_worker() const noexcept {
  if (m_placement.what() == placement::kind::unpinned || m_workers.size() < 2) {
    return -1; // no locality known: the caller's round robin decides
  }
  core::context const *c = core::this_context();
  if (c != nullptr && c->owner() == this && c->index() < m_workers.size()) {
    return static_cast<long>(c->index()); // a task of ours submits (resume_on, a resumption)
  }
  int const cpu = current_cpu(); // a plain thread: the worker pinned where it runs now, if any
  for (std::size_t i = 0; cpu >= 0 && i < m_worker_cpu.size(); ++i) {
    if (m_worker_cpu[i] == cpu) {
      return static_cast<long>(i);
    }
  }
  return -1;
}

namespace {
/// Claims worker `w`'s idle hint: true if it looked idle, and the next submitter then looks
/// elsewhere. A hint only (no edge). Read before the exchange: a busy worker's flag (the common
/// case under load) is not written, so its line is not taken from the worker by every submission.
bool claim_idle(detail::worker &w) noexcept {
  return w.idle.load(std::memory_order_relaxed) &&
         w.idle.exchange(false, std::memory_order_relaxed);
}
} // namespace

std::size_t pool::choose_worker() noexcept {
  std::size_t const n = m_workers.size();
  if (n == 1) {
    return 0;
  }
  // Where the search starts rotates per submitting thread: a shared counter would be one more
  // cache line that every submission takes from the others.
  thread_local std::size_t rotor = 0;
  std::size_t const start = rotor++ % n;
  if (long const near = submitter_worker(); near >= 0) {
    // Pinned workers: the submitter's own worker or the nearest idle one (topology.cpp).
    auto const self = static_cast<std::size_t>(near);
    if (claim_idle(*m_workers[self])) {
      return self;
    }
    for (std::size_t i : m_victims->nearest(self)) {
      if (claim_idle(*m_workers[i])) {
        return i;
      }
    }
    return start;
  }
  for (std::size_t k = 0; k < n; ++k) {
    std::size_t const i = (start + k) % n;
    if (claim_idle(*m_workers[i])) {
      return i;
    }
  }
  return start; // all busy: any will do, and idle thieves take roots from busy workers
}

std::string pool::describe() const {
  std::string s = "magpie pool: " + std::to_string(size()) + " workers, " +
                  (m_policy == idle_policy::lazy ? "lazy" : "busy") + ", placement " +
                  m_placement.name() + ", victims " + std::string(to_string(m_victims->policy())) +
                  "\n  topology " +
                  (m_topology_summary.empty() ? topology::machine().summary() + " (not used)"
                                              : m_topology_summary) +
                  "\n";
  for (std::size_t i = 0; i < size(); ++i) {
    s += "  worker " + std::to_string(i) + " -> ";
    if (m_worker_pu[i] < 0) {
      s += "unpinned\n";
      continue;
    }
    s += "PU " + std::to_string(m_worker_pu[i]) + " (cpu " + std::to_string(m_worker_cpu[i]) + ")";
    if (m_pin_error[i] == 0) {
      s += " pinned\n";
    } else {
      s += " NOT pinned: the kernel refused (" + std::string(std::strerror(m_pin_error[i])) + ")\n";
    }
  }
  return s;
}

} // namespace magpie::sched
