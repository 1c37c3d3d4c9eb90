// magpie/src/pool/sleep.cpp — the worker loop and the lazy pool's sleep/wake protocol: active
// workers and thieves (at least one thief stays awake while any worker runs tasks), a sleeper's
// registration and re-check, and the submitters' wake-ups.
//
// The protocol and why no wake-up is lost: docs/protocols.md, "Sleep and wake-up" (§6); its
// model: docs/models/sleep.pml. The submitters' half of the handshake is the seq_cst store in
// run_queue::published_push (run_queue.hpp) and the queues' pushes before wake(); why the loop's
// last look at m_stop finds every job still queued: docs/protocols.md §5.1.

#include "magpie/sched/pool.hpp"

#include <atomic>
#include <mutex>
#include <thread>

#include "magpie/core/detail/pause.hpp"
#include "worker.hpp"

namespace magpie::sched {

namespace {
constexpr unsigned spin_rounds = 64;   // failed rounds before yielding the core
constexpr unsigned yield_rounds = 256; // failed rounds before a lazy worker tries to sleep
} // namespace

void pool::run(detail::worker &w) {
  core::set_this_context(&w);
  for (;;) {
    if (run_jobs(w) || try_steal(w)) {
      w.failures = 0;
      continue; // still active: a worker that finds work job after job stays counted as one
    }
    deactivate(w); // a thief again: from here on we look for work (docs/protocols.md §6)
    if (m_stop.load(std::memory_order_acquire)) { // acquire: pairs with the destructor's store
      // Every submission to this pool was pushed before m_stop was stored (the destructor waited
      // for them under m_inflight_mutex), so this look sees every job still queued for us, even
      // one that the look at the top of the loop missed (docs/protocols.md §5.1).
      if (run_jobs(w)) {
        continue;
      }
      break;
    }
    idle(w);
  }
  core::set_this_context(nullptr);
}

void pool::idle(detail::worker &w) {
  // A hint for choose_worker() (no edge), written once rather than every round: submitters read
  // its line.
  if (!w.idle.load(std::memory_order_relaxed)) {
    w.idle.store(true, std::memory_order_relaxed);
  }
  ++w.failures;
  if (w.failures < spin_rounds) {
    core::detail::cpu_pause();
    return;
  }
  if (m_policy == idle_policy::busy || w.failures < yield_rounds) {
    std::this_thread::yield();
    return;
  }
  w.failures = 0;
  // Leave the thieves. If we were the last one while some worker runs tasks, stay: that worker's
  // deque may fill, and nobody else would look.
  if (m_thieves.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
      m_active.load(std::memory_order_seq_cst) > 0) {  // seq_cst: the counters' total order
    m_thieves.fetch_add(1, std::memory_order_seq_cst); // back to being a thief
    std::this_thread::yield();
    return;
  }
  {
    std::unique_lock lock(m_sleep_mutex);
    w.asleep = true;
    w.notified = false;
    m_sleepers.fetch_add(1, std::memory_order_seq_cst); // seq_cst: pairs with wake()'s load
    // Re-check after registering. Sleep only if no job is queued for us, no deque holds work, we
    // are not stopping, and we are not needed as the last thief.
    bool const needed = m_thieves.load(std::memory_order_seq_cst) == 0 &&
                        m_active.load(std::memory_order_seq_cst) > 0; // seq_cst: see protocols §6
    if (!needed && !work_visible(w) && !m_stop.load(std::memory_order_seq_cst)) { // under the lock
      w.bump(core::counter::sleeps);
      w.observe(core::event::sleep);
      // relaxed m_stop: the destructor sets it before taking this lock to notify us
      w.cv.wait(lock, [&] { return w.notified || m_stop.load(std::memory_order_relaxed); });
      if (w.notified) {
        w.bump(core::counter::wakes);
      }
      w.observe(core::event::wake);
    }
    w.asleep = false;
    m_sleepers.fetch_sub(1, std::memory_order_seq_cst); // awake again: wakers may skip us
  }
  m_thieves.fetch_add(1, std::memory_order_seq_cst); // a thief again (protocols §6)
}

bool pool::work_visible(detail::worker const &w) const noexcept {
  if (!w.targeted.empty()) {
    return true;
  }
  for (auto const &other : m_workers) {
    // seq_cst loads: hints, but fresh ones (see protocols §6)
    if (!other->tasks().empty() || !other->queued.empty() || !other->local.empty() ||
        !other->resumed.empty()) {
      return true;
    }
  }
  for (auto const &guest : m_guests) {
    if (!guest->tasks().empty()) { // seq_cst: as above (a guest has nothing else to take)
      return true;
    }
  }
  return false;
}

void pool::wake(std::size_t index) noexcept {
  // seq_cst: either a would-be sleeper registered before this load (and we notify it under the
  // lock), or its registration comes later and its re-check under the lock sees our push.
  if (m_sleepers.load(std::memory_order_seq_cst) == 0) {
    return;
  }
  std::lock_guard lock(m_sleep_mutex);
  detail::worker &w = *m_workers[index];
  if (w.asleep && !w.notified) {
    w.notified = true;
    w.cv.notify_one();
  }
}

void pool::wake_one() noexcept {
  if (m_sleepers.load(std::memory_order_seq_cst) == 0) { // seq_cst: as in wake()
    return;
  }
  std::lock_guard lock(m_sleep_mutex);
  for (auto &w : m_workers) {
    if (w->asleep && !w->notified) {
      w->notified = true;
      w->cv.notify_one();
      return;
    }
  }
}

void pool::become_active() noexcept {
  if (m_policy != idle_policy::lazy) {
    return;
  }
  // seq_cst on both counters: a thief deciding whether it may sleep reads them in the same total
  // order, so it either sees us active or sees that we were not the last thief.
  m_active.fetch_add(1, std::memory_order_seq_cst);
  if (m_thieves.fetch_sub(1, std::memory_order_seq_cst) == 1) { // seq_cst: see above
    wake_one(); // we were the last thief, and now we make stealable work: wake a replacement
  }
}

void pool::become_thief() noexcept {
  if (m_policy != idle_policy::lazy) {
    return;
  }
  m_thieves.fetch_add(1, std::memory_order_seq_cst); // thief first: never a moment with work and
  m_active.fetch_sub(1, std::memory_order_seq_cst);  // no thief on our account
}

void pool::activate(detail::worker &w) noexcept {
  w.idle.store(false, std::memory_order_relaxed); // a hint for choose_worker(): no edge
  if (!w.active) {
    w.active = true;
    become_active();
  }
}

void pool::deactivate(detail::worker &w) noexcept {
  if (w.active) {
    w.active = false;
    become_thief();
  }
}

} // namespace magpie::sched
