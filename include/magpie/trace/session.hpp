#pragma once
// magpie/trace/session.hpp — timelines: while a session lives, each worker of a pool records what
// it does into a ring buffer of its own; the session exports them as Chrome/Perfetto trace-event
// JSON (open it in ui.perfetto.dev or chrome://tracing).
//
//   magpie::trace::session s(pool);     // recording starts
//   magpie::sync_wait(pool, fib, 30);
//   s.to_file("fib.json");              // recording stops; then the export
//
// The record path allocates nothing and takes no lock: a clock read and a store into the
// worker's own ring. A full ring overwrites its oldest events (dropped() counts them). The clock
// is the CPU's time-stamp counter where there is one (x86-64: `rdtsc`, ~8 ns a read against ~17
// for steady_clock's vDSO call on the development VM), mapped onto steady_clock at export by the
// two readings of both clocks taken when recording starts and stops; elsewhere steady_clock.

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
  /// Starts recording; each worker keeps its latest `events_per_worker` events (rounded up to a
  /// power of two, so that the record path indexes its ring with a mask, not a division).
  explicit session(sched::pool &pool, std::size_t events_per_worker = std::size_t{1} << 16);
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
  /// Events the rings overwrote (recorded() minus those kept). After stop() only, as recorded().
  std::uint64_t dropped() const noexcept;

  /// One recorded event (internal, but plain data).
  struct record {
    std::uint64_t ticks; ///< the session's clock (see above), converted to ns by the exports
    core::event what;    ///< what happened
    std::uint32_t arg;   ///< the victim of a steal
  };

private:
  struct ring {
    std::unique_ptr<record[]> events;
    std::uint64_t next = 0; // written by the worker while recording; read after stop()
  };
  struct recorder : core::observer {
    session *owner = nullptr;
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
