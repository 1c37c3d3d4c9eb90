#pragma once
// magpie/trace/counters.hpp — what a pool's workers did, counted: per-worker rows and totals,
// printable as a table or as JSON. For users tuning a program (DESIGN.md §4, observability).
//
// The counters of rare events (steals, sleeps, suspended joins, stacklets ...) are always kept.
// Forks, calls and finished tasks are counted only while counting is on (pool::count_tasks,
// pool_options::count_tasks, or a trace::session): each costs the fork/call path a call then.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "magpie/core/context.hpp"
#include "magpie/sched/pool.hpp"

namespace magpie::trace {

/// A snapshot of a pool's counters (core::worker_stats documents each one).
struct counter_snapshot {
  std::vector<core::worker_stats> workers; ///< one row per worker, by index
  /// One row per guest slot (pool_options::callers_run_roots: callers that ran roots here).
  std::vector<core::worker_stats> callers;
  core::worker_stats total;          ///< the rows summed (stack_peak: the largest)
  std::uint64_t roots_submitted = 0; ///< roots handed to the pool (counted at submission)
  bool counting_tasks = false;       ///< forks, calls and tasks were being counted

  /// A fixed-width table: a header, one line per worker ("c0", "c1", ...: per guest slot), and
  /// a "total" line.
  std::string to_table() const;
  /// A JSON object: {"workers":[{...},...],"total":{...},"roots_submitted":N,"counting_tasks":b},
  /// with "callers":[{...},...] after "workers" when the pool has guest slots.
  std::string to_json() const;
};

/// Reads `pool`'s counters. Any thread, any time: a racy snapshot, exact once the pool is idle.
counter_snapshot counters(sched::pool const &pool);

/// The counters of one worker (or a total) as a JSON object.
std::string to_json(core::worker_stats const &s);

} // namespace magpie::trace
