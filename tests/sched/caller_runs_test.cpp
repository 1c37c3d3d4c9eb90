// Callers that run their own roots (pool_options::callers_run_roots, pool::run_root_here): right
// answers on every pool, a caller that runs nothing but its own root's strand, a sleeping lazy
// pool that still steals the caller's continuations (no lost wake-up), exceptions, more callers
// than guest slots, nesting, observers, and a destructor that waits for a caller's root. A plain
// thread reading a future runs the task itself if it has not started (and never with hand-off).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_support.hpp"
#include "magpie/trace/counters.hpp"
#include "magpie/trace/dump.hpp"

namespace {

using namespace magpie::test;
using magpie::call;
using magpie::fork;
using magpie::join;
using magpie::task;

/// A pool built with callers_run_roots.
std::unique_ptr<magpie::pool> caller_pool(magpie::idle_policy policy, std::size_t workers) {
  magpie::pool_options o;
  o.workers = workers;
  o.callers_run_roots = true;
  return std::make_unique<magpie::pool>(o, policy);
}

struct shape {
  magpie::idle_policy policy;
  std::size_t workers;
};

std::vector<shape> shapes() {
  std::vector<shape> out;
  for (auto policy : {magpie::idle_policy::busy, magpie::idle_policy::lazy}) {
    for (std::size_t w : {1, 2, 3}) {
      out.push_back({policy, w});
    }
  }
  return out;
}

std::string shape_name(::testing::TestParamInfo<shape> const &info) {
  return std::string(info.param.policy == magpie::idle_policy::busy ? "busy_" : "lazy_") +
         std::to_string(info.param.workers);
}

class caller_runs : public ::testing::TestWithParam<shape> {
protected:
  caller_runs()
      : m_dog(current_test_name()), m_pool(caller_pool(GetParam().policy, GetParam().workers)) {}
  watchdog m_dog; // first in, last out: also guards the pool's shutdown
  std::unique_ptr<magpie::pool> m_pool;
};

/// Records the threads its tasks ran on.
struct thread_log {
  std::mutex mutex;
  std::set<std::thread::id> ids;
  void note() {
    std::lock_guard lock(mutex);
    ids.insert(std::this_thread::get_id());
  }
};

task<long> logged_fib(int n, thread_log *log) {
  log->note();
  if (n < 2) {
    co_return n;
  }
  long a = 0;
  long b = 0;
  co_await fork(&a, logged_fib, n - 1, log);
  co_await call(&b, logged_fib, n - 2, log);
  co_await join();
  co_return a + b;
}

TEST_P(caller_runs, answers_are_right_and_the_caller_takes_part) {
  EXPECT_EQ(magpie::sched::detail::pool_access::guest_slots(*m_pool), GetParam().workers);
  int const n = scaled(20, 16);
  bool caller_ran = false;
  for (int r = 0; r < scaled(20, 5); ++r) {
    thread_log log;
    EXPECT_EQ(magpie::sync_wait(*m_pool, logged_fib, n, &log), serial_fib(n));
    caller_ran = caller_ran || log.ids.count(std::this_thread::get_id()) == 1;
    if (GetParam().workers == 1) { // a one-worker pool leaves the whole root to its caller
      EXPECT_EQ(log.ids.size(), 1u);
    }
    EXPECT_LE(log.ids.size(), GetParam().workers + 1); // the workers and the caller, no other
  }
  EXPECT_TRUE(caller_ran);
}

task<int> where_am_i(std::atomic<std::ptrdiff_t> *index) {
  index->store(magpie::this_worker_index());
  co_return 1;
}

task<int> nested_on(magpie::pool *p) {
  std::atomic<std::ptrdiff_t> index{0};
  co_return magpie::sync_wait(*p, where_am_i, &index);
}

TEST_P(caller_runs, the_caller_is_not_a_worker_but_is_inside_the_pool) {
  std::atomic<std::ptrdiff_t> index{5};
  EXPECT_EQ(magpie::sync_wait(*m_pool, where_am_i, &index), 1);
  EXPECT_EQ(index.load(), -1); // no worker index: resume_on(pool, i) takes a worker's
  // From inside its root the caller is the pool's: a nested sync_wait on it is refused.
  EXPECT_THROW((void)magpie::sync_wait(*m_pool, nested_on, m_pool.get()), std::logic_error);
  EXPECT_EQ(magpie::sync_wait(*m_pool, where_am_i, &index), 1); // still usable
}

/// Spawns `k` tasks that log where they run, forks work, then reads the futures.
task<long> spawner(magpie::pool *p, thread_log *spawned, int k) {
  std::vector<magpie::future<long>> fs;
  for (int i = 0; i < k; ++i) {
    fs.push_back(magpie::spawn(*p, logged_fib, 12, spawned));
  }
  long sum = 0;
  for (auto &f : fs) {
    sum += co_await f;
  }
  co_return sum;
}

TEST_P(caller_runs, the_caller_runs_only_its_own_roots_strand) {
  // Unrelated roots from another thread, and roots spawned by the caller's own tasks, run on
  // workers: never on the caller's thread.
  thread_log unrelated;
  std::atomic<bool> stop{false};
  std::thread other([&] {
    while (!stop.load()) {
      auto f = magpie::spawn(*m_pool, logged_fib, 14, &unrelated);
      EXPECT_EQ(f.get(), serial_fib(14));
    }
  });
  thread_log spawned;
  for (int r = 0; r < scaled(30, 8); ++r) {
    EXPECT_EQ(magpie::sync_wait(*m_pool, spawner, m_pool.get(), &spawned, 8), 8 * serial_fib(12));
  }
  stop.store(true);
  other.join();
  EXPECT_EQ(unrelated.ids.count(std::this_thread::get_id()), 0u);
  // A spawned task may run on the caller only inside its reader's co_await (a future's reader
  // runs an unstarted task itself, as on a worker): never by the caller picking it up as a job.
  // So with a reader that is a task of this root, that is the one exception allowed.
  EXPECT_LE(spawned.ids.size(), GetParam().workers + 1);
}

[[gnu::noinline]] bool spin_until(std::atomic<int> const &flag, std::chrono::seconds limit) {
  auto const until = std::chrono::steady_clock::now() + limit;
  while (flag.load(std::memory_order_acquire) == 0) {
    if (std::chrono::steady_clock::now() > until) {
      return false;
    }
    std::this_thread::yield();
  }
  return true;
}

task<void> wait_for_sibling(std::atomic<int> *flag, std::atomic<int> *timeouts) {
  if (!spin_until(*flag, std::chrono::seconds(5))) {
    timeouts->fetch_add(1);
    flag->store(1);
  }
  co_return;
}

task<void> set_flag(std::atomic<int> *flag) {
  flag->store(1, std::memory_order_release);
  co_return;
}

/// The forked child can finish only once a worker has stolen the continuation and run its
/// sibling: the caller is busy in the first child.
task<int> needs_a_thief(std::atomic<int> *timeouts) {
  std::atomic<int> flag{0};
  co_await fork(wait_for_sibling, &flag, timeouts);
  co_await fork(set_flag, &flag);
  co_await join();
  co_return 1;
}

TEST_P(caller_runs, workers_steal_the_callers_continuations_even_from_sleep) {
  if (GetParam().workers < 2) {
    GTEST_SKIP() << "a one-worker pool does not steal from its callers";
  }
  std::atomic<int> timeouts{0};
  for (int r = 0; r < scaled(20, 6); ++r) {
    // Every third pause is long enough for lazy workers to go to sleep (they do 1 ms after their
    // last work); the others end around that time, as workers are on their way to sleep.
    std::this_thread::sleep_for(std::chrono::microseconds(r % 3 == 0 ? 20'000 : 1'000));
    EXPECT_EQ(magpie::sync_wait(*m_pool, needs_a_thief, &timeouts), 1);
  }
  EXPECT_EQ(timeouts.load(), 0) << "a continuation of the caller's root was never stolen";
}

/// A burn of ~`iters` × 1 ns that the compiler cannot drop (out of line: STYLE.md).
__attribute__((noinline)) std::uint64_t burn(std::uint64_t iters) { return spin_work(iters); }

/// Where the caller's root continued after a join whose continuation a worker had stolen.
struct join_report {
  std::atomic<bool> stolen{false}; // the continuation runs on a worker
  bool root_on_caller = false;     // the root started on the caller (a guest slot was free)
  bool after_on_caller = false;    // the code after the join ran on the caller
  std::atomic<std::int64_t> child_ended{0}; // steady_clock ns when the caller's child ended
  std::int64_t join_reached = 0;            // steady_clock ns when the stolen part reached join()
};

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Spins until the parent's continuation has been stolen (or ~1 s), then ends (or throws).
task<void> child_until_stolen(join_report *r, bool throws) {
  auto const until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (!r->stolen.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < until) {
    (void)burn(10); // not yield(): the child must see the flag at once, before the join
  }
  r->child_ended.store(now_ns(), std::memory_order_release);
  if (throws) {
    throw counted_error(7);
  }
  co_return;
}

/// The root: forks a child that outlasts the steal of its continuation; the continuation burns
/// `before_join` spins, so that the child ends first, then joins.
task<int> root_with_a_stolen_join(join_report *r, std::uint64_t before_join, bool throws) {
  r->root_on_caller = magpie::this_worker_index() == -1;
  co_await fork(child_until_stolen, r, throws);
  if (magpie::this_worker_index() != -1) { // stolen: the caller's child is still running
    r->stolen.store(true, std::memory_order_release);
    (void)burn(before_join);
    r->join_reached = now_ns();
  }
  try {
    co_await join();
  } catch (counted_error const &) {
    r->after_on_caller = magpie::this_worker_index() == -1;
    throw;
  }
  r->after_on_caller = magpie::this_worker_index() == -1;
  co_return 1;
}

// A caller whose child ends first, at a parent a worker stole, waits a little for that worker to
// reach the join and then continues its root itself (nothing else is its to run): the root's end
// needs no hand-back from the worker. It only delays an arrival the join protocol decides as
// always, so results and exceptions are unchanged; past the wait (joiner_wait, 10 µs) the
// worker finishes the root as before.
TEST_P(caller_runs, a_caller_continues_its_root_after_a_join_a_worker_reached_first) {
  if (GetParam().workers < 2) {
    GTEST_SKIP() << "a one-worker pool does not steal from its callers";
  }
  int rounds = 0;
  int on_caller = 0;
  int long_on_caller = 0;
  int long_rounds = 0;
  for (int r = 0; r < scaled(60, 12); ++r) {
    bool const throws = r % 3 == 2;
    join_report rep;
    if (throws) {
      EXPECT_THROW((void)magpie::sync_wait(*m_pool, root_with_a_stolen_join, &rep,
                                           std::uint64_t{1'000}, true),
                   counted_error);
    } else {
      EXPECT_EQ(
          magpie::sync_wait(*m_pool, root_with_a_stolen_join, &rep, std::uint64_t{1'000}, false),
          1);
    }
    // A throw takes long enough for the worker to reach the join first anyway: not counted.
    if (!throws && rep.root_on_caller && rep.stolen.load()) {
      ++rounds;
      on_caller += rep.after_on_caller ? 1 : 0;
    }
    // A worker that reaches the join long after the caller's wait ended finishes the root. Only
    // rounds where the child ended over 1 ms before the worker reached the join count: on a
    // loaded machine the caller may be preempted for longer than the continuation's ~2 ms, and
    // then it rightly arrives last and continues.
    join_report late;
    EXPECT_EQ(
        magpie::sync_wait(*m_pool, root_with_a_stolen_join, &late, std::uint64_t{2'000'000}, false),
        1);
    std::int64_t const ended = late.child_ended.load(std::memory_order_acquire);
    if (late.root_on_caller && late.stolen.load() && ended != 0 &&
        late.join_reached - ended > 1'000'000) {
      ++long_rounds;
      long_on_caller += late.after_on_caller ? 1 : 0;
    }
  }
  ASSERT_GT(rounds, 0) << "no root ran on the caller with its continuation stolen";
  // Timing on a shared machine: a worker preempted for longer than the wait misses it. One
  // round in which the caller went on suffices to show the behaviour; before it, the worker that
  // reached the join last always finished the root.
  EXPECT_GT(on_caller, 0) << rounds << " rounds";
  if (long_rounds > 0) {
    EXPECT_LT(long_on_caller, long_rounds) << "a ~2 ms continuation outlasted the wait";
  }
}

task<long> throws_after_forks(int n) {
  long a = 0;
  long b = 0;
  co_await fork(&a, fib, n);
  co_await fork(&b, fib, n);
  co_await join();
  throw counted_error(static_cast<int>(a + b));
}

task<long> throwing_child(int n) {
  long a = 0;
  co_await fork(&a, fib, n);
  co_await fork(throws_after_forks, n);
  co_await join();
  co_return a;
}

TEST_P(caller_runs, exceptions_reach_the_caller) {
  for (int r = 0; r < scaled(20, 5); ++r) {
    EXPECT_THROW((void)magpie::sync_wait(*m_pool, throws_after_forks, 12), counted_error);
    EXPECT_THROW((void)magpie::sync_wait(*m_pool, throwing_child, 12), counted_error);
    EXPECT_EQ(magpie::sync_wait(*m_pool, fib, 12), serial_fib(12));
  }
}

TEST_P(caller_runs, more_callers_than_guest_slots) {
  // Callers beyond the slots hand their roots to the workers: all finish, all answers right.
  int const threads = static_cast<int>(GetParam().workers) + 4;
  std::atomic<long> wrong{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < scaled(40, 10); ++i) {
        int const n = 8 + (t + i) % 8;
        wrong += magpie::sync_wait(*m_pool, fib, n) != serial_fib(n) ? 1 : 0;
      }
    });
  }
  for (auto &t : ts) {
    t.join();
  }
  EXPECT_EQ(wrong.load(), 0);
}

task<long> into_other_pool(magpie::pool *other, int n) {
  long here = 0;
  co_await call(&here, fib, n);
  co_return here + magpie::sync_wait(*other, fib, n); // a guest of `other` for a while
}

TEST_P(caller_runs, nested_roots_on_another_pool) {
  auto other = caller_pool(magpie::idle_policy::lazy, 2);
  for (int r = 0; r < scaled(10, 3); ++r) {
    EXPECT_EQ(magpie::sync_wait(*m_pool, into_other_pool, other.get(), 14), 2 * serial_fib(14));
    EXPECT_EQ(magpie::sync_wait(*other, into_other_pool, m_pool.get(), 13), 2 * serial_fib(13));
  }
}

task<int> parks_on(magpie::sync::event *e, std::atomic<int> *parked) {
  parked->store(1);
  co_await e->wait();
  co_return 42;
}

TEST_P(caller_runs, a_root_that_waits_is_finished_by_a_worker) {
  for (int r = 0; r < scaled(10, 3); ++r) {
    magpie::sync::event e;
    std::atomic<int> parked{0};
    std::thread setter([&] {
      wait_for(parked);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      e.set();
    });
    EXPECT_EQ(magpie::sync_wait(*m_pool, parks_on, &e, &parked), 42);
    setter.join();
  }
}

/// Leaves the caller for a worker, forks a tree there, and visits another worker: the caller's
/// chain goes with the task, and workers give chains back to the guest slots meanwhile.
task<long> wander(magpie::pool *p, int n, std::size_t first) {
  co_await magpie::resume_on(*p, first % p->size());
  long a = 0;
  long b = 0;
  co_await fork(&a, fib, n);
  co_await call(&b, fib, n - 1);
  co_await join();
  co_await magpie::resume_on(*p, (first + 1) % p->size());
  long c = 0;
  co_await call(&c, fib, n - 2);
  co_return a + b + c;
}

TEST_P(caller_runs, chains_move_between_callers_and_workers_without_loss) {
  // Several callers at once whose roots leave them (their chains go along) while workers hand
  // surplus chains back to the guest slots: every answer right, every stacklet freed with the
  // pool (LeakSanitizer in the ASan presets; ThreadSanitizer sees the hand-back's CAS and the
  // slot holder's exchange).
  int const threads = static_cast<int>(GetParam().workers) + 1;
  long const expect = serial_fib(12) + serial_fib(11) + serial_fib(10);
  std::atomic<long> wrong{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < scaled(60, 15); ++i) {
        auto const first = static_cast<std::size_t>(t + i);
        wrong += magpie::sync_wait(*m_pool, wander, m_pool.get(), 12, first) != expect ? 1 : 0;
      }
    });
  }
  for (auto &t : ts) {
    t.join();
  }
  EXPECT_EQ(wrong.load(), 0);
}

// ---- A plain thread that reads a future runs its unstarted task itself ---------------------

/// Occupies one worker until `release`: counts itself in `started` first.
task<int> occupies_a_worker(std::atomic<int> *started, std::atomic<int> *release) {
  started->fetch_add(1);
  EXPECT_TRUE(spin_until(*release, std::chrono::seconds(20)));
  co_return 0;
}

/// Every worker of `p` busy until `release` is set: the futures to read afterwards.
std::vector<magpie::future<int>> occupy_workers(magpie::pool &p, std::atomic<int> &release) {
  std::atomic<int> started{0};
  std::vector<magpie::future<int>> busy;
  for (std::size_t i = 0; i < p.size(); ++i) {
    busy.push_back(magpie::spawn(p, occupies_a_worker, &started, &release));
  }
  while (started.load() < static_cast<int>(p.size())) {
    std::this_thread::yield();
  }
  return busy;
}

task<std::thread::id> which_thread() { co_return std::this_thread::get_id(); }

task<long> forks_then_throws(int n) {
  long a = 0;
  co_await fork(&a, fib, n);
  co_await join();
  throw std::runtime_error("helped " + std::to_string(a));
}

TEST_P(caller_runs, a_future_read_on_a_plain_thread_runs_its_unstarted_task_there) {
  for (int r = 0; r < scaled(5, 2); ++r) {
    std::atomic<int> release{0};
    auto busy = occupy_workers(*m_pool, release);
    // Every worker is taken: the task is still queued when get() looks, and get() runs it here
    // (before the workers are free: the reader's root is independent of them).
    auto f = magpie::spawn(*m_pool, which_thread);
    EXPECT_EQ(f.get(), std::this_thread::get_id());
    // So does wait(), and a task that forks and throws: the exception reaches the reader.
    auto g = magpie::spawn(*m_pool, forks_then_throws, 10);
    g.wait();
    EXPECT_TRUE(g.is_ready());
    EXPECT_THROW((void)g.get(), std::runtime_error);
    // A wait with a deadline never runs the task (it would ignore the deadline).
    auto h = magpie::spawn(*m_pool, which_thread);
    EXPECT_EQ(h.wait_for(std::chrono::milliseconds(5)), std::future_status::timeout);
    EXPECT_FALSE(h.is_ready());
    release.store(1);
    for (auto &b : busy) {
      EXPECT_EQ(b.get(), 0);
    }
    (void)h.get(); // a worker runs it, or this thread if it is still queued
  }
}

TEST_P(caller_runs, a_helped_task_that_waits_is_finished_by_a_worker) {
  for (int r = 0; r < scaled(5, 2); ++r) {
    std::atomic<int> release{0};
    auto busy = occupy_workers(*m_pool, release);
    magpie::sync::event e;
    std::atomic<int> parked{0};
    auto f = magpie::spawn(*m_pool, parks_on, &e, &parked);
    std::thread setter([&] {
      wait_for(parked); // parked on the reader's thread, which then waits
      release.store(1); // a worker will resume it
      e.set();
    });
    EXPECT_EQ(f.get(), 42);
    setter.join();
    for (auto &b : busy) {
      EXPECT_EQ(b.get(), 0);
    }
  }
}

task<long> fib_or_throw(int n) {
  if (n % 5 == 0) {
    throw std::runtime_error("five");
  }
  long v = 0;
  co_await call(&v, fib, n);
  co_return v;
}

TEST_P(caller_runs, readers_and_workers_race_for_unstarted_tasks) {
  // Many threads spawn and read at once while workers take the same jobs: each task runs exactly
  // once (its value or exception reaches its reader), and the destructor finds every root ended
  // (the watchdog turns a miscount into a failure rather than a hang).
  std::atomic<int> wrong{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 3; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < scaled(400, 60); ++i) {
        int const n = (i + t) % 12;
        auto f = magpie::spawn(*m_pool, fib_or_throw, n);
        try {
          if (f.get() != serial_fib(n) || n % 5 == 0) {
            wrong.fetch_add(1);
          }
        } catch (std::runtime_error const &) {
          if (n % 5 != 0) {
            wrong.fetch_add(1);
          }
        }
      }
    });
  }
  for (auto &t : ts) {
    t.join();
  }
  EXPECT_EQ(wrong.load(), 0);
}

TEST_P(caller_runs, a_reader_that_helps_still_gets_a_thief_for_its_continuations) {
  if (GetParam().workers < 2) {
    GTEST_SKIP() << "a one-worker pool does not steal from its callers";
  }
  // The spawn wakes a sleeping worker for its job; the reader then runs the task itself, and the
  // task needs a thief. The reader counts on the woken worker (on its way) instead of waking
  // another: that worker must steal.
  std::atomic<int> timeouts{0};
  for (int r = 0; r < scaled(20, 6); ++r) {
    std::this_thread::sleep_for(std::chrono::microseconds(r % 3 == 0 ? 20'000 : 1'000));
    auto f = magpie::spawn(*m_pool, needs_a_thief, &timeouts);
    EXPECT_EQ(f.get(), 1);
  }
  EXPECT_EQ(timeouts.load(), 0) << "a continuation of the helped task was never stolen";
}

INSTANTIATE_TEST_SUITE_P(pools, caller_runs, ::testing::ValuesIn(shapes()), shape_name);

TEST(caller_runs_lifetime, hand_off_pools_never_run_a_future_on_its_reader) {
  watchdog dog(current_test_name());
  magpie::pool_options o;
  o.workers = 1;
  o.callers_run_roots = false;
  magpie::pool pool(o, magpie::idle_policy::lazy);
  for (int i = 0; i < 50; ++i) {
    EXPECT_NE(magpie::spawn(pool, which_thread).get(), std::this_thread::get_id());
  }
}

TEST(caller_runs_lifetime, the_destructor_waits_for_a_callers_root_and_refuses_new_ones) {
  watchdog dog(current_test_name());
  auto pool = caller_pool(magpie::idle_policy::lazy, 2);
  magpie::sync::event e;
  std::atomic<int> parked{0};
  std::atomic<int> result{0};
  magpie::pool *const raw = pool.release();
  std::thread caller([&] { result.store(magpie::sync_wait(*raw, parks_on, &e, &parked)); });
  wait_for(parked);
  std::thread destroyer([raw] { delete raw; });
  // The destructor cannot finish before the parked root does (we release it below).
  while (raw->accepting()) {
    std::this_thread::yield();
  }
  // The destructor waits for the parked root; meanwhile new callers are refused.
  EXPECT_THROW((void)magpie::sync_wait(*raw, fib, 5), magpie::pool_closed);
  e.set();
  caller.join();
  destroyer.join();
  EXPECT_EQ(result.load(), 42);
}

TEST(caller_runs_lifetime, observed_pools_run_roots_on_workers_and_count_them_all) {
  watchdog dog(current_test_name());
  magpie::pool_options o;
  o.workers = 2;
  o.callers_run_roots = true;
  o.count_tasks = true;
  magpie::pool pool(o, magpie::idle_policy::lazy);
  thread_log log;
  EXPECT_EQ(magpie::sync_wait(pool, logged_fib, 12, &log), serial_fib(12));
  EXPECT_EQ(log.ids.count(std::this_thread::get_id()), 0u); // observed: the root went to a worker
  pool.count_tasks(false);
  thread_log log2;
  EXPECT_EQ(magpie::sync_wait(pool, logged_fib, 12, &log2), serial_fib(12));
  EXPECT_EQ(log2.ids.count(std::this_thread::get_id()), 1u); // unobserved again: the caller runs
  // One stats entry per worker, then one per guest slot; the caller's root counted on a slot.
  auto const stats = pool.stats();
  ASSERT_EQ(stats.size(), pool.size() + magpie::sched::detail::pool_access::guest_slots(pool));
  std::uint64_t guest_roots = 0;
  for (std::size_t i = pool.size(); i < stats.size(); ++i) {
    guest_roots += stats[i].roots;
  }
  EXPECT_EQ(guest_roots, 1u);
  auto const c = magpie::trace::counters(pool);
  EXPECT_EQ(c.workers.size(), pool.size());
  EXPECT_EQ(c.callers.size(), magpie::sched::detail::pool_access::guest_slots(pool));
  EXPECT_EQ(c.total.roots, 2u); // one on a worker (observed), one on the caller's slot
  EXPECT_NE(c.to_table().find("c1"), std::string::npos) << c.to_table();
  EXPECT_NE(c.to_json().find("\"callers\":["), std::string::npos) << c.to_json();
}

task<int> spins_until(std::atomic<int> *started, std::atomic<int> *release) {
  started->store(1);
  EXPECT_TRUE(spin_until(*release, std::chrono::seconds(20)));
  co_return 7;
}

TEST(caller_runs_lifetime, a_dump_shows_the_chain_a_caller_runs) {
  watchdog dog(current_test_name());
  auto pool = caller_pool(magpie::idle_policy::lazy, 2);
  std::atomic<int> started{0};
  std::atomic<int> release{0};
  std::thread caller(
      [&] { EXPECT_EQ(magpie::sync_wait(*pool, spins_until, &started, &release), 7); });
  wait_for(started);
  magpie::trace::task_dump const d = magpie::trace::snapshot(*pool);
  release.store(1);
  caller.join();
  std::size_t callers = 0;
  for (auto const &w : d.workers) {
    if (w.caller) {
      ++callers;
      ASSERT_EQ(w.chain.size(), 1u);
      EXPECT_TRUE(w.chain[0].root);
    }
  }
  EXPECT_EQ(callers, 1u);
  std::string const text = d.to_string();
  EXPECT_NE(text.find("magpie task dump: 2 worker(s)"), std::string::npos) << text;
  EXPECT_NE(text.find("caller "), std::string::npos) << text;
}

} // namespace
