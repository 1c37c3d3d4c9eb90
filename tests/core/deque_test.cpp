// Tests of core::deque, the Chase–Lev work-stealing deque: owner LIFO, thief FIFO, typed steal
// results, ring growth, and a multi-threaded stress in which every item is taken exactly once.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_support.hpp"
#include "magpie/core/deque.hpp"

namespace {

using magpie::core::deque;
using magpie::core::steal_status;
using item = std::uint64_t;

TEST(deque, empty_deque_pops_and_steals_nothing) {
  deque<item> d(4);
  EXPECT_TRUE(d.empty());
  EXPECT_EQ(d.size(), 0);
  auto p = d.pop();
  EXPECT_FALSE(p);
  deque<item>::thief t(d);
  auto s = t.steal();
  EXPECT_EQ(s.status, steal_status::empty);
  EXPECT_FALSE(s);
  EXPECT_TRUE(t.empty());
}

TEST(deque, owner_sees_empty_only_when_nothing_is_left) {
  deque<item> d(2);
  deque<item>::thief t(d);
  EXPECT_TRUE(d.owner_sees_empty());
  d.push(1);
  EXPECT_FALSE(d.owner_sees_empty());
  d.push(2);
  d.push(3); // grows the ring
  EXPECT_FALSE(d.owner_sees_empty());
  EXPECT_EQ(t.steal().value, 1u);
  EXPECT_FALSE(d.owner_sees_empty());
  EXPECT_EQ(d.pop().value, 3u);
  EXPECT_FALSE(d.owner_sees_empty()); // 2 is left
  EXPECT_EQ(t.steal().value, 2u);     // a thief takes the last item
  EXPECT_TRUE(d.owner_sees_empty());
  EXPECT_FALSE(d.pop());
  EXPECT_TRUE(d.owner_sees_empty()); // a failed pop leaves it empty
  d.push(4);
  EXPECT_FALSE(d.owner_sees_empty());
  EXPECT_EQ(d.pop().value, 4u); // the owner takes the last item (the CAS path)
  EXPECT_TRUE(d.owner_sees_empty());
}

TEST(deque, owner_pops_lifo_thief_steals_fifo) {
  deque<item> d(4);
  for (item i = 1; i <= 6; ++i) {
    d.push(i);
  }
  EXPECT_EQ(d.size(), 6);
  deque<item>::thief t(d);
  auto s = t.steal();
  ASSERT_EQ(s.status, steal_status::success);
  EXPECT_EQ(s.value, 1u); // oldest first
  auto p = d.pop();
  ASSERT_TRUE(p);
  EXPECT_EQ(p.value, 6u); // newest first
  s = t.steal();
  ASSERT_TRUE(s);
  EXPECT_EQ(s.value, 2u);
  for (item expect : {5u, 4u, 3u}) {
    p = d.pop();
    ASSERT_TRUE(p);
    EXPECT_EQ(p.value, expect);
  }
  EXPECT_FALSE(d.pop());
  EXPECT_EQ(t.steal().status, steal_status::empty);
  // The deque is reusable after running dry from both ends.
  d.push(42);
  EXPECT_EQ(t.steal().value, 42u);
  EXPECT_TRUE(d.empty());
}

TEST(deque, ring_grows_and_keeps_contents_in_order) {
  deque<item> d(4);
  EXPECT_EQ(d.capacity(), 4);
  constexpr item n = 1000;
  for (item i = 0; i < n; ++i) {
    d.push(i);
  }
  EXPECT_GE(d.capacity(), static_cast<std::int64_t>(n));
  EXPECT_EQ(d.capacity() & (d.capacity() - 1), 0) << "capacity stays a power of two";
  deque<item>::thief t(d);
  // Take from both ends after growth: the copied slots are all intact.
  for (item i = 0; i < n / 2; ++i) {
    auto s = t.steal();
    ASSERT_TRUE(s);
    EXPECT_EQ(s.value, i);
  }
  for (item i = n; i-- > n / 2;) {
    auto p = d.pop();
    ASSERT_TRUE(p);
    EXPECT_EQ(p.value, i);
  }
  EXPECT_TRUE(d.empty());
}

TEST(deque, reserve_then_push_reserved_grows_when_full) {
  deque<item> d(2);
  for (item i = 0; i < 9; ++i) {
    d.reserve_one();
    d.push_reserved(i);
  }
  EXPECT_GE(d.capacity(), 9);
  for (item i = 9; i-- > 0;) {
    auto p = d.pop();
    ASSERT_TRUE(p);
    EXPECT_EQ(p.value, i);
  }
}

TEST(deque, wrap_around_without_growth) {
  // Pushing and popping many more items than the capacity, never more than it at once, wraps
  // the indices around the ring without growing it.
  deque<item> d(4);
  deque<item>::thief t(d);
  item next = 0;
  item expect_steal = 0;
  for (int round = 0; round < 1000; ++round) {
    d.push(next++);
    d.push(next++);
    auto s = t.steal();
    ASSERT_TRUE(s);
    EXPECT_EQ(s.value, expect_steal);
    auto p = d.pop();
    ASSERT_TRUE(p);
    EXPECT_EQ(p.value, next - 1);
    expect_steal = next;
  }
  EXPECT_EQ(d.capacity(), 4);
}

// One owner pushes (in bursts, across ring growth) and pops; several thieves steal. Every item
// must be taken exactly once, and each thief must see strictly increasing values (the deque's
// contents are always increasing from top to bottom, so FIFO steals can only go up).
// With `batched`, the owner also pops several items at once (pop_newest), which must give the
// newest ones, newest first, or nothing.
void stress(int thieves, item total, std::int64_t initial_capacity, bool batched = false) {
  magpie::test::watchdog dog(magpie::test::current_test_name());
  deque<item> d(initial_capacity);
  std::vector<std::atomic<int>> taken(total);
  std::atomic<bool> done{false};
  std::atomic<long> order_violations{0};
  std::atomic<long> successes{0};
  std::atomic<long> lost{0};

  std::vector<std::thread> threads;
  for (int k = 0; k < thieves; ++k) {
    threads.emplace_back([&] {
      deque<item>::thief t(d);
      item last = 0;
      bool first = true;
      for (;;) {
        auto s = t.steal();
        if (s.status == steal_status::success) {
          ASSERT_LT(s.value, total);
          taken[s.value].fetch_add(1, std::memory_order_relaxed);
          if (!first && s.value <= last) {
            order_violations.fetch_add(1);
          }
          first = false;
          last = s.value;
          successes.fetch_add(1, std::memory_order_relaxed);
        } else if (s.status == steal_status::lost) {
          lost.fetch_add(1, std::memory_order_relaxed);
        } else if (done.load(std::memory_order_acquire)) {
          return;
        } else {
          std::this_thread::yield();
        }
      }
    });
  }

  item next = 0;
  std::uint64_t rng = 12345;
  long owner_pops = 0;
  long false_empties = 0; // owner_sees_empty() said empty, and a pop then took an item
  long empties_seen = 0;
  while (next < total) {
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    item const burst = std::min<item>(1 + (rng >> 33) % 64, total - next);
    for (item i = 0; i < burst; ++i) {
      d.push(next++);
    }
    item const pops = (rng >> 40) % (burst + 1);
    if (batched && pops >= 2) {
      std::int64_t const k =
          std::min<std::int64_t>({d.size(), static_cast<std::int64_t>(pops), 64});
      item out[64];
      if (k >= 2 && d.pop_newest(k, out)) {
        for (std::int64_t i = 0; i < k; ++i) {
          ASSERT_LT(out[i], total);
          if (i > 0) {
            EXPECT_EQ(out[i], out[i - 1] - 1) << "pop_newest must give consecutive newest items";
          }
          taken[out[i]].fetch_add(1, std::memory_order_relaxed);
          ++owner_pops;
        }
        continue;
      }
    }
    for (item i = 0; i < pops; ++i) {
      // "Empty for certain" must be true: a pop right after it (thieves still running) must
      // find nothing. (A thief can only make the deque emptier.)
      bool const sure_empty = d.owner_sees_empty();
      if (auto p = d.pop()) {
        ASSERT_LT(p.value, total);
        taken[p.value].fetch_add(1, std::memory_order_relaxed);
        ++owner_pops;
        if (sure_empty) {
          ++false_empties;
        }
      } else if (sure_empty) {
        ++empties_seen;
      }
    }
  }
  while (auto p = d.pop()) { // drain what the thieves left
    taken[p.value].fetch_add(1, std::memory_order_relaxed);
    ++owner_pops;
  }
  done.store(true, std::memory_order_release);
  for (auto &t : threads) {
    t.join();
  }

  long missing = 0;
  long duplicated = 0;
  for (item i = 0; i < total; ++i) {
    int const n = taken[i].load();
    missing += n == 0 ? 1 : 0;
    duplicated += n > 1 ? 1 : 0;
  }
  EXPECT_EQ(missing, 0);
  EXPECT_EQ(duplicated, 0);
  EXPECT_EQ(order_violations.load(), 0);
  EXPECT_EQ(false_empties, 0);
  EXPECT_EQ(owner_pops + successes.load(), static_cast<long>(total));
  EXPECT_GT(d.capacity(), initial_capacity) << "the stress should have grown the ring";
  EXPECT_TRUE(d.empty());
  std::printf(
      "[ info     ] %d thieves: owner took %ld, thieves %ld, lost races %ld, capacity %lld, "
      "certain empties %ld\n",
      thieves, owner_pops, successes.load(), lost.load(), static_cast<long long>(d.capacity()),
      empties_seen);
}

TEST(deque, stress_one_thief) { stress(1, magpie::test::scaled(300000, 100000), 4); }
TEST(deque, stress_three_thieves) { stress(3, magpie::test::scaled(300000, 100000), 4); }
TEST(deque, stress_seven_thieves_tiny_ring) { stress(7, magpie::test::scaled(200000, 50000), 1); }
TEST(deque, stress_batched_pops_one_thief) {
  stress(1, magpie::test::scaled(300000, 100000), 4, true);
}
TEST(deque, stress_batched_pops_three_thieves) {
  stress(3, magpie::test::scaled(300000, 100000), 4, true);
}

TEST(deque, pop_newest_takes_the_newest_or_nothing) {
  deque<item> d(4);
  deque<item>::thief t(d);
  for (item i = 0; i < 6; ++i) {
    d.push(i);
  }
  item out[4];
  ASSERT_TRUE(d.pop_newest(3, out));
  EXPECT_EQ(out[0], 5);
  EXPECT_EQ(out[1], 4);
  EXPECT_EQ(out[2], 3);
  auto s = t.steal();
  ASSERT_TRUE(s);
  EXPECT_EQ(s.value, 0);
  // Items 1 and 2 left: taking both would reach the top, where a thief may be: refused.
  EXPECT_FALSE(d.pop_newest(2, out));
  EXPECT_EQ(d.size(), 2); // nothing was taken
  EXPECT_EQ(d.pop().value, 2);
  EXPECT_EQ(d.pop().value, 1);
  EXPECT_TRUE(d.empty());
}

} // namespace
