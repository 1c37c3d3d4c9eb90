// Pool lifetimes across resume_on: a pool that tasks of another pool move into
// may be destroyed as soon as they have left it, and its destruction may begin while they are
// still arriving.
//
//   * A root of pool A moves into pool B with resume_on and finishes there; its caller destroys B
//     at once. The submitting worker of A must not touch B after its push (it used to wake B's
//     sleepers after the push, racing with B's destructor: ASan/TSan report it, or it crashes).
//   * Tasks keep moving into B while B's destructor runs (kept from finishing by a task that stays
//     in B). Each move either completes (the task runs in B) or throws pool_closed into the task;
//     none is lost (a job pushed after B's workers stopped used to hang the task: the watchdog
//     catches it). A move within B while B closes throws pool_closed too.
//
// The protocol: docs/protocols.md, "Submissions from tasks and pool lifetime".

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_support.hpp"

namespace {

using namespace magpie::test;
using magpie::call;
using magpie::fork;
using magpie::join;
using magpie::pool_closed;
using magpie::resume_on;
using magpie::task;

struct lifetime_param {
  sched_kind kind;
  std::size_t workers;
};

std::string lifetime_name(::testing::TestParamInfo<lifetime_param> const &info) {
  return to_string(magpie::test::sched_param{info.param.kind, info.param.workers});
}

std::unique_ptr<magpie::pool> make_pool(sched_kind kind, std::size_t workers) {
  if (kind == sched_kind::busy) {
    return std::make_unique<magpie::busy_pool>(workers);
  }
  return std::make_unique<magpie::lazy_pool>(workers);
}

class pool_lifetime : public ::testing::TestWithParam<lifetime_param> {
protected:
  pool_lifetime() : m_dog(current_test_name()) {}
  watchdog m_dog; // first in, last out: also guards the pools' shutdown
};

/// Moves into `away` and finishes there: the root completes on one of `away`'s workers.
task<long> finish_elsewhere(magpie::pool *away, int n) {
  co_await resume_on(*away);
  long const moved = away->is_worker_thread() ? 0 : 1000;
  long f = 0;
  if (n > 0) {
    co_await call(&f, fib, n);
  }
  co_return f + moved;
}

TEST_P(pool_lifetime, a_pool_is_destroyed_right_after_a_task_finished_in_it) {
  lifetime_param const p = GetParam();
  auto home = make_pool(p.kind, p.workers);
  int const rounds = scaled(600, 150);
  long bad = 0;
  for (int r = 0; r < rounds; ++r) {
    auto away = make_pool(p.kind, p.workers);
    int const n = r % 3 == 0 ? 6 : 0; // mostly nothing to do in `away`: the tightest race
    bad += magpie::sync_wait(*home, finish_elsewhere, away.get(), n) == serial_fib(n) ? 0 : 1;
    away.reset(); // at once: the submitting worker of `home` may still be in its submission
  }
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(magpie::sync_wait(*home, fib, 15), serial_fib(15));
}

// ---------------------------------------------------------------------------------------------

/// Spins outside the coroutine body (GCC may drop a busy loop written inside one).
[[gnu::noinline]] void wait_for(std::atomic<bool> const &flag) {
  while (!flag.load(std::memory_order_acquire)) { // acquire: pairs with the test's release
    std::this_thread::yield();
  }
}

struct holder_state {
  std::atomic<bool> in_away{false};
  std::atomic<bool> release{false};
  long closed_within = 0; // moves within `away` while it closes that threw pool_closed
};

/// Stays in `away` until released, keeping its destructor from finishing; then tries to move
/// within `away` (which is closing by then) and goes home.
task<long> holder(magpie::pool *home, magpie::pool *away, holder_state *s) {
  co_await resume_on(*away, 0);
  s->in_away.store(true, std::memory_order_release); // release: we are on away's worker 0
  wait_for(s->release);
  for (std::size_t i = 0; i < away->size(); ++i) {
    try {
      co_await resume_on(*away, i);
    } catch (pool_closed const &) {
      ++s->closed_within;
    }
  }
  long f = 0;
  co_await fork(&f, fib, 10); // fork–join still works in a closing pool
  co_await join();
  co_await resume_on(*home);
  co_return f;
}

struct hopper_report {
  long hops = 0;   // completed visits to `away`
  long closed = 0; // pool_closed caught
  long bad = 0;    // wrong pool or wrong result
};

/// Visits `away` (never its worker 0, where the holder sits) until a move into it throws
/// pool_closed. Touches `away` only until then: the test keeps `away` alive (its destructor
/// running) until every hopper has returned.
task<hopper_report> hopper(magpie::pool *home, magpie::pool *away, int id,
                           std::atomic<long> *hops) {
  hopper_report rep;
  for (int k = 0;; ++k) {
    bool closed = false;
    try {
      co_await resume_on(*away, 1 + static_cast<std::size_t>(id + k) % (away->size() - 1));
    } catch (pool_closed const &) {
      closed = true;
    }
    if (closed) {
      ++rep.closed;
      break;
    }
    rep.bad += away->is_worker_thread() ? 0 : 1;
    long f = 0;
    co_await fork(&f, fib, 8);
    co_await join();
    rep.bad += f == serial_fib(8) ? 0 : 1;
    co_await resume_on(*home);
    rep.bad += home->is_worker_thread() ? 0 : 1;
    ++rep.hops;
    hops->fetch_add(1, std::memory_order_relaxed); // a progress count: no edge
  }
  co_return rep;
}

TEST_P(pool_lifetime, moves_into_a_closing_pool_complete_or_throw_pool_closed) {
  lifetime_param const p = GetParam();
  auto home = make_pool(p.kind, 2);
  int const rounds = scaled(40, 10);
  int const hoppers = 3;
  for (int r = 0; r < rounds; ++r) {
    auto away = make_pool(p.kind, p.workers + 1); // at least one worker besides the holder's
    magpie::pool *const away_ptr = away.get();    // reset() nulls `away` before destroying it
    holder_state hs;
    long held = -1;
    std::thread holder_thread(
        [&] { held = magpie::sync_wait(*home, holder, home.get(), away_ptr, &hs); });
    wait_for(hs.in_away);

    std::atomic<long> hops{0};
    std::vector<hopper_report> reports(hoppers);
    std::vector<std::thread> hopper_threads;
    for (int h = 0; h < hoppers; ++h) {
      hopper_threads.emplace_back([&, h] {
        reports[h] = magpie::sync_wait(*home, hopper, home.get(), away_ptr, h, &hops);
      });
    }
    while (hops.load(std::memory_order_relaxed) < r % 4) { // vary the moment destruction begins
      std::this_thread::yield();
    }
    // Begins destruction now; finishes only after the holder has left `away`.
    std::thread destroyer([&] { away.reset(); });
    for (auto &t : hopper_threads) {
      t.join(); // every hopper has seen pool_closed and no longer touches `away`
    }
    hs.release.store(true, std::memory_order_release); // release: the holder may go on
    holder_thread.join();
    destroyer.join();

    EXPECT_EQ(held, serial_fib(10));
    EXPECT_EQ(hs.closed_within, static_cast<long>(p.workers + 1));
    for (auto const &rep : reports) {
      EXPECT_EQ(rep.closed, 1);
      EXPECT_EQ(rep.bad, 0);
    }
  }
  EXPECT_EQ(magpie::sync_wait(*home, fib, 15), serial_fib(15));
}

std::vector<lifetime_param> lifetime_params() {
  std::vector<lifetime_param> out;
  for (sched_kind k : {sched_kind::busy, sched_kind::lazy}) {
    for (std::size_t n : {1, 2, 3}) {
      out.push_back({k, n});
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(pools, pool_lifetime, ::testing::ValuesIn(lifetime_params()),
                         lifetime_name);

} // namespace
