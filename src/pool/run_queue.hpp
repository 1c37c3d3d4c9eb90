#pragma once
// magpie/src/pool/run_queue.hpp — a worker's queue of resumed tasks and of roots by priority,
// with the starvation rule (docs/protocols.md §9.2).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "magpie/core/config.hpp"
#include "magpie/sched/job.hpp"
#include "magpie/sched/pool.hpp"
#include "root_ring.hpp"
#include "spin_lock.hpp"

namespace magpie::sched::detail {

/// One worker's jobs that any worker may run: resumed tasks, then new roots by priority (see
/// sched::priority for the order and the starvation rule; docs/protocols.md §9.2). A mutex guards
/// the lists: pushes come from any thread, pops from the owner and from idle thieves, one job at
/// a time (a long job must not hold short ones queued behind it hostage).
class run_queue {
public:
  static constexpr std::size_t levels = 3;              // root levels: one per priority
  static constexpr std::uint32_t starvation_period = 8; // every 8th root pick goes lower
  static constexpr std::size_t withdraw_window = 64;    // how far back withdraw_root looks

  /// Any thread: a resumed task. Never throws.
  void push_resumed(job *j) noexcept {
    j->m_next = nullptr;
    lock_spinning(m_mutex);
    std::lock_guard lock(m_mutex, std::adopt_lock);
    (m_resumed_tail != nullptr ? m_resumed_tail->m_next : m_resumed_head) = j;
    m_resumed_tail = j;
    m_resumed_waiting.store(true, std::memory_order_relaxed); // under the mutex; a hint
    published_push();
  }

  /// Any thread: a root. May throw std::bad_alloc; then nothing was queued.
  void push_root(job *j, priority p) {
    lock_spinning(m_mutex);
    std::lock_guard lock(m_mutex, std::adopt_lock);
    m_roots[static_cast<std::size_t>(p)].push(j);
    published_push();
  }

  /// Any thread: takes `j` back if it is still queued among the newest roots of level `p`.
  bool withdraw(job *j, priority p) noexcept {
    lock_spinning(m_mutex);
    std::lock_guard lock(m_mutex, std::adopt_lock);
    if (!m_roots[static_cast<std::size_t>(p)].withdraw(j, withdraw_window)) {
      return false;
    }
    m_size.store(m_size.load(std::memory_order_relaxed) - 1,
                 std::memory_order_relaxed); // under the mutex; readers only want a hint
    return true;
  }

  /// Any thread: the next job by the order above, or null. `local_normal`: the worker's local
  /// deque of normal-priority roots (pool::submit_root from its own tasks) looks non-empty; it
  /// counts as part of the normal level. Sets `*take_local` (and returns null) when the pick is
  /// that deque's: the caller pops it (the owner, newest first) or steals from it (a thief).
  /// Forced inline: the worker's loop asks it every round (pool::run_queued), and GCC's
  /// called-once rule inlines it there only when both share a file.
  MAGPIE_FORCEINLINE job *pop(bool local_normal, bool *take_local) noexcept {
    *take_local = false;
    if (m_size.load(std::memory_order_relaxed) == 0) { // a cheap look; the mutex decides
      *take_local = local_normal; // nothing resumed or queued here: only the local deque
      return nullptr;
    }
    // A worker that finds the lock taken looks again in its next round rather than sleeping on
    // it: the holder is a pusher (or another popper) for a few instructions.
    std::unique_lock lock(m_mutex, std::try_to_lock);
    if (!lock.owns_lock()) {
      return nullptr;
    }
    job *j = nullptr;
    if (m_resumed_head != nullptr) {
      j = m_resumed_head;
      m_resumed_head = j->m_next;
      if (m_resumed_head == nullptr) {
        m_resumed_tail = nullptr;
        m_resumed_waiting.store(false, std::memory_order_relaxed); // under the mutex; a hint
      }
      j->m_next = nullptr;
    } else if (std::size_t const level = pick_root_level(local_normal); level != levels) {
      constexpr auto normal = static_cast<std::size_t>(priority::normal);
      // Within the normal level the local deque goes first, except every 8th pick when this
      // queue also holds normal roots from outside (they are not starved by local spawns).
      if (level == normal && local_normal &&
          (m_roots[normal].empty() || ++m_local_picks % starvation_period != 0)) {
        *take_local = true;
        return nullptr;
      }
      j = m_roots[level].pop();
    } else {
      return nullptr;
    }
    m_size.store(m_size.load(std::memory_order_relaxed) - 1,
                 std::memory_order_relaxed); // under the mutex; readers only want a hint
    return j;
  }

  /// Any thread; seq_cst: see published_push.
  bool empty() const noexcept { return m_size.load(std::memory_order_seq_cst) == 0; }

  /// Any thread: a hint that resumed tasks wait here (pool::others_waiting_here). relaxed: no
  /// edge is needed; a stale answer only makes a yield go on at once, or come back first.
  bool resumed_waiting() const noexcept {
    return m_resumed_waiting.load(std::memory_order_relaxed);
  }

private:
  /// Under the mutex, after a push.
  void published_push() noexcept {
    // seq_cst: orders this push before the submitter's look for sleepers (pool::wake), and a
    // would-be sleeper's registration before its look here (work_visible): one of them sees the
    // other (docs/protocols.md, "Sleep and wake-up"). The mutex publishes the job's contents.
    m_size.store(m_size.load(std::memory_order_relaxed) + 1, std::memory_order_seq_cst);
  }

  /// Under the mutex: the root level to take from (levels if no root is queued); the normal
  /// level is non-empty if `local_normal`.
  std::size_t pick_root_level(bool local_normal) noexcept {
    auto const level_empty = [&](std::size_t l) {
      return m_roots[l].empty() &&
             !(local_normal && l == static_cast<std::size_t>(priority::normal));
    };
    std::size_t top = levels;
    for (std::size_t l = 0; l < levels; ++l) {
      if (!level_empty(l)) {
        top = l;
        break;
      }
    }
    if (top == levels) {
      return levels;
    }
    if (++m_picks % starvation_period != 0) {
      return top;
    }
    // Starvation rule: this pick goes to a non-empty level below `top`, in rotation.
    std::size_t lower[levels];
    std::size_t n = 0;
    for (std::size_t l = top + 1; l < levels; ++l) {
      if (!level_empty(l)) {
        lower[n++] = l;
      }
    }
    return n == 0 ? top : lower[m_rotor++ % n];
  }

  // Lines: the mutex and the lists (touched only when there is a job to take or withdraw) apart
  // from the owner's neighbouring fields, and the count (which an idle worker reads every round,
  // and every push and take writes) on a line of its own, so that a submission takes no line
  // that the polling worker holds but the count's.
  alignas(64) std::mutex m_mutex;
  job *m_resumed_head = nullptr; // resumed tasks, FIFO (guarded by m_mutex)
  job *m_resumed_tail = nullptr;
  std::atomic<bool> m_resumed_waiting{false}; // m_resumed_head != nullptr (stored under m_mutex)
  root_ring m_roots[levels];                  // guarded by m_mutex
  std::uint32_t m_picks = 0;                  // root picks so far (guarded by m_mutex)
  std::uint32_t m_rotor = 0;                  // rotation among lower levels (guarded by m_mutex)
  std::uint32_t m_local_picks = 0; // normal picks while the local deque had work (m_mutex)
  alignas(64) std::atomic<std::size_t> m_size{0};
};

} // namespace magpie::sched::detail
