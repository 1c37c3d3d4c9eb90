// magpie::barrier: phases with a completion function (run before anyone is released, writes of
// every participant visible after each phase), reuse over many phases, arrive_and_drop, plain
// threads and tasks in one barrier, destruction with a waiter, misuse.

#include <atomic>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_support.hpp"
#include "sync/sync_support.hpp"

namespace {

using namespace magpie::test;
using magpie::task;

using barrier_test = scheduler_test;

struct phase_counter {
  std::atomic<int> *phases;
  void operator()() const noexcept { phases->fetch_add(1); }
};

using counted_barrier = magpie::barrier<phase_counter>;

// Each participant adds to its own cell per phase; after every phase, every cell holds the phase
// number (checked by each participant: all writes before the arrivals are visible after it).
task<long> phase_worker(int i, counted_barrier *b, std::vector<int> *cells, int phases,
                        std::atomic<int> *done_phases) {
  long bad = 0;
  for (int p = 1; p <= phases; ++p) {
    (*cells)[static_cast<std::size_t>(i)] = p;
    co_await b->arrive_and_wait();
    for (int c : *cells) {
      bad += c < p ? 1 : 0;
    }
    bad += done_phases->load() < p ? 1 : 0; // the completion ran before anyone was released
    co_await b->arrive_and_wait();          // nobody writes phase p+1 before all have checked
  }
  co_return bad;
}

TEST_P(barrier_test, phases_with_completion) {
  int const n = 4;
  int const phases = scaled(300, 40);
  std::atomic<int> completions{0};
  counted_barrier b(n, phase_counter{&completions});
  std::vector<int> cells(static_cast<std::size_t>(n), 0);
  EXPECT_EQ(m_sched.run(fork_n<decltype(&phase_worker), counted_barrier *, std::vector<int> *, int,
                               std::atomic<int> *>,
                        n, &phase_worker, &b, &cells, phases, &completions),
            0);
  EXPECT_EQ(completions.load(), 2 * phases);
}

task<long> barrier_and_drop(int i, magpie::barrier<> *b, int phases) {
  for (int p = 0; p < phases; ++p) {
    if (i == 0 && p == phases / 2) {
      b->arrive_and_drop(); // leaves: the others go on with one participant fewer
      co_return p;
    }
    co_await b->arrive_and_wait();
  }
  co_return phases;
}

TEST_P(barrier_test, arrive_and_drop) {
  int const phases = 20;
  magpie::barrier<> b(3);
  EXPECT_EQ(m_sched.run(fork_n<decltype(&barrier_and_drop), magpie::barrier<> *, int>, 3,
                        &barrier_and_drop, &b, phases),
            phases / 2 + 2 * phases);
}

task<int> one_arrival(magpie::barrier<> *b) {
  co_await b->arrive_and_wait();
  co_return 1;
}

TEST_P(barrier_test, tasks_and_threads_in_one_barrier) {
  int const rounds = scaled(200, 40);
  magpie::barrier<> b(2);
  side_thread other([&] {
    for (int r = 0; r < rounds; ++r) {
      b.arrive_and_wait_blocking();
    }
  });
  for (int r = 0; r < rounds; ++r) {
    ASSERT_EQ(m_sched.run(one_arrival, &b), 1);
  }
}

task<int> barrier_abandoned(magpie::barrier<> *b) {
  try {
    co_await b->arrive_and_wait();
  } catch (magpie::abandoned_wait const &) {
    co_return 1;
  }
  co_return 0;
}

TEST_P(barrier_test, destroyed_while_waited_on_and_misuse) {
  auto b = std::make_unique<magpie::barrier<>>(2);
  side_thread destroyer([&] {
    ASSERT_TRUE(wait_until([&] { return b->waiting() == 1; }));
    b.reset();
  });
  EXPECT_EQ(m_sched.run(barrier_abandoned, b.get()), 1);
  EXPECT_THROW(magpie::barrier<>(-1), std::invalid_argument);
  magpie::barrier<> none(0);
  EXPECT_THROW(none.arrive_and_wait_blocking(), std::logic_error);
  EXPECT_THROW(none.arrive_and_drop(), std::logic_error);
}

INSTANTIATE_TEST_SUITE_P(every_scheduler, barrier_test, ::testing::ValuesIn(all_schedulers()),
                         sched_name{});

} // namespace
