// magpie/src/pool/observer.cpp — installing, swapping and removing the observer of every worker
// (core/observer.hpp): trace sessions and count_tasks.

#include "magpie/sched/pool.hpp"

#include <mutex>
#include <stdexcept>
#include <utility>

#include "magpie/core/config.hpp"
#include "worker.hpp"

namespace magpie::sched {

core::observer *pool::exchange_observer_locked(core::observer *o) noexcept {
  MAGPIE_CHECK(!is_worker_thread(), "a pool's observer was changed from one of its own workers: "
                                    "it would wait for itself to leave the observer");
  // Callers submit their roots from now on, so that the observer sees them run (guests are never
  // observed). A guest that began before this store runs its root unobserved, as a root that
  // began on a worker before the observer was installed is partly unobserved.
  m_observed.store(o != nullptr, std::memory_order_release);
  for (auto &w : m_workers) {
    (void)w->exchange_observer(o); // waits until the worker is out of the previous one
  }
  return std::exchange(m_observer, o);
}

core::observer *pool::exchange_observer(core::observer *o) noexcept {
  std::lock_guard lock(m_observer_mutex);
  return exchange_observer_locked(o);
}

bool pool::replace_observer(core::observer *expected, core::observer *o) noexcept {
  std::lock_guard lock(m_observer_mutex);
  if (m_observer != expected) {
    return false;
  }
  (void)exchange_observer_locked(o);
  return true;
}

void pool::count_tasks(bool on) {
  core::observer *const counting = &core::counting_observer();
  std::lock_guard lock(m_observer_mutex);
  if (m_observer != nullptr && m_observer != counting) {
    throw std::logic_error("magpie: pool::count_tasks while a trace session observes the pool");
  }
  (void)exchange_observer_locked(on ? counting : nullptr);
}

bool pool::counting_tasks() const noexcept {
  std::lock_guard lock(m_observer_mutex);
  return m_observer != nullptr;
}

} // namespace magpie::sched
