// magpie/trace/work_span.hpp: the shadow stack of a one-worker pool's tasks, fed by the per-task
// events of a MAGPIE_OBSERVE_TASKS build, and the report.

#include "magpie/trace/work_span.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include <ctime> // clock_gettime, CLOCK_THREAD_CPUTIME_ID (POSIX, through <time.h>)

#include "magpie/core/context.hpp"

namespace magpie::trace {

double work_span::parallelism() const noexcept {
  return span == 0 ? 0.0 : static_cast<double>(work) / static_cast<double>(span);
}

double work_span::burdened_parallelism() const noexcept {
  return burdened_span == 0 ? 0.0 : static_cast<double>(work) / static_cast<double>(burdened_span);
}

double work_span::speedup_upper(unsigned workers) const noexcept {
  return std::min(static_cast<double>(workers), parallelism());
}

double work_span::speedup_lower(unsigned workers) const noexcept {
  if (work == 0 || workers == 0) {
    return 0.0;
  }
  double const t1 = static_cast<double>(work);
  return t1 / (t1 / workers + static_cast<double>(burdened_span));
}

std::vector<unsigned> work_span::worker_counts() {
  return {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64};
}

namespace {

char const *unit_name(work_span_clock c) { return c == work_span_clock::units ? "units" : "ns"; }

std::string format(char const *fmt, auto... args) {
  char buf[160];
  int const n = std::snprintf(buf, sizeof buf, fmt, args...);
  return std::string(
      buf, n < 0 ? 0 : std::min<std::size_t>(static_cast<std::size_t>(n), sizeof buf - 1));
}

/// A time for people: ns as ms with three decimals, units as an integer.
std::string human(std::uint64_t t, work_span_clock c) {
  if (c != work_span_clock::units) {
    return format("%.3f ms", static_cast<double>(t) / 1e6);
  }
  return format("%llu units", static_cast<unsigned long long>(t));
}

} // namespace

std::string work_span::to_table() const {
  std::string out;
  out += "work (T1)              " + human(work, clock) + "\n";
  out += "span (Tinf)            " + human(span, clock) + "\n";
  out += "burdened span          " + human(burdened_span, clock) +
         format("  (burden %llu %s per forked child)\n", static_cast<unsigned long long>(burden),
                unit_name(clock));
  if (event_cost != 0) {
    out += format("probe cost subtracted  %llu ns per event\n",
                  static_cast<unsigned long long>(event_cost));
  }
  out += format("parallelism            %.2f\n", parallelism());
  out += format("burdened parallelism   %.2f\n", burdened_parallelism());
  out += format("tasks                  %llu (%llu forked, %llu called, %llu roots), %llu joins\n",
                static_cast<unsigned long long>(tasks), static_cast<unsigned long long>(forks),
                static_cast<unsigned long long>(calls), static_cast<unsigned long long>(roots),
                static_cast<unsigned long long>(joins));
  if (broken != 0) {
    out += format("left out               %llu roots in which a task suspended\n",
                  static_cast<unsigned long long>(broken));
  }
  out += "workers   speedup (lower .. upper)\n";
  for (unsigned p : worker_counts()) {
    out += format("%7u   %7.2f .. %.2f\n", p, speedup_lower(p), speedup_upper(p));
  }
  return out;
}

std::string work_span::to_json() const {
  auto u = [](std::uint64_t v) { return std::to_string(v); };
  std::string out = std::string("{\"clock\":\"") + unit_name(clock) + "\",\"work\":" + u(work) +
                    ",\"span\":" + u(span) + ",\"burdened_span\":" + u(burdened_span) +
                    ",\"burden\":" + u(burden) + format(",\"parallelism\":%.6g", parallelism()) +
                    format(",\"burdened_parallelism\":%.6g", burdened_parallelism()) +
                    ",\"roots\":" + u(roots) + ",\"forks\":" + u(forks) + ",\"calls\":" + u(calls) +
                    ",\"joins\":" + u(joins) + ",\"tasks\":" + u(tasks) +
                    ",\"broken\":" + u(broken) + ",\"event_cost\":" + u(event_cost) +
                    ",\"speedup\":[";
  bool first = true;
  for (unsigned p : worker_counts()) {
    out += format("%s{\"workers\":%u,\"lower\":%.6g,\"upper\":%.6g}", first ? "" : ",", p,
                  speedup_lower(p), speedup_upper(p));
    first = false;
  }
  return out + "]}";
}

work_span_probe::work_span_probe(sched::pool &pool, work_span_options options) : m_pool(&pool) {
  if constexpr (!core::observes_tasks) {
    throw std::logic_error("magpie::trace::work_span_probe: this build reports no forks, calls "
                           "or joins: build magpie and the program with MAGPIE_OBSERVE_TASKS=ON");
  }
  if (pool.size() != 1) {
    throw std::logic_error("magpie::trace::work_span_probe: the pool must have exactly one worker "
                           "(the analysis follows the serial order of a one-worker run)");
  }
  m_result.clock = options.clock;
#if !defined(CLOCK_THREAD_CPUTIME_ID)
  if (options.clock == work_span_clock::thread_cpu) {
    throw std::logic_error("magpie::trace::work_span_probe: work_span_clock::thread_cpu needs "
                           "CLOCK_THREAD_CPUTIME_ID (POSIX): use work_span_clock::steady");
  }
#endif
  double const b = options.burden >= 0 ? options.burden
                   : options.clock == work_span_clock::units
                       ? 0.0
                       : static_cast<double>(default_burden_ns);
  m_result.burden = static_cast<std::uint64_t>(std::llround(b));
  m_stack.reserve(256);
  m_recorder.owner = this;
  m_recorder.m_record = &work_span_probe::on_event;
  if (options.clock != work_span_clock::units) {
    calibrate();
  }
  m_last = now();
  // replace_observer publishes our state to the worker (its seq_cst exchange, which the
  // worker's seq_cst load in context::observed acquires).
  if (!sched::detail::pool_access::replace_observer(*m_pool, nullptr, &m_recorder)) {
    throw std::logic_error("magpie::trace::work_span_probe: the pool is already observed (a "
                           "trace::session, or pool::count_tasks(true))");
  }
  m_on = true;
}

work_span_probe::~work_span_probe() { (void)stop(); }

void work_span_probe::calibrate() {
  // The probe's own cost per event, as the worker pays it: a private context on this thread
  // (we are its owner) reports events back to back to our recorder; what the clock sees between
  // them is that cost. The smallest of a few rounds: preemption only adds, and subtracting too
  // much would hide work (intervals are clamped at 0).
  core::context bench;
  (void)bench.exchange_observer(&m_recorder);
  constexpr int rounds = 9;
  constexpr int events = 256;
  std::int64_t costs[rounds];
  for (std::int64_t &cost : costs) {
    m_stack.assign(1, frame{});
    m_last = now();
    for (int i = 0; i < events; ++i) {
      bench.observe(core::event::strand_end);
    }
    cost = m_stack.back().work / events;
  }
  (void)bench.exchange_observer(nullptr);
  m_stack.clear();
  m_result.event_cost = static_cast<std::uint64_t>(
      std::max<std::int64_t>(*std::min_element(costs, costs + rounds), 0));
}

work_span work_span_probe::stop() noexcept {
  if (m_on) {
    // Returns once the worker is out of on_event: its writes happen-before our reads.
    (void)sched::detail::pool_access::exchange_observer(*m_pool, nullptr);
    m_on = false;
    if (!m_stack.empty() && !m_skipping) {
      ++m_result.broken; // a root was still running: cut
    }
    m_stack.clear();
    auto clamp = [](std::int64_t v) {
      return static_cast<std::uint64_t>(std::max<std::int64_t>(v, 0));
    };
    m_result.work = clamp(m_work);
    m_result.span = clamp(m_span);
    m_result.burdened_span = clamp(m_span_b);
  }
  return m_result;
}

std::uint64_t work_span_probe::now() const noexcept {
  if (m_result.clock == work_span_clock::units) {
    return detail::charged_units();
  }
#if defined(CLOCK_THREAD_CPUTIME_ID)
  if (m_result.clock == work_span_clock::thread_cpu) {
    timespec ts{};
    (void)clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); // cannot fail for this clock
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
           static_cast<std::uint64_t>(ts.tv_nsec);
  }
#endif
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

void work_span_probe::on_event(core::observer &self, core::context &, core::event e,
                               std::uint64_t) noexcept {
  work_span_probe &p = *static_cast<recorder &>(self).owner;
  p.record(e);
  p.m_last = p.now(); // the probe's own time is nobody's work
}

void work_span_probe::record(core::event e) noexcept {
  std::uint64_t const t = now();
  std::uint64_t const raw = t > m_last ? t - m_last : 0;
  auto const d =
      static_cast<std::int64_t>(raw > m_result.event_cost ? raw - m_result.event_cost : 0);
  if (!m_stack.empty()) {
    frame &top = m_stack.back();
    top.work += d;
    top.path += d;
    top.path_b += d;
  }
  switch (e) {
  case core::event::root:
    if (!m_stack.empty() && !m_skipping) {
      ++m_result.broken; // the previous root had a suspended task
    }
    m_stack.clear();
    m_skipping = false;
    m_stack.push_back(frame{});
    break;
  case core::event::fork:
  case core::event::call:
    if (!m_skipping && !m_stack.empty()) {
      m_stack.push_back(frame{.kind = e});
    }
    break;
  case core::event::join:
    if (!m_skipping && !m_stack.empty()) {
      frame &top = m_stack.back();
      top.path = std::max(top.path, top.child);
      top.path_b = std::max(top.path_b, top.child_b);
      top.child = 0;
      top.child_b = 0;
      ++m_result.joins;
    }
    break;
  case core::event::task_end:
    if (!m_skipping && !m_stack.empty()) {
      task_end();
    }
    break;
  case core::event::join_suspend:
  case core::event::park:
  case core::event::steal:
  case core::event::resume:
    // Not serial fork–join any more: this root's figures would be wrong. Leave it out.
    if (!m_skipping && !m_stack.empty()) {
      ++m_result.broken;
    }
    m_skipping = !m_stack.empty() || m_skipping;
    m_stack.clear();
    break;
  default:
    break; // strand_end, sleep, wake: the worker is between tasks
  }
}

void work_span_probe::task_end() noexcept {
  frame f = m_stack.back();
  m_stack.pop_back();
  // A task joins before it returns (final_transfer asserts it), so `child` is 0 here; the max
  // keeps the figures right should that change.
  std::int64_t const span = std::max(f.path, f.child);
  std::int64_t const span_b = std::max(f.path_b, f.child_b);
  auto const burden = static_cast<std::int64_t>(m_result.burden);
  ++m_result.tasks;
  if (m_stack.empty()) {
    ++m_result.roots;
    m_work += f.work;
    m_span += span; // roots on one worker run one after the other
    m_span_b += span_b;
    return;
  }
  frame &parent = m_stack.back();
  parent.work += f.work;
  if (f.kind == core::event::fork) {
    ++m_result.forks;
    parent.child = std::max(parent.child, parent.path + span);
    // The burden on the child's return edge (its join may wait for a thief) ...
    parent.child_b = std::max(parent.child_b, parent.path_b + span_b + burden);
    // ... and on the continuation edge (a thief steals it).
    parent.path_b += burden;
  } else {
    ++m_result.calls;
    parent.path += span;
    parent.path_b += span_b;
  }
}

} // namespace magpie::trace
