#pragma once
// magpie/core/observer.hpp — the hook through which counters and traces see a worker's events.
//
// A worker reports what it does (a task starts or ends, a continuation is stolen, a join
// suspends, the worker sleeps ...) through `context::observe`, which costs one load and one
// predictable branch while nobody observes. Whoever observes installs an `observer` on the
// worker's context (sched::pool::exchange_observer does it for a whole pool); trace/ is the
// observer users see: per-task counters and per-worker timelines (trace::session).

#include <cstdint>

#include "magpie/core/config.hpp"

namespace magpie::core {

/// True in builds that report fork, call, task_end and join (MAGPIE_OBSERVE_TASKS, config.hpp).
inline constexpr bool observes_tasks = MAGPIE_OBSERVE && MAGPIE_OBSERVE_TASKS;

class context;

/// What a worker reports to its observer. The names say when each is reported; "this worker"
/// is the worker whose context reports it, on its own thread. fork, call, task_end and join are
/// reported only in builds with MAGPIE_OBSERVE_TASKS.
enum class event : std::uint8_t {
  fork,         ///< a forked child starts on this worker (its parent's continuation is pushed)
  call,         ///< a called child starts on this worker
  root,         ///< a root task (sync_wait, spawn, a task group's child) starts on this worker
  task_end,     ///< a task has finished on this worker (its frame is about to be freed)
  steal,        ///< this worker resumes a continuation it stole; the argument is the victim
  resume,       ///< a suspended task resumes on this worker (last child at its join, or woken)
  join_suspend, ///< a task's join found children still running: the task left this worker
  park,         ///< a task suspended on something else (resume_on, a mutex, a future, a timer)
  strand_end,   ///< a root has ended, or the worker is back in its scheduler loop: no task runs
  sleep,        ///< the worker goes to sleep (lazy pools)
  wake,         ///< the worker woke up
  join,         ///< a task's join returns on this worker (every child since the last join is done)
  count_        ///< the number of kinds
};

/// A set of events: bit `event_bit(e)` for each member.
using event_set = std::uint32_t;
static_assert(static_cast<unsigned>(event::count_) <= 32, "event_set holds every event");

/// The set holding `e` alone.
constexpr event_set event_bit(event e) noexcept { return event_set{1} << static_cast<unsigned>(e); }

/// Every event.
inline constexpr event_set every_event = event_bit(event::count_) - 1;

/// A recorder of worker events: a function called on the worker's own thread for every event
/// while it is installed on the worker's context (context::exchange_observer). It must not
/// throw, block, or start tasks. A null `m_record` counts (context::stats) and records nothing.
struct observer {
  /// Called with the observer, the reporting worker, the event and its argument (0 but for steal).
  void (*m_record)(observer &self, context &worker, event e, std::uint64_t arg) noexcept = nullptr;
  /// The events this observer wants reported (and counted: forks, calls and task ends are
  /// counted only if wanted). Read when the observer is installed; the others then cost the
  /// worker what they cost with no observer. A filter for cost, not a promise: while observers
  /// are exchanged, m_record may still see an event it did not ask for.
  event_set m_wants = every_event;
};

/// The observer that only counts: installed by sched::pool::count_tasks(true).
inline observer &counting_observer() noexcept {
  static observer counting{nullptr, event_bit(event::fork) | event_bit(event::call) |
                                        event_bit(event::task_end)};
  return counting;
}

} // namespace magpie::core
