// magpie/trace/watchdog.hpp: the stall watchdog and the dump signal.

#include "magpie/trace/watchdog.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <stdexcept>
#include <system_error>

#include "magpie/core/context.hpp"
#include "magpie/trace/counters.hpp"
#include "magpie/trace/dump.hpp"
#include "peek.hpp"

namespace magpie::trace {

watchdog::watchdog(sched::pool &pool, std::chrono::milliseconds window, report_fn report)
    : m_pool(pool), m_window(window), m_report(std::move(report)) {
  if (window.count() <= 0) {
    throw std::invalid_argument("magpie: trace::watchdog needs a window longer than zero");
  }
  if (!m_report) {
    m_report = [](std::string const &text) {
      std::fputs(text.c_str(), stderr);
      std::fflush(stderr);
    };
  }
  m_thread = std::thread([this] { run(); });
}

watchdog::~watchdog() {
  {
    std::lock_guard lock(m_mutex);
    m_stop = true;
  }
  m_cv.notify_all();
  m_thread.join();
}

std::size_t watchdog::fired() const noexcept {
  std::lock_guard lock(m_mutex);
  return m_fired;
}

std::uint64_t watchdog::progress() const noexcept {
  // A fingerprint of the workers' progress: it changes whenever a counter of task starts and ends
  // changes or a stack top moves (see the rule in watchdog.hpp).
  std::uint64_t h = 0;
  auto mix = [&h](std::uint64_t v) { h = (h ^ v) * 0x100000001B3ULL + 0x9E3779B97F4A7C15ULL; };
  for (std::size_t i = 0; i < m_pool.size(); ++i) {
    core::context const &ctx = m_pool.worker_context(i);
    core::worker_stats const s = ctx.stats(); // relaxed loads: a snapshot
    for (std::uint64_t v : {s.jobs, s.steals, s.roots, s.parks, s.join_suspends, s.handoffs,
                            s.forks, s.calls, s.tasks}) {
      mix(v);
    }
    mix(detail::peek(ctx.stack().debug_top()));
    mix(detail::peek(ctx.stack().debug_sp()));
  }
  return h;
}

void watchdog::run() {
  auto const tick = std::max(m_window / 8, std::chrono::milliseconds(1));
  std::uint64_t last = progress();
  auto last_change = std::chrono::steady_clock::now();
  bool reported = false;
  std::unique_lock lock(m_mutex);
  while (!m_cv.wait_for(lock, tick, [this] { return m_stop; })) {
    lock.unlock();
    std::uint64_t const now_progress = progress();
    auto const now = std::chrono::steady_clock::now();
    if (now_progress != last || m_pool.in_flight() == 0) {
      last = now_progress;
      last_change = now;
      reported = false;
    } else if (!reported && now - last_change >= m_window) {
      reported = true;
      std::string text = "magpie watchdog: no task started or finished for " +
                         std::to_string(m_window.count()) + " ms while " +
                         std::to_string(m_pool.in_flight()) + " unit(s) of work were in flight\n";
      text += dump(m_pool);
      text += counters(m_pool).to_table();
      m_report(text);
      lock.lock();
      ++m_fired;
      continue;
    }
    lock.lock();
  }
}

namespace {

// The write end of each installed dump_on_signal's pipe plus one, by signal number (0: none).
constexpr int max_signal = 65;
std::atomic<int> signal_pipe[max_signal] = {};
std::mutex signal_mutex; // one installation or removal at a time

extern "C" void on_dump_signal(int sig) {
  int const saved = errno;
  // relaxed: the constructor stored the fd before sigaction installed this handler (sigaction is
  // the edge); the destructor restores the old handler before it closes the fd.
  int const fd =
      sig > 0 && sig < max_signal ? signal_pipe[sig].load(std::memory_order_relaxed) - 1 : -1;
  if (fd >= 0) {
    char const byte = 1;
    [[maybe_unused]] ssize_t const n = ::write(fd, &byte, 1); // async-signal-safe
  }
  errno = saved;
}

} // namespace

dump_on_signal::dump_on_signal(sched::pool &pool, int sig) : m_pool(pool), m_signal(sig) {
  if (sig <= 0 || sig >= max_signal || sig == SIGKILL || sig == SIGSTOP) {
    throw std::invalid_argument("magpie: dump_on_signal: a signal number it cannot handle");
  }
  std::lock_guard lock(signal_mutex);
  if (signal_pipe[sig].load(std::memory_order_relaxed) != 0) { // under signal_mutex: no edge
    throw std::logic_error("magpie: dump_on_signal: this signal already prints a dump");
  }
  if (::pipe2(m_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw std::system_error(errno, std::generic_category(), "magpie: dump_on_signal: pipe");
  }
  try {
    m_thread = std::thread([this] { run(); });
  } catch (...) {
    ::close(m_pipe[0]);
    ::close(m_pipe[1]);
    throw;
  }
  signal_pipe[sig].store(m_pipe[1] + 1, std::memory_order_relaxed); // published by sigaction below
  struct sigaction action {};
  action.sa_handler = &on_dump_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  if (::sigaction(sig, &action, &m_previous) != 0) {
    int const error = errno;
    signal_pipe[sig].store(0, std::memory_order_relaxed);
    ::close(m_pipe[1]); // the helper thread sees end-of-file and returns
    m_thread.join();
    ::close(m_pipe[0]);
    throw std::system_error(error, std::generic_category(), "magpie: dump_on_signal: sigaction");
  }
}

dump_on_signal::~dump_on_signal() {
  std::lock_guard lock(signal_mutex);
  ::sigaction(m_signal, &m_previous, nullptr);
  signal_pipe[m_signal].store(0, std::memory_order_relaxed); // the handler is gone (above)
  ::close(m_pipe[1]); // the helper thread sees end-of-file and returns
  m_thread.join();
  ::close(m_pipe[0]);
}

std::size_t dump_on_signal::printed() const noexcept {
  std::lock_guard lock(m_mutex);
  return m_printed;
}

void dump_on_signal::run() {
  for (;;) {
    pollfd p{m_pipe[0], POLLIN, 0};
    if (::poll(&p, 1, -1) < 0) {
      if (errno == EINTR) {
        continue;
      }
      return;
    }
    char bytes[64];
    ssize_t const n = ::read(m_pipe[0], bytes, sizeof bytes); // several signals: one dump
    if (n == 0) {
      return; // the destructor closed the write end
    }
    if (n < 0) {
      continue; // EAGAIN (spurious wake-up) or EINTR
    }
    std::string const text = "magpie: signal " + std::to_string(m_signal) + "\n" + dump(m_pool);
    std::fputs(text.c_str(), stderr);
    std::fflush(stderr);
    std::lock_guard lock(m_mutex);
    ++m_printed;
  }
}

} // namespace magpie::trace
