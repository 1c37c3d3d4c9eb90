// Counters and timelines (magpie/trace.hpp): the counters add up, traces have matched spans per
// worker, sessions come and go while the pool runs, and an exchanged observer is left for good.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "magpie/magpie.hpp"

#include "common/workloads.hpp"

namespace {

using magpie::test::fib;
using magpie::test::serial_fib;

/// Where the JSON checker (ctest trace.json_parses) wants files, or nothing.
void save(std::string const &name, std::string const &text) {
  if (char const *dir = std::getenv("MAGPIE_TRACE_OUT")) {
    std::ofstream(std::string(dir) + "/" + name) << text;
  }
}

/// Counts spans per worker in write_json's output (the format is ours: one event per line).
void expect_matched(std::string const &json, bool some = true) {
  std::istringstream in(json);
  std::string line;
  std::map<std::string, long> open;
  long begins = 0;
  while (std::getline(in, line)) {
    auto const tid_at = line.find("\"tid\":");
    if (tid_at == std::string::npos) {
      continue;
    }
    std::string const tid = line.substr(tid_at + 6, line.find(',', tid_at) - tid_at - 6);
    if (line.find("\"ph\":\"B\"") != std::string::npos) {
      ++open[tid];
      ++begins;
    } else if (line.find("\"ph\":\"E\"") != std::string::npos) {
      ASSERT_GT(open[tid], 0) << "an end without a begin on worker " << tid << ": " << line;
      --open[tid];
    }
  }
  for (auto const &[tid, n] : open) {
    EXPECT_EQ(n, 0) << "spans left open on worker " << tid;
  }
  // Times never go back on a worker (interpolated ones included).
  std::istringstream again(json);
  std::map<std::string, double> last;
  while (std::getline(again, line)) {
    auto const tid_at = line.find("\"tid\":");
    auto const ts_at = line.find("\"ts\":");
    if (tid_at == std::string::npos || ts_at == std::string::npos) {
      continue;
    }
    std::string const tid = line.substr(tid_at + 6, line.find(',', tid_at) - tid_at - 6);
    double const ts = std::stod(line.substr(ts_at + 5));
    auto const [it, fresh] = last.try_emplace(tid, ts);
    ASSERT_GE(ts, it->second) << "time went back on worker " << tid << ": " << line;
    it->second = ts;
  }
  if (some) {
    EXPECT_GT(begins, 0);
  }
}

template <typename Pool>
void counters_add_up(std::size_t workers) {
  magpie::sched::pool_options options;
  options.workers = workers;
  options.count_tasks = true;
  Pool pool(options);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(magpie::sync_wait(pool, fib, 20), serial_fib(20));
  }
  auto const c = magpie::trace::counters(pool);
  ASSERT_EQ(c.workers.size(), workers);
  EXPECT_TRUE(c.counting_tasks);
  EXPECT_EQ(c.roots_submitted, 3u);
  EXPECT_EQ(c.total.roots, 3u);
  if constexpr (magpie::core::observes_tasks) {
    // fib(20) makes fib_calls(20) - 1 children per root: half forked, half called.
    std::uint64_t const children = 3u * (2u * static_cast<std::uint64_t>(serial_fib(21)) - 2u);
    EXPECT_EQ(c.total.forks + c.total.calls, children);
    EXPECT_EQ(c.total.forks, c.total.calls);
    EXPECT_EQ(c.total.forks + c.total.calls + c.total.roots, c.total.tasks);
  } else { // this build has no hooks at fork, call and task end
    EXPECT_EQ(c.total.forks + c.total.calls + c.total.tasks, 0u);
  }
  EXPECT_LE(c.total.join_suspends, c.total.steals);
  EXPECT_GE(c.total.stacklets, workers);
  EXPECT_GT(c.total.stack_peak, 0u);
  std::string const table = c.to_table();
  EXPECT_NE(table.find("total"), std::string::npos);
  EXPECT_NE(table.find("steal_fails"), std::string::npos);
  save(std::string("counters_") + std::to_string(workers) + ".json", c.to_json());
}

TEST(trace_counters, add_up_on_a_busy_pool) { counters_add_up<magpie::sched::busy_pool>(2); }
TEST(trace_counters, add_up_on_a_lazy_pool) { counters_add_up<magpie::sched::lazy_pool>(3); }

/// A parallel loop's forks (counted in builds with MAGPIE_OBSERVE_TASKS) on a pool of `workers`.
std::uint64_t loop_forks(std::size_t workers) {
  magpie::sched::pool_options options;
  options.workers = workers;
  options.count_tasks = true;
  magpie::sched::lazy_pool pool(options);
  std::vector<std::uint64_t> v(100000, 1);
  magpie::for_each(pool, v, [](std::uint64_t &x) { x = x * 3 + 1; });
  for (std::uint64_t const x : v) {
    EXPECT_EQ(x, 4u);
  }
  return magpie::trace::counters(pool).total.forks;
}

TEST(trace_counters, a_loop_on_a_pool_of_one_worker_never_splits) {
  // Nobody could steal the upper half of a split there: the loop runs as one task, in order.
  std::uint64_t const one = loop_forks(1);
  std::uint64_t const two = loop_forks(2);
  if constexpr (magpie::core::observes_tasks) {
    EXPECT_EQ(one, 0u);
    EXPECT_GT(two, 0u); // the first chunk finds the deque empty: a split, stolen or not
  } else {
    EXPECT_EQ(one + two, 0u); // no hook at fork in this build
  }
}

/// ~1-2 ns per step of work that the compiler cannot drop (out of line: see STYLE.md on busy
/// loops).
__attribute__((noinline)) void burn_a_little(std::atomic<std::uint64_t> &sink, unsigned steps) {
  std::uint64_t x = sink.load(std::memory_order_relaxed);
  for (unsigned i = 0; i < steps; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    asm volatile("" : "+r"(x));
  }
  sink.store(x, std::memory_order_relaxed);
}

/// Median time of `reps` serial runs of `n` calls of `body`, in nanoseconds.
template <typename Body>
std::int64_t serial_ns(Body const &body, int n, int reps) {
  std::vector<std::int64_t> took;
  for (int r = 0; r < reps; ++r) {
    auto const start = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) {
      body(i);
    }
    took.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::steady_clock::now() - start)
                       .count());
  }
  std::nth_element(took.begin(), took.begin() + reps / 2, took.end());
  return took[static_cast<std::size_t>(reps / 2)];
}

TEST(trace_counters, a_loop_too_small_to_pay_for_a_steal_is_not_split) {
  // 16 iterations of about half of algo::detail::split_floor in all. A range of two chunks or
  // more used to split whenever the deque was empty, at every call; now a call that starts from
  // what the last one timed runs it on one worker. Timing is noisy (a chunk preempted while timed
  // makes iterations look slow), so the test asks for one unsplit call among many, where every
  // call used to split. The iterations' cost is set from a serial timing in this build, as the
  // split floor is a time, not a length.
  if (MAGPIE_UNDER_TSAN) {
    // The loop's own atomics and clock reads are instrumented too, so what its timed chunks say
    // per index is not what the serial loop takes: at ~1 µs serial, it still split at every call.
    GTEST_SKIP() << "a timing heuristic: ThreadSanitizer changes what the loop's clock measures";
  }
  magpie::sched::pool_options options;
  options.workers = 2;
  options.count_tasks = true;
  magpie::sched::lazy_pool pool(options);
  std::atomic<std::uint64_t> sink{1};
  std::atomic<int> ran{0};
  unsigned steps = 40;
  auto const body = [&](int) {
    burn_a_little(sink, steps);
    ran.fetch_add(1, std::memory_order_relaxed);
  };
  std::int64_t const at_40 = serial_ns(body, 16, 15);
  std::int64_t const target = magpie::algo::detail::split_floor.count() / 2;
  steps = static_cast<unsigned>(
      std::clamp<std::int64_t>(40 * target / std::max<std::int64_t>(at_40, 1), 0, 400));
  if (steps == 0) {
    GTEST_SKIP() << "16 iterations take " << at_40 << " ns in this build, above " << target;
  }
  ran.store(0);
  std::uint64_t least = ~std::uint64_t{0};
  for (int call = 0; call < 40; ++call) {
    std::uint64_t const before = magpie::trace::counters(pool).total.forks;
    magpie::for_range(pool, 0, 16, body);
    std::uint64_t const forks = magpie::trace::counters(pool).total.forks - before;
    if (call > 0) {
      least = std::min(least, forks);
    }
  }
  EXPECT_EQ(ran.load(), 40 * 16);
  if constexpr (magpie::core::observes_tasks) {
    EXPECT_EQ(least, 0u) << "every call split a loop of ~" << target << " ns (" << steps
                         << " steps per iteration)";
    EXPECT_GT(loop_forks(2), 0u) << "a loop of 10^5 iterations still splits";
  } else {
    EXPECT_EQ(least, 0u); // no hook at fork in this build
  }
}

TEST(trace_counters, lazy_workers_sleep_and_wake) {
  magpie::pool_options options; // the root goes to a sleeping worker (its caller hands it over)
  options.workers = 2;
  options.callers_run_roots = false;
  magpie::sched::lazy_pool pool(options);
  // Let both fall asleep (sanitizer builds take a while to get there).
  auto const deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (magpie::trace::counters(pool).total.sleeps < 2 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_GE(magpie::trace::counters(pool).total.sleeps, 2u) << "idle lazy workers never slept";
  EXPECT_EQ(magpie::sync_wait(pool, fib, 15), serial_fib(15));
  auto const c = magpie::trace::counters(pool);
  EXPECT_GT(c.total.sleeps, 0u);
  EXPECT_GT(c.total.wakes, 0u) << "a root submitted to a sleeping pool wakes a worker";
  EXPECT_LE(c.total.wakes, c.total.sleeps);
  EXPECT_FALSE(c.counting_tasks);
  EXPECT_EQ(c.total.forks, 0u) << "forks are counted only while counting is on";
}

TEST(trace_counters, counting_turns_on_and_off) {
  magpie::sched::busy_pool pool(2);
  EXPECT_FALSE(pool.counting_tasks());
  pool.count_tasks(true);
  EXPECT_TRUE(pool.counting_tasks());
  EXPECT_EQ(magpie::sync_wait(pool, fib, 10), serial_fib(10));
  pool.count_tasks(false);
  auto const c = magpie::trace::counters(pool);
  EXPECT_EQ(magpie::sync_wait(pool, fib, 10), serial_fib(10));
  EXPECT_EQ(magpie::trace::counters(pool).total.tasks, c.total.tasks) << "counting is off";
  if constexpr (magpie::core::observes_tasks) {
    EXPECT_EQ(c.total.forks + c.total.calls + c.total.roots, c.total.tasks);
    EXPECT_EQ(c.total.tasks, static_cast<std::uint64_t>(2 * serial_fib(11) - 1));
  }
}

template <typename Pool>
void session_writes(char const *name) {
  Pool pool(2);
  std::string json;
  {
    magpie::trace::session s(pool, 1 << 12); // small: the ring wraps
    EXPECT_THROW(pool.count_tasks(true), std::logic_error);
    EXPECT_THROW(magpie::trace::session{pool}, std::logic_error) << "one observer at a time";
    EXPECT_EQ(magpie::sync_wait(pool, fib, 18), serial_fib(18));
    std::ostringstream out;
    s.write_json(out);
    json = out.str();
    EXPECT_GT(s.recorded(), s.dropped());
    if constexpr (magpie::core::observes_tasks) {
      EXPECT_GT(s.dropped(), 0u) << "fib(18) has ~8,000 tasks: the rings wrapped";
    }
  }
  EXPECT_NE(json.find("\"traceEvents\""), std::string::npos);
  if constexpr (magpie::core::observes_tasks) { // the rings wrapped: the root's span is gone
    EXPECT_NE(json.find("\"name\":\"fork\""), std::string::npos);
  } else {
    EXPECT_NE(json.find("\"name\":\"root\""), std::string::npos);
  }
  expect_matched(json);
  save(name, json);
  EXPECT_FALSE(pool.counting_tasks()) << "the session uninstalled itself";
}

TEST(trace_session, writes_a_busy_pool) { session_writes<magpie::sched::busy_pool>("busy.json"); }
TEST(trace_session, writes_a_lazy_pool) { session_writes<magpie::sched::lazy_pool>("lazy.json"); }

MAGPIE_NOINLINE void nap_30ms() { std::this_thread::sleep_for(std::chrono::milliseconds(30)); }

magpie::task<int> napping_root() {
  nap_30ms();
  co_return 1;
}

/// The ts of the first "B" event holding `begin_marker` (after `skip` others) and of the next "E"
/// on the same worker, in µs (the span's end if it has no children).
std::pair<double, double> span_of(std::string const &json, std::string const &begin_marker,
                                  int skip = 0) {
  std::istringstream in(json);
  std::string line;
  auto const ts = [](std::string const &l) { return std::stod(l.substr(l.find("\"ts\":") + 5)); };
  double begin = -1;
  std::string tid;
  while (std::getline(in, line)) {
    auto const at = line.find("\"tid\":");
    if (at == std::string::npos) {
      continue;
    }
    std::string const this_tid = line.substr(at, line.find(',', at) - at);
    if (begin < 0 && line.find(begin_marker) != std::string::npos &&
        line.find("\"ph\":\"B\"") != std::string::npos && skip-- == 0) {
      begin = ts(line);
      tid = this_tid;
    } else if (begin >= 0 && this_tid == tid && line.find("\"ph\":\"E\"") != std::string::npos) {
      return {begin, ts(line)};
    }
  }
  return {-1, -1};
}

// The trace's clock (a time-stamp counter where there is one) is mapped onto steady_clock: a root
// that sleeps 30 ms spans at least that, and no more than the caller saw.
TEST(trace_session, timestamps_are_calibrated_nanoseconds) {
  magpie::sched::busy_pool pool(1);
  std::string json;
  double outer_us = 0;
  {
    magpie::trace::session s(pool);
    auto const t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(magpie::sync_wait(pool, napping_root), 1);
    outer_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    // The caller may be woken before the worker records the root's end; the one worker records
    // it before it starts the next root, so this one makes sure it is in the trace.
    EXPECT_EQ(magpie::sync_wait(pool, napping_root), 1);
    std::ostringstream out;
    s.write_json(out);
    json = out.str();
  }
  auto const [begin, end] = span_of(json, "\"name\":\"root\"");
  ASSERT_GE(begin, 0) << "no root span in\n" << json;
  ASSERT_GE(end, begin) << "the root span has no end in\n" << json;
  EXPECT_GE(end - begin, 29'000.0) << "the root slept 30 ms; the trace:\n" << json;
  EXPECT_LE(end - begin, outer_us + 1'000.0) << "longer than sync_wait took";
}

// timing::adaptive reads the clock at a fraction of the task events once tasks are short, but
// still at both ends of a root: a 30 ms root after thousands of tiny tasks keeps its length.
// timing::every_event reads it at every event.
TEST(trace_session, adaptive_timing_reads_the_clock_less_and_keeps_roots_exact) {
  for (auto const timing :
       {magpie::trace::session::timing::adaptive, magpie::trace::session::timing::every_event}) {
    magpie::sched::busy_pool pool(1);
    std::string json;
    double outer_us = 0;
    double fib_ns = 0;
    std::uint64_t recorded = 0;
    std::uint64_t reads = 0;
    {
      magpie::trace::session s(pool, std::size_t{1} << 17, timing); // holds every event
      auto const f0 = std::chrono::steady_clock::now();
      EXPECT_EQ(magpie::sync_wait(pool, fib, 18), serial_fib(18));
      fib_ns =
          std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - f0).count();
      auto const t0 = std::chrono::steady_clock::now();
      EXPECT_EQ(magpie::sync_wait(pool, napping_root), 1);
      outer_us =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      EXPECT_EQ(magpie::sync_wait(pool, napping_root), 1); // records the first one's end
      std::ostringstream out;
      s.write_json(out);
      json = out.str();
      recorded = s.recorded();
      reads = s.clock_reads();
      EXPECT_EQ(s.dropped(), 0u);
    }
    expect_matched(json);
    if (timing == magpie::trace::session::timing::every_event) {
      EXPECT_EQ(reads, recorded);
    } else if (magpie::core::observes_tasks) {
      // fib(18): 8,361 tasks, two events each. Where they take under 30 ns each (optimised
      // builds; not under TSan, where the strides rightly stay short), strides grow to 16 events
      // or more: reads are a small share (4-5 % measured; the bound leaves room for preemption).
      EXPECT_GT(recorded, 16'000u);
      double const ns_per_event = fib_ns / 16'722.0;
      if (ns_per_event < 30.0) {
        EXPECT_LT(reads, recorded / 4) << reads << " of " << recorded << " events read the clock, "
                                       << ns_per_event << " ns per event";
      } else {
        std::printf("%.0f ns per event: tasks too slow for long strides, not checked\n",
                    ns_per_event);
      }
    }
    auto const [begin, end] = span_of(json, "\"name\":\"root\"", 1); // the fib root's next
    ASSERT_GE(end, begin) << "no span for the napping root";
    EXPECT_GE(end - begin, 29'000.0) << "the root slept 30 ms";
    EXPECT_LE(end - begin, outer_us + 1'000.0) << "longer than sync_wait took";
  }
}

TEST(trace_session, comes_and_goes_while_the_pool_runs) {
  magpie::sched::busy_pool pool(2);
  std::atomic<bool> done{false};
  std::thread runner([&] {
    for (int i = 0; i < 20; ++i) {
      EXPECT_EQ(magpie::sync_wait(pool, fib, 16), serial_fib(16));
    }
    done.store(true);
  });
  int sessions = 0;
  while (!done.load() || sessions < 3) {
    magpie::trace::session s(pool, 256);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    ++sessions;
    if (sessions % 2 == 0) {
      std::ostringstream out;
      s.write_json(out);
      expect_matched(out.str(), /*some=*/false); // the slice may have caught no task
    }
  } // destroyed while workers record
  runner.join();
}

/// An observer that knows when it was swapped out: a worker reporting to it after that is a
/// broken handshake (protocols §13).
struct checked_observer : magpie::core::observer {
  std::atomic<bool> retired{false};
  std::atomic<long> calls{0};
  std::atomic<long> late{0}; // reports that began or ran on after exchange_observer returned
};

[[gnu::noinline]] void widen_the_window() {
  for (int i = 0; i < 200; ++i) {
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
}

void on_checked(magpie::core::observer &self, magpie::core::context & /*worker*/,
                magpie::core::event /*e*/, std::uint64_t /*arg*/) noexcept {
  auto &o = static_cast<checked_observer &>(self);
  // relaxed: a flag the exchanging thread sets after exchange_observer returns; the handshake,
  // not this load, orders them (seeing it late can only miss a violation, never invent one).
  if (o.retired.load(std::memory_order_relaxed)) {
    o.late.fetch_add(1, std::memory_order_relaxed); // no edge: a count read after join
  }
  widen_the_window(); // a report that takes a while: exchanges land inside it
  if (o.retired.load(std::memory_order_relaxed)) {
    o.late.fetch_add(1, std::memory_order_relaxed); // no edge: a count read after join
  }
  o.calls.fetch_add(1, std::memory_order_relaxed); // no edge: a count read after join
}

// exchange_observer returns only once no worker is inside the previous observer, and no worker
// enters it afterwards (the observer may then be freed): two observers alternate thousands of
// times while two workers report events (per task in the tasks.* build; steals, roots and
// strand ends in the default one), each marked retired as soon as it is swapped out.
TEST(trace_observer, exchange_waits_for_workers_to_leave_the_previous_one) {
  magpie::sched::busy_pool pool(2);
  checked_observer a;
  checked_observer b;
  a.m_record = b.m_record = &on_checked;
  ASSERT_TRUE(magpie::sched::detail::pool_access::replace_observer(
      pool, nullptr, &a)); // before any event: none goes unobserved
  int exchanges = 1;
  std::atomic<bool> done{false};
  std::thread runner([&] {
    for (int i = 0; i < 200; ++i) {
      EXPECT_EQ(magpie::sync_wait(pool, fib, 14), serial_fib(14));
    }
    done.store(true);
  });
  while (!done.load() || exchanges < 200) {
    checked_observer &next = exchanges % 2 == 0 ? a : b;
    checked_observer &prev = exchanges % 2 == 0 ? b : a;
    next.retired.store(false, std::memory_order_relaxed); // published by the exchange below
    ASSERT_TRUE(magpie::sched::detail::pool_access::replace_observer(pool, &prev, &next))
        << "no one else changes the observer";
    prev.retired.store(true, std::memory_order_relaxed); // no worker is inside, none will enter
    ++exchanges;
  }
  runner.join();
  (void)magpie::sched::detail::pool_access::exchange_observer(pool, nullptr);
  EXPECT_EQ(a.late.load() + b.late.load(), 0) << "reports into an observer already swapped out";
  EXPECT_GT(a.calls.load() + b.calls.load(), 0) << "nothing was reported: the test tested nothing";
}

} // namespace
