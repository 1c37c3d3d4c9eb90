#pragma once
// magpie/mpi/poller.hpp — what magpie's MPI poller thread has done (for tests, benchmarks and
// tuning). The poller tests the pending requests of every waiting task (src/mpi/poller.cpp says
// how it paces itself).

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace magpie::mpi {

/// A snapshot of the poller's counters (racy while it runs).
struct poller_stats {
  std::size_t pending_waits = 0; ///< waits handed to the poller and not yet over
  std::uint64_t waits = 0;       ///< waits handed to the poller (not those settled at once)
  std::uint64_t tests = 0;       ///< MPI_Testany scans of the pending requests
  std::uint64_t completions = 0; ///< requests that the scans completed
};

/// Any thread: the poller's counters.
poller_stats poller_statistics() noexcept;

/// Any thread: tests the pending requests of every task that waits on MPI in this process now,
/// on the calling thread, and resumes the tasks whose waits are over (each on its pool, as the
/// poller would). True if any wait finished. Does nothing (false) if the poller, or another
/// thread in progress(), is testing them at this moment, and makes no MPI call if nothing is
/// pending. The poller thread keeps testing on its own; this is for code that knows a completion
/// may be due and should not wait for the poller's next scan, which comes up to a millisecond
/// (or 1 % of the quiet so far, at most 50 ms) after the last activity: a loop that computes in
/// stretches and answers other ranks' requests between them calls it between two stretches. It
/// costs one MPI_Testany over the pending requests (tens of nanoseconds for a few; see
/// docs/guide/beyond-one-machine.md). Under MPI_THREAD_SERIALIZED it takes call_lock for the scan.
bool progress() noexcept;

/// Any thread: how long a task that awaits a request tests it on its own worker (MPI_Test in a
/// loop) before it parks and hands the request to the poller. Default 5 µs: long enough to catch
/// a reply from a partner that answers at once over shared memory or a fast network (a round
/// trip through the poller and the pool's wake-up costs tens of microseconds), short enough
/// that a worker loses little to a wait that will be long. 0: park at once. Negative values
/// count as 0.
void set_spin_before_park(std::chrono::nanoseconds spin) noexcept;

} // namespace magpie::mpi
