// tests/stress/known_bugs_test.cpp — reproducers for the bugs this suite found in the library (and
// one in GCC 12). Each test asserts the correct behaviour. Bugs that have been fixed run always, as
// regression tests. Open ones fail today: an ordinary run skips them, and CI runs each as its own
// ctest `known_bug.<name>` (MAGPIE_TEST_KNOWN_BUGS=1, see tests/common/known_bugs.hpp) that expects
// the failure recorded in tests/stress/CMakeLists.txt and turns red once it stops reproducing.
// docs/guarantees.md ("Known limitations") describes each with its diagnosis and a suggested fix.
// When the fix lands, remove the skip and the known_bug registration.

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

#include "common/known_bugs.hpp"
#include "common/lifetime.hpp"
#include "magpie/magpie.hpp"

namespace {

using magpie::lifetime::tracked;

// ---------------------------------------------------------------------------------------------
// 1. resume_on from a task whose ancestors' continuations are still in the worker's deque.
//
// FIXED (8faf31a), regression test. A forked child that suspends (resume_on) used to end its
// worker's strand with the parent's continuation still in that worker's deque: the pool's I1
// assertion (src/pool/worker.hpp: check_strand_ended) aborted, and without assertions a worker
// that later ran a migrated forked child could pop another task's stale continuation and resume
// the wrong task. Now the worker takes the bottom continuation as a self-steal
// (core/detail/transfer.hpp: continue_after_handoff).

magpie::task<int> moved_child(magpie::pool *p, std::size_t target) {
  co_await magpie::resume_on(*p, target);
  co_return static_cast<int>(magpie::this_worker_index());
}

magpie::task<int> fork_then_move(magpie::pool *p) {
  int a = -1;
  int b = -1;
  co_await magpie::fork(&a, moved_child, p, std::size_t{0});
  co_await magpie::call(&b, moved_child, p, p->size() - 1);
  co_await magpie::join();
  co_return a * 100 + b;
}

TEST(known_bugs, ResumeOnFromAForkedChild) {
  for (std::size_t workers : {1, 2, 4}) {
    magpie::busy_pool pool(workers);
    for (int i = 0; i < 200; ++i) {
      ASSERT_EQ(magpie::sync_wait(pool, fork_then_move, static_cast<magpie::pool *>(&pool)),
                static_cast<int>(workers - 1));
    }
  }
}

// 1b. The same with two or more forked ancestors in the deque.
//
// FIXED (a59c037), regression test. continue_after_handoff took only the newest continuation (the
// parent, `mid` below); when that task then suspended at its own join (its child had moved away,
// so it was not the last to arrive), the strand ended with the older continuation (`top`) still in
// the deque: I1 aborted, and without assertions the 1-worker pool hung (the moved child later
// popped `top` as if it were its parent). Now a task suspending at a join or final join also
// continues with the older self-stolen continuations.

magpie::task<int> mover(magpie::pool *p) {
  co_await magpie::resume_on(*p, 0);
  co_return 1;
}

magpie::task<int> mid(magpie::pool *p) {
  int r = 0;
  co_await magpie::fork(&r, mover, p);
  co_await magpie::join();
  co_return r + 10;
}

magpie::task<int> top(magpie::pool *p) {
  int r = 0;
  co_await magpie::fork(&r, mid, p);
  co_await magpie::join();
  co_return r + 100;
}

TEST(known_bugs, ResumeOnBelowTwoForkedAncestors) {
  for (std::size_t workers : {1, 2}) {
    magpie::busy_pool pool(workers);
    for (int i = 0; i < 100; ++i) {
      ASSERT_EQ(magpie::sync_wait(pool, top, static_cast<magpie::pool *>(&pool)), 111);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// 2. OPEN (documented in README and docs/protocols.md §4 as a caveat): an exception thrown inside
//    a fork–join scope destroys the task's locals while its children still run.
//
// The coroutine body's locals are destroyed by the unwinding, before unhandled_exception and
// long before final_join waits for the outstanding children. A child that was given a reference
// to a local (the documented idiom: "arguments may be references into the parent's frame") or a
// return slot in a local then reads or writes a destroyed object.

struct scope_probe {
  std::atomic<bool> continuation_ran{false};
  std::atomic<int> dead_reads{0};
};

magpie::task<void> reader(scope_probe *p, tracked<long> const *local) {
  auto const give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!p->continuation_ran.load() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::yield();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  if (!local->alive()) {
    p->dead_reads.fetch_add(1);
  }
  co_return;
}

magpie::task<void> throw_inside_scope(scope_probe *p) {
  tracked<long> local(5);
  co_await magpie::fork(reader, p, &local);
  p->continuation_ran.store(true); // runs before the child finished only if stolen
  throw std::runtime_error("thrown inside the fork-join scope");
}

TEST(known_bugs, ExceptionInsideAScopeKeepsLocalsAliveForChildren) {
  MAGPIE_SKIP_KNOWN_BUG("known_bug.L1_locals",
                        "limitation L1: a task that throws inside a fork-join scope destroys its "
                        "locals before its outstanding children finish; see docs/guarantees.md");
  magpie::busy_pool pool(2);
  scope_probe probe;
  for (int i = 0; i < 20; ++i) {
    probe.continuation_ran.store(false);
    EXPECT_THROW(magpie::sync_wait(pool, throw_inside_scope, &probe), std::runtime_error);
  }
  EXPECT_EQ(probe.dead_reads.load(), 0) << "children saw the parent's locals destroyed";
}

// ---------------------------------------------------------------------------------------------
// 3. A stack_array alive across a scope, and an exception inside the scope.
//
// FIXED (2e42de3, 8faf31a), regression test. The unwinding destroys the array while the scope is
// open: ~stack_array used to assert `!m_unjoined` (abort), and without assertions it freed the
// array on whichever stack the task ran on — a thief's, if the continuation was stolen. Now the
// free is deferred until the task has its chain back when the scope was stolen.

magpie::task<int> leaf(int x) { co_return x; }

magpie::task<int> array_across_throwing_scope(int) {
  auto a = co_await magpie::stack_alloc<int>(16);
  int r = 0;
  co_await magpie::fork(&r, leaf, 1);
  throw std::runtime_error("thrown inside the fork-join scope");
}

TEST(known_bugs, StackArrayAcrossAThrowingScope) {
  magpie::inline_scheduler s;
  EXPECT_THROW(magpie::sync_wait(s, array_across_throwing_scope, 0), std::runtime_error);
}

/// The stolen case: the child holds the task's chain when the continuation throws.
magpie::task<int> wait_for_continuation(std::atomic<bool> *ran) {
  auto const give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!ran->load() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::yield();
  }
  co_return 1;
}

magpie::task<int> stolen_array_across_throwing_scope(std::atomic<bool> *ran) {
  auto a = co_await magpie::stack_alloc<long>(1000);
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<long>(i);
  }
  int r = 0;
  co_await magpie::fork(&r, wait_for_continuation, ran);
  ran->store(true);
  auto b = co_await magpie::stack_alloc<long>(0); // nothing allocated inside the scope
  throw std::runtime_error("thrown inside a stolen fork-join scope");
}

TEST(known_bugs, StackArrayAcrossAStolenThrowingScope) {
  magpie::lifetime::stacklet_ledger ledger;
  {
    magpie::busy_pool pool(2);
    for (int i = 0; i < 50; ++i) {
      std::atomic<bool> ran{false};
      EXPECT_THROW(magpie::sync_wait(pool, stolen_array_across_throwing_scope, &ran),
                   std::runtime_error);
    }
    EXPECT_EQ(magpie::sync_wait(pool, leaf, 3), 3) << "the pool is not usable afterwards";
    std::uint64_t steals = 0;
    for (auto const &st : pool.stats()) {
      steals += st.steals;
    }
    EXPECT_GT(steals, 0u)
        << "the continuation was never stolen: the deferred-free path went untested";
  }
  EXPECT_EQ(ledger.live(), 0u);
  EXPECT_EQ(ledger.errors(), 0u);
}

// ---------------------------------------------------------------------------------------------
// 4. GCC 12: an aggregate-initialised temporary in a co_await expression is destroyed twice.
//
// `co_await magpie::call(&r, f, agg{...})` with `agg` an aggregate: GCC 12 runs its destructor
// twice (a double free if it owns memory: ASan reports it on std::string members). Clang 16 is
// correct. Not a magpie bug, but it bites magpie users on every fork/call with such an argument;
// the workaround is a named variable, or a type with a user-provided constructor.

struct aggregate_arg {
  tracked<int> value;
};

magpie::task<int> take_aggregate(aggregate_arg a) { co_return a.value.value(); }

magpie::task<int> pass_aggregate_temporary(int x) {
  int r = 0;
  co_await magpie::call(&r, take_aggregate, aggregate_arg{tracked<int>(x)});
  co_return r;
}

TEST(known_bugs, AggregateTemporaryArgumentIsDestroyedOnce) {
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
  MAGPIE_SKIP_KNOWN_BUG("known_bug.L3_gcc12_aggregate_temporary",
                        "limitation L3: GCC 12 destroys aggregate temporaries of a co_await "
                        "expression twice (a compiler bug; use a named variable)");
#endif
  long const live = magpie::lifetime::live();
  long const errors = magpie::lifetime::errors();
  magpie::inline_scheduler s;
  EXPECT_EQ(magpie::sync_wait(s, pass_aggregate_temporary, 4), 4);
  EXPECT_EQ(magpie::lifetime::live(), live) << "constructions and destructions do not balance";
  EXPECT_EQ(magpie::lifetime::errors(), errors);
}

} // namespace
