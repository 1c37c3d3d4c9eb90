// Misuse that the type system cannot catch is diagnosed at run time (debug assertions, and
// always-on checks), with a message that says what to do. These are death tests: each runs the
// misuse in a child process and matches the message. Misuse that would corrupt memory is checked
// in every build (MAGPIE_CHECK): those tests run with NDEBUG too (the release presets); the ones
// for debug-only assertions report themselves skipped when MAGPIE_DEBUG is off.

#include <gtest/gtest.h>

#include <coroutine>

#include "common/test_support.hpp"

// Misuse caught only by MAGPIE_ASSERT goes undiagnosed under NDEBUG (MAGPIE_DEBUG=0, the release
// presets): those tests report themselves as skipped there, with this reason.
#if MAGPIE_DEBUG
#  define MAGPIE_SKIP_UNLESS_DEBUG() static_cast<void>(0)
#else
#  define MAGPIE_SKIP_UNLESS_DEBUG()                                                               \
    GTEST_SKIP() << "diagnosed by MAGPIE_ASSERT, which NDEBUG compiles out (MAGPIE_DEBUG=0)"
#endif

namespace {

using namespace magpie::test;
using magpie::call;
using magpie::fork;
using magpie::join;
using magpie::stack_alloc;
using magpie::task;

class misuse : public ::testing::Test {
protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

// Debug only: returning without a join is caught in final suspend when it is cheap to tell, and
// does not corrupt memory (stolen children are waited for all the same).
task<long> forgets_to_join(int n) {
  long a = 0;
  co_await fork(&a, fib, n);
  co_return a; // missing co_await join()
}

TEST_F(misuse, returning_with_unjoined_children_on_the_inline_scheduler) {
  MAGPIE_SKIP_UNLESS_DEBUG();
  EXPECT_DEATH(
      {
        magpie::inline_scheduler s;
        (void)magpie::sync_wait(s, forgets_to_join, 5);
      },
      "never joined.*co_await magpie::join\\(\\)");
}

TEST_F(misuse, returning_with_unjoined_children_on_a_pool) {
  MAGPIE_SKIP_UNLESS_DEBUG();
  EXPECT_DEATH(
      {
        magpie::lazy_pool p(2);
        (void)magpie::sync_wait(p, forgets_to_join, 10);
      },
      "never joined");
}

/// Creates a task whose frame escapes, so the frame must be allocated: Clang -O3 elides the
/// allocation of a task created and destroyed in one function (HALO), and the check with it.
MAGPIE_NOINLINE task<long> fib_outside_a_worker(int n) { return fib(n); }

TEST_F(misuse, calling_an_async_function_outside_a_worker) {
  EXPECT_DEATH({ auto t = fib_outside_a_worker(3); }, "outside a worker.*sync_wait");
}

task<long> creates_but_never_starts() {
  {
    auto t = fib(3); // created on our stack, never passed to fork/call
  }
  co_return 0;
}

TEST_F(misuse, creating_a_task_without_starting_it) { // always on (MAGPIE_CHECK)
  EXPECT_DEATH(
      {
        magpie::inline_scheduler s;
        (void)magpie::sync_wait(s, creates_but_never_starts);
      },
      "never started.*magpie::fork/call/sync_wait");
}

// Debug only (it costs ~1 ns per stack_alloc with Clang): see stack_array's constructor.
task<long> stack_alloc_inside_scope() {
  co_await fork(fib, 3);
  auto a = co_await stack_alloc<int>(16); // inside the fork–join scope
  co_await join();
  co_return static_cast<long>(a.size());
}

// A fork or call that is not co_awaited never starts its child: the request's destructor stops
// the program (MAGPIE_CHECK_AWAITED: with Clang always, with GCC when MAGPIE_DEBUG is on).
task<long> forgets_to_await_fork(int n) {
  long a = 0;
  auto request = fork(&a, fib, n); // missing co_await
  static_cast<void>(request);
  co_await join();
  co_return a;
}

task<long> forgets_to_await_call(int n) {
  long a = 0;
  static_cast<void>(call(&a, fib, n)); // missing co_await: destroyed at once
  co_return a;
}

TEST_F(misuse, a_fork_or_call_that_is_not_awaited) {
#if !MAGPIE_CHECK_AWAITED
  GTEST_SKIP() << "MAGPIE_CHECK_AWAITED is off (GCC with MAGPIE_DEBUG off, where it costs 5 "
                  "instructions per fork)";
#endif
  EXPECT_DEATH(
      {
        magpie::inline_scheduler s;
        (void)magpie::sync_wait(s, forgets_to_await_fork, 5);
      },
      "magpie::fork\\(...\\) does nothing unless co_awaited.*co_await magpie::fork");
  EXPECT_DEATH(
      {
        magpie::lazy_pool p(2);
        (void)magpie::sync_wait(p, forgets_to_await_call, 5);
      },
      "magpie::call\\(...\\) does nothing unless co_awaited.*co_await magpie::call");
  // Awaited, the same requests are fine (and the check is silent).
  magpie::inline_scheduler s;
  EXPECT_EQ(magpie::sync_wait(s, fib, 10), 55);
}

TEST_F(misuse, stack_alloc_inside_a_fork_join_scope) {
  MAGPIE_SKIP_UNLESS_DEBUG();
  EXPECT_DEATH(
      {
        magpie::inline_scheduler s;
        (void)magpie::sync_wait(s, stack_alloc_inside_scope);
      },
      "stack_alloc inside a fork-join scope");
}

task<long> stack_array_dies_inside_scope() {
  {
    auto a = co_await stack_alloc<int>(16);
    co_await fork(fib, 3);
  } // `a` freed before the join
  co_await join();
  co_return 0;
}

TEST_F(misuse, stack_array_freed_inside_a_fork_join_scope) { // always on (MAGPIE_CHECK)
  EXPECT_DEATH(
      {
        magpie::inline_scheduler s;
        (void)magpie::sync_wait(s, stack_array_dies_inside_scope);
      },
      "stack_array was freed inside a fork-join scope");
}

// An awaitable that claims to follow magpie's stack protocol but suspends the task without
// handing its stack on: the worker's strand ends with the task's frame still on its stack.
struct suspends_without_handoff {
  using magpie_awaitable = void;
  static inline std::coroutine_handle<> stash;
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) const noexcept { stash = h; }
  void await_resume() const noexcept {}
};

task<long> breaks_the_stack_protocol() {
  co_await suspends_without_handoff{};
  co_return 0;
}

TEST_F(misuse, an_awaitable_that_breaks_the_stack_protocol) {
  EXPECT_DEATH(
      {
        // Without the check the task never completes: fail (wrong message) instead of hanging.
        magpie::test::watchdog dog("breaks_the_stack_protocol", std::chrono::seconds(20));
        magpie::lazy_pool p(1);
        (void)magpie::sync_wait(p, breaks_the_stack_protocol);
      },
      "strand ended with frames or continuations left behind.*stack protocol");
}

} // namespace
