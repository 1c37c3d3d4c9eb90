#pragma once
// magpie/trace/work_span.hpp — work/span analysis in the manner of Cilkscale: how much
// parallelism a program (or a region) has, and hence how it can scale on a bigger machine.
//
//   magpie::lazy_pool one(1);                      // the region runs on ONE worker
//   magpie::trace::work_span_probe probe(one);     // measuring starts
//   magpie::sync_wait(one, fib, 30);
//   std::cout << probe.stop().to_table();          // T1, T∞, T1/T∞, predicted speedups
//
// On one worker a fork–join program runs in its serial depth-first order; the probe keeps a
// shadow stack of the running tasks and, at every fork, call, join and task end (the per-task
// events of a MAGPIE_OBSERVE_TASKS build, core/observer.hpp), charges the time since the previous
// event to the running task's work and to its current path, as in Cilkscale:
//
//   fork child c:  the parent's longest child path  = max(it, path so far + span(c))
//   call child c:  the parent's path so far        += span(c)
//   join:          the parent's path so far         = max(it, longest child path)
//   task end:      span = the path so far (a task joins before it returns)
//
// The burdened span adds a constant `burden` (the cost of a steal and of the join it makes
// slow) to the return edge of every forked child and to the continuation after it, as the
// burdened DAG of Cilkview (He, Leiserson & Leiserson, 2010) does: a program whose parallelism
// comes from many tiny forks has a large burdened span and will not scale as T1/T∞ suggests.
//
// Needs a build with MAGPIE_OBSERVE_TASKS=1 (CMake option MAGPIE_OBSERVE_TASKS=ON): the default
// build reports no per-task events, and a probe's constructor throws std::logic_error there.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "magpie/core/config.hpp"
#include "magpie/core/observer.hpp"
#include "magpie/sched/pool.hpp"
#include "magpie/sched/sync_wait.hpp"

namespace magpie::trace {

/// What the analysis measures time in.
enum class work_span_clock : std::uint8_t {
  /// Nanoseconds of std::chrono::steady_clock (the vDSO clock_gettime: ~20 ns a read). The time
  /// the probe spends between its two clock reads at an event is excluded; the rest of an
  /// event's cost (the hook's call, half of each clock read) is calibrated when the probe starts
  /// (work_span::event_cost) and subtracted from every interval.
  steady,
  /// Nanoseconds of CPU time of the worker thread (clock_gettime(CLOCK_THREAD_CPUTIME_ID), a
  /// system call: ~150 ns a read, excluded and calibrated as for `steady`). Time the thread spends
  /// descheduled does not count, so the span is not inflated by preemptions on a busy machine;
  /// POSIX only (elsewhere the probe's constructor throws std::logic_error).
  thread_cpu,
  /// Units of work the program declares with trace::charge(n): deterministic, for tests and for
  /// cost models (a unit per leaf, per element, ...). Time that is not charged does not count.
  units
};

/// The cost of a steal and of the join it makes wait, in ns: bench/micro's BM_steal_round_trip
/// (fork → steal by the other worker → continuation → join → child returns → parent resumed) on
/// the development machine (2-core VM, GCC 12 -O3) took 250–330 ns while the machine was quiet
/// and far longer while other processes competed for its cores; 400 ns is the median of 12 runs
/// (bench/README.md). The burden work_span_options uses by default with the clocks in ns.
inline constexpr std::uint64_t default_burden_ns = 400;

/// How a work_span_probe measures.
struct work_span_options {
  work_span_clock clock = work_span_clock::steady; ///< the unit of time
  /// The burden per forked child, in the clock's unit; negative: default_burden_ns for the
  /// clocks in ns, 0 for units.
  double burden = -1;
};

namespace detail {
/// The units the running thread has charged (trace::charge); the units clock reads it. Opaque
/// under Clang (MAGPIE_CLANG_OPAQUE_TLS): charge() runs in tasks, and a task resumed on another
/// worker after a join would otherwise add to the first worker's count through a cached address
/// (a race with that worker, and units charged to the wrong task).
MAGPIE_CLANG_OPAQUE_TLS inline std::uint64_t &charged_units() noexcept {
  thread_local std::uint64_t units = 0;
  return *core::detail::opaque_address(&units);
}
} // namespace detail

/// Charges `n` units of work to the task running on this thread (work_span_clock::units). Call it
/// only from tasks running on the probed pool's worker. Costs one thread-local add (and a call
/// under Clang).
inline void charge(std::uint64_t n = 1) noexcept { detail::charged_units() += n; }

/// The result of a work/span analysis. Times are in the clock's unit (ns, or units).
struct work_span {
  work_span_clock clock = work_span_clock::steady; ///< the unit of the times below
  std::uint64_t work = 0;                          ///< T1: the time of every task, summed
  std::uint64_t span = 0;                          ///< T∞: the longest path through the DAG
  std::uint64_t burdened_span = 0;                 ///< the span with `burden` per forked child
  std::uint64_t burden = 0;                        ///< the burden per forked child
  std::uint64_t roots = 0;  ///< roots measured (composed in sequence: their spans add up)
  std::uint64_t forks = 0;  ///< children forked
  std::uint64_t calls = 0;  ///< children called
  std::uint64_t joins = 0;  ///< joins returned
  std::uint64_t tasks = 0;  ///< tasks finished (forks + calls + roots)
  std::uint64_t broken = 0; ///< roots left out: a task suspended (see work_span_probe)
  /// The probe's own cost per event, subtracted from each interval (clocks in ns; 0 for units).
  std::uint64_t event_cost = 0;

  /// T1/T∞ (0 if nothing was measured): the most speedup any number of workers can give.
  double parallelism() const noexcept;
  /// T1 / burdened span: the parallelism left once steals cost `burden` each.
  double burdened_parallelism() const noexcept;
  /// Upper bound of the speedup on `workers` workers: min(workers, T1/T∞).
  double speedup_upper(unsigned workers) const noexcept;
  /// Lower bound (estimate) of the speedup on `workers` workers from the greedy bound with the
  /// burdened span: T1 / (T1/P + burdened span), i.e. P / (1 + P / burdened parallelism).
  double speedup_lower(unsigned workers) const noexcept;
  /// The worker counts the table and the JSON print predictions for: 1, 2, 3, 4, 6, 8, 12, ... 64.
  static std::vector<unsigned> worker_counts();

  /// The figures, then the predicted speedup range per worker count, as aligned text.
  std::string to_table() const;
  /// {"clock":"ns"|"units","work":..,"span":..,"burdened_span":..,"burden":..,"parallelism":..,
  ///  "burdened_parallelism":..,"roots":..,"forks":..,"calls":..,"joins":..,"tasks":..,
  ///  "broken":..,"speedup":[{"workers":P,"lower":..,"upper":..},...]}
  std::string to_json() const;
};

/// Measures the work and span of everything a ONE-worker pool runs while the probe lives (or
/// until stop()). Roots run one after another are composed in sequence. The analysis covers
/// fork–join: a root in which a task suspends (a join that waits, resume_on, a mutex, a future,
/// a timer) is left out of the figures and counted in work_span::broken.
///
/// Cost: the worker calls the probe at every fork, call, join and task end (two clock reads and
/// a few stores; the shadow stack grows with the depth of the task tree, allocating on the
/// worker); the time between the two reads is nobody's work. The figures are of the instrumented
/// run: T1 comes out somewhat above an uninstrumented one-worker run (work_span_clock).
///
/// Throws std::logic_error if the build does not report per-task events (MAGPIE_OBSERVE_TASKS),
/// if `pool` has more than one worker, or if the pool is already observed (a trace::session,
/// pool::count_tasks). Constructor, stop and destructor: any thread but the pool's worker; they
/// may race with the pool running tasks (a root cut by start or stop counts as broken).
class work_span_probe {
public:
  /// Starts measuring what `pool` runs.
  explicit work_span_probe(sched::pool &pool, work_span_options options = {});
  work_span_probe(work_span_probe const &) = delete;
  work_span_probe &operator=(work_span_probe const &) = delete;
  /// Stops measuring (if still on).
  ~work_span_probe();

  /// Stops measuring (returns once the worker is out of the probe) and returns the figures.
  /// Idempotent: later calls return the same figures.
  work_span stop() noexcept;

private:
  // Signed: an interval minus the calibrated event cost may come out slightly negative.
  struct frame {
    std::int64_t work = 0;    // this task's time, and its finished children's work
    std::int64_t path = 0;    // the longest path from its start to now (since its last join)
    std::int64_t child = 0;   // the longest path ending at a child forked since the last join
    std::int64_t path_b = 0;  // path, burdened
    std::int64_t child_b = 0; // child, burdened
    core::event kind = core::event::root; // how it started: fork, call or root
  };
  struct recorder : core::observer {
    work_span_probe *owner = nullptr;
  };
  static void on_event(core::observer &self, core::context &worker, core::event e,
                       std::uint64_t arg) noexcept;
  void record(core::event e) noexcept;
  void task_end() noexcept;
  void calibrate();
  std::uint64_t now() const noexcept;

  sched::pool *m_pool;
  work_span m_result;
  std::vector<frame> m_stack; // the shadow stack: the running tasks, the innermost last
  std::uint64_t m_last = 0;   // clock at the end of the previous event
  std::int64_t m_work = 0;    // the measured roots' work, span and burdened span, summed
  std::int64_t m_span = 0;
  std::int64_t m_span_b = 0;
  bool m_skipping = false; // a task suspended: ignore events until the next root
  recorder m_recorder;
  bool m_on = false;
};

/// Runs `fn(args...)` as a root on a fresh one-worker pool under a work_span_probe and returns
/// the figures (the value is discarded; an exception of the task propagates). Builds with
/// MAGPIE_OBSERVE_TASKS only (else throws std::logic_error, as the probe does).
template <typename Fn, typename... Args>
work_span measure_work_span(work_span_options options, Fn &&fn, Args &&...args) {
  sched::lazy_pool one(1);
  work_span_probe probe(one, options);
  (void)sched::sync_wait(one, std::forward<Fn>(fn), std::forward<Args>(args)...);
  return probe.stop();
}

} // namespace magpie::trace
