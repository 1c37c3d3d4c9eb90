#pragma once
// tests/common/test_support.hpp — what magpie's tests share: the scheduler parameterisation
// (every scheduler × worker counts 1, 2, 3, 8), a watchdog that turns a hang into a failure,
// lifetime-counting value and exception types, and workload sizes scaled for sanitizer builds.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "magpie/magpie.hpp"

#include "common/watchdog.hpp"
#include "common/workloads.hpp"

namespace magpie::test {

/// The name of the running gtest test, for watchdog messages.
inline std::string current_test_name() {
  auto const *info = ::testing::UnitTest::GetInstance()->current_test_info();
  if (info == nullptr) {
    return "(no test)";
  }
  return std::string(info->test_suite_name()) + "." + info->name();
}

// ---------------------------------------------------------------------------------------------
// Scheduler parameterisation.

enum class sched_kind { inline_, busy, lazy };

struct sched_param {
  sched_kind kind;
  std::size_t workers;
  /// A pool whose callers hand their roots to a worker and wait (callers_run_roots off), instead
  /// of running them themselves (the default).
  bool handoff = false;
};

inline std::string to_string(sched_param const &p) {
  std::string const suffix = p.handoff ? "_handoff" : "";
  switch (p.kind) {
  case sched_kind::inline_:
    return "inline";
  case sched_kind::busy:
    return "busy_" + std::to_string(p.workers) + suffix;
  case sched_kind::lazy:
    return "lazy_" + std::to_string(p.workers) + suffix;
  }
  return "unknown";
}

/// Options for a pool of `workers` whose callers hand their roots to a worker and wait (for the
/// tests of that path: the polling caller, sleeps and wake-ups between roots).
inline magpie::pool_options handoff_options(std::size_t workers) {
  magpie::pool_options o;
  o.workers = workers;
  o.callers_run_roots = false;
  return o;
}

inline void PrintTo(sched_param const &p, std::ostream *os) { *os << to_string(p); }

/// gtest's name generator for INSTANTIATE_TEST_SUITE_P.
struct sched_name {
  std::string operator()(::testing::TestParamInfo<sched_param> const &info) const {
    return to_string(info.param);
  }
};

inline constexpr std::size_t worker_counts[] = {1, 2, 3, 8};

/// Every scheduler: the inline one once, busy and lazy pools with 1, 2, 3 and 8 workers (their
/// callers run their roots), and a busy and a lazy pool whose callers hand their roots over.
inline std::vector<sched_param> all_schedulers() {
  std::vector<sched_param> out{{sched_kind::inline_, 1}};
  for (sched_kind k : {sched_kind::busy, sched_kind::lazy}) {
    for (std::size_t n : worker_counts) {
      out.push_back({k, n});
    }
  }
  out.push_back({sched_kind::busy, 2, true});
  out.push_back({sched_kind::lazy, 3, true});
  return out;
}

/// Only the pools (for features that need one: resume_on, stealing statistics).
inline std::vector<sched_param> all_pools() {
  std::vector<sched_param> out = all_schedulers();
  out.erase(out.begin());
  return out;
}

/// Schedulers that must execute tasks in exactly the serial order: inline and 1-worker pools.
inline std::vector<sched_param> serial_schedulers() {
  return {{sched_kind::inline_, 1}, {sched_kind::busy, 1}, {sched_kind::lazy, 1}};
}

/// One scheduler of a given kind, and sync_wait on it.
class any_scheduler {
public:
  explicit any_scheduler(sched_param p) : m_param(p) {
    switch (p.kind) {
    case sched_kind::inline_:
      m_inline = std::make_unique<magpie::inline_scheduler>();
      break;
    case sched_kind::busy:
      m_pool = std::make_unique<magpie::busy_pool>(options(p));
      break;
    case sched_kind::lazy:
      m_pool = std::make_unique<magpie::lazy_pool>(options(p));
      break;
    }
  }

  template <typename Fn, typename... Args>
  decltype(auto) run(Fn &&fn, Args &&...args) {
    if (m_inline) {
      return magpie::sync_wait(*m_inline, std::forward<Fn>(fn), std::forward<Args>(args)...);
    }
    return magpie::sync_wait(*m_pool, std::forward<Fn>(fn), std::forward<Args>(args)...);
  }

  sched_param param() const noexcept { return m_param; }
  bool is_inline() const noexcept { return m_inline != nullptr; }
  magpie::pool *pool() const noexcept { return m_pool.get(); }
  magpie::inline_scheduler *inline_sched() const noexcept { return m_inline.get(); }
  /// Workers that may run tasks at once (1 for the inline scheduler).
  std::size_t workers() const noexcept { return m_pool ? m_pool->size() : 1; }
  /// True if tasks run in exactly the serial order on this scheduler.
  bool serial() const noexcept { return workers() == 1; }

  /// Sum of the per-worker counters.
  magpie::core::worker_stats total_stats() const {
    if (m_inline) {
      return m_inline->stats();
    }
    magpie::core::worker_stats sum;
    for (auto const &s : m_pool->stats()) {
      sum.steals += s.steals;
      sum.steal_fails += s.steal_fails;
      sum.jobs += s.jobs;
      sum.handoffs += s.handoffs;
      sum.sleeps += s.sleeps;
    }
    return sum;
  }

  /// Destroys the scheduler now (joins a pool's threads).
  void reset() {
    m_pool.reset();
    m_inline.reset();
  }

private:
  static magpie::pool_options options(sched_param p) {
    magpie::pool_options o = handoff_options(p.workers);
    o.callers_run_roots = !p.handoff;
    return o;
  }

  sched_param m_param;
  std::unique_ptr<magpie::inline_scheduler> m_inline;
  std::unique_ptr<magpie::pool> m_pool;
};

/// Fixture for tests parameterised over schedulers: a fresh scheduler per test, under a watchdog.
class scheduler_test : public ::testing::TestWithParam<sched_param> {
protected:
  scheduler_test() : m_dog(current_test_name()), m_sched(GetParam()) {}

  watchdog m_dog; // constructed first, destroyed last: also guards the pool's shutdown
  any_scheduler m_sched;
};

// ---------------------------------------------------------------------------------------------
// Reference workloads used by several tests.

/// A fib size that takes a few milliseconds in this build.
inline int const fib_n = scaled(23, 20);

/// Burns a little time so that siblings overlap on multi-worker pools (not optimised away).
inline std::uint64_t spin_work(std::uint64_t iters) {
  std::uint64_t x = iters;
  for (std::uint64_t i = 0; i < iters; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    asm volatile("" : "+r"(x));
  }
  return x;
}

// ---------------------------------------------------------------------------------------------
// Lifetime counting.

/// Counts constructions and destructions of `tracked` values; detects double destruction and
/// use of destroyed or moved-from objects through a magic word.
struct lifetime_counters {
  std::atomic<long> constructed{0}; // every constructor, including copies and moves
  std::atomic<long> destroyed{0};
  std::atomic<long> copies{0};
  std::atomic<long> moves{0};
  std::atomic<long> errors{0}; // destruction of a dead object, or a read of one

  long live() const noexcept { return constructed.load() - destroyed.load(); }
  void reset() noexcept {
    constructed = 0;
    destroyed = 0;
    copies = 0;
    moves = 0;
    errors = 0;
  }
};

inline lifetime_counters &tracked_counters() noexcept {
  static lifetime_counters c;
  return c;
}

class tracked {
public:
  static constexpr std::uint64_t alive_magic = 0x7ac4edA11fe0000ULL;
  static constexpr std::uint64_t dead_magic = 0xdeadbeefdeadbeefULL;

  tracked() noexcept : tracked(0) {}
  explicit tracked(long v) noexcept : m_value(v) { tracked_counters().constructed.fetch_add(1); }
  tracked(tracked const &o) noexcept : m_value(o.value()) {
    tracked_counters().constructed.fetch_add(1);
    tracked_counters().copies.fetch_add(1);
  }
  tracked(tracked &&o) noexcept : m_value(o.value()) {
    tracked_counters().constructed.fetch_add(1);
    tracked_counters().moves.fetch_add(1);
  }
  tracked &operator=(tracked const &o) noexcept {
    check();
    m_value = o.value();
    return *this;
  }
  tracked &operator=(tracked &&o) noexcept {
    check();
    m_value = o.value();
    return *this;
  }
  ~tracked() {
    check();
    // Through a volatile pointer (as in common/lifetime.hpp): a plain store to a dying object is
    // a dead store that GCC removes (-flifetime-dse) unless something after it might read the
    // object, and then a later use of the dead object would look alive.
    *static_cast<std::uint64_t volatile *>(&m_magic) = dead_magic;
    tracked_counters().destroyed.fetch_add(1);
  }

  long value() const noexcept {
    check();
    return m_value;
  }
  bool alive() const noexcept { return load_magic() == alive_magic; }

private:
  /// Volatile, so that a read of a dead object is not folded from what the optimiser knows.
  std::uint64_t load_magic() const noexcept {
    return *static_cast<std::uint64_t const volatile *>(&m_magic);
  }
  void check() const noexcept {
    if (load_magic() != alive_magic) {
      tracked_counters().errors.fetch_add(1);
    }
  }

  std::uint64_t m_magic = alive_magic;
  long m_value;
};

/// An exception type with a live-instance counter.
struct counted_error : std::runtime_error {
  static std::atomic<long> &live() noexcept {
    static std::atomic<long> n{0};
    return n;
  }
  static std::atomic<long> &made() noexcept {
    static std::atomic<long> n{0};
    return n;
  }

  explicit counted_error(int id_)
      : std::runtime_error("counted_error " + std::to_string(id_)), id(id_) {
    live().fetch_add(1);
    made().fetch_add(1);
  }
  counted_error(counted_error const &o) : std::runtime_error(o), id(o.id) {
    live().fetch_add(1);
    made().fetch_add(1);
  }
  ~counted_error() override { live().fetch_sub(1); }

  int id;
};

// ---------------------------------------------------------------------------------------------
// Array contents and bounded waits, for tests of stack arrays and of interleavings.

/// A recognisable value for element `i` of the array tagged `tag`: overwrites show up as damage.
inline std::uint64_t pattern(int tag, std::size_t i) {
  return (static_cast<std::uint64_t>(tag) << 40) ^ (i * 2654435761u);
}

template <typename Array>
void fill(Array &a, int tag) {
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = pattern(tag, i);
  }
}

/// Elements of `a` that no longer hold what fill(a, tag) wrote.
template <typename Array>
long damaged(Array const &a, int tag) {
  long bad = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    bad += a[i] != pattern(tag, i) ? 1 : 0;
  }
  return bad;
}

/// Waits (yielding: the machine may have few cores) until `flag` is non-zero; false after 5 s.
/// Out of line: a busy loop written inside a coroutine body is not reliably kept by GCC 12.
[[gnu::noinline]] inline bool wait_for(std::atomic<int> const &flag) {
  auto const deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (flag.load() == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    std::this_thread::yield();
  }
  return true;
}

/// Waits (yielding) until `pred()` holds, for at most `limit`; returns false on timeout.
template <typename Pred>
[[gnu::noinline]] bool wait_until(Pred pred,
                                  std::chrono::seconds limit = std::chrono::seconds(10)) {
  auto const deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    std::this_thread::yield();
  }
  return true;
}

} // namespace magpie::test
