// magpie/src/pool/guest.cpp — callers that run their roots here, as guests of the pool, on guest
// slots of their own (run_root_here), plain threads that host a task group's roots on a slot
// between calls (open_host … close_host), and the stack chains that workers hand back to the
// slots (keep_chain). docs/protocols.md §5.2, §5.4.

#include "magpie/sched/pool.hpp"

#include <atomic>
#include <mutex>

#include "magpie/core/config.hpp"
#include "magpie/core/detail/fence.hpp"
#include "worker.hpp"

namespace magpie::sched {

detail::worker *pool::claim_guest() noexcept {
  std::size_t const g = m_guests.size();
  // Each thread starts at a slot of its own choosing: concurrent callers rarely collide.
  thread_local std::size_t hint = 0;
  for (std::size_t k = 0; k < g; ++k) {
    detail::worker &slot = *m_guests[(hint + k) % g];
    // acquire: what the slot's previous holder wrote (its counters, stack, deque) is ours now
    if (!slot.taken.load(std::memory_order_relaxed) &&
        !slot.taken.exchange(true, std::memory_order_acquire)) {
      hint = (hint + k) % g;
      return &slot;
    }
  }
  return nullptr;
}

bool pool::keep_chain(core::stacklet *chain) noexcept {
  // A guest slot's chain leaves with its root (a join, a wait, resume_on) and ends up on a worker,
  // which then has one chain too many: it comes back here. At most one chain waits per slot.
  if (chain->capacity() < core::stack::initial_capacity) {
    return false; // a parked task's small chain: a root would outgrow it at once
  }
  for (auto const &guest : m_guests) {
    core::stacklet *expected = nullptr;
    // release: the chain's fields (its saved top, its cached successor) go with it
    if (guest->returned_chain.load(std::memory_order_relaxed) == nullptr &&
        guest->returned_chain.compare_exchange_strong(expected, chain, std::memory_order_release,
                                                      std::memory_order_relaxed)) {
      return true;
    }
  }
  return false;
}

bool pool::run_root_here(job *j) { return run_as_guest(j, nullptr); }

bool pool::help_root_here(job *j, bool (*admit)(job *j) noexcept) { return run_as_guest(j, admit); }

void pool::ready_guest_stack(detail::worker &g) {
  if (g.stack().has_chain()) {
    return;
  }
  // The slot's last root left with its chain (a join, a wait, resume_on): take the one a worker
  // gave back (acquire: its fields, from that worker), else a fresh full-sized one. (Not the
  // small first stacklet a worker starts after a park: roots are fork-join work, and a chain
  // that grows on every visit would allocate on every visit.)
  if (core::stacklet *chain = g.returned_chain.exchange(nullptr, std::memory_order_acquire);
      chain != nullptr) {
    g.adopt_stack(chain);
  } else {
    g.stack().ensure(); // may throw std::bad_alloc
  }
}

void pool::enter_guest() noexcept {
  // On a pool of two or more workers thieves look at the guests from now on, and the guest counts
  // as active (a lazy pool keeps a thief awake while it runs, §5.2 and §6): if no thief is awake,
  // wake one to take our continuations. A one-worker pool leaves the guest's work to the guest:
  // it runs its roots in the serial order, as the pool's one worker would, and its worker stays
  // free for spawned and resumed tasks.
  if (m_workers.size() < 2) {
    return;
  }
  m_guests_running.fetch_add(1, std::memory_order_seq_cst);
  if (m_policy == idle_policy::lazy) {
    m_active.fetch_add(1, std::memory_order_seq_cst); // seq_cst: the counters' total order (§6)
    if (m_thieves.load(std::memory_order_seq_cst) == 0 && !thief_on_its_way()) {
      wake_one();
    }
  }
}

void pool::leave_guest() noexcept {
  if (m_workers.size() < 2) {
    return;
  }
  if (m_policy == idle_policy::lazy) {
    m_active.fetch_sub(1, std::memory_order_seq_cst);
  }
  m_guests_running.fetch_sub(1, std::memory_order_relaxed); // a hint for thieves
}

bool pool::run_as_guest(job *j, bool (*admit)(job *j) noexcept) {
  if (m_guests.empty() || m_observed.load(std::memory_order_acquire) || is_worker_thread()) {
    return false; // (sync_wait refuses the last case before it gets here)
  }
  detail::worker *const g = claim_guest();
  if (g == nullptr) {
    return false; // every slot is in use: the root goes to a worker
  }
  try {
    ready_guest_stack(*g);
  } catch (...) {
    g->taken.store(false, std::memory_order_release);
    throw;
  }
  if (admit != nullptr) {
    // A root already counted in flight by its submit_root (the destructor waits for it): no count
    // here, but the root may have been taken meanwhile; admit() claims it, or says it is gone.
    if (!admit(j)) {
      g->taken.store(false, std::memory_order_release);
      return false;
    }
  } else {
    // In flight exactly as a root submitted from outside (submit_root): refused once closing,
    // seen by the destructor's predicate otherwise; finish_root ends it.
    std::lock_guard lock(m_inflight_mutex);
    if (m_closing.load(std::memory_order_relaxed)) { // written under this mutex
      g->taken.store(false, std::memory_order_release);
      throw pool_closed();
    }
    detail::bump_own(m_foreign_roots, std::memory_order_seq_cst); // seq_cst: as the workers' (§9.1)
  }
  enter_guest();
  core::context *const previous = core::set_this_context(g);
  g->bump(core::counter::jobs);
  g->set_runs_own_root(true); // it waits for its root's joiners: §5.2 (not help_host's roots)
  j->m_run(j, *g); // returns when the root's strand ends here (it completed or waits elsewhere)
  g->set_runs_own_root(false);
  detail::check_strand_ended(*g);
  core::set_this_context(previous);
  leave_guest();
  g->taken.store(false, std::memory_order_release); // release: the next holder sees our writes
  return true;
}

detail::worker *pool::open_host() {
  if (m_guests.empty() || m_observed.load(std::memory_order_acquire) || is_worker_thread()) {
    return nullptr;
  }
  detail::worker *const g = claim_guest();
  if (g == nullptr) {
    return nullptr; // every slot is in use: the group's roots go to workers' queues
  }
  try {
    open_submission(); // the destructor waits for close_host; throws pool_closed once closing
  } catch (...) {
    g->taken.store(false, std::memory_order_release);
    throw;
  }
  // seq_cst: a hint for thieves (try_steal reads it relaxed), published before our first push
  m_guests_hosting.fetch_add(1, std::memory_order_seq_cst);
  return g;
}

void pool::host_root(detail::worker &g, job *j) {
  // Our open submission keeps the pool alive and its destructor waiting: a plain look suffices.
  if (m_closing.load(std::memory_order_acquire)) {
    throw pool_closed();
  }
  g.local.reserve_one(); // may throw std::bad_alloc: nothing counted or queued yet
  // In flight until finish_root, on the slot's own count: the holder is its one writer (§9.1).
  // release: a reader that sees a finish caused by this root (through the steal) sees this too.
  detail::bump_own(g.roots_spawned, std::memory_order_release);
  g.local.push_reserved(j); // release: publishes the job to a thief (as a fork's push)
  if (m_policy != idle_policy::lazy) {
    return; // busy workers keep stealing: one of them finds it
  }
  // Order the push before the loads below, as published_push's seq_cst store does for a queued
  // root: a would-be sleeper that registers after our look at m_sleepers, or that was still a
  // thief when we looked at m_thieves, re-checks work_visible later and sees the push (§5.4, §6).
  // Where membarrier works the sleeper pays for that order (pool::idle calls process_barrier
  // while a slot hosts roots): here a compiler barrier suffices, and a push does not wait for
  // its store to leave the core (a thief that just read `bottom` holds its line).
  core::detail::handshake_barrier();
  if (m_sleepers.load(std::memory_order_seq_cst) != 0 &&
      m_thieves.load(std::memory_order_seq_cst) == 0 && !thief_on_its_way()) {
    wake_one();
  }
}

void pool::help_host(detail::worker &g) noexcept {
  if (g.local.owner_sees_empty() || m_observed.load(std::memory_order_acquire)) {
    return; // nothing left, or an observer wants every root on a worker: the workers take them
  }
  try {
    ready_guest_stack(g);
  } catch (...) {
    return; // no stack to be had: the workers take the roots
  }
  enter_guest();
  core::context *const previous = core::set_this_context(&g);
  // The newest first (a thief takes the oldest). Only roots the holder pushed here: never
  // another root, a resumed task or a stolen continuation (§5.2's isolation).
  for (auto popped = g.local.pop(); popped.ok; popped = g.local.pop()) {
    g.bump(core::counter::jobs);
    popped.value->m_run(popped.value, g); // returns when its strand ends here
    detail::check_strand_ended(g);
    if (!g.stack().has_chain()) { // the root waits elsewhere and took our chain along
      try {
        ready_guest_stack(g);
      } catch (...) {
        break; // the workers take the rest
      }
    }
  }
  core::set_this_context(previous);
  leave_guest();
}

void pool::close_host(detail::worker &g) noexcept {
  m_guests_hosting.fetch_sub(1, std::memory_order_relaxed); // a hint for thieves
  g.taken.store(false, std::memory_order_release); // release: the next holder sees our writes
  close_submission(); // point of no return: the destructor may free the pool after this
}

} // namespace magpie::sched
