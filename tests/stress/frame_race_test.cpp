// Targeted stress for Clang < 19 touching a coroutine frame after await_suspend has published it
// (LLVM issues 56301, 65054, 72006; see docs/clang-coroutine-frames.md). Every task keeps many
// values live across its forks and its join, in locals that the compiler keeps in the frame, and
// forks several children so that its continuation is stolen often. Were the worker that pushed
// the parent (or the child that arrived at the join) to spill into or read the frame after its
// point of no return, TSan would see a race with the thief and the checks below could fail.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>

#include "common/test_support.hpp"

namespace {

using magpie::fork;
using magpie::join;
using magpie::task;

/// What wide(depth, seed) must return, computed serially.
std::uint64_t wide_serial(int depth, std::uint64_t seed) {
  if (depth == 0) {
    return seed * 2654435761u;
  }
  std::uint64_t acc = seed;
  for (std::uint64_t i = 0; i < 4; ++i) {
    acc = acc * 31 + wide_serial(depth - 1, seed * 7 + i);
  }
  return acc ^ (seed + static_cast<std::uint64_t>(depth));
}

task<std::uint64_t> wide(int depth, std::uint64_t seed) {
  if (depth == 0) {
    magpie::test::spin_work(20); // let thieves catch up with the forks above
    co_return seed * 2654435761u;
  }
  // Live across every fork and the join: more than the registers can hold.
  std::uint64_t const k0 = seed * 3, k1 = seed ^ 0x5555, k2 = seed + 11, k3 = seed * seed;
  double const d0 = static_cast<double>(seed) * 1.5, d1 = static_cast<double>(seed) + 2.0;
  std::uint64_t r[4] = {};
  for (std::uint64_t i = 0; i < 4; ++i) {
    co_await fork(&r[i], wide, depth - 1, seed * 7 + i);
  }
  co_await join();
  // The locals must have survived the forks, whoever resumed us.
  EXPECT_EQ(k0, seed * 3);
  EXPECT_EQ(k1, seed ^ 0x5555);
  EXPECT_EQ(k2, seed + 11);
  EXPECT_EQ(k3, seed * seed);
  EXPECT_EQ(d0, static_cast<double>(seed) * 1.5);
  EXPECT_EQ(d1, static_cast<double>(seed) + 2.0);
  std::uint64_t acc = seed;
  for (std::uint64_t x : r) {
    acc = acc * 31 + x;
  }
  co_return acc ^ (seed + static_cast<std::uint64_t>(depth));
}

TEST(frame_race, wide_forks_with_many_live_locals_on_a_busy_pool) {
  magpie::test::watchdog dog("frame_race");
  int const depth = magpie::test::scaled(7, 5); // 4^7 = 16k leaves; 4^5 under sanitizers
  std::uint64_t const expected = wide_serial(depth, 1);
  magpie::busy_pool pool(4); // more workers than this machine's cores: many interleavings
  auto steals = [&pool] {
    std::uint64_t n = 0;
    for (auto const &s : pool.stats()) {
      n += s.steals;
    }
    return n;
  };
  // At least 200 rounds, and more until 100 steals were seen (a loaded machine may leave the
  // thieves unscheduled for a while), for at most 10 seconds.
  auto const give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (int round = 0; round < 200 || (steals() < 100 && std::chrono::steady_clock::now() < give_up);
       ++round) {
    EXPECT_EQ(magpie::sync_wait(pool, wide, depth, std::uint64_t{1}), expected);
  }
  EXPECT_GT(steals(), 0u); // the continuations were stolen (else this tests nothing)
}

} // namespace
