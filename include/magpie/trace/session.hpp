#pragma once
// magpie/trace/session.hpp — timelines: while a session lives, each worker of a pool records what
// it does into a ring buffer of its own; the session exports them as Chrome/Perfetto trace-event
// JSON (open it in ui.perfetto.dev or chrome://tracing).
//
//   magpie::trace::session s(pool);     // recording starts
//   magpie::sync_wait(pool, fib, 30);
//   s.to_file("fib.json");              // recording stops; then the export
//
// The record path allocates nothing and takes no lock: a store into the worker's own ring, and a
// clock read for the events that get one (below). A full ring overwrites its oldest events
// (dropped() counts them). The clock is the CPU's time-stamp counter where there is one (x86-64:
// `rdtsc`, 8-20 ns a read on the development VM, against ~17 for steady_clock's vDSO call),
// mapped onto steady_clock at export by the two readings of both clocks taken when recording
// starts and stops; elsewhere steady_clock.
//
// Which events read the clock (`timing`): with timing::adaptive (the default) every event but a
// task's start and end (fork, call, task_end) reads it; of those, one in a stride, each worker
// keeping its stride (1-64 events) such that two readings are about 2,048 counter ticks (0.5-2
// us) apart; and the end of every span whose start read it. The export places an event without
// a reading evenly, by its position, between the two readings around it: order is exact, times
// are exact at every reading and elsewhere within the interval between the readings around the
// event. On fib (tasks of ~10-20 ns) a reading per event costs more than the task; the figures
// are in docs/guide/tracing.md. timing::every_event reads the clock at every event.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "magpie/core/observer.hpp"
#include "magpie/sched/pool.hpp"

namespace magpie::trace {

/// Records the timeline of one pool's workers for the session's lifetime (or until stop()).
/// At most one session (or pool::count_tasks) observes a pool at a time. Destroy the session
/// before the pool. Constructor, stop, destructor and the exports: any thread but the pool's
/// own workers; they may race with the pool running tasks.
class session {
public:
  /// Which events read the clock (see the top of this file).
  enum class timing : std::uint8_t {
    adaptive,   ///< all but task starts and ends, and those about every 2,048 ticks
    every_event ///< every event: exact times, at a clock read (8-20 ns here) per event
  };

  /// The events each worker keeps unless the constructor is told otherwise.
  static constexpr std::size_t default_events_per_worker = std::size_t{1} << 16;

  /// Starts recording; each worker keeps its latest `events_per_worker` events (rounded up to a
  /// power of two, so that the record path indexes its ring with a mask, not a division).
  explicit session(sched::pool &pool, std::size_t events_per_worker = default_events_per_worker,
                   timing clock = timing::adaptive);
  session(session const &) = delete;
  session &operator=(session const &) = delete;
  /// Stops recording (if still on).
  ~session();

  /// Stops recording: returns once no worker is still writing. Idempotent.
  void stop() noexcept;
  /// Stops recording, then writes the trace-event JSON: one thread (tid) per worker, spans
  /// ("B"/"E", matched per worker) for tasks, stolen continuations, resumptions and sleeps,
  /// instant events ("i") for suspended joins and parked tasks; timestamps in µs.
  void write_json(std::ostream &out);
  /// write_json to the file `path`; throws std::runtime_error if it cannot be written.
  void to_file(std::string const &path);
  /// Events recorded, over all workers, including those the rings overwrote. After stop() (or
  /// an export) only: while recording, the workers write these counts.
  std::uint64_t recorded() const noexcept;
  /// Events that read the clock (all of them with timing::every_event). After stop() only.
  std::uint64_t clock_reads() const noexcept;
  /// Events recorded but not exported: those the rings overwrote, and those of a ring that
  /// wrapped that precede its oldest kept clock reading (they could not be placed in time).
  /// After stop() only, as recorded().
  std::uint64_t dropped() const noexcept;

  /// One recorded event (internal, but plain data).
  struct record {
    std::uint64_t ticks; ///< the session's clock (see above), 0 where the event did not read it
    core::event what;    ///< what happened
    std::uint32_t arg;   ///< the victim of a steal
  };

private:
  struct alignas(64) ring { // a line (or two) of its own: each worker writes its ring's fields
    std::unique_ptr<record[]> events;
    // Written by the worker while recording; read after stop().
    std::uint64_t next = 0;        // the index of the next event
    std::uint64_t read_at = 0;     // a task start or end with this index or later reads the clock
    std::uint64_t last_ticks = 0;  // the latest reading
    std::uint64_t reads = 0;       // the events that read the clock
    std::uint32_t stride = 1;      // the task events between two readings (timing::adaptive)
    std::uint32_t depth = 0;       // spans open (begun, not ended) on the worker
    std::uint64_t read_starts = 0; // bit i: the i-th innermost open span read the clock
  };
  /// The index of r's oldest event that is exported: its oldest kept one with a clock reading.
  std::uint64_t first_exported(ring const &r) const noexcept;
  struct recorder : core::observer { // what the record path reads, next to the function pointer
    ring *rings = nullptr;
    std::uint64_t mask = 0; // the rings' capacity - 1
    std::uint32_t max_stride = 1;
  };
  static void on_event(core::observer &self, core::context &worker, core::event e,
                       std::uint64_t arg) noexcept;

  sched::pool *m_pool;
  std::size_t m_capacity;                        // a power of two: index with & (m_capacity - 1)
  std::chrono::steady_clock::time_point m_start; // both clocks when recording started …
  std::uint64_t m_start_ticks;
  std::chrono::steady_clock::time_point m_stop{}; // … and when it stopped (set by stop())
  std::uint64_t m_stop_ticks = 0;
  std::vector<ring> m_rings;
  recorder m_recorder;
  bool m_on = false;
};

} // namespace magpie::trace
