#pragma once
// magpie/mpi/wait.hpp — tasks that wait on MPI requests without blocking their worker.
//
//   MPI_Request r;
//   MPI_Irecv(buf, n, MPI_INT, 0, tag, MPI_COMM_WORLD, &r);
//   MPI_Status s = co_await magpie::mpi::wait(r);          // suspends; the worker runs others
//   std::optional<MPI_Status> t = co_await magpie::mpi::wait_for(r, 10ms);  // nullopt: timed out
//
// The awaiting task first tests its requests on its own worker (MPI_Test, repeated for up to
// 5 µs: see set_spin_before_park in magpie/mpi/poller.hpp; a request that completes meanwhile
// costs no suspension); otherwise it is parked away from its worker, which goes on with
// other tasks, and magpie's poller thread tests the pending requests of every waiting task of
// the process (MPI_Testany) until they complete, then resubmits the task to its pool (any
// worker). Placement and cost of the poller: src/mpi/poller.cpp and docs/guide/
// beyond-one-machine.md.
//
// Contract:
//   - like MPI_Wait, a completed request is freed and set to MPI_REQUEST_NULL, and its status
//     returned; a null request completes at once with an empty status. The caller must not use
//     the requests (nor free, test or wait on them elsewhere) while the co_await is pending;
//   - a failure (the return code of MPI_Test / MPI_Testany on the request) is thrown as
//     magpie::mpi::error; requests of a wait_all that had not completed then are left pending,
//     and a failed request that MPI did not free is left in place (MPI_Request_free it);
//   - deadline forms (wait_until, wait_for) return std::nullopt when the deadline passes first,
//     and leave the request pending and valid: wait again, or MPI_Cancel and wait for it. The
//     task resumes no earlier than the deadline and, once the poller has backed off, up to about
//     a millisecond after it;
//   - with a stop token (wait(r, token)): when a stop is requested, the poller calls MPI_Cancel
//     on the request and waits for it to end. If the cancel took effect (MPI_Test_cancelled),
//     the co_await throws magpie::mpi::cancelled (the request is complete and null); if the
//     operation completed first, it returns its status as usual. A stop already requested when
//     the wait begins cancels at once. The stop is seen within the poller's pause (up to ~1 ms);
//   - a waiting task counts as in flight in its pool, as a sleeping one does: the pool's
//     destructor waits for the request to complete (forever if it never does — a receive whose
//     sender never sends keeps the pool's destructor waiting; give it a deadline or a stop
//     token);
//   - as every wait, inside a fork–join scope it throws std::logic_error, on a closed pool
//     pool_closed (the requests stay pending), below MPI_THREAD_SERIALIZED magpie::mpi::error.

#include <mpi.h>

#include <chrono>
#include <optional>
#include <span>
#include <vector>

#include "magpie/core/frame.hpp"
#include "magpie/core/stop_token.hpp"
#include "magpie/io/fd.hpp"
#include "magpie/io/timer.hpp"
#include "magpie/mpi/detail/wait_node.hpp"
#include "magpie/mpi/error.hpp"

namespace magpie::mpi {

/// What wait_any returns: which request completed (MPI_UNDEFINED if every request was null), and
/// its status.
struct any_result {
  /// The position in the span of the request that completed, or MPI_UNDEFINED.
  int index = MPI_UNDEFINED;
  /// That request's status (empty when index is MPI_UNDEFINED).
  MPI_Status status{};
};

namespace detail {

/// The awaitable of wait(r) and wait(r, token): returns the status.
struct one_awaitable : wait_awaitable {
  MPI_Status m_status{};

  one_awaitable(MPI_Request &r, core::frame_base &self, core::stop_token stop) {
    m_frame = &self;
    m_requests = &r;
    m_count = 1;
    m_stop = std::move(stop);
    m_what = "magpie::mpi::wait";
  }
  bool await_ready() noexcept {
    m_statuses = &m_status;
    return test_now();
  }
  MPI_Status await_resume() const {
    rethrow();
    return m_status;
  }
};

/// The awaitable of wait_until / wait_for: the status, or nullopt at the deadline.
struct timed_awaitable : one_awaitable {
  timed_awaitable(MPI_Request &r, core::frame_base &self, nanos deadline)
      : one_awaitable(r, self, {}) {
    m_deadline = deadline;
    m_what = "magpie::mpi::wait_until";
  }
  std::optional<MPI_Status> await_resume() const {
    rethrow();
    if (m_result == timed_out) {
      return std::nullopt;
    }
    return m_status;
  }
};

/// The awaitable of wait_all: one status per request.
struct all_awaitable : wait_awaitable {
  std::vector<MPI_Status> m_all;

  all_awaitable(std::span<MPI_Request> rs, core::frame_base &self) : m_all(rs.size()) {
    m_frame = &self;
    m_requests = rs.data();
    m_count = static_cast<int>(rs.size());
    m_mode = all;
    m_what = "magpie::mpi::wait_all";
  }
  bool await_ready() noexcept {
    m_statuses = m_all.data();
    return test_now();
  }
  std::vector<MPI_Status> await_resume() {
    rethrow();
    return std::move(m_all);
  }
};

/// The awaitable of wait_any: the index that completed and its status.
struct any_awaitable : wait_awaitable {
  MPI_Status m_status{};

  any_awaitable(std::span<MPI_Request> rs, core::frame_base &self) {
    m_frame = &self;
    m_requests = rs.data();
    m_count = static_cast<int>(rs.size());
    m_mode = any;
    m_what = "magpie::mpi::wait_any";
  }
  bool await_ready() noexcept {
    m_statuses = &m_status;
    return test_now();
  }
  any_result await_resume() const {
    rethrow();
    return {m_index, m_status};
  }
};

/// What wait(r[, token]) returns: bound to the awaiting task by co_await.
struct [[nodiscard("co_await it")]] one_request {
  using magpie_awaitable = void;
  MPI_Request *m_request;
  core::stop_token m_stop;
  one_awaitable magpie_bind(core::frame_base &self) && {
    wait_home(self, "magpie::mpi::wait");
    return one_awaitable(*m_request, self, std::move(m_stop));
  }
};

/// What wait_until / wait_for return.
struct [[nodiscard("co_await it")]] timed_request {
  using magpie_awaitable = void;
  MPI_Request *m_request;
  nanos m_deadline;
  timed_awaitable magpie_bind(core::frame_base &self) && {
    wait_home(self, "magpie::mpi::wait_until");
    return timed_awaitable(*m_request, self, m_deadline);
  }
};

/// What wait_all returns.
struct [[nodiscard("co_await it")]] all_request {
  using magpie_awaitable = void;
  std::span<MPI_Request> m_requests;
  all_awaitable magpie_bind(core::frame_base &self) && {
    check_count(m_requests.size(), "magpie::mpi::wait_all");
    wait_home(self, "magpie::mpi::wait_all");
    return all_awaitable(m_requests, self);
  }
};

/// What wait_any returns.
struct [[nodiscard("co_await it")]] any_request {
  using magpie_awaitable = void;
  std::span<MPI_Request> m_requests;
  any_awaitable magpie_bind(core::frame_base &self) && {
    check_count(m_requests.size(), "magpie::mpi::wait_any");
    wait_home(self, "magpie::mpi::wait_any");
    return any_awaitable(m_requests, self);
  }
};

} // namespace detail

/// Inside a task: `MPI_Status s = co_await wait(r);` waits for `r` to complete (see the top of
/// this file); `r` is then MPI_REQUEST_NULL.
inline detail::one_request wait(MPI_Request &r) { return {&r, {}}; }

/// As wait(r); when `stop` is stopped, cancels the request and throws magpie::mpi::cancelled
/// (unless the operation completed first: then its status is returned).
inline detail::one_request wait(MPI_Request &r, core::stop_token stop) {
  return {&r, std::move(stop)};
}

/// Inside a task: waits for `r` until `deadline`. Returns the status, or std::nullopt if the
/// deadline passed first — `r` is then still pending: wait again, or MPI_Cancel it and wait.
inline detail::timed_request wait_until(MPI_Request &r, io::clock::time_point deadline) {
  return {&r, io::detail::to_nanos(deadline)};
}

/// As wait_until(r, now + timeout).
template <typename Rep, typename Period>
detail::timed_request wait_for(MPI_Request &r, std::chrono::duration<Rep, Period> timeout) {
  return {&r, io::detail::deadline_after(timeout)};
}

/// Inside a task: waits for every request of `rs` (MPI_Waitall); returns their statuses, in
/// order. Each request is MPI_REQUEST_NULL afterwards (except after a failure: see the top).
inline detail::all_request wait_all(std::span<MPI_Request> rs) { return {rs}; }

/// Inside a task: waits for one request of `rs` to complete (MPI_Waitany); returns its index and
/// status, and sets it to MPI_REQUEST_NULL. The others stay pending. If every request is null,
/// returns at once with index MPI_UNDEFINED.
inline detail::any_request wait_any(std::span<MPI_Request> rs) { return {rs}; }

} // namespace magpie::mpi
