// Misuse that the type system cannot catch is diagnosed at run time (debug assertions, and
// always-on checks), with a message that says what to do. These are death tests: each runs the
// misuse in a child process and matches the message.

#include <gtest/gtest.h>

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

TEST_F(misuse, creating_a_task_without_starting_it) {
  MAGPIE_SKIP_UNLESS_DEBUG();
  EXPECT_DEATH(
      {
        magpie::inline_scheduler s;
        (void)magpie::sync_wait(s, creates_but_never_starts);
      },
      "never started.*magpie::fork/call/sync_wait");
}

task<long> stack_alloc_inside_scope() {
  co_await fork(fib, 3);
  auto a = co_await stack_alloc<int>(16); // inside the fork–join scope
  co_await join();
  co_return static_cast<long>(a.size());
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

TEST_F(misuse, stack_array_freed_inside_a_fork_join_scope) {
  MAGPIE_SKIP_UNLESS_DEBUG();
  EXPECT_DEATH(
      {
        magpie::inline_scheduler s;
        (void)magpie::sync_wait(s, stack_array_dies_inside_scope);
      },
      "stack_array was freed inside a fork-join scope");
}

} // namespace
