#pragma once
// magpie/trace/watchdog.hpp — opt-in diagnostics for hung programs: a stall watchdog that prints
// the task dump and the counters once when a pool stops making progress, and a signal (SIGQUIT
// by default) that prints the dump on demand.
//
//   magpie::trace::watchdog w(pool, std::chrono::seconds(10));  // reports to stderr
//   magpie::trace::dump_on_signal sig(pool);                    // kill -QUIT <pid> prints a dump

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "magpie/sched/pool.hpp"

namespace magpie::trace {

/// A thread that watches `pool` and reports a stall once.
///
/// The rule: the pool is stalled when work is in flight (pool::in_flight() > 0: a root not yet
/// finished, a submission not yet queued, a parked task) and, for the whole window, no worker
/// made progress. A worker made progress if any of its counters of task starts and ends changed
/// (jobs run, steals, roots started, parks, suspended joins, stack hand-offs; and forks, calls
/// and finished tasks while those are counted) or the top of its stack moved (a task frame was
/// allocated or freed: a fork or call started a task, or one finished). Sampling them costs the
/// workers nothing (the counters are always kept; the stack top is read racily, see dump.hpp).
///
/// So a worker stuck inside one task — blocked on a plain lock, or spinning without starting
/// tasks — counts as stalled, and so does a task body that computes, without forking or calling,
/// for longer than the window, or a program whose only work in flight is a task parked (on a
/// timer, an event ...) for longer than the window: choose the window longer than the longest
/// such wait. A program that keeps forking or finishing tasks is never reported.
///
/// On a stall the report is: one line saying so, the task dump (trace::dump) and the counters
/// (trace::counters, as a table). It is made once per stall: after progress, a new stall is
/// reported again. The constructor, destructor and fired() may be called from any thread but the
/// pool's workers; destroy the watchdog before the pool.
class watchdog {
public:
  /// Receives a report (several lines, ending with a newline).
  using report_fn = std::function<void(std::string const &report)>;

  /// Watches `pool`, sampling every window/8 (at least every millisecond). `report` null: the
  /// report goes to stderr. Throws std::invalid_argument for a window of zero or less,
  /// std::system_error if the thread cannot start.
  watchdog(sched::pool &pool, std::chrono::milliseconds window, report_fn report = nullptr);
  watchdog(watchdog const &) = delete;
  watchdog &operator=(watchdog const &) = delete;
  /// Stops the thread (waiting for a report being made).
  ~watchdog();

  /// Stalls reported so far.
  std::size_t fired() const noexcept;

private:
  void run();
  std::uint64_t progress() const noexcept;

  sched::pool &m_pool;
  std::chrono::milliseconds m_window;
  report_fn m_report;
  mutable std::mutex m_mutex; // guards the two below
  std::condition_variable m_cv;
  bool m_stop = false;
  std::size_t m_fired = 0;
  std::thread m_thread;
};

/// While alive, signal `sig` (SIGQUIT by default) prints trace::dump(pool) to stderr. The handler
/// only writes a byte to a pipe (async-signal-safe); a helper thread makes and prints the dump.
/// At most one dump_on_signal per signal number at a time (std::logic_error otherwise). The
/// destructor restores the previous disposition of the signal and stops the helper thread.
/// Constructor and destructor: any thread but the pool's workers; destroy it before the pool.
class dump_on_signal {
public:
  /// Installs the handler. Throws std::system_error if the pipe, the thread or sigaction fail,
  /// std::invalid_argument for a signal number it cannot handle (SIGKILL, SIGSTOP, …).
  explicit dump_on_signal(sched::pool &pool, int sig = SIGQUIT);
  dump_on_signal(dump_on_signal const &) = delete;
  dump_on_signal &operator=(dump_on_signal const &) = delete;
  ~dump_on_signal();

  /// Dumps printed so far.
  std::size_t printed() const noexcept;

private:
  void run();

  sched::pool &m_pool;
  int m_signal;
  int m_pipe[2] = {-1, -1};
  struct sigaction m_previous {};
  mutable std::mutex m_mutex; // guards m_printed
  std::size_t m_printed = 0;
  std::thread m_thread;
};

} // namespace magpie::trace
