// Cancellation scopes (core/scope.hpp): a stop reaches every descendant task of a with_stop scope,
// a stopped task group's children and their descendants, the algorithms run inside them, and a
// root started by sync_wait from an iteration; scopes nest (an inner stop stays inside, an outer
// one reaches in); with_stop keeps call's value, exception and argument-lifetime rules.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "algo/algo_support.hpp"

namespace magpie::test {
namespace {

using scope_test = algo_test;

/// What the leaves of a scoped fork tree saw.
struct tree_log {
  magpie::stop_source *source = nullptr;
  long stop_at = -1;                  ///< the leaf that requests the stop (-1: none)
  std::atomic<bool> requested{false}; ///< set (release) after the request
  std::atomic<long> leaves{0};
  std::atomic<long> saw_stop{0};
  std::atomic<long> missed{0}; ///< leaves that knew of the request but were told "not stopped"
};

/// A binary fork tree of 2^depth leaves; leaf `id` polls its scope.
magpie::task<void> scoped_tree(tree_log *log, int depth, long id) {
  if (depth == 0) {
    bool const knew = log->requested.load(std::memory_order_acquire);
    bool const stopped = co_await magpie::this_task::stop_requested();
    log->leaves.fetch_add(1, std::memory_order_relaxed);
    if (stopped) {
      log->saw_stop.fetch_add(1, std::memory_order_relaxed);
    } else if (knew) {
      log->missed.fetch_add(1, std::memory_order_relaxed);
    }
    if (id == log->stop_at) {
      log->source->request_stop();
      log->requested.store(true, std::memory_order_release); // after the request
      // The requester sees its own stop at once. (Every other leaf may have run before it, on
      // thieves, so it may be the only one that sees it.)
      if (co_await magpie::this_task::stop_requested()) {
        log->saw_stop.fetch_add(1, std::memory_order_relaxed);
      } else {
        log->missed.fetch_add(1, std::memory_order_relaxed);
      }
    }
    spin_work(200);
    co_return;
  }
  co_await magpie::fork(scoped_tree, log, depth - 1, 2 * id);
  co_await magpie::call(scoped_tree, log, depth - 1, 2 * id + 1);
  co_await magpie::join();
}

magpie::task<bool> stopped_here() { co_return co_await magpie::this_task::stop_requested(); }

TEST_P(scope_test, a_stop_reaches_every_descendant_of_a_with_stop_scope_across_steals) {
  int const depth = scaled(10, 8);
  for (int round = 0; round < 3; ++round) {
    magpie::stop_source src;
    tree_log log;
    log.source = &src;
    log.stop_at = (1L << depth) / 3 + round;
    bool outside_before = true;
    bool outside_after = true;
    m_sched.run([&]() -> magpie::task<void> {
      co_await magpie::call(&outside_before, stopped_here);
      co_await magpie::with_stop(src.get_token(), scoped_tree, &log, depth, 0L);
      co_await magpie::join();
      co_await magpie::call(&outside_after, stopped_here); // the scope is gone: nothing stops us
    });
    EXPECT_EQ(log.leaves.load(), 1L << depth);
    EXPECT_EQ(log.missed.load(), 0) << "a leaf that knew of the request did not see the stop";
    EXPECT_GT(log.saw_stop.load(), 0);
    EXPECT_FALSE(outside_before);
    EXPECT_FALSE(outside_after);
  }
}

TEST_P(scope_test, scopes_nest_an_inner_stop_stays_inside_an_outer_one_reaches_in) {
  magpie::stop_source outer;
  magpie::stop_source inner;
  struct seen {
    bool outer_level = false;
    bool inner_level = false;
  };
  auto probe = [&](seen *s) -> magpie::task<void> {
    co_await magpie::call(&s->outer_level, stopped_here);
    co_await magpie::with_stop(inner.get_token(), &s->inner_level, stopped_here);
    co_await magpie::join();
  };
  seen before;
  seen inner_stopped;
  seen both_stopped;
  m_sched.run([&]() -> magpie::task<void> {
    co_await magpie::with_stop(outer.get_token(), probe, &before);
    co_await magpie::join();
    inner.request_stop();
    co_await magpie::with_stop(outer.get_token(), probe, &inner_stopped);
    co_await magpie::join();
    outer.request_stop();
    co_await magpie::with_stop(magpie::stop_token{}, probe, &both_stopped); // no outer token now
    co_await magpie::with_stop(outer.get_token(), probe, &both_stopped);
    co_await magpie::join();
  });
  EXPECT_FALSE(before.outer_level);
  EXPECT_FALSE(before.inner_level);
  EXPECT_FALSE(inner_stopped.outer_level) << "an inner scope's stop leaked out";
  EXPECT_TRUE(inner_stopped.inner_level);
  EXPECT_TRUE(both_stopped.outer_level);
  EXPECT_TRUE(both_stopped.inner_level);
}

magpie::task<long> scoped_fib(int n) {
  if (n < 2) {
    co_return n;
  }
  long a = 0;
  long b = 0;
  co_await magpie::fork(&a, scoped_fib, n - 1);
  co_await magpie::call(&b, scoped_fib, n - 2);
  co_await magpie::join();
  co_return a + b;
}

magpie::task<std::size_t> length_of(std::string const &s) { co_return s.size(); }

magpie::task<void> throws_after(int n) {
  long r = 0;
  co_await magpie::call(&r, scoped_fib, n);
  throw std::runtime_error("thrown inside the scope");
}

TEST_P(scope_test, with_stop_returns_values_forwards_exceptions_and_keeps_temporaries_alive) {
  magpie::stop_source src;
  long fib = 0;
  std::size_t len = 0;
  bool caught = false;
  bool after_join_ran = false;
  m_sched.run([&]() -> magpie::task<void> {
    co_await magpie::with_stop(src.get_token(), &fib, scoped_fib, 20);
    // A temporary bound to a reference parameter lives until the child returns, as with call.
    co_await magpie::with_stop(src.get_token(), &len, length_of,
                               std::string(100, 'x') + "a long temporary string");
    co_await magpie::join();
    try {
      co_await magpie::with_stop(src.get_token(), throws_after, 15);
      after_join_ran = true; // the exception waits for the join, as call's does
      co_await magpie::join();
    } catch (std::runtime_error const &e) {
      caught = std::string(e.what()) == "thrown inside the scope";
    }
  });
  EXPECT_EQ(fib, 6765);
  EXPECT_EQ(len, 123U);
  EXPECT_TRUE(after_join_ran);
  EXPECT_TRUE(caught);
}

TEST_P(scope_test, algorithms_inside_a_stopped_scope_skip_what_has_not_started) {
  std::vector<int> v(static_cast<std::size_t>(scaled(20000, 4000)), 1);
  magpie::stop_source src;
  src.request_stop();
  std::atomic<long> ran{0};
  std::atomic<bool> iteration_saw_stop{false};
  auto loop = [&]() -> magpie::task<void> {
    co_await magpie::call(magpie::for_each, v, [&](int) {
      ++ran;
      iteration_saw_stop = magpie::stop_requested();
    });
    co_await magpie::join();
  };
  m_sched.run([&]() -> magpie::task<void> {
    co_await magpie::with_stop(src.get_token(), loop);
    co_await magpie::join();
  });
  EXPECT_EQ(ran.load(), 0) << "a stopped scope's algorithm ran iterations";

  // Stopped while running, from an iteration: the rest is skipped, and running ones see it.
  magpie::stop_source mid;
  ran = 0;
  auto stopping_loop = [&]() -> magpie::task<void> {
    co_await magpie::call(magpie::for_each, v, [&](int) {
      if (++ran == 100) {
        mid.request_stop();
      }
      if (ran > 100 && magpie::stop_requested()) {
        iteration_saw_stop = true;
      }
      spin_work(50);
    });
    co_await magpie::join();
  };
  m_sched.run([&]() -> magpie::task<void> {
    co_await magpie::with_stop(mid.get_token(), stopping_loop);
    co_await magpie::join();
  });
  EXPECT_LT(ran.load(), static_cast<long>(v.size())) << "the stop skipped nothing";
}

TEST_P(scope_test, a_root_started_from_an_iteration_inherits_the_algorithms_scope) {
  std::atomic<int> nested_saw{0};
  std::atomic<int> iterations{0};
  // Every iteration that runs stops the loop first, then starts a root on another scheduler.
  magpie::stop_source live;
  on([&](auto &s) {
    magpie::for_range(s, 0, 4,
                      [&](int) {
                        ++iterations;
                        live.request_stop();
                        magpie::inline_scheduler nested;
                        bool saw = magpie::sync_wait(nested, stopped_here);
                        if (saw) {
                          ++nested_saw;
                        }
                      },
                      {.grain = 1, .stop = live.get_token()});
  });
  EXPECT_GE(iterations.load(), 1);
  EXPECT_EQ(nested_saw.load(), iterations.load())
      << "a root started by sync_wait inside an iteration did not see the algorithm's stop";
  // Outside any iteration a root has no scope.
  magpie::inline_scheduler plain;
  EXPECT_FALSE(magpie::sync_wait(plain, stopped_here));
}

TEST_P(scope_test, a_task_groups_stop_reaches_its_children_and_their_descendants) {
  if (m_sched.is_inline()) {
    GTEST_SKIP() << "task groups need a pool";
  }
  magpie::pool &pool = *m_sched.pool();
  int const depth = scaled(6, 4);
  // Stopped by the group's token before any child starts: every leaf sees it.
  {
    magpie::stop_source src;
    src.request_stop();
    tree_log log;
    magpie::task_group g(pool, src.get_token());
    for (int i = 0; i < 4; ++i) {
      g.spawn(scoped_tree, &log, depth, 0L);
    }
    g.wait();
    EXPECT_EQ(log.leaves.load(), 4L << depth);
    EXPECT_EQ(log.saw_stop.load(), 4L << depth);
  }
  // Stopped with request_stop() from a leaf: later leaves see it; none that knew misses it.
  {
    magpie::stop_source src; // never stopped: request_stop() alone must do it
    tree_log log;
    magpie::task_group g(pool, src.get_token());
    for (int i = 0; i < 4; ++i) {
      g.spawn(
          [](tree_log *l, magpie::task_group *grp, int d, int k) -> magpie::task<void> {
            if (k == 1) {
              grp->request_stop();
              l->requested.store(true, std::memory_order_release);
            }
            co_await magpie::call(scoped_tree, l, d, 0L);
            co_await magpie::join();
          },
          &log, &g, depth, i);
    }
    g.wait();
    EXPECT_TRUE(g.stop_requested());
    EXPECT_EQ(log.leaves.load(), 4L << depth);
    EXPECT_EQ(log.missed.load(), 0);
    EXPECT_GE(log.saw_stop.load(), 1L << depth); // at least the stopper's own subtree
    EXPECT_FALSE(src.stop_requested()) << "request_stop() reached the caller's source";
  }
  // A group without a token is never stopped unless asked.
  {
    tree_log log;
    magpie::task_group g(pool);
    g.spawn(scoped_tree, &log, depth, 0L);
    g.wait();
    EXPECT_EQ(log.saw_stop.load(), 0);
  }
}

/// Outside any coroutine body (see the note in test_support.hpp): once `visited` has passed 64,
/// a leaf holds its worker until the stop arrives (bounded), so the search cannot finish first.
MAGPIE_NOINLINE void hold_until_stopped(magpie::stop_source const *src, long visited) {
  if (visited < 64) {
    return;
  }
  auto const end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!src->stop_requested() && std::chrono::steady_clock::now() < end) {
    std::this_thread::yield();
  }
}

/// A search that polls its scope at every node and gives up below a stopped one.
magpie::task<void> polling_search(magpie::stop_source const *src, std::atomic<long> *visited,
                                  int depth) {
  bool const stopped = co_await magpie::this_task::stop_requested(); // not in an if: GCC 12
  if (stopped) {
    co_return;
  }
  long const seen = visited->fetch_add(1, std::memory_order_relaxed) + 1;
  if (depth == 0) {
    hold_until_stopped(src, seen);
    co_return;
  }
  co_await magpie::fork(polling_search, src, visited, depth - 1);
  co_await magpie::call(polling_search, src, visited, depth - 1);
  co_await magpie::join();
}

TEST_P(scope_test, a_stop_from_another_thread_ends_a_polling_search_early) {
  int const depth = scaled(12, 10);
  magpie::stop_source src;
  std::atomic<long> visited{0};
  std::thread stopper([&] {
    while (visited.load(std::memory_order_relaxed) < 64) {
      std::this_thread::yield();
    }
    src.request_stop();
  });
  m_sched.run([&]() -> magpie::task<void> {
    co_await magpie::with_stop(src.get_token(), polling_search, &src, &visited, depth);
    co_await magpie::join();
  });
  stopper.join();
  EXPECT_TRUE(src.stop_requested());
  EXPECT_LT(visited.load(), (2L << depth) - 1) << "the search visited every node: no stop seen";
}

INSTANTIATE_TEST_SUITE_P(all, scope_test, ::testing::ValuesIn(all_schedulers()), sched_name());

} // namespace
} // namespace magpie::test
