// Random programs that hop between pools: each program forks and joins in
// whichever pool it is in and moves with resume_on between a home pool, two shared target pools
// and a private pool of its caller — from forked children too — while several caller threads run
// such roots at once. Between rounds every target pool is destroyed at once and made anew: the
// private pool right after the caller's last root finished in it, the shared ones right after
// the last caller returned (their last roots may have finished there too). Results are compared
// with the serial projection; a hop that lands on a worker of the wrong pool is counted; a lost
// job trips the watchdog; a pool touched after its destruction shows under asan-ubsan and tsan.
//
// The protocol that makes this safe: docs/protocols.md §5.1.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
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
using magpie::task;

std::uint64_t next(std::uint64_t &s) noexcept { // splitmix64
  s += 0x9E3779B97F4A7C15ULL;
  std::uint64_t z = s;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/// The pools a program may move between.
struct world {
  static constexpr std::size_t max_pools = 4;
  magpie::pool *pools[max_pools] = {};
  std::size_t count = 0;
  std::atomic<long> *misplaced = nullptr; // hops that did not land on the target pool
};

/// What an operation of a program does, drawn from its seed.
enum class op { hop, fork_join, leaf };

op draw(std::uint64_t r, int depth) noexcept {
  switch (r % 4) {
  case 0:
    return op::hop;
  case 1:
  case 2:
    return depth > 0 ? op::fork_join : op::leaf;
  default:
    return op::leaf;
  }
}

/// The serial projection of `program` (hops change nothing in the value).
long serial_program(std::uint64_t seed, int depth) {
  std::uint64_t s = seed;
  int const ops = 1 + static_cast<int>(next(s) % 4);
  long acc = static_cast<long>(seed % 97);
  for (int i = 0; i < ops; ++i) {
    std::uint64_t const r = next(s);
    switch (draw(r, depth)) {
    case op::hop:
      acc += 1;
      break;
    case op::fork_join: {
      std::uint64_t const left = next(s);
      std::uint64_t const right = next(s);
      acc += serial_program(left, depth - 1) + 2 * serial_program(right, depth - 1);
      break;
    }
    case op::leaf:
      acc += serial_fib(4 + static_cast<int>((r >> 8) % 7));
      break;
    }
  }
  return acc;
}

task<long> program(world const *w, std::uint64_t seed, int depth) {
  std::uint64_t s = seed;
  int const ops = 1 + static_cast<int>(next(s) % 4);
  long acc = static_cast<long>(seed % 97);
  for (int i = 0; i < ops; ++i) {
    std::uint64_t const r = next(s);
    switch (draw(r, depth)) {
    case op::hop: {
      magpie::pool *p = w->pools[(r >> 8) % w->count];
      if ((r >> 16) % 2 == 0) {
        co_await resume_on(*p);
      } else {
        co_await resume_on(*p, (r >> 20) % p->size());
      }
      if (!p->is_worker_thread()) {
        w->misplaced->fetch_add(1, std::memory_order_relaxed); // a counter: no edge
      }
      acc += 1;
      break;
    }
    case op::fork_join: {
      std::uint64_t const left = next(s);
      std::uint64_t const right = next(s);
      long a = 0;
      long b = 0;
      co_await fork(&a, program, w, left, depth - 1); // the child may hop away: it still joins
      co_await call(&b, program, w, right, depth - 1);
      co_await join();
      acc += a + 2 * b;
      break;
    }
    case op::leaf: {
      long f = 0;
      co_await call(&f, fib, 4 + static_cast<int>((r >> 8) % 7));
      acc += f;
      break;
    }
    }
  }
  co_return acc;
}

/// A root: runs a program, then ends in `last` (its caller destroys `last` right afterwards).
task<long> root(world const *w, std::uint64_t seed, int depth, magpie::pool *last) {
  long v = 0;
  co_await call(&v, program, w, seed, depth);
  if (last != nullptr) {
    co_await resume_on(*last);
    if (!last->is_worker_thread()) {
      w->misplaced->fetch_add(1, std::memory_order_relaxed); // a counter: no edge
    }
  }
  co_return v;
}

std::unique_ptr<magpie::pool> make_pool(std::uint64_t r) {
  std::size_t const workers = 1 + r % 3;
  if ((r >> 4) % 2 == 0) {
    return std::make_unique<magpie::busy_pool>(workers);
  }
  return std::make_unique<magpie::lazy_pool>(workers);
}

TEST(cross_pool, programs_hop_between_pools_that_are_destroyed_right_after) {
  watchdog dog(current_test_name());
  int const rounds = scaled(120, 25);
  int const callers = 3;
  int const roots_per_caller = scaled(6, 3);
  int const depth = scaled(4, 3);
  std::atomic<long> misplaced{0};
  std::atomic<long> wrong{0};
  std::atomic<long> roots_run{0};
  std::uint64_t seed = 0x5eed'c0ffee;
  auto home = make_pool(next(seed));
  for (int round = 0; round < rounds; ++round) {
    auto shared_a = make_pool(next(seed));
    auto shared_b = make_pool(next(seed));
    std::vector<std::thread> threads;
    for (int c = 0; c < callers; ++c) {
      std::uint64_t const caller_seed = next(seed);
      threads.emplace_back([&, caller_seed] {
        std::uint64_t s = caller_seed;
        auto mine = make_pool(next(s));
        world w;
        w.pools[0] = home.get();
        w.pools[1] = shared_a.get();
        w.pools[2] = shared_b.get();
        w.pools[3] = mine.get();
        w.count = 4;
        w.misplaced = &misplaced;
        for (int k = 0; k < roots_per_caller; ++k) {
          std::uint64_t const program_seed = next(s);
          bool const last = k + 1 == roots_per_caller;
          // Roots start in the home pool or in a shared one; the last ends in our own pool.
          magpie::pool &start = *w.pools[next(s) % 3];
          long const got =
              magpie::sync_wait(start, root, &w, program_seed, depth, last ? mine.get() : nullptr);
          if (got != serial_program(program_seed, depth)) {
            wrong.fetch_add(1, std::memory_order_relaxed); // a counter: no edge
          }
          roots_run.fetch_add(1, std::memory_order_relaxed); // a counter: no edge
        }
        mine.reset(); // at once: our last root has just finished in it
      });
    }
    for (auto &t : threads) {
      t.join();
    }
    shared_a.reset(); // at once: the last roots may have finished in them
    shared_b.reset();
  }
  EXPECT_EQ(roots_run.load(), static_cast<long>(rounds) * callers * roots_per_caller);
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(misplaced.load(), 0);
  EXPECT_EQ(magpie::sync_wait(*home, fib, 15), serial_fib(15));
}

} // namespace
