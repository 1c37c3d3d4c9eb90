// magpie/src/pool/find_work.cpp — where a worker finds its next job: the jobs aimed at it, its
// queues (resumed tasks, then roots by priority: run_queue.hpp), then a victim's deque or queues
// (stealing). The loop that calls these, and sleeps when they find nothing, is in sleep.cpp.

#include "magpie/sched/pool.hpp"

#include <cstdint>

#include "magpie/core/ext.hpp"
#include "worker.hpp"

namespace magpie::sched {

void pool::run_batch(detail::worker &w, job *j) {
  activate(w);
  while (j != nullptr) {
    job *next = j->m_next; // read first: running a job may end its storage's lifetime
    w.bump(core::counter::jobs);
    j->m_run(j, w);
    w.observe(core::event::strand_end);
    detail::check_strand_ended(w);
    j = next;
  }
}

bool pool::run_jobs(detail::worker &w) {
  if (job *targeted_jobs = w.targeted.take_all()) {
    run_batch(w, targeted_jobs);
    return true;
  }
  return run_queued(w, w);
}

bool pool::run_queued(detail::worker &w, detail::worker &from) {
  if (!from.resumed.empty()) {
    if (auto const taken = from.resumed.steal()) { // the oldest, by the owner or a thief
      run_batch(w, taken.value);
      return true;
    }
  }
  bool take_local = false;
  // one job: the rest stay where idle thieves can take them
  job *j = from.queued.pop(!from.local.empty(), &take_local);
  if (take_local) {
    if (&w == &from) {
      auto const popped = w.local.pop(); // the newest: depth first
      j = popped.ok ? popped.value : nullptr;
    } else {
      auto const stolen = from.local.steal(); // the oldest, as a continuation is stolen
      j = stolen ? stolen.value : nullptr;
    }
  }
  if (j == nullptr) {
    return false;
  }
  run_batch(w, j);
  return true;
}

bool pool::try_steal(detail::worker &w) {
  std::size_t const n = m_workers.size();
  // relaxed: hints. A guest's continuation or hosted root is also seen by work_visible (seq_cst)
  // before a thief sleeps, and the last thief stays awake while a guest counts as active (§6).
  bool const hosting = m_guests_hosting.load(std::memory_order_relaxed) != 0;
  if (n < 2) {
    // A one-worker pool does not steal a guest's continuations (run_root_here), but it takes the
    // roots that plain threads host (§5.4): nobody else would run them until their holder waits.
    if (hosting) {
      for (std::size_t k = 0; k < m_guests.size(); ++k) {
        if (run_hosted(w, *m_guests[k])) {
          return true;
        }
      }
    }
    return false;
  }
  // While callers run roots here or host them, each attempt first looks at the guest slots, from
  // a random one on, and tries the first whose deque shows work (a guest's continuations are the
  // tops of the roots it runs, and the caller is waiting for them); with none, a worker. A guest
  // has no queues: its jobs all went to workers, but for the roots a hosting thread pushed on its
  // slot's deque. The looks are hints (two loads per slot): the steal decides.
  bool const guests = hosting || m_guests_running.load(std::memory_order_relaxed) != 0;
  std::uint64_t const bits = (std::uint64_t{w.random()} << 32) | w.random();
  if (guests) {
    std::size_t const g = m_guests.size();
    std::size_t k = static_cast<std::size_t>(bits >> 33) % g;
    for (std::size_t i = 0; i < g; ++i, k = k + 1 == g ? 0 : k + 1) {
      detail::worker &v = *m_guests[k];
      if (!v.thief().empty() || !v.local.empty()) {
        return steal_from(w, v, n + k);
      }
    }
  }
  std::size_t const victim = m_victims->pick(w.index(), bits); // the pool's victim policy
  return steal_from(w, *m_workers[victim], victim);
}

bool pool::run_hosted(detail::worker &w, detail::worker &slot) {
  if (slot.local.empty()) { // a hint: the steal decides
    return false;
  }
  auto const stolen = slot.local.steal(); // the oldest; acquire: the job's contents are ours
  if (!stolen) {
    return false;
  }
  run_batch(w, stolen.value);
  return true;
}

bool pool::steal_from(detail::worker &w, detail::worker &v, std::size_t victim) {
  auto stolen = v.thief().steal();
  if (!stolen) {
    if (stolen.status == core::steal_status::empty &&
        (is_guest(v) ? run_hosted(w, v) : run_queued(w, v))) {
      return true; // the victim is busy with something else: we run its queued or hosted work
    }
    w.bump(core::counter::steal_fails);
    return false;
  }
  activate(w);
  w.bump(core::counter::steals);
  w.observe(core::event::steal, victim);
  // The steal's acquire made the frame's state ours; we are now its only runner.
  core::ext::resume_stolen(stolen.value, w);
  w.observe(core::event::strand_end);
  detail::check_strand_ended(w);
  return true;
}

} // namespace magpie::sched
