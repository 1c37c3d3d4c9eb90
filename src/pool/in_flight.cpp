// magpie/src/pool/in_flight.cpp — how work enters a pool, and how it is counted in flight until
// the destructor may proceed: roots (submit_root, finish_root, withdraw_root), submissions from
// tasks (open_submission, submit_to), parked tasks (the executor's hold, resubmit, unhold), and
// the sums the destructor's predicate reads. Why no submission outlives the pool or is lost at
// shutdown: docs/protocols.md §5.1, §7 and §9.1.

#include "magpie/sched/pool.hpp"

#include <atomic>
#include <cstdint>
#include <mutex>

#include "magpie/core/config.hpp"
#include "magpie/core/ext.hpp"
#include "worker.hpp"

namespace magpie::sched {

// The executor interface (core/context.hpp) through which core parks tasks on this pool's workers
// and resumes them there (§7), and hands back stack chains (guest.cpp: keep_chain).
core::executor::operations const pool::executor_operations = {
    [](core::executor &self) { static_cast<pool &>(self).hold(); },
    [](core::executor &self, job *j, std::size_t worker) noexcept {
      static_cast<pool &>(self).resubmit(j, worker);
    },
    [](core::executor &self) noexcept { static_cast<pool &>(self).unhold(); },
    [](core::executor const &self) noexcept { return static_cast<pool const &>(self).size(); },
    [](core::executor &self, core::stacklet *chain) noexcept {
      return static_cast<pool &>(self).keep_chain(chain);
    },
};

void pool::open_submission() {
  std::lock_guard lock(m_inflight_mutex);
  if (m_closing.load(std::memory_order_relaxed)) { // written under this mutex
    throw pool_closed();
  }
  ++m_inflight;
}

void pool::close_submission() noexcept {
  std::lock_guard lock(m_inflight_mutex);
  if (--m_inflight == 0) {
    m_inflight_cv.notify_all(); // under the lock: the destructor cannot free the cv before this
  }
}

MAGPIE_FORCEINLINE void pool::unhold_on(detail::worker &own) noexcept {
  // On our worker the pool outlives this call (its destructor joins us): count without the
  // mutex (one writer: a plain store), then notify under it if the destructor waits. A handshake
  // as in hold() (the destructor's predicate sees the count, or we see closing).
  detail::bump_own_then_load(own.unholds);
  if (m_closing.load(std::memory_order_seq_cst)) [[unlikely]] { // seq_cst: the handshake's load
    std::lock_guard lock(m_inflight_mutex);
    m_inflight_cv.notify_all();
  }
}

void pool::hold() {
  detail::worker *const own = calling_worker();
  if (own == nullptr) {
    // Off our workers: under the mutex, as the destructor's predicate (which thus sees it or has
    // already decided).
    std::lock_guard lock(m_inflight_mutex);
    if (m_closing.load(std::memory_order_relaxed) && m_inflight == 0 && // under this mutex
        holds_pending() == 0 && roots_done()) {
      throw pool_closed(); // the destructor saw nothing in flight: it may be past its wait
    }
    m_foreign_holds.fetch_add(1, std::memory_order_seq_cst); // seq_cst: as below
    return;
  }
  // One writer: a plain store. A handshake with the destructor's store of m_closing: either its
  // predicate sees this hold, or we see closing and decide under the mutex (§9.1).
  detail::bump_own_then_load(own->holds);
  if (!m_closing.load(std::memory_order_seq_cst)) [[likely]] { // seq_cst: the handshake's load
    return;
  }
  std::lock_guard lock(m_inflight_mutex);
  // While anything else is in flight the destructor is still waiting, so our hold is safe; if
  // ours is all there is, it may have decided before our store: take it back and refuse.
  if (m_inflight == 0 && holds_pending() == 1 && roots_done()) {
    detail::bump_own(own->unholds, std::memory_order_seq_cst); // seq_cst: as above
    m_inflight_cv.notify_all(); // under the lock; the destructor may have seen our hold
    throw pool_closed();
  }
}

void pool::resubmit(job *j, std::size_t worker) noexcept {
  std::size_t const n = m_workers.size();
  MAGPIE_CHECK(worker == core::ext::any_worker || worker < n + m_guests.size(),
               "a suspended task was resumed on a worker index its pool does not have");
  if (worker >= n) {
    worker = core::ext::any_worker; // a guest runs only its own root's strand: any worker will do
  }
  if (worker == core::ext::any_worker) {
#if !MAGPIE_ASYMMETRIC_FENCES // (a steal there pays a heavy fence: keep this path for pops)
    if (detail::worker *const own = calling_worker(); own != nullptr && !is_guest(*own)) {
      // A task of ours resumed it: keep it on our worker, lock-free, without a wake-up (we are
      // active, so a thief is awake: §6); idle thieves take it if we stay busy. The push cannot
      // fail once room is reserved; if reserving fails (no memory), use the locked queue below.
      bool reserved = true;
      try {
        own->resumed.reserve_one();
      } catch (...) {
        reserved = false;
      }
      if (reserved) {
        own->resumed.push_reserved(j); // release: publishes the job to a thief (as a fork's push)
        unhold_on(*own);               // on our worker: the pool outlives this call
        return;
      }
    }
#endif
    worker = choose_worker();
    m_workers[worker]->queued.push_resumed(j); // seq_cst: before the sleepers check in wake()
  } else {
    m_workers[worker]->targeted.push(j); // seq_cst: as above
  }
  // From here on `j` may be running and its task gone: touch only the pool, which our hold keeps
  // alive (as in submit_to).
  wake(worker);
  unhold(); // point of no return: the destructor may free the pool after this
}

bool pool::others_waiting_here() const noexcept {
  detail::worker const *const own = calling_worker();
  if (own == nullptr || is_guest(*own)) {
    return false; // a guest runs only its own root's strand: nothing waits for it
  }
  return !own->targeted.empty() || !own->resumed.empty() || own->queued.resumed_waiting();
}

void pool::requeue_here(job *j) noexcept {
  detail::worker &own = *calling_worker();
  // Behind the resumed tasks already queued here (FIFO), before new roots. No wake-up: we are
  // active, so a thief is awake (§6), as for a push on our own deques; the push is seq_cst for
  // a would-be sleeper's re-check all the same.
  own.queued.push_resumed(j);
  unhold_on(own); // on our worker: the pool outlives this call
}

void pool::unhold() noexcept {
  if (detail::worker *const own = calling_worker()) {
    unhold_on(*own);
    return;
  }
  // Elsewhere (a plain thread resuming a task): under the mutex, because once the destructor
  // sees the count it may free the pool; it cannot before we unlock.
  std::lock_guard lock(m_inflight_mutex);
  m_foreign_unholds.fetch_add(1, std::memory_order_seq_cst); // seq_cst: as above
  m_inflight_cv.notify_all(); // under the lock: the destructor cannot free the cv before this
}

std::size_t pool::pending(std::atomic<std::uint64_t> const *foreign_ends,
                          std::atomic<std::uint64_t> detail::worker::*ends,
                          std::atomic<std::uint64_t> const *foreign_starts,
                          std::atomic<std::uint64_t> detail::worker::*starts) const noexcept {
  // Ends first, then starts (docs/protocols.md §7, §9.1): every end we count was caused by a
  // start that happened before it, which the later loads see (the ends' stores are releases, our
  // loads acquires), so the starts we count are never fewer; equal sums mean none was pending
  // between the two passes. seq_cst loads: see finish_root and hold.
  // Guests count on their slots as workers do: a slot's successive holders are ordered by its
  // claim (acquire) and release (release), so each slot's counters still have one writer at a time.
  auto const sum = [&](std::atomic<std::uint64_t> detail::worker::*count) {
    std::uint64_t n = 0;
    for (auto const &w : m_workers) {
      n += ((*w).*count).load(std::memory_order_seq_cst);
    }
    for (auto const &g : m_guests) {
      n += ((*g).*count).load(std::memory_order_seq_cst);
    }
    return n;
  };
  std::uint64_t const ended = foreign_ends->load(std::memory_order_seq_cst) + sum(ends);
  std::uint64_t const started =
      (foreign_starts != nullptr ? foreign_starts->load(std::memory_order_seq_cst) : 0) +
      sum(starts);
  return static_cast<std::size_t>(started - ended);
}

std::size_t pool::holds_pending() const noexcept {
  return pending(&m_foreign_unholds, &detail::worker::unholds, &m_foreign_holds,
                 &detail::worker::holds);
}

std::size_t pool::submit_root(job *j, priority p) {
  detail::worker *const self = calling_worker();
  bool const own = self != nullptr;
  // A guest's task spawning: counted on the guest's slot, but queued on a worker (the guest runs
  // only its own root's strand) and woken there.
  bool const local = own && !is_guest(*self);
  if (own) {
    // A task of ours spawning: its own root is in flight, so the destructor is still waiting
    // and accepts this one too, even while closing (a spawned task that spawns more is waited
    // for). Counted on our worker's own counter (one writer: a plain store). release: a reader
    // that sees a finish caused by this root (through the job's hand-off) sees this count too.
    detail::bump_own(self->roots_spawned, std::memory_order_release);
  } else {
    // Counted in flight until finish_root(), after the root has completed. Under the mutex: once
    // closing, a submission from elsewhere is refused, and the destructor's predicate (under it)
    // sees every count made before. One writer at a time: a plain store. The worker that finishes
    // the root counts that on its own counter, not here: this line stays with the submitters.
    std::lock_guard lock(m_inflight_mutex);
    if (m_closing.load(std::memory_order_relaxed)) { // written under this mutex
      throw pool_closed();
    }
    detail::bump_own(m_foreign_roots, std::memory_order_seq_cst); // seq_cst: as the workers' (§9.1)
  }
  // A task spawning keeps the job local (thieves take it if we stay busy), and wakes nobody:
  // while we run tasks at least one thief is awake (docs/protocols.md §6). At normal priority it
  // goes to the worker's local deque (lock-free; newest first for the owner, oldest first for
  // thieves), as a forked child's continuation would (§9.2).
  std::size_t const index = local ? self->index() : choose_worker();
  try {
    if (local && p == priority::normal) {
      self->local.push(j); // release: publishes the job to a thief (as a fork's push)
      return local_queue;
    }
    m_workers[index]->queued.push_root(j, p); // seq_cst: before the sleepers check in wake()
  } catch (...) {
    finish_root(); // nothing was queued
    throw;
  }
  if (!local) {
    wake(index);
  }
  return index;
}

bool pool::withdraw_root(job *j, std::size_t worker, priority p) noexcept {
  if (worker == local_queue) {
    return false; // a deque cannot give up an item in the middle: see run_stale_local
  }
  return m_workers[worker]->queued.withdraw(j, p);
}

void pool::finish_root() noexcept {
  if (detail::worker *const own = calling_worker()) {
    // One writer per counter: a plain store. A handshake: with the load of m_closing below and
    // the destructor's store of it and its loads of the counts, either we see closing (and
    // notify), or the destructor's predicate sees this count. Also a release of the root's work.
    detail::bump_own_then_load(own->roots_finished);
  } else {
    // A root that ended elsewhere (moved to another pool by resume_on; a sync_wait's, ended by
    // its waiting thread): a shared counter, under the mutex, because once the destructor sees it
    // it may free the pool (on our own worker it cannot: its destructor joins us first).
    std::lock_guard lock(m_inflight_mutex);
    m_foreign_finished.fetch_add(1, std::memory_order_seq_cst); // seq_cst: as above
    m_inflight_cv.notify_all(); // under the lock: the destructor cannot free the cv before this
    return;
  }
  if (m_closing.load(std::memory_order_seq_cst)) { // seq_cst: see above
    std::lock_guard lock(m_inflight_mutex); // the destructor checks the counts under this mutex
    m_inflight_cv.notify_all(); // under the lock: the destructor cannot free the cv before this
  }
}

bool pool::roots_done() const noexcept { return roots_pending() == 0; }

std::size_t pool::roots_pending() const noexcept {
  // Roots from outside are counted by their submitters (under the mutex), the others by the
  // workers whose tasks spawned them; all end on the finishing worker's count.
  return pending(&m_foreign_finished, &detail::worker::roots_finished, &m_foreign_roots,
                 &detail::worker::roots_spawned);
}

std::uint64_t pool::roots_submitted() const noexcept {
  std::uint64_t n = m_foreign_roots.load(std::memory_order_relaxed); // a statistic: no edge
  for (auto const &w : m_workers) {
    n += w->roots_spawned.load(std::memory_order_relaxed); // a statistic: no edge
  }
  for (auto const &g : m_guests) {
    n += g->roots_spawned.load(std::memory_order_relaxed); // a statistic: no edge
  }
  return n;
}

std::size_t pool::in_flight() const noexcept {
  std::lock_guard lock(m_inflight_mutex);
  return m_inflight + holds_pending() + roots_pending();
}

void pool::submit_to(std::size_t index, job *j) noexcept {
  m_workers[index]->targeted.push(j); // seq_cst: before the sleepers check in wake()
  // From here on `j` may be running, even finished, and its task's frame gone: touch only the
  // pool, which our open submission keeps alive (docs/protocols.md §5.1).
  wake(index);
  // Point of no return: once the count drops, the destructor may free the pool. The mutex orders
  // our push and wake before the destructor's m_stop store and its frees.
  close_submission();
}

} // namespace magpie::sched
