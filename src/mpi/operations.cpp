// magpie/src/mpi/operations.cpp — what a waiting task does on its own worker: start its operation,
// test its requests (spinning briefly before it parks), and the spin's setting.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>

#include "magpie/core/detail/pause.hpp"
#include "magpie/mpi/call_lock.hpp"
#include "magpie/mpi/detail/wait_node.hpp"
#include "magpie/mpi/operations.hpp"
#include "magpie/mpi/poller.hpp"

namespace magpie::mpi::detail {
namespace {

using namespace std::chrono_literals;

/// How long a task tests its request on its own worker before it parks, in nanoseconds
/// (set_spin_before_park).
std::atomic<std::int64_t> spin_before_park{5000};

} // namespace

bool wait_node::test_once(bool first) noexcept {
  int code = MPI_SUCCESS;
  bool complete = false;
  call_lock const lock; // under MPI_THREAD_SERIALIZED: one MPI call at a time
  switch (m_mode) {
  case one: {
    int flag = 0;
    code = MPI_Test(m_requests, &flag, m_statuses);
    complete = flag != 0;
    break;
  }
  case all: {
    complete = true;
    for (int k = 0; k < m_count && code == MPI_SUCCESS; ++k) {
      // After the first pass a null request is one that completed then: testing it again
      // would overwrite its status with an empty one.
      if (!first && m_requests[k] == MPI_REQUEST_NULL) {
        continue;
      }
      int flag = 1;
      code = MPI_Test(&m_requests[k], &flag, &m_statuses[k]);
      complete = complete && flag != 0;
    }
    break;
  }
  case any: {
    int flag = 0;
    code = MPI_Testany(m_count, m_requests, &m_index, &flag, m_statuses);
    complete = flag != 0;
    break;
  }
  }
  if (code != MPI_SUCCESS) {
    m_error = code;
    m_result = failed;
    return true;
  }
  if (complete) {
    m_result = done;
    return true;
  }
  if (m_deadline != no_deadline && m_deadline <= io::detail::now_nanos()) {
    m_result = timed_out;
    return true;
  }
  return false;
}

bool wait_node::test_now() noexcept {
  if (test_once(true)) {
    return true;
  }
  // Spin briefly before parking: a reply already in flight (a partner that answers within
  // microseconds) is caught here, without the trip through the poller and the pool's wake-up.
  // relaxed: a tuning value, no data is published through it
  auto const spin = std::chrono::nanoseconds(spin_before_park.load(std::memory_order_relaxed));
  if (spin <= 0ns) {
    return false;
  }
  auto const until = std::chrono::steady_clock::now() + spin;
  do {
    for (int i = 0; i < 16; ++i) {
      core::detail::cpu_pause();
    }
    if (test_once(false)) {
      return true;
    }
  } while (std::chrono::steady_clock::now() < until);
  return false;
}

void start(op_args const &a, MPI_Request *r) {
  int code = MPI_SUCCESS;
  call_lock const lock; // under MPI_THREAD_SERIALIZED: one MPI call at a time
  switch (a.kind) {
  case op_args::send:
    code = MPI_Isend(a.in, a.count, a.type, a.peer, a.tag, a.comm, r);
    break;
  case op_args::recv:
    code = MPI_Irecv(a.out, a.count, a.type, a.peer, a.tag, a.comm, r);
    break;
  case op_args::bcast:
    code = MPI_Ibcast(a.out, a.count, a.type, a.peer, a.comm, r);
    break;
  case op_args::allreduce:
    code = MPI_Iallreduce(a.in, a.out, a.count, a.type, a.op, a.comm, r);
    break;
  }
  check(code, a.what);
}

} // namespace magpie::mpi::detail

namespace magpie::mpi {
void set_spin_before_park(std::chrono::nanoseconds spin) noexcept {
  // relaxed: a tuning value, no data is published through it
  detail::spin_before_park.store(std::max<std::int64_t>(0, spin.count()),
                                 std::memory_order_relaxed);
}
} // namespace magpie::mpi
