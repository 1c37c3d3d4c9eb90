// An exception that unwinds a fork–join scope whose continuation was stolen must not destroy the
// stack_alloc slots that the scope's children still write or read (docs/exception-scopes.md, design
// D): ~stack_array then defers the destruction of its elements, not just the free of its bytes,
// until every child has arrived (the task's final join, or the join after a catch).
//
// Each round, made deterministic by a handshake rather than luck:
//   the task allocates `ins` (read by children), `outs` and `slots` (written by children) before
//   the scope, forks a first child that holds its worker until the task's continuation — stolen
//   meanwhile — has thrown and unwound the arrays, then throws. After
//   the unwinding the first child reads its `std::string const &` parameter (bound to `ins[0]`),
//   forks writers whose results land in `outs[i]` / `slots[i]`, and readers that take references
//   to `ins[j]` / `slots[j]` and read them after a delay; it joins them and checks what they wrote.
// Serial schedulers (inline, 1 worker) never steal: there the first child does not wait, the
// arrays are destroyed at once, and the test checks that nothing else changed.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "common/test_support.hpp"

namespace {

using namespace magpie::test;
using magpie::fork;
using magpie::join;
using magpie::stack_alloc;
using magpie::task;

constexpr std::size_t slots_n = 12;

/// Long enough to live on the heap (no small-string buffer): a destroyed one is freed memory.
std::string in_text(std::size_t i) { return std::string(80 + i, static_cast<char>('a' + i % 26)); }
std::string out_text(std::size_t i) {
  return std::string(120 + i, static_cast<char>('A' + i % 26));
}
long out_value(std::size_t i) { return 1000 + static_cast<long>(i); }

struct round_state {
  bool may_wait = false;          // a pool with 2+ workers: the continuation can be stolen
  std::atomic<int> unwound{0};    // the task's arrays have been destroyed (their ~stack_array ran)
  std::atomic<int> saw_unwind{0}; // the first child saw `unwound` before its timeout
  std::atomic<long> bad{0};       // reads or writes that found a wrong value
  bool caught = false;            // catch_inside mode: the task caught its exception
  bool strings = true;            // children use the string slots too (not only `tracked` ones)
};

/// Sets `unwound` when destroyed; declared before the arrays, so destroyed after them.
struct unwind_signal {
  round_state *r;
  ~unwind_signal() { r->unwound.store(1); }
};

/// A delay between binding a reference and reading through it.
[[gnu::noinline]] void burn() { (void)spin_work(scaled(20000, 4000)); }

task<std::string> make_string(std::size_t i) {
  burn();
  co_return out_text(i);
}

task<tracked> make_tracked(std::size_t i) {
  burn();
  co_return tracked(out_value(i));
}

task<void> read_string(std::string const &s, std::size_t j, round_state *r) {
  burn();
  if (s != in_text(j)) {
    r->bad.fetch_add(1);
  }
  co_return;
}

task<void> read_tracked(tracked const &t, long expected, round_state *r) {
  burn();
  if (t.value() != expected) { // value() flags a dead object in tracked_counters().errors
    r->bad.fetch_add(1);
  }
  co_return;
}

/// The first child: on a pool, holds its worker until the task has thrown and unwound its arrays
/// (so everything below runs after ~stack_array), then writes and reads the task's slots.
task<std::string> first_child(std::string const &in0, std::span<std::string> ins,
                              std::span<std::string> outs, std::span<tracked> slots,
                              round_state *r) {
  if (r->may_wait && wait_for(r->unwound)) {
    r->saw_unwind.store(1);
  }
  burn();
  if (r->strings && in0 != in_text(0)) {
    r->bad.fetch_add(1);
  }
  for (std::size_t i = 1; i < outs.size(); ++i) {
    if (r->strings) {
      co_await fork(&outs[i], make_string, i);
      co_await fork(read_string, ins[i], i, r);
    }
    co_await fork(&slots[i], make_tracked, i);
  }
  co_await fork(read_tracked, slots[0], 7L, r); // written by the task before the scope
  co_await join();
  for (std::size_t i = 1; i < outs.size(); ++i) {
    r->bad.fetch_add(!r->strings || outs[i] == out_text(i) ? 0 : 1);
    r->bad.fetch_add(slots[i].value() == out_value(i) ? 0 : 1);
  }
  co_return r->strings ? out_text(0) : std::string();
}

/// Throws in the task's own body (a child's exception would wait for the join, which waits for
/// every child: only an exception raised by the task itself leaves a scope early).
[[gnu::noinline]] void throw_now(bool really) {
  if (really) {
    throw counted_error(7);
  }
}

/// Arrays before the scope, then a fork, then a throw that leaves the task.
/// `sig` is the caller's, declared before the arrays.
task<void> scope_with_slots(round_state *r) {
  unwind_signal sig{r};
  auto ins = co_await stack_alloc<std::string>(slots_n);
  auto outs = co_await stack_alloc<std::string>(slots_n);
  auto slots = co_await stack_alloc<tracked>(slots_n);
  for (std::size_t i = 0; i < slots_n; ++i) {
    ins[i] = in_text(i);
  }
  slots[0] = tracked(7);
  co_await fork(&outs[0], first_child, ins[0], ins.span(), outs.span(), slots.span(), r);
  throw_now(true); // unwinds the arrays, then `sig`, while `first_child` may still run
  co_await join(); // not reached
}

/// The same scope inside a try: the task catches the exception and joins.
task<void> scope_caught_inside(round_state *r) {
  try {
    unwind_signal sig{r};
    auto ins = co_await stack_alloc<std::string>(slots_n);
    auto outs = co_await stack_alloc<std::string>(slots_n);
    auto slots = co_await stack_alloc<tracked>(slots_n);
    for (std::size_t i = 0; i < slots_n; ++i) {
      ins[i] = in_text(i);
    }
    slots[0] = tracked(7);
    co_await fork(&outs[0], first_child, ins[0], ins.span(), outs.span(), slots.span(), r);
    throw_now(true);
  } catch (counted_error const &e) {
    r->caught = e.id == 7;
  }
  co_await join(); // the deferred arrays are destroyed here, after `first_child` arrived
}

enum class mode { leaves_task, caught_inside, tracked_only };

class exception_scope_test : public ::testing::TestWithParam<magpie::test::sched_param> {
protected:
  void run(mode m) {
    watchdog dog(current_test_name());
    counted_error::live() = 0;
    tracked_counters().reset();
    auto const before = magpie::core::get_stack_stats();
    int const rounds = scaled(12, 4);
    int conclusive = 0;
    {
      any_scheduler s(GetParam());
      for (int k = 0; k < rounds; ++k) {
        tracked_counters().reset(); // live() is 0 here: checked at the end of the last round
        round_state r;
        r.may_wait = s.workers() >= 2;
        r.strings = m != mode::tracked_only;
        if (m != mode::caught_inside) {
          EXPECT_THROW(s.run(scope_with_slots, &r), counted_error) << "round " << k;
        } else {
          s.run(scope_caught_inside, &r);
          EXPECT_TRUE(r.caught) << "round " << k;
        }
        EXPECT_EQ(r.bad.load(), 0) << "round " << k << ": a child read or wrote a wrong value";
        EXPECT_EQ(tracked_counters().errors.load(), 0)
            << "round " << k << ": a child used a slot after its destruction";
        EXPECT_EQ(tracked_counters().live(), 0)
            << "round " << k << ": a slot was not destroyed exactly once";
        conclusive += r.saw_unwind.load();
      }
    }
    if (GetParam().kind != sched_kind::inline_ && GetParam().workers >= 2) {
      EXPECT_GT(conclusive, 0) << "in " << rounds
                               << " rounds no child ran after the scope was unwound";
    }
    EXPECT_EQ(counted_error::live().load(), 0);
    auto const after = magpie::core::get_stack_stats();
    EXPECT_EQ(after.stacklets_live, before.stacklets_live) << "stacklets leaked";
    EXPECT_EQ(after.bytes_live, before.bytes_live);
  }
};

TEST_P(exception_scope_test, slots_outlive_an_exception_that_leaves_the_task) {
  run(mode::leaves_task);
}

TEST_P(exception_scope_test, slots_outlive_an_exception_caught_inside_the_scope) {
  run(mode::caught_inside);
}

/// Only `tracked` slots: a use after destruction shows as a counted error rather than as a crash.
TEST_P(exception_scope_test, tracked_slots_outlive_an_exception_that_leaves_the_task) {
  run(mode::tracked_only);
}

INSTANTIATE_TEST_SUITE_P(schedulers, exception_scope_test,
                         ::testing::Values(magpie::test::sched_param{sched_kind::inline_, 1},
                                           magpie::test::sched_param{sched_kind::busy, 1},
                                           magpie::test::sched_param{sched_kind::busy, 2},
                                           magpie::test::sched_param{sched_kind::busy, 3},
                                           magpie::test::sched_param{sched_kind::lazy, 1},
                                           magpie::test::sched_param{sched_kind::lazy, 2},
                                           magpie::test::sched_param{sched_kind::lazy, 3}),
                         sched_name{});

} // namespace
