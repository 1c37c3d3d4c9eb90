// resume_on: a task hops across the workers of a pool (and into another pool and back), keeping a
// stack_array alive across the hops and forking after each. After a hop the task must see the new
// worker's state: this_worker_index(), and the stack and deque that fork uses. (With Clang the
// address of a thread_local may be cached across a suspension point; magpie defends against it,
// and this test is what checks the defence under the dev-clang preset.)

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_support.hpp"

namespace {

using namespace magpie::test;
using magpie::call;
using magpie::fork;
using magpie::join;
using magpie::resume_on;
using magpie::stack_alloc;
using magpie::task;
using magpie::this_worker_index;

class resume_on_test : public scheduler_test {
protected:
  magpie::pool &pool() { return *m_sched.pool(); }
};

struct hop_report {
  long wrong_worker = 0;  // this_worker_index() differed from the target after a hop
  long wrong_context = 0; // core::this_context() was not the target's context
  long damaged = 0;       // stack_array elements changed across a hop
  long bad_fib = 0;       // a fork after a hop computed a wrong value
  long hops = 0;
};

std::uint32_t pattern(std::size_t i) { return static_cast<std::uint32_t>(i * 2654435761u + 17); }

task<hop_report> hopper(magpie::pool *p, int rounds) {
  hop_report rep;
  auto data = co_await stack_alloc<std::uint32_t>(3000); // lives across every hop
  for (std::size_t i = 0; i < data.size(); ++i) {
    data[i] = pattern(i);
  }
  std::size_t const n = p->size();
  for (int r = 0; r < rounds; ++r) {
    std::size_t const target = (static_cast<std::size_t>(r) * 7 + 3) % n;
    co_await resume_on(*p, target);
    ++rep.hops;
    if (this_worker_index() != static_cast<std::ptrdiff_t>(target)) {
      ++rep.wrong_worker;
    }
    magpie::core::context const *now = magpie::core::this_context();
    if (now == nullptr || now->index() != target || now->owner() != p) {
      ++rep.wrong_context;
    }
    for (std::size_t i = 0; i < data.size(); ++i) {
      rep.damaged += data[i] != pattern(i) ? 1 : 0;
    }
    // Fork–join on the new worker: frames go on its stack, the continuation on its deque.
    long a = 0;
    long b = 0;
    co_await fork(&a, fib, 14);
    co_await call(&b, fib, 13);
    co_await join();
    rep.bad_fib += a + b == serial_fib(15) ? 0 : 1;
    if (this_worker_index() < 0) {
      ++rep.wrong_worker;
    }
  }
  co_return rep;
}

TEST_P(resume_on_test, hops_across_workers_with_a_stack_array_alive) {
  int const rounds = 3 * static_cast<int>(pool().size()) + 2;
  hop_report const rep = m_sched.run(hopper, &pool(), rounds);
  EXPECT_EQ(rep.hops, rounds);
  EXPECT_EQ(rep.wrong_worker, 0);
  EXPECT_EQ(rep.wrong_context, 0);
  EXPECT_EQ(rep.damaged, 0);
  EXPECT_EQ(rep.bad_fib, 0);
  // Every hop is a job run by the target worker, as is every root.
  EXPECT_EQ(m_sched.total_stats().jobs, static_cast<std::uint64_t>(rounds) + 1);
}

/// A called child hops; its caller must continue on the child's new worker.
task<long> hop_in_callee(magpie::pool *p, std::size_t target) {
  co_await resume_on(*p, target);
  co_return this_worker_index();
}

task<long> caller_follows(magpie::pool *p) {
  long bad = 0;
  for (std::size_t t = 0; t < p->size(); ++t) {
    long where = -1;
    co_await call(&where, hop_in_callee, p, t);
    bad += where == static_cast<long>(t) ? 0 : 1;
    bad += this_worker_index() == static_cast<std::ptrdiff_t>(t) ? 0 : 1; // we followed
    long f = 0;
    co_await fork(&f, fib, 12);
    co_await join();
    bad += f == serial_fib(12) ? 0 : 1;
  }
  co_return bad;
}

TEST_P(resume_on_test, a_caller_continues_where_its_callee_moved) {
  EXPECT_EQ(m_sched.run(caller_follows, &pool()), 0);
}

task<long> to_any_worker(magpie::pool *p, int rounds) {
  long bad = 0;
  for (int r = 0; r < rounds; ++r) {
    co_await resume_on(*p);
    std::ptrdiff_t const w = this_worker_index();
    bad += w >= 0 && static_cast<std::size_t>(w) < p->size() ? 0 : 1;
  }
  co_return bad;
}

TEST_P(resume_on_test, to_some_worker) { EXPECT_EQ(m_sched.run(to_any_worker, &pool(), 20), 0); }

/// Into another pool and back.
task<long> visit_other_pool(magpie::pool *home, magpie::pool *away) {
  long bad = 0;
  for (std::size_t i = 0; i < away->size(); ++i) {
    co_await resume_on(*away, i);
    bad += away->is_worker_thread() ? 0 : 1;
    bad += this_worker_index() == static_cast<std::ptrdiff_t>(i) ? 0 : 1;
    long f = 0;
    co_await fork(&f, fib, 12);
    co_await join();
    bad += f == serial_fib(12) ? 0 : 1;
  }
  co_await resume_on(*home, 0);
  bad += home->is_worker_thread() && this_worker_index() == 0 ? 0 : 1;
  co_return bad;
}

TEST_P(resume_on_test, into_another_pool_and_back) {
  magpie::lazy_pool away(2);
  EXPECT_EQ(m_sched.run(visit_other_pool, &pool(), static_cast<magpie::pool *>(&away)), 0);
  EXPECT_EQ(m_sched.run(fib, 15), serial_fib(15));
}

/// Many roots hopping at once from several threads.
TEST_P(resume_on_test, concurrent_hoppers) {
  int const threads = 4;
  std::atomic<long> bad{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&] {
      for (int k = 0; k < scaled(10, 6); ++k) {
        hop_report const rep = magpie::sync_wait(pool(), hopper, &pool(), 5);
        bad += rep.wrong_worker + rep.wrong_context + rep.damaged + rep.bad_fib +
               (rep.hops == 5 ? 0 : 1);
      }
    });
  }
  for (auto &t : ts) {
    t.join();
  }
  EXPECT_EQ(bad.load(), 0);
}

task<long> bad_index(magpie::pool *p) {
  long caught = 0;
  try {
    co_await resume_on(*p, p->size()); // no such worker
  } catch (std::out_of_range const &) {
    caught = 1;
  }
  co_return caught;
}

TEST_P(resume_on_test, to_a_worker_that_does_not_exist_throws_out_of_range) {
  EXPECT_EQ(m_sched.run(bad_index, &pool()), 1);
}

task<long> hop_then_throw(magpie::pool *p, std::size_t target) {
  co_await resume_on(*p, target);
  throw counted_error(static_cast<int>(target));
}

task<long> caller_catches_after_hop(magpie::pool *p) {
  long caught = 0;
  for (std::size_t t = 0; t < p->size(); ++t) {
    try {
      co_await call(hop_then_throw, p, t);
      co_await join();
    } catch (counted_error const &e) {
      caught += e.id == static_cast<int>(t) ? 1 : 0;
    }
  }
  co_return caught;
}

TEST_P(resume_on_test, exceptions_after_a_hop_reach_the_caller_and_the_root) {
  counted_error::live() = 0;
  EXPECT_EQ(m_sched.run(caller_catches_after_hop, &pool()), static_cast<long>(pool().size()));
  bool caught = false;
  try {
    (void)m_sched.run(hop_then_throw, &pool(), pool().size() - 1);
  } catch (counted_error const &e) {
    caught = e.id == static_cast<int>(pool().size() - 1);
  }
  EXPECT_TRUE(caught);
  EXPECT_EQ(counted_error::live().load(), 0);
  EXPECT_EQ(m_sched.run(fib, 15), serial_fib(15));
}

// resume_on from a task that is a *forked* child: when the child suspends, its parent's
// continuation still sits on the old worker's deque. The worker must go on with it (as if it had
// been stolen); the child, finishing elsewhere, must then arrive at the parent's join.
task<long> forked_hopper(magpie::pool *p, std::size_t target) {
  co_await resume_on(*p, target);
  long const moved = this_worker_index() == static_cast<std::ptrdiff_t>(target) ? 0 : 1000;
  long f = 0;
  co_await call(&f, fib, 10); // (its forks may be stolen: we may end on yet another worker)
  co_return f + moved;
}

task<long> fork_hoppers(magpie::pool *p) {
  std::vector<long> out(p->size() * 2);
  for (std::size_t i = 0; i < out.size(); ++i) {
    co_await fork(&out[i], forked_hopper, p, i % p->size());
  }
  co_await join();
  long sum = 0;
  for (long v : out) {
    sum += v;
  }
  co_return sum;
}

TEST_P(resume_on_test, from_a_forked_child) {
  for (int round = 0; round < 5; ++round) {
    EXPECT_EQ(m_sched.run(fork_hoppers, &pool()),
              static_cast<long>(2 * pool().size()) * serial_fib(10));
  }
}

// The same with two forked ancestors whose continuations are in the deque when the grandchild
// hops: the worker must continue both (the parent, and after the parent suspends at its join, the
// grandparent), and the hopper must arrive at its parent's join from the other worker.
task<long> mid_level(magpie::pool *p, std::size_t target) {
  long hopped = 0;
  long here = 0;
  co_await fork(&hopped, forked_hopper, p, target);
  co_await call(&here, fib, 9);
  co_await join();
  co_return hopped + here;
}

task<long> two_ancestors(magpie::pool *p) {
  long total = 0;
  for (std::size_t t = 0; t < p->size(); ++t) {
    long a = 0;
    long b = 0;
    co_await fork(&a, mid_level, p, (t + 1) % p->size());
    co_await call(&b, fib, 8);
    co_await join();
    total += a + b;
  }
  co_return total;
}

TEST_P(resume_on_test, from_a_grandchild_below_two_forks) {
  long const per = serial_fib(10) + serial_fib(9) + serial_fib(8);
  for (int round = 0; round < 3; ++round) {
    EXPECT_EQ(m_sched.run(two_ancestors, &pool()), static_cast<long>(pool().size()) * per);
  }
}

INSTANTIATE_TEST_SUITE_P(pools, resume_on_test, ::testing::ValuesIn(all_pools()), sched_name{});

} // namespace
