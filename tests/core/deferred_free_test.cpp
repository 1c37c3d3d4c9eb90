// Stack arrays unwound by an exception while their task runs stolen are freed later ("deferred",
// core/stack_alloc.hpp), once the task owns its chain again. A join completes by one of two paths:
// the task passes it itself (join_awaitable: await_ready or await_suspend finds every child
// arrived), or the last child to arrive resumes it (detail::arrive_at_stolen_parent). Both must
// free the deferred arrays (docs/protocols.md, "Stack arrays unwound while stolen"). Issue 7 item
// 3: the second path used to skip them, and a later join taken by the first path then freed them
// below live arrays, which the next allocation overwrote.
//
// This test drives both paths on a 2-worker pool with handshakes instead of luck:
//   scope 1: the child waits until the task's continuation has been stolen, has thrown and caught
//            with an array live, and is about to join; then it lingers, so it arrives last and
//            resumes the task (child-last path, with arrays deferred);
//   scope 2: with a new array live, the continuation (stolen again) waits for the child to finish
//            and lingers, so it arrives last and passes the join itself (task-last path).
// Which path ran is read from the worker that runs the task after each join; the assertions are
// on the arrays' contents and on where the next array lands (FILO).

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <thread>

#include <gtest/gtest.h>

#include "common/test_support.hpp"

namespace {

using namespace magpie::test;
using magpie::fork;
using magpie::join;
using magpie::stack_alloc;
using magpie::task;
using std::uint64_t;

constexpr std::size_t small_n = 8; // the array unwound in scope 1 (64 bytes)
constexpr std::size_t large_n =
    512; // scope 2's arrays (4 KiB): a reuse of scope 1's spot hits them

std::uintptr_t address(void const *p) { return reinterpret_cast<std::uintptr_t>(p); }

/// Gives the other side of a handshake time to reach its arrival at the join.
[[gnu::noinline]] void linger() { std::this_thread::sleep_for(std::chrono::milliseconds(30)); }

struct handshake {
  std::atomic<int> go{0};   // set by the task's continuation: it runs (so it was stolen)
  std::atomic<int> seen{0}; // the child saw `go` before its timeout
  std::atomic<int> done{0}; // the child's body has finished
};

/// Scope 1's child: holds its worker until the task's continuation, stolen meanwhile, is about to
/// join; then lingers so that it arrives at the join last.
task<void> arrive_last(handshake *h) {
  if (wait_for(h->go)) {
    h->seen.store(1);
    linger();
  }
  co_return;
}

/// Scope 2's child: holds its worker until the continuation has been stolen, then finishes at
/// once; the continuation waits for it, so the task arrives at the join last.
task<void> arrive_first(handshake *h) {
  h->seen.store(wait_for(h->go) ? 1 : 0);
  h->done.store(1);
  co_return;
}

struct round_report {
  bool caught = false;      // scope 1's exception was caught with its identity
  bool child_last = false;  // scope 1 ended by the child resuming the task (stolen, child last)
  bool parent_last = false; // scope 2 ended by the task passing its join itself (stolen, task last)
  long misplaced = 0;       // arrays that did not land where FILO order puts them
  long damaged = 0;         // array elements overwritten
};

task<void> two_scopes(round_report *r) {
  auto keep = co_await stack_alloc<uint64_t>(40); // below everything: must never be touched
  fill(keep, 7);

  // Scope 1: an array unwound while stolen; the child arrives last.
  handshake h1;
  std::uintptr_t unwound_at = 0;
  std::ptrdiff_t before = -1;
  try {
    auto a = co_await stack_alloc<uint64_t>(small_n);
    fill(a, 1);
    unwound_at = address(a.data());
    co_await fork(arrive_last, &h1);
    before = magpie::this_worker_index(); // reached while the child waits only if stolen
    throw counted_error(11);              // unwinds `a` inside the scope: its free is deferred
  } catch (counted_error const &e) {
    r->caught = e.id == 11;
  }
  h1.go.store(1); // the child may finish now; it lingers, so we reach the join first
  co_await join();
  r->child_last = h1.seen.load() != 0 && magpie::this_worker_index() != before;
  {
    // The join freed `a`: the next array of its size takes its place.
    auto probe = co_await stack_alloc<uint64_t>(small_n);
    r->misplaced += address(probe.data()) != unwound_at ? 1 : 0;
  }

  // Scope 2: a live array; the task, stolen again, arrives last and passes the join itself.
  auto b = co_await stack_alloc<uint64_t>(large_n);
  fill(b, 2);
  handshake h2;
  co_await fork(arrive_first, &h2);
  std::ptrdiff_t const before2 = magpie::this_worker_index();
  h2.go.store(1);
  if (wait_for(h2.done)) {
    linger(); // let the child get from its body's end to its arrival at the join
  }
  co_await join();
  r->parent_last = h2.seen.load() != 0 && magpie::this_worker_index() == before2;
  {
    auto c = co_await stack_alloc<uint64_t>(large_n); // directly above `b`, after its header
    r->misplaced += address(c.data()) != address(b.data()) + large_n * sizeof(uint64_t) +
                                             magpie::core::frame_base::array_header_bytes
                        ? 1
                        : 0;
    fill(c, 3);
    r->damaged += damaged(b, 2);
  }
  r->damaged += damaged(b, 2) + damaged(keep, 7);
}

class deferred_free_test : public ::testing::TestWithParam<magpie::test::sched_param> {};

TEST_P(deferred_free_test, arrays_unwound_while_stolen_are_freed_by_either_join_path) {
  watchdog dog(current_test_name());
  counted_error::live() = 0;
  auto const before = magpie::core::get_stack_stats();
  int conclusive = 0;
  int rounds = 0;
  {
    any_scheduler s(GetParam());
    for (; rounds < 30 && conclusive < 3; ++rounds) {
      round_report r;
      s.run(two_scopes, &r);
      EXPECT_TRUE(r.caught) << "round " << rounds;
      EXPECT_EQ(r.misplaced, 0) << "round " << rounds
                                << ": an array did not land where FILO order puts it (a deferred "
                                   "free was skipped, or done below a live array)";
      EXPECT_EQ(r.damaged, 0) << "round " << rounds << ": a live stack array was overwritten";
      conclusive += r.child_last && r.parent_last ? 1 : 0;
    }
  }
  EXPECT_GT(conclusive, 0) << "in " << rounds
                           << " rounds the schedule (child last, then task last) never happened";
  EXPECT_EQ(counted_error::live().load(), 0);
  EXPECT_EQ(magpie::core::get_stack_stats().stacklets_live, before.stacklets_live)
      << "stacklets leaked";
  EXPECT_EQ(magpie::core::get_stack_stats().bytes_live, before.bytes_live);
}

INSTANTIATE_TEST_SUITE_P(two_workers, deferred_free_test,
                         ::testing::Values(magpie::test::sched_param{sched_kind::busy, 2},
                                           magpie::test::sched_param{sched_kind::lazy, 2}),
                         sched_name{});

} // namespace
