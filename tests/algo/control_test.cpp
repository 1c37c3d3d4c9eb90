// Exceptions, cancellation and early exit of the parallel algorithms: the first exception reaches
// the caller after every started iteration has finished and none leaks; a stop request (from
// another thread, before the start, or from an enclosing algorithm) skips what has not started
// and is visible to running iterations; find_if / any_of stop the rest once they have an answer.
#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "algo/algo_support.hpp"

namespace magpie::test {
namespace {

using algo_control = algo_test;

using clock_type = std::chrono::steady_clock;

/// Waits (bounded) until `cond()`; false on timeout.
template <typename Cond>
bool wait_until(Cond cond, std::chrono::seconds limit = std::chrono::seconds(20)) {
  auto const end = clock_type::now() + limit;
  while (!cond()) {
    if (clock_type::now() > end) {
      return false;
    }
    std::this_thread::yield();
  }
  return true;
}

TEST_P(algo_control, first_exception_reaches_caller_after_started_iterations_finish) {
  std::size_t const n = static_cast<std::size_t>(scaled(20000, 4000));
  std::mt19937_64 g(GetParam().workers * 31 + 1);
  for (int round = 0; round < 6; ++round) {
    std::vector<std::size_t> throwers(1 + round % 3);
    for (auto &t : throwers) {
      t = g() % n;
    }
    std::atomic<long> started{0}, finished{0};
    long const live_before = counted_error::live().load();
    int caught = -1;
    try {
      on([&](auto &s) {
        magpie::for_range(s, std::size_t{0}, n, [&](std::size_t i) {
          ++started;
          spin_work(200);
          if (std::find(throwers.begin(), throwers.end(), i) != throwers.end()) {
            ++finished;
            throw counted_error(static_cast<int>(i));
          }
          ++finished;
        });
      });
    } catch (counted_error const &e) {
      caught = e.id;
      EXPECT_EQ(started.load(), finished.load()) << "an iteration still ran after the rethrow";
    }
    ASSERT_NE(std::find(throwers.begin(), throwers.end(), static_cast<std::size_t>(caught)),
              throwers.end())
        << "the exception of a throwing iteration must reach the caller";
    EXPECT_EQ(counted_error::live().load(), live_before) << "an exception leaked";
    EXPECT_LE(started.load(), static_cast<long>(n));
    if (throwers.size() == 1 && throwers[0] < n / 4 && m_sched.serial()) {
      EXPECT_EQ(started.load(), static_cast<long>(throwers[0] + 1)) << "later iterations ran";
    }
  }
}

TEST_P(algo_control, exceptions_from_reduce_scan_sort_and_find) {
  std::size_t const n = static_cast<std::size_t>(scaled(50000, 9000));
  auto v = random_values(n, 4);
  long const live_before = counted_error::live().load();
  auto bad = [](std::int64_t x) -> std::int64_t {
    if (x == 12345) {
      throw counted_error(1);
    }
    return x;
  };
  v[n / 3] = 12345;
  EXPECT_THROW(on([&](auto &s) { return magpie::transform_reduce(s, v, 0L, std::plus<>{}, bad); }),
               counted_error);
  std::vector<std::int64_t> out(n);
  auto bad_plus = [&](std::int64_t a, std::int64_t b) { return bad(a) + bad(b); };
  EXPECT_THROW(on([&](auto &s) { return magpie::inclusive_scan(s, v, out.begin(), bad_plus); }),
               counted_error);
  auto bad_less = [&](std::int64_t a, std::int64_t b) { return bad(a) < bad(b); };
  auto w = v;
  EXPECT_THROW(on([&](auto &s) { magpie::sort(s, w, bad_less); }), counted_error);
  w = v;
  EXPECT_THROW(on([&](auto &s) { magpie::stable_sort(s, w, bad_less); }), counted_error);
  EXPECT_THROW(
      on([&](auto &s) { return magpie::find_if(s, v, [&](auto x) { return bad(x) == 0; }); }),
      counted_error);
  EXPECT_EQ(counted_error::live().load(), live_before);
}

TEST_P(algo_control, stop_from_another_thread_skips_the_rest_and_is_visible) {
  std::size_t const n = 1u << 20; // unstopped: ~seconds; stopped: returns at once
  magpie::stop_source src;
  std::atomic<long> ran{0};
  std::atomic<bool> saw_stop{false};
  std::thread stopper([&] {
    EXPECT_TRUE(wait_until([&] { return ran.load() >= 50; }));
    src.request_stop();
  });
  on([&](auto &s) {
    magpie::for_range(
        s, std::size_t{0}, n,
        [&](std::size_t) {
          if (++ran == 50) { // a running iteration sees the request (bounded: the test then fails)
            auto const end = clock_type::now() + std::chrono::seconds(20);
            while (!magpie::stop_requested() && clock_type::now() < end) {
              std::this_thread::yield();
            }
            saw_stop = magpie::stop_requested();
          }
          spin_work(1000);
        },
        {.stop = src.get_token()});
  });
  stopper.join();
  EXPECT_TRUE(saw_stop.load()) << "magpie::stop_requested() never became true in an iteration";
  EXPECT_LT(ran.load(), static_cast<long>(n)) << "the stop skipped nothing";
  EXPECT_FALSE(magpie::stop_requested()) << "outside any iteration it must be false";
}

/// A value that counts its live instances (every constructor, every destructor).
struct tracked {
  static std::atomic<long> &live() {
    static std::atomic<long> n{0};
    return n;
  }
  long v = 0;
  tracked() { ++live(); } // sync_wait default-constructs the result it returns
  explicit tracked(long x) : v(x) { ++live(); }
  tracked(tracked const &o) : v(o.v) { ++live(); }
  tracked(tracked &&o) noexcept : v(o.v) { ++live(); }
  tracked &operator=(tracked const &) = default;
  tracked &operator=(tracked &&) noexcept = default;
  ~tracked() { --live(); }
};

// A reduction keeps each block's result in raw storage until the final fold: every result that
// was made is destroyed exactly once whether the reduction completes, throws part way or is
// stopped part way (with a type that is not trivially destructible).
TEST_P(algo_control, block_results_of_a_reduction_are_destroyed_after_an_exception_or_a_stop) {
  std::size_t const n = static_cast<std::size_t>(scaled(40000, 8000));
  std::vector<long> v(n, 1);
  auto plus = [](tracked a, tracked const &b) { return tracked(a.v + b.v); };
  long const live_before = tracked::live().load();
  auto whole = on([&](auto &s) {
    return magpie::transform_reduce(s, v, tracked(0), plus, [](long x) { return tracked(x); });
  });
  EXPECT_EQ(whole.v, static_cast<long>(n));
  EXPECT_EQ(tracked::live().load(), live_before + 1); // `whole` only
  std::size_t const bad = n / 2 + 3;
  auto throws = [&](long const &x) {
    if (&x == &v[bad]) {
      throw counted_error(2);
    }
    return tracked(x);
  };
  EXPECT_THROW(
      on([&](auto &s) { return magpie::transform_reduce(s, v, tracked(0), plus, throws); }),
      counted_error);
  EXPECT_EQ(tracked::live().load(), live_before + 1)
      << "a block result leaked or was destroyed twice";
  magpie::stop_source src;
  std::atomic<long> seen{0};
  auto stops = [&](long x) {
    if (seen.fetch_add(1) == static_cast<long>(n / 3)) {
      src.request_stop();
    }
    return tracked(x);
  };
  auto part = on([&](auto &s) {
    return magpie::transform_reduce(s, v, tracked(0), plus, stops, {.stop = src.get_token()});
  });
  EXPECT_LT(part.v, static_cast<long>(n)) << "the stop skipped nothing";
  EXPECT_GT(part.v, 0);
  EXPECT_EQ(tracked::live().load(), live_before + 2) << "a block result leaked after the stop";
}

TEST_P(algo_control, stopped_before_start_runs_nothing) {
  magpie::stop_source src;
  src.request_stop();
  std::atomic<int> ran{0};
  std::vector<int> v(1000);
  on([&](auto &s) { magpie::for_each(s, v, [&](int) { ++ran; }, {.stop = src.get_token()}); });
  EXPECT_EQ(ran.load(), 0);
  EXPECT_EQ(on([&](auto &s) {
              return magpie::reduce(s, v, 7, std::plus<>{}, {.stop = src.get_token()});
            }),
            7);
}

TEST_P(algo_control, stop_of_an_enclosing_algorithm_reaches_nested_ones) {
  // The iteration's inline_scheduler may end up in the loop task's frame once the compiler
  // inlines the iteration (Clang 16 with ASan does): it must need no more than a frame's
  // alignment (UBSan reported a misaligned core::context while it needed 64).
  magpie::stop_source src;
  std::atomic<bool> inner_saw{false};
  std::atomic<bool> inner_running{false};
  std::thread stopper([&] {
    EXPECT_TRUE(wait_until([&] { return inner_running.load(); }));
    src.request_stop();
  });
  on([&](auto &s) {
    magpie::for_range(s, 0, 1,
                      [&](int) {
                        magpie::inline_scheduler nested; // a blocking algorithm inside an iteration
                        magpie::for_range(nested, 0, 1, [&](int) {
                          inner_running = true;
                          auto const end = clock_type::now() + std::chrono::seconds(20);
                          while (!magpie::stop_requested() && clock_type::now() < end) {
                            std::this_thread::yield();
                          }
                          inner_saw = magpie::stop_requested();
                        });
                      },
                      {.stop = src.get_token()});
  });
  stopper.join();
  EXPECT_TRUE(inner_saw.load()) << "the nested loop did not see the enclosing loop's stop";
}

TEST_P(algo_control, any_of_and_find_if_stop_the_rest_once_answered) {
  std::size_t const n = static_cast<std::size_t>(scaled(20000, 4000));
  std::size_t const match = n / 3;
  std::atomic<long> seq{0};
  std::atomic<long> match_seq{-1};
  std::atomic<long> late{0}; // iterations started after the match was recorded
  auto pred = [&](std::size_t i) {
    long const me = ++seq;
    long const m = match_seq.load();
    if (m >= 0 && me > m) {
      ++late;
    }
    spin_work(300);
    if (i == match) {
      match_seq = seq.load();
      return true;
    }
    return false;
  };
  std::vector<std::size_t> idx(n);
  std::iota(idx.begin(), idx.end(), std::size_t{0});
  EXPECT_TRUE(on([&](auto &s) { return magpie::any_of(s, idx, pred, {.grain = 1}); }));
  // A worker may have begun one evaluation before it saw the answer, and one more in the window
  // between the match's bookkeeping and the algorithm's own record of it.
  long const bound = 2 * static_cast<long>(m_sched.workers());
  EXPECT_LE(late.load(), bound) << "any_of kept evaluating after the answer was known";
  seq = 0;
  match_seq = -1;
  late = 0;
  std::atomic<long> above{0};
  auto first_pred = [&](std::size_t i) {
    bool const r = pred(i);
    if (i > match && match_seq.load() >= 0) {
      ++above;
    }
    return r;
  };
  auto it = on([&](auto &s) { return magpie::find_if(s, idx, first_pred, {.grain = 1}); });
  EXPECT_EQ(it - idx.begin(), static_cast<std::ptrdiff_t>(match));
  EXPECT_LE(above.load(), bound) << "find_if evaluated indices above the match after finding it";
}

/// About 40 ns of work per call, in a function of its own (a loop in the caller could be dropped).
[[gnu::noinline]] void burn_a_little() {
  static std::atomic<unsigned> sink{0};
  unsigned x = sink.load(std::memory_order_relaxed);
  for (unsigned i = 0; i < 40; ++i) {
    x = x * 1664525u + 1013904223u;
  }
  sink.store(x, std::memory_order_relaxed);
}

/// A loop body of its own type (the learned chunk size is per body type): records its chunks.
struct chunk_recorder {
  std::vector<std::size_t> *sizes;
  void operator()(std::size_t lo, std::size_t hi) const {
    sizes->push_back(hi - lo);
    for (std::size_t i = lo; i < hi; ++i) {
      burn_a_little();
    }
  }
};

/// Runs chunk_recorder over [0, n) on `sched` (one thread: the recorder is not synchronised);
/// returns the chunk size the loop ended with (0 if it never settled) and the sizes of its chunks
/// in order.
template <typename Sched>
std::pair<std::size_t, std::vector<std::size_t>> record_chunks_on(Sched &sched, std::size_t n) {
  std::vector<std::size_t> sizes;
  chunk_recorder const body{&sizes};
  std::size_t const settled = magpie::sync_wait(sched, [&]() -> magpie::task<std::size_t> {
    algo::detail::loop_control ctl(0, {}, nullptr);
    co_await magpie::call(algo::detail::run_loop<chunk_recorder>, &ctl, &body, n);
    co_await magpie::join();
    co_return ctl.settled() ? ctl.chunk() : 0;
  });
  return {settled, std::move(sizes)};
}

/// record_chunks_on an inline scheduler: one thread, where a range may still split.
std::pair<std::size_t, std::vector<std::size_t>> record_chunks(std::size_t n) {
  magpie::inline_scheduler one;
  return record_chunks_on(one, n);
}

// A loop run again over the same number of indices starts from the chunk size it settled on the
// last time instead of calibrating from one index; over another number it calibrates afresh.
TEST(algo_learned_chunk, a_loop_run_again_over_the_same_n_starts_from_the_size_it_settled_on) {
  std::size_t const n = 4096;
  auto const first = record_chunks(n);
  ASSERT_FALSE(first.second.empty());
  EXPECT_EQ(first.second.front(), 1u) << "a loop never run before calibrates from one index";
  ASSERT_GT(first.first, 1u) << "~40 ns iterations settle on chunks of several";
  auto const again = record_chunks(n);
  ASSERT_FALSE(again.second.empty());
  EXPECT_EQ(again.second.front(), first.first);
  auto const other = record_chunks(n + 1);
  ASSERT_FALSE(other.second.empty());
  EXPECT_EQ(other.second.front(), 1u) << "the size learned over another n is not used";
}

// On a pool of one worker nobody can steal from the loop's task, so once the chunk size has
// settled, the steps between two timed chunks run solo_chunks chunks each; every index runs once.
// A step solo_chunks chunks wide after a timed chunk of the (at most doubled) size is at least four
// times as long as it, a jump that chunks of one size, which double at most, never make.
TEST(algo_learned_chunk, a_loop_nobody_can_steal_from_runs_its_untimed_chunks_together) {
  static_assert(algo::detail::solo_chunks >= 4, "the jump below needs wide steps");
  std::size_t const n = std::size_t{1} << 15; // ~1 ms of ~40 ns iterations
  magpie::sched::lazy_pool pool(1);
  auto const [settled, sizes] = record_chunks_on(pool, n);
  ASSERT_NE(settled, 0u) << "the loop never settled on a chunk size";
  std::size_t total = 0;
  std::size_t jumps = 0; // steps at least 4 times as long as the step before them
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    total += sizes[i];
    jumps += i > 0 && sizes[i] >= 4 * sizes[i - 1] ? 1 : 0;
  }
  EXPECT_EQ(total, n) << "every index once";
  EXPECT_GT(jumps, 0u) << "no untimed step ran more than the chunk size (" << sizes.size()
                       << " steps for " << n << " indices)";
}

// The least range a task splits: two chunks, and once a chunk is timed, the indices that take
// split_floor by that timing (rounded up to a power of two); carried to the next call with the
// chunk size.
TEST(algo_split_floor, a_timed_chunk_sets_the_least_range_a_task_splits) {
  using std::chrono::nanoseconds;
  algo::detail::loop_control ctl(0, {}, nullptr);
  EXPECT_EQ(ctl.split_min(1), 2u) << "untimed: two chunks";
  EXPECT_EQ(ctl.split_estimate(), 0u);
  ctl.observe(1, nanoseconds(10)); // 10 ns per index: split_floor takes floor/10 indices
  std::size_t const expect =
      std::bit_ceil(static_cast<std::size_t>((algo::detail::split_floor.count() + 9) / 10));
  EXPECT_EQ(ctl.split_estimate(), expect);
  EXPECT_EQ(ctl.chunk(), 2u) << "a 10 ns chunk doubles";
  EXPECT_EQ(ctl.split_min(2), expect);
  EXPECT_EQ(ctl.split_min(expect), 2 * expect) << "never less than two chunks";
  // Costly iterations: one index takes longer than split_floor.
  ctl.observe(2, 4 * algo::detail::split_floor);
  EXPECT_EQ(ctl.split_estimate(), 1u);
  EXPECT_EQ(ctl.split_min(ctl.chunk()), 2 * ctl.chunk());
  // Carried to the next call of the same loop.
  algo::detail::loop_control next(0, {}, nullptr);
  next.start_from(8, 512);
  EXPECT_EQ(next.chunk(), 8u);
  EXPECT_EQ(next.split_min(8), 512u);
  // A fixed grain is the caller's: two grains, whatever was learned.
  algo::detail::loop_control fixed(64, {}, nullptr);
  fixed.start_from(8, 512);
  EXPECT_EQ(fixed.chunk(), 64u);
  EXPECT_EQ(fixed.split_min(64), 128u);
}

// A loop whose iterations cost a few ns each runs unsplit below split_floor on two workers, and
// its iterations all run; the next call starts from the estimate.
TEST(algo_split_floor, a_small_loop_runs_every_index_once_on_two_workers) {
  magpie::sched::lazy_pool pool(2);
  for (std::size_t const n :
       {std::size_t{1}, std::size_t{7}, std::size_t{100}, std::size_t{1000}, std::size_t{100000}}) {
    std::vector<std::atomic<int>> hits(n);
    for (int call = 0; call < 20; ++call) {
      magpie::for_range(pool, std::size_t{0}, n,
                        [&](std::size_t i) { hits[i].fetch_add(1, std::memory_order_relaxed); });
    }
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(hits[i].load(), 20) << "n = " << n << ", index " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(all, algo_control, ::testing::ValuesIn(all_schedulers()), sched_name());

} // namespace
} // namespace magpie::test
