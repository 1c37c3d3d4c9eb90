#pragma once
// magpie/mpi/poller.hpp — what magpie's MPI poller thread has done (for tests, benchmarks and
// tuning). The poller tests the pending requests of every waiting task (src/mpi/poller.cpp says
// how it paces itself).

#include <cstddef>
#include <cstdint>

namespace magpie::mpi {

/// A snapshot of the poller's counters (racy while it runs).
struct poller_stats {
  std::size_t pending_waits = 0; ///< waits handed to the poller and not yet over
  std::uint64_t waits = 0;       ///< waits handed to the poller (not those settled at once)
  std::uint64_t tests = 0;       ///< MPI_Testsome calls
  std::uint64_t completions = 0; ///< requests that MPI_Testsome completed
};

/// Any thread: the poller's counters.
poller_stats poller_statistics() noexcept;

} // namespace magpie::mpi
