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
#include <chrono>
#include <cstdint>
#include <thread>

#include "magpie/core/detail/pause.hpp"
#include "magpie/core/detail/thread_wait.hpp"
#include "worker.hpp"

namespace magpie::sched {

namespace {
constexpr unsigned spin_rounds = 64; // failed rounds before yielding the core
// How long a lazy worker keeps looking (yielding its core between rounds) after its last work
// before it tries to sleep. A worker that slept must be woken, and wake-ups travel one at a
// time (a woken thief wakes the next only once it finds work, ~10-100 µs each on a VM): a pool
// entered again and again with short serial gaps in between (a loop called from main, with
// the caller's own work between calls) would otherwise meet mostly sleeping workers at each
// call. 1 ms covers such gaps; an idle pool still sleeps 1 ms after its last work.
constexpr std::chrono::microseconds awake_after_work{1000};
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
  if (m_policy == idle_policy::busy) {
    std::this_thread::yield();
    return;
  }
  auto const now = std::chrono::steady_clock::now();
  if (w.failures == spin_rounds) {
    w.yielding_since = now; // the first yielding round of this run
  }
  if (now - w.yielding_since < awake_after_work) {
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
  // Announce the sleep on our word, then register as a sleeper, then re-check (all seq_cst, in
  // this order: protocols §6). A waker that reads m_sleepers > 0 CASes our word from `asleep`;
  // one that reads 0 pushed before our registration, and the re-check sees its job.
  w.sleep_word.store(detail::sleep_asleep, std::memory_order_seq_cst);
  m_sleepers.fetch_add(1, std::memory_order_seq_cst); // seq_cst: pairs with wake()'s load
#if MAGPIE_PROCESS_BARRIER
  // A thread that hosts roots on a guest slot pushes them with a compiler barrier only before it
  // looks at m_sleepers (host_root): this barrier orders its push before our re-check, or our
  // registration before its look (§5.4). Its open_host's seq_cst increment comes before its
  // first push, so a zero here means its look will see our registration.
  if (m_guests_hosting.load(std::memory_order_seq_cst) != 0) {
    core::detail::process_barrier();
  }
#endif
  // Sleep only if no job is queued for us, no deque holds work, we are not stopping, and we are
  // not needed as the last thief.
  bool const needed = m_thieves.load(std::memory_order_seq_cst) == 0 &&
                      m_active.load(std::memory_order_seq_cst) > 0; // seq_cst: see protocols §6
  if (!needed && !work_visible(w) && !m_stop.load(std::memory_order_seq_cst)) {
    w.bump(core::counter::sleeps);
    w.observe(core::event::sleep);
    // A futex wait while the word holds `asleep` (a spurious return looks again). Only a waker's
    // CAS changes it: wake, wake_one, or the destructor's stop_workers.
    while (w.sleep_word.load(std::memory_order_seq_cst) == detail::sleep_asleep) {
      w.sleep_word.wait(detail::sleep_asleep, std::memory_order_seq_cst);
    }
    w.bump(core::counter::wakes);
    w.observe(core::event::wake);
  }
  // Awake again: a thief first, then the word leaves `notified` (if a waker put it there), so that
  // thief_on_its_way() counts us at least once throughout. While the word is not `asleep`, a late
  // waker's CAS fails, and its notify (if any) finds nobody waiting.
  m_sleepers.fetch_sub(1, std::memory_order_seq_cst); // wakers may skip us
  m_thieves.fetch_add(1, std::memory_order_seq_cst);  // a thief again (protocols §6)
  w.sleep_word.store(detail::sleep_awake, std::memory_order_seq_cst);
}

bool pool::thief_on_its_way() const noexcept {
  for (auto const &w : m_workers) {
    // seq_cst: ordered with the woken worker's m_thieves increment and its later store of
    // `awake` (protocols §6): a worker whose word we find past `notified` was counted a thief.
    if (w->sleep_word.load(std::memory_order_seq_cst) == detail::sleep_notified) {
      return true;
    }
  }
  return false;
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
    // seq_cst: as above (a guest has nothing else to take but the roots it hosts: §5.4)
    if (!guest->tasks().empty() || !guest->local.empty()) {
      return true;
    }
  }
  return false;
}

void pool::wake(std::size_t index) noexcept {
  // seq_cst: either a would-be sleeper registered before this load (and our CAS finds its
  // `asleep`), or its registration comes later and its re-check sees our push (protocols §6).
  if (m_sleepers.load(std::memory_order_seq_cst) == 0) {
    return;
  }
  (void)notify_if_asleep(*m_workers[index]);
}

void pool::wake_one() noexcept {
  if (m_sleepers.load(std::memory_order_seq_cst) == 0) { // seq_cst: as in wake()
    return;
  }
  for (auto &w : m_workers) {
    if (notify_if_asleep(*w)) {
      return;
    }
  }
}

bool pool::notify_if_asleep(detail::worker &w) noexcept {
  // A load first: most words a waker looks at are not asleep, and a failed CAS would still take
  // the line for writing. seq_cst throughout: ordered with the sleeper's store of `asleep` and
  // its later loads (protocols §6).
  std::uint32_t expected = detail::sleep_asleep;
  if (w.sleep_word.load(std::memory_order_seq_cst) != expected ||
      !w.sleep_word.compare_exchange_strong(expected, detail::sleep_notified,
                                            std::memory_order_seq_cst)) {
    return false;
  }
  // The word outlives this call: the pool does, and every caller keeps it alive across it (an
  // open submission or hold ends after it, a worker runs inside the pool, and a thread that
  // submits a root is inside a member call, during which no other thread may destroy the pool).
  // A notify that finds the worker not yet waiting is harmless: it waits only while the word
  // holds `asleep`, and the word no longer does.
  w.sleep_word.notify_one();
  core::detail::woke_a_sleeper() = true; // this thread's next blocking wait yields (thread_wait)
  return true;
}

void pool::become_active() noexcept {
  if (m_policy != idle_policy::lazy) {
    return;
  }
  // seq_cst on both counters: a thief deciding whether it may sleep reads them in the same total
  // order, so it either sees us active or sees that we were not the last thief.
  m_active.fetch_add(1, std::memory_order_seq_cst);
  // We were the last thief, and now we make stealable work: wake a replacement, unless a sleeper
  // already notified is on its way (it counts itself a thief once awake; a second wake-up would
  // bring one no sooner, and costs the waker a system call).
  if (m_thieves.fetch_sub(1, std::memory_order_seq_cst) == 1 && // seq_cst: see above
      !thief_on_its_way()) {
    wake_one();
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
