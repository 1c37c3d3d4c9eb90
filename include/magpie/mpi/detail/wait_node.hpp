#pragma once
// magpie/mpi/detail/wait_node.hpp — a task waiting on MPI requests, as the poller sees it, and the
// awaitable every magpie::mpi wait is built on. Not for users: magpie/mpi/wait.hpp is.
//
// Protocol (the skeleton of every wait, docs/protocols.md §8 and §10): the awaitable first tests
// its requests on the task's own worker (MPI_Test; a request already complete does not suspend
// the task); otherwise await_suspend holds the pool (the waiting task counts as in flight),
// parks the task and hands the node to the poller (`submit`, under the poller's lock). From the
// unlock on, the poller owns the node: it alone tests the requests, writes their statuses and
// MPI_REQUEST_NULL into the caller's arrays, watches the deadline and the stop token, and finally
// resubmits the task to its pool (the point of no return: the node, in the task's frame, may be
// gone after it). One party wakes the task — the poller — so no claim is needed.

#include <mpi.h>

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "magpie/core/config.hpp"
#include "magpie/core/context.hpp"
#include "magpie/core/ext.hpp"
#include "magpie/core/frame.hpp"
#include "magpie/core/stop_token.hpp"
#include "magpie/io/timer.hpp"
#include "magpie/mpi/error.hpp"

namespace magpie::mpi::detail {

using io::detail::nanos;
using io::detail::no_deadline;

/// One waiting task. Lives in the awaitable, in the task's frame. Fields marked "poller" are
/// written only by the poller thread between submit() and wake().
struct wait_node : core::job {
  enum mode_t : std::uint8_t { one, all, any };
  enum result_t : std::uint8_t { pending, done, timed_out, stopped, failed };

  core::ext::task_handle m_task;
  MPI_Request *m_requests = nullptr; ///< the caller's requests (m_count of them)
  MPI_Status *m_statuses = nullptr;  ///< one per request (mode any: one)
  core::stop_token m_stop;           ///< stop_possible(): cancel the requests when stopped
  nanos m_deadline = no_deadline;    ///< timed waits: give up then, requests left pending
  wait_node *m_poll_next = nullptr;  ///< in the poller's submission list
  char const *m_what = "";           ///< the operation, for error messages
  int m_count = 0;
  int m_left = 0;              ///< poller: requests of mode one/all not complete yet
  int m_index = MPI_UNDEFINED; ///< mode any: the request that completed
  int m_error = MPI_SUCCESS;   ///< result failed: MPI's error code
  mode_t m_mode = one;
  result_t m_result = pending;
  bool m_cancelling = false; ///< poller: MPI_Cancel issued, waiting for the requests to end
  bool m_finished = false;   ///< poller: settled this round, to be woken

  static void run(core::job *j, core::context &worker) noexcept {
    core::ext::resume(static_cast<wait_node *>(j)->m_task, worker);
  }

  /// Resubmits the task to its pool. Point of no return: the node may be gone after this.
  void wake() noexcept { m_task.home()->resubmit(this, core::ext::any_worker); }

  /// On the task's worker, before suspending: tests the requests, for a few microseconds. True
  /// if the wait is settled (complete, failed, or its deadline already passed).
  bool test_now() noexcept;
  /// Tests the requests once (MPI_Test / MPI_Testany); true if the wait is settled. `first`:
  /// the first pass, which also gives the requests null from the start their empty status.
  bool test_once(bool first) noexcept;

  /// Throws what a settled wait reports: error, cancelled. timed_out is the caller's to report.
  void rethrow() const {
    if (m_result == failed) {
      throw error(m_error, m_what);
    }
    if (m_result == stopped) {
      throw cancelled();
    }
  }
};

/// Checks that MPI is initialised with MPI_THREAD_MULTIPLE and not finalised, and starts the
/// poller thread on first use. Throws error (MPI_ERR_OTHER) or std::system_error; nothing is
/// suspended yet. Defined in src/mpi/poller.cpp.
void prepare(char const *what);

/// Hands a parked task's node to the poller (which wakes the poller if it sleeps). Never throws.
void submit(wait_node &node) noexcept;

/// Stops and joins the poller thread (environment's destructor). Says on stderr if waits are
/// still pending.
void stop_poller() noexcept;

/// Throws std::length_error if `n` does not fit MPI's int counts.
inline void check_count(std::size_t n, char const *what) {
  if (n > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    throw std::length_error(std::string(what) + ": more elements than an MPI count (int) holds");
  }
}

/// Checks that the task may leave its worker (outside a fork–join scope, on a scheduler that
/// resumes tasks), and that MPI is ready. Throws std::logic_error / error.
inline void wait_home(core::frame_base &self, char const *what) {
  if (core::ext::in_fork_join_scope(self)) {
    throw std::logic_error(std::string(what) +
                           " inside a fork-join scope: co_await magpie::join() first");
  }
  if (core::ext::worker_of(self).home() == nullptr) {
    throw std::logic_error(std::string(what) + ": this worker's scheduler cannot resume tasks");
  }
  prepare(what);
}

/// The awaitable part shared by every wait: test now, else park and hand over to the poller.
struct wait_awaitable : wait_node {
  core::frame_base *m_frame = nullptr;

  bool await_ready() noexcept { return test_now(); }

  MAGPIE_CORO_SUSPEND_NOINLINE std::coroutine_handle<> await_suspend(std::coroutine_handle<>) {
    core::context &worker = core::ext::worker_of(*m_frame);
    core::executor *home = worker.home();
    home->hold(); // may throw pool_closed: nothing is suspended, the requests stay pending
    m_run = &wait_node::run;
    m_task = core::ext::park(*m_frame);
    submit(*this);
    // Point of no return: the poller may already have resubmitted the task.
    return core::ext::continue_after(worker);
  }
};

} // namespace magpie::mpi::detail
