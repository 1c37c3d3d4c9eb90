// magpie/src/pool/pool.cpp — a pool's life: starting the workers (each pins itself first),
// and the destructor, which waits for everything in flight (in_flight.cpp) before it stops and
// joins them (docs/protocols.md §5.1). Also the per-worker views: size, stats, worker_context.
//
// The rest of the pool, one concept a file (src/pool/): placement.cpp (the worker → PU map,
// victim tables, where submissions go first), in_flight.cpp (submissions and what the destructor
// waits for), sleep.cpp (the worker loop and the lazy pool's sleep/wake protocol), find_work.cpp
// (a worker's queues, then stealing), guest.cpp (callers that run their roots here), stale.cpp
// (spawned jobs their reader already ran), observer.cpp (installing an observer); the headers
// worker.hpp, run_queue.hpp (priorities and the starvation rule), root_ring.hpp, spin_lock.hpp,
// rng.hpp.

#include "magpie/sched/pool.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "magpie/core/config.hpp"
#include "magpie/core/detail/fence.hpp"
#include "magpie/sched/registry.hpp"
#include "worker.hpp"

namespace magpie::sched {

namespace {
std::size_t resolve(std::size_t workers) {
  if (workers == 0) {
    workers = std::max(1u, std::thread::hardware_concurrency());
  }
  return workers;
}

pool_options pool_options_for(std::size_t workers) {
  pool_options o;
  o.workers = workers;
  return o;
}
} // namespace

pool::pool(std::size_t workers, idle_policy policy) : pool(pool_options_for(workers), policy) {}

pool::pool(pool_options const &options, idle_policy policy)
    : core::executor(executor_operations), m_policy(policy), m_placement(options.where) {
#if MAGPIE_PROCESS_BARRIER
  (void)core::detail::process_barrier_ready(); // before any worker: they take the light path
#endif
  // An unpinned pool needs no tree (and reads none: the machine's is read once, kept for good).
  bool const pinned = m_placement.what() != placement::kind::unpinned;
  topology const *topo =
      options.topo != nullptr ? options.topo : (pinned ? &topology::machine() : nullptr);
  std::size_t workers = options.workers;
  if (workers == 0 && pinned) {
    workers = m_placement.slots(*topo).size();
  }
  workers = resolve(workers);
  configure_placement(topo, options.victims, workers); // placement.cpp: map, victim tables
  // Allocation can fail for any worker: until a thread starts, the members free themselves.
  m_workers.reserve(workers);
  for (std::size_t i = 0; i < workers; ++i) {
    m_workers.push_back(std::make_unique<detail::worker>(this, i));
  }
  if (options.callers_run_roots) {
    m_guests.reserve(workers);
    for (std::size_t k = 0; k < workers; ++k) {
      m_guests.push_back(std::make_unique<detail::worker>(this, workers + k));
    }
  }
  registry::add(*this); // diagnostics find the pool (trace::dump, tools/gdb/magpie.py)
  m_thieves.store(workers, std::memory_order_relaxed); // every worker starts as a thief
  try {
    for (auto &w : m_workers) {
      w->thread = std::thread([this, &w] {
        start(*w);
        run(*w);
      });
    }
  } catch (...) {
    // Thread k could not start (std::system_error, or std::bad_alloc for its state). No
    // destructor runs for a half-built pool: stop and join the started workers ourselves, before
    // the members they use are destroyed. Nothing was submitted, so nothing is lost.
    stop_workers();
    registry::remove(*this);
    throw;
  }
  // Every worker pins itself first: once we return, describe() and pin_error() are final.
  for (std::size_t left = m_starting.load(std::memory_order_acquire); left != 0;
       left = m_starting.load(std::memory_order_acquire)) { // acquire: the workers' pin results
    m_starting.wait(left, std::memory_order_acquire);
  }
  if (options.count_tasks) {
    count_tasks(true);
  }
}

pool::~pool() {
  MAGPIE_CHECK(!is_worker_thread(), "a magpie pool was destroyed by one of its own workers");
  {
    std::unique_lock lock(m_inflight_mutex);
    // seq_cst: new submissions now throw pool_closed; and a root's finish_root on a worker either
    // sees this store (and notifies under the mutex) or its count is seen by our predicate (§9.1).
    m_closing.store(true, std::memory_order_seq_cst);
#if MAGPIE_PROCESS_BARRIER
    // The workers' side of that handshake (holds, their ends, roots' finishes) is a plain
    // store where the process could register: this barrier on every running thread orders
    // each such store before its load of m_closing, or our store before it (§9.1, §13).
    core::detail::process_barrier();
#endif
    // Roots, submissions from tasks (resume_on) and parked tasks alike: after this wait no
    // submitter touches the pool again, and every job pushed to a queue was pushed before m_stop
    // (§5.1). Tasks parked on a primitive that never releases them keep us waiting: say so once.
    // Roots and parked tasks are counted apart (per worker, lock-free; roots from outside by their
    // submitters, under this mutex); a finish or an end of hold that sees `closing` notifies under
    // this mutex, so the predicate cannot miss it. Parked tasks first, then roots (§7, §9.1).
    auto const drained = [&] { return m_inflight == 0 && holds_pending() == 0 && roots_done(); };
    if (!m_inflight_cv.wait_for(lock, std::chrono::seconds(1), drained)) {
      if (std::size_t const parked = holds_pending(); parked != 0) {
        std::fprintf(stderr,
                     "magpie: a pool's destructor is waiting for %zu suspended task(s): they wait "
                     "on something (an event, a mutex, a future ...) that has not released them; "
                     "destroying that primitive resumes them with magpie::abandoned_wait\n",
                     parked);
      }
      if (std::size_t const hosting = m_guests_hosting.load(std::memory_order_relaxed);
          hosting != 0) {
        std::fprintf(stderr,
                     "magpie: a pool's destructor is waiting for %zu task_group(s) that a plain "
                     "thread filled: such a group holds one of the pool's caller slots until its "
                     "wait() returns or it is destroyed; wait for it before destroying its pool\n",
                     hosting);
      }
      m_inflight_cv.wait(lock, drained);
    }
  }
  stop_workers();
  registry::remove(*this);
}

void pool::stop_workers() noexcept {
  m_stop.store(true, std::memory_order_seq_cst); // read by workers, and by sleepers' re-checks
  // seq_cst: a sleeper stores `asleep` and then loads m_stop; either it sees the stop, or its
  // store comes before our CAS, which then finds `asleep` and wakes it (docs/protocols.md §6).
  for (auto &w : m_workers) {
    (void)notify_if_asleep(*w);
  }
  for (auto &w : m_workers) {
    if (w->thread.joinable()) { // a failed constructor started only some
      w->thread.join();
    }
  }
}

void pool::start(detail::worker &w) noexcept {
  std::size_t const i = w.index();
  if (m_worker_cpu[i] >= 0) {
    m_pin_error[i] = pin_this_thread(static_cast<unsigned>(m_worker_cpu[i]));
  }
  // The stack is first touched here, on the worker's thread (and node, once pinned): see
  // docs/topology.md for stacks handed to other workers at a join.
  (void)w.renew_stack_here();
  // release: publishes m_pin_error[i] to the constructor's acquire
  if (m_starting.fetch_sub(1, std::memory_order_release) == 1) {
    m_starting.notify_all();
  }
}

std::size_t pool::size() const noexcept { return m_workers.size(); }

core::context const &pool::worker_context(std::size_t i) const noexcept {
  MAGPIE_CHECK(i < m_workers.size() + m_guests.size(), "pool::worker_context: no such worker");
  return i < m_workers.size() ? *m_workers[i] : *m_guests[i - m_workers.size()];
}

std::vector<core::worker_stats> pool::stats() const {
  std::vector<core::worker_stats> out;
  out.reserve(m_workers.size() + m_guests.size());
  for (auto const &w : m_workers) {
    out.push_back(w->stats());
  }
  for (auto const &g : m_guests) {
    out.push_back(g->stats());
  }
  return out;
}

busy_pool::busy_pool(std::size_t workers) : pool(workers, idle_policy::busy) {}
lazy_pool::lazy_pool(std::size_t workers) : pool(workers, idle_policy::lazy) {}
busy_pool::busy_pool(pool_options const &options) : pool(options, idle_policy::busy) {}
lazy_pool::lazy_pool(pool_options const &options) : pool(options, idle_policy::lazy) {}

} // namespace magpie::sched
