// Mixed stress: random programs that combine fork/join, channel traffic, event token rings,
// latches, barriers, locks and spawns, checked against an expected result computed serially.
// Every scheduler, several seeds; channel capacity, actor counts and work sizes are drawn from
// the seed.
//
// A program: P producers each send a random-length sequence of values fib(n_k) + k, where each
// fib is computed by fork/join; C consumers receive until the channel is closed and sum what they
// get; a closer closes it once a latch says every producer is done; E ring tasks pass a token
// around a ring of auto-reset events R times, doing a fork/join fib at every hop (on Linux about
// a third of the hops wait for the token by short timed waits, retried until one passes, so
// that set() races deadlines: a set lost to a deadline would stall the ring); B barrier
// tasks run phases, each adding its index per phase; L lockers each run rounds of one of: a
// magpie::mutex section around a fork/join fib, a shared_mutex write (two plain counters moved
// together) or read (checking they agree), a section of a two-permit semaphore (checking at most
// two are inside), or a spawned fib awaited through its future (a mutex section on the inline
// scheduler, which has no pool to spawn on). The root checks the grand total, which includes the
// plain counters the locks guard (a lost update shows), and that no check inside a lock failed.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_support.hpp"
#include "sync/sync_support.hpp"

namespace {

using namespace magpie::test;
using magpie::task;

enum class lock_kind { mutex, write, read, semaphore, spawn };

struct program {
  std::uint32_t seed;
  int producers;
  int consumers;
  int ring;   // E
  int rounds; // R
  int phases; // barrier phases
  int barrier_tasks;
  std::size_t capacity;
  std::vector<std::vector<int>> fib_args; // per producer: the n_k
  int lockers;
  int lock_rounds;

  static program draw(std::uint32_t seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    program p;
    p.seed = seed;
    p.producers = pick(1, 4);
    p.consumers = pick(1, 4);
    p.ring = pick(2, 5);
    p.rounds = pick(5, scaled(60, 10));
    p.phases = pick(1, scaled(30, 5));
    p.barrier_tasks = pick(1, 4);
    p.capacity = static_cast<std::size_t>(pick(0, 3) == 0 ? 0 : pick(1, 16));
    for (int i = 0; i < p.producers; ++i) {
      std::vector<int> ns(static_cast<std::size_t>(pick(0, scaled(300, 40))));
      for (int &n : ns) {
        n = pick(2, 14);
      }
      p.fib_args.push_back(std::move(ns));
    }
    p.lockers = pick(1, 5);
    p.lock_rounds = pick(5, scaled(80, 10));
    return p;
  }

  /// Whether ring task `j` waits for the token of round `r` by timed waits (from the seed).
  bool timed_hop(int j, int r) const {
    return (seed + 13U * static_cast<unsigned>(j) + 5U * static_cast<unsigned>(r)) % 3U == 0;
  }

  /// What locker `l` does in round `r` (drawn from the seed without touching the generator).
  lock_kind kind(int l, int r) const {
    return static_cast<lock_kind>(
        (seed + 31U * static_cast<unsigned>(l) + 7U * static_cast<unsigned>(r)) % 5U);
  }

  /// The lockers' part of the total: what the guarded counters must hold at the end.
  long expected_locked(bool have_pool) const {
    long total = 0;
    for (int l = 0; l < lockers; ++l) {
      for (int r = 0; r < lock_rounds; ++r) {
        switch (kind(l, r)) {
        case lock_kind::spawn:
          total += have_pool ? 1000 * serial_fib(9) : serial_fib(8);
          break;
        case lock_kind::mutex:
          total += serial_fib(8);
          break;
        case lock_kind::write:
          total += 2; // both counters
          break;
        case lock_kind::semaphore:
          total += 100;
          break;
        case lock_kind::read:
          break;
        }
      }
    }
    return total;
  }

  long expected(bool have_pool) const {
    long total = expected_locked(have_pool);
    for (auto const &ns : fib_args) {
      for (std::size_t k = 0; k < ns.size(); ++k) {
        total += serial_fib(ns[k]) + static_cast<long>(k);
      }
    }
    total += static_cast<long>(ring) * rounds * serial_fib(10);
    total += static_cast<long>(phases) * barrier_tasks * (barrier_tasks - 1) / 2;
    return total;
  }
};

struct shared {
  program const *prog;
  magpie::pool *pool; // null on the inline scheduler
  magpie::channel<long> ch;
  magpie::latch producers_done;
  std::vector<std::unique_ptr<magpie::event>> ring;
  magpie::barrier<> phase_barrier;
  magpie::mutex m;
  long mutex_sum = 0; // guarded by m
  magpie::shared_mutex rw;
  long rw_a = 0; // guarded by rw, as rw_b: a writer moves both, a reader checks they agree
  long rw_b = 0;
  magpie::semaphore sem{2};
  std::atomic<int> inside_sem{0};
  std::atomic<long> sem_sum{0};
  std::atomic<long> spawn_sum{0};
  std::atomic<int> violations{0}; // a check inside a lock that failed

  shared(program const &p, magpie::pool *pl)
      : prog(&p), pool(pl), ch(p.capacity), producers_done(p.producers),
        phase_barrier(p.barrier_tasks) {
    for (int i = 0; i < p.ring; ++i) {
      ring.push_back(std::make_unique<magpie::event>(magpie::event::reset::automatic));
    }
  }
};

std::atomic<long> token_timeouts{0}; // timed token waits that timed out (reported, not checked)

/// Waits for a ring's token: plainly, or by short timed waits until one passes (Linux).
task<void> await_token(magpie::event *ev, bool timed, int salt) {
#if defined(__linux__)
  if (timed) {
    for (int k = 0;; ++k) {
      auto const d = std::chrono::microseconds(5 + (salt * 7919 + k * 37) % 120);
      bool const passed = co_await ev->wait_for(d);
      if (passed) {
        co_return;
      }
      token_timeouts.fetch_add(1, std::memory_order_relaxed);
    }
  }
#else
  static_cast<void>(timed);
  static_cast<void>(salt);
#endif
  co_await ev->wait();
}

task<void> mutex_section(shared *s) {
  auto g = co_await s->m.scoped_lock();
  long v = 0;
  co_await magpie::call(&v, fib, 8); // fork/join while holding the lock
  s->mutex_sum += v;
}

task<void> locker(int l, shared *s) {
  program const &p = *s->prog;
  for (int r = 0; r < p.lock_rounds; ++r) {
    switch (p.kind(l, r)) {
    case lock_kind::mutex:
      co_await magpie::call(mutex_section, s);
      break;
    case lock_kind::write: {
      auto g = co_await s->rw.scoped_lock();
      ++s->rw_a;
      spin_work(2000);
      ++s->rw_b;
      break;
    }
    case lock_kind::read: {
      auto g = co_await s->rw.scoped_lock_shared();
      long const a = s->rw_a;
      spin_work(2000);
      if (a != s->rw_b) {
        s->violations.fetch_add(1);
      }
      break;
    }
    case lock_kind::semaphore:
      co_await s->sem.acquire();
      if (s->inside_sem.fetch_add(1) + 1 > 2) {
        s->violations.fetch_add(1);
      }
      spin_work(2000);
      s->inside_sem.fetch_sub(1);
      s->sem_sum.fetch_add(100);
      s->sem.release();
      break;
    case lock_kind::spawn:
      if (s->pool == nullptr) {
        co_await magpie::call(mutex_section, s);
      } else {
        auto f = magpie::spawn(*s->pool, fib, 9);
        s->spawn_sum.fetch_add(1000 * co_await f);
      }
      break;
    }
  }
}

task<long> actor(int i, shared *s) {
  program const &p = *s->prog;
  int const producers_end = p.producers;
  int const consumers_end = producers_end + p.consumers;
  int const closer = consumers_end;
  int const ring_end = closer + 1 + p.ring;
  if (i < producers_end) {
    auto const &ns = p.fib_args[static_cast<std::size_t>(i)];
    for (std::size_t k = 0; k < ns.size(); ++k) {
      long v = 0;
      co_await magpie::call(&v, fib, ns[k]); // fork/join inside
      if (!co_await s->ch.send(v + static_cast<long>(k))) {
        co_return -1'000'000'000;
      }
    }
    s->producers_done.count_down();
    co_return 0;
  }
  if (i < consumers_end) {
    long sum = 0;
    while (std::optional<long> v = co_await s->ch.receive()) {
      sum += *v;
    }
    co_return sum;
  }
  if (i == closer) {
    co_await s->producers_done.wait();
    s->ch.close();
    co_return 0;
  }
  if (i < ring_end) {
    auto const j = static_cast<std::size_t>(i - closer - 1);
    auto const next = (j + 1) % s->ring.size();
    long sum = 0;
    for (int r = 0; r < p.rounds; ++r) {
      if (j != 0 || r > 0) {
        // the token arrives
        co_await magpie::call(await_token, s->ring[j].get(), p.timed_hop(static_cast<int>(j), r),
                              static_cast<int>(j) * 1000 + r);
      }
      long v = 0;
      co_await magpie::call(&v, fib, 10);
      sum += v;
      s->ring[next]->set(); // pass it on
    }
    if (j == 0) {
      co_await s->ring[0]->wait(); // the last hop of the last round comes back to us
    }
    co_return sum;
  }
  int const barrier_end = ring_end + p.barrier_tasks;
  if (i >= barrier_end) {
    co_await magpie::call(locker, i - barrier_end, s);
    co_return 0;
  }
  long sum = 0;
  auto const b = static_cast<long>(i - ring_end);
  for (int ph = 0; ph < p.phases; ++ph) {
    sum += b;
    co_await s->phase_barrier.arrive_and_wait();
  }
  co_return sum;
}

task<long> run_program(shared *s) {
  program const &p = *s->prog;
  int const actors = p.producers + p.consumers + 1 + p.ring + p.barrier_tasks + p.lockers;
  long total = 0;
  co_await magpie::call(&total, fork_n<decltype(&actor), shared *>, actors, &actor, s);
  // Every actor has finished: the guarded counters are ours to read.
  co_return total + s->mutex_sum + s->rw_a + s->rw_b + s->sem_sum.load() + s->spawn_sum.load();
}

using mixed_stress_test = scheduler_test;

TEST_P(mixed_stress_test, random_programs_match_the_serial_result) {
  int const programs = scaled(40, 8);
  for (int k = 0; k < programs; ++k) {
    program const p = program::draw(static_cast<std::uint32_t>(0x5eed0000u + 977u * k));
    shared s(p, m_sched.pool());
    EXPECT_EQ(m_sched.run(run_program, &s), p.expected(s.pool != nullptr))
        << "seed " << p.seed << " capacity " << p.capacity << " producers " << p.producers
        << " consumers " << p.consumers << " lockers " << p.lockers;
    EXPECT_EQ(s.violations.load(), 0) << "seed " << p.seed;
    EXPECT_EQ(s.rw_a, s.rw_b) << "seed " << p.seed;
    EXPECT_EQ(s.sem.count(), 2U);
    EXPECT_TRUE(s.ch.is_closed());
    EXPECT_EQ(s.ch.size(), 0u);
    for (auto const &ev : s.ring) {
      EXPECT_FALSE(ev->is_set()) << "seed " << p.seed << ": a token left over (a doubled set)";
    }
  }
  std::printf("[ info ] %ld timed token waits timed out so far\n", token_timeouts.load());
}

INSTANTIATE_TEST_SUITE_P(every_scheduler, mixed_stress_test, ::testing::ValuesIn(all_schedulers()),
                         sched_name{});

} // namespace
