#pragma once
// magpie/io/fd.hpp — tasks that wait for a file descriptor (Linux, epoll).
//
//   ssize_t n;
//   while ((n = ::read(fd, buf, size)) < 0 && errno == EAGAIN) {
//     co_await magpie::readable(fd);                     // suspends; the worker does other work
//   }
//   if (!co_await magpie::writable(fd, 100ms)) { ... }   // false: the deadline passed first
//   (with GCC 12.2, bind the result to a variable first: docs/guarantees.md, L3b)
//
// `readable(fd)` / `writable(fd)` suspend the task until the descriptor is ready for reading /
// writing — or has an error or a hang-up, which the next read or write reports — and resubmit it
// to its pool (any worker). With a deadline (a time point of io::clock, or a timeout) the
// co_await returns false if the deadline passed first, true otherwise. The descriptor should be
// non-blocking (readiness is a hint: another reader may take the data first). Readiness is
// level-triggered: data already buffered counts, so "try the operation, on EAGAIN wait" is
// correct and loses nothing. Regular files (which epoll refuses) are always ready.
//
// One task at a time may wait for each direction of a descriptor: a second waiter for the same
// direction gets std::logic_error from its co_await (a reader and a writer may wait at once).
//
// Closing a descriptor while a task waits on it: use `magpie::io::close(fd)` (or `cancel(fd)`
// first, then ::close): the waiting tasks resume with std::system_error (std::errc::
// operation_canceled) from their co_await. A raw ::close() while a task waits is a bug that is
// not detected: epoll forgets the descriptor, so the task waits until its deadline (forever
// without one — and its pool's destructor, which waits for suspended tasks, says so on stderr),
// and a later wait on a descriptor reusing the number gets std::logic_error.
//
// Other errors (an invalid descriptor: EBADF; too many watched descriptors: ENOMEM, ENOSPC) are
// thrown as std::system_error from the co_await. Waiting inside a fork–join scope throws
// std::logic_error, on a closed pool pool_closed, as every wait. Protocol: docs/protocols.md §10.

#include <cerrno>
#include <chrono>
#include <coroutine>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <system_error>

#include "magpie/core/config.hpp"
#include "magpie/core/context.hpp"
#include "magpie/core/ext.hpp"
#include "magpie/core/frame.hpp"
#include "magpie/io/detail/timer_heap.hpp"
#include "magpie/io/timer.hpp"

namespace magpie::io {

namespace detail {

/// What a task waits for on a descriptor.
enum interest : std::uint8_t { want_read = 1, want_write = 2 };

/// The awaitable of readable/writable, in the waiting task's frame.
struct fd_awaitable : wait_node {
  core::frame_base *m_frame;
  int m_fd;
  int m_error = 0; ///< errno of a failure, or a logic error (-1)
  interest m_interest;

  fd_awaitable(int fd, interest what, nanos deadline, core::frame_base *frame) noexcept
      : m_frame(frame), m_fd(fd), m_interest(what) {
    m_kind = fd_kind;
    m_deadline = deadline;
  }

  bool await_ready() const noexcept { return false; }

  MAGPIE_CORO_SUSPEND_NOINLINE std::coroutine_handle<> await_suspend(std::coroutine_handle<>) {
    core::context &worker = core::ext::worker_of(*m_frame);
    core::executor *home = worker.home();
    home->hold(); // may throw pool_closed: nothing is suspended
    m_run = &wait_node::run;
    m_task = core::ext::park(*m_frame);
    if (!fd_wait_begin(*this)) { // settled at once (an error, or a regular file): never left
      home->unhold();
      return core::ext::resume_here(m_task, worker);
    }
    // Point of no return: registered, and the reactor may already have resubmitted the task.
    return core::ext::continue_after(worker);
  }

  bool await_resume() const {
    switch (m_result) {
    case ready:
      return true;
    case timed_out:
      return false;
    case cancelled:
      throw std::system_error(std::make_error_code(std::errc::operation_canceled),
                              "magpie::io: the wait on a descriptor was cancelled (io::cancel or "
                              "io::close)");
    case out_of_memory:
      throw std::bad_alloc();
    default:
      if (m_error == -1) {
        throw std::logic_error("magpie::io: another task already waits for this direction of "
                               "this descriptor (or the descriptor was closed with ::close while "
                               "a task waited on it: use magpie::io::close)");
      }
      throw std::system_error(m_error, std::system_category(), "magpie::io: epoll_ctl");
    }
  }

  /// Registers the wait with the reactor (under the descriptor's lock; arms the deadline too).
  /// True: queued, the reactor resumes the task. False: settled now, m_result says how.
  /// Defined in src/io/.
  static bool fd_wait_begin(fd_awaitable &self) noexcept;
};

/// What readable/writable return: bound to the awaiting task by co_await.
struct [[nodiscard("co_await it")]] fd_request {
  using magpie_awaitable = void;
  int m_fd;
  interest m_interest;
  nanos m_deadline;

  fd_awaitable magpie_bind(core::frame_base &self) && {
    wait_home(self, "magpie::readable/writable");
    return fd_awaitable(m_fd, m_interest, m_deadline, &self);
  }
};

template <typename Rep, typename Period>
nanos deadline_after(std::chrono::duration<Rep, Period> d) noexcept {
  nanos const now = now_nanos();
  if (d <= d.zero()) {
    return now;
  }
  if (std::chrono::duration<double>(d).count() >= 1e9) { // ~32 years: never
    return no_deadline;
  }
  return now + std::chrono::ceil<std::chrono::nanoseconds>(d).count();
}

} // namespace detail

/// Inside a task: waits until `fd` is readable (see the top of this file). Returns true.
inline detail::fd_request readable(int fd) { return {fd, detail::want_read, detail::no_deadline}; }
/// As readable(fd), giving up at `deadline`: the co_await returns false if it passed first.
inline detail::fd_request readable(int fd, clock::time_point deadline) {
  return {fd, detail::want_read, detail::to_nanos(deadline)};
}
/// As readable(fd), giving up after `timeout`: the co_await returns false if it passed first.
template <typename Rep, typename Period>
detail::fd_request readable(int fd, std::chrono::duration<Rep, Period> timeout) {
  return {fd, detail::want_read, detail::deadline_after(timeout)};
}

/// Inside a task: waits until `fd` is writable (see the top of this file). Returns true.
inline detail::fd_request writable(int fd) { return {fd, detail::want_write, detail::no_deadline}; }
/// As writable(fd), giving up at `deadline`: the co_await returns false if it passed first.
inline detail::fd_request writable(int fd, clock::time_point deadline) {
  return {fd, detail::want_write, detail::to_nanos(deadline)};
}
/// As writable(fd), giving up after `timeout`: the co_await returns false if it passed first.
template <typename Rep, typename Period>
detail::fd_request writable(int fd, std::chrono::duration<Rep, Period> timeout) {
  return {fd, detail::want_write, detail::deadline_after(timeout)};
}

/// Any thread: resumes every task waiting on `fd` with std::system_error(operation_canceled)
/// and stops watching `fd`. Returns the number of tasks resumed. Does not close `fd`; starts
/// nothing (before the first wait or timer of the process there is no reactor, and it returns 0).
std::size_t cancel(int fd) noexcept;

/// Any thread: cancel(fd), then ::close(fd). Returns ::close's result (errno set on -1).
int close(int fd) noexcept;

} // namespace magpie::io
