// Property-based checks of the parallel algorithms: random inputs, sizes (weighted towards tiny
// ones and block boundaries), schedulers and worker counts, grains and operation shapes
// (commutative or not, cheap or slow, throwing at a random call), each compared with the serial
// standard algorithm for value, stability and permutation. Each test runs cases for a fixed time.
//
// Every case is derived from (seed, case number). A failure prints both; to replay it:
//   MAGPIE_PROPERTY_SEED=<seed> MAGPIE_PROPERTY_CASE=<case> magpie_algo_property_test
// MAGPIE_PROPERTY_SECONDS sets the time per test (default 2).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <ranges>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "algo/algo_support.hpp"
#include "algo/contract_support.hpp"

namespace magpie::test {
namespace {

std::uint64_t env_u64(char const *name, std::uint64_t fallback) {
  char const *v = std::getenv(name);
  return v != nullptr ? std::strtoull(v, nullptr, 10) : fallback;
}

/// The seed of this run: MAGPIE_PROPERTY_SEED, or a fresh one.
std::uint64_t run_seed() {
  static std::uint64_t const seed = env_u64("MAGPIE_PROPERTY_SEED", std::random_device{}());
  return seed;
}

/// One random case: its generator, and the scheduler it runs on.
struct property_case {
  std::uint64_t seed;
  std::uint64_t number;
  std::mt19937_64 rng;
  std::unique_ptr<any_scheduler> sched;
  std::string where;

  property_case(std::uint64_t s, std::uint64_t k)
      : seed(s), number(k), rng(s * 0x9e3779b97f4a7c15ULL + k) {
    sched_param p{};
    switch (below(3)) {
    case 0:
      p = {sched_kind::inline_, 1};
      break;
    case 1:
      p = {sched_kind::busy, 1 + below(4)};
      break;
    default:
      p = {sched_kind::lazy, 1 + below(4)};
      break;
    }
    sched = std::make_unique<any_scheduler>(p);
    where = "MAGPIE_PROPERTY_SEED=" + std::to_string(seed) +
            " MAGPIE_PROPERTY_CASE=" + std::to_string(number) + " on " + to_string(p);
  }

  std::size_t below(std::size_t n) { return static_cast<std::size_t>(rng() % n); }
  bool coin() { return (rng() & 1U) != 0; }

  /// A size: tiny, near a block boundary, or anywhere up to 40,000.
  std::size_t size() {
    static constexpr std::size_t edges[] = {8, 2048, 4096, 8192, 16384};
    switch (below(4)) {
    case 0:
      return below(12);
    case 1:
      return edges[below(std::size(edges))] - 2 + below(5);
    default:
      return below(static_cast<std::size_t>(scaled(40000, 8000)));
    }
  }

  magpie::loop_options options() {
    magpie::loop_options o;
    if (below(3) == 0) {
      o.grain = 1 + below(64);
    }
    return o;
  }

  template <typename F>
  decltype(auto) on(F &&f) {
    return with_scheduler(*sched, std::forward<F>(f));
  }
};

/// Runs cases for the test's time budget (and at least one), or the one case
/// MAGPIE_PROPERTY_CASE names.
template <typename Check>
void for_cases(Check check) {
  auto const budget = std::chrono::seconds(env_u64("MAGPIE_PROPERTY_SECONDS", 2));
  std::uint64_t const seed = run_seed();
  if (char const *one = std::getenv("MAGPIE_PROPERTY_CASE")) {
    property_case c(seed, std::strtoull(one, nullptr, 10));
    watchdog const dog(current_test_name() + ", " + c.where); // a hang names its case
    SCOPED_TRACE(c.where);
    check(c);
    return;
  }
  auto const end = std::chrono::steady_clock::now() + budget;
  std::uint64_t k = 0;
  do {
    property_case c(seed, k++);
    watchdog const dog(current_test_name() + ", " + c.where);
    SCOPED_TRACE(c.where);
    check(c);
    if (::testing::Test::HasFatalFailure() || ::testing::Test::HasNonfatalFailure()) {
      return; // the first failing case is the one to replay
    }
  } while (std::chrono::steady_clock::now() < end);
  std::printf("%llu cases, seed %llu\n", static_cast<unsigned long long>(k),
              static_cast<unsigned long long>(seed));
}

/// x ↦ a·x + b modulo 2⁶⁴; composition (first f, then g) is associative and not commutative.
struct affine {
  std::uint64_t a = 1;
  std::uint64_t b = 0;
  friend bool operator==(affine const &, affine const &) = default;
};

/// Burns a little time (not optimised away): an "expensive" operation.
[[gnu::noinline]] std::uint64_t burn(std::uint64_t x) {
  for (int i = 0; i < 40; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  }
  return x;
}

/// The operation's shape for a case: slow or not, throwing at its k-th call or not (k = 0).
struct op_shape {
  bool slow = false;
  long throw_at = 0;
  std::shared_ptr<std::atomic<long>> calls = std::make_shared<std::atomic<long>>(0);

  void tick() const {
    long const c = calls->fetch_add(1, std::memory_order_relaxed) + 1;
    if (throw_at != 0 && c == throw_at) {
      throw std::runtime_error("property op");
    }
    if (slow) {
      static std::atomic<std::uint64_t> sink{0};
      sink.fetch_add(burn(static_cast<std::uint64_t>(c)), std::memory_order_relaxed);
    }
  }
};

op_shape random_shape(property_case &c, std::size_t n) {
  op_shape s;
  s.slow = c.below(5) == 0 && n < 5000;
  if (c.below(4) == 0 && n > 0) {
    s.throw_at = 1 + static_cast<long>(c.below(2 * n + 2));
  }
  return s;
}

struct compose {
  op_shape shape;
  affine operator()(affine const &f, affine const &g) const {
    shape.tick();
    return {g.a * f.a, g.a * f.b + g.b};
  }
};

struct add {
  op_shape shape;
  std::int64_t operator()(std::int64_t x, std::int64_t y) const {
    shape.tick();
    return x + y;
  }
};

std::vector<affine> random_affine(property_case &c, std::size_t n) {
  std::vector<affine> v(n);
  for (auto &f : v) {
    f = {c.rng() | 1U, c.rng()};
  }
  return v;
}

/// Calls `run`, which may throw the shape's exception; returns whether it did. A throw is
/// required when the throwing call comes before the fewest calls the algorithm must make.
template <typename Run>
bool runs_or_throws(op_shape const &shape, long must_calls, Run run) {
  try {
    run();
  } catch (std::runtime_error const &e) {
    EXPECT_STREQ(e.what(), "property op");
    EXPECT_NE(shape.throw_at, 0) << "an exception from an operation that never throws";
    return true;
  }
  EXPECT_FALSE(shape.throw_at != 0 && shape.throw_at <= must_calls)
      << "the operation threw at call " << shape.throw_at << " of at least " << must_calls
      << ", and the algorithm did not rethrow it";
  return false;
}

/// One scan case: `form` 0 inclusive, 1 inclusive with init, 2 exclusive; in place or not; `op`
/// (which may throw) against std's scan with `plain`.
template <typename T, typename Op, typename Plain>
void check_scan(property_case &c, std::vector<T> const &in, T const &init, Op op, Plain plain,
                op_shape const &shape, magpie::loop_options const &opt) {
  std::size_t const n = in.size();
  int const form = static_cast<int>(c.below(3));
  bool const in_place = c.below(4) == 0;
  SCOPED_TRACE("form=" + std::to_string(form) + " in_place=" + std::to_string(in_place));
  std::vector<T> out = in_place ? in : std::vector<T>(n);
  bool const threw = runs_or_throws(shape, static_cast<long>(n) - 1, [&] {
    c.on([&](auto &s) {
      auto first = in_place ? out.begin() : in.begin();
      auto last = in_place ? out.end() : in.end();
      if (form == 0) {
        magpie::inclusive_scan(s, first, last, out.begin(), op, opt);
      } else if (form == 1) {
        magpie::inclusive_scan(s, first, last, out.begin(), op, init, opt);
      } else {
        magpie::exclusive_scan(s, first, last, out.begin(), init, op, opt);
      }
    });
  });
  if (!threw) {
    std::vector<T> want(n);
    if (form == 0) {
      std::inclusive_scan(in.begin(), in.end(), want.begin(), plain);
    } else if (form == 1) {
      std::inclusive_scan(in.begin(), in.end(), want.begin(), plain, init);
    } else {
      std::exclusive_scan(in.begin(), in.end(), want.begin(), init, plain);
    }
    ASSERT_EQ(first_difference(out, want), n);
  }
}

TEST(algo_property, scans_match_the_serial_scan) {
  for_cases([](property_case &c) {
    std::size_t const n = c.size();
    auto const opt = c.options();
    op_shape const shape = random_shape(c, n);
    bool const commutative = c.coin();
    SCOPED_TRACE("n=" + std::to_string(n) + " grain=" + std::to_string(opt.grain) +
                 " commutative=" + std::to_string(commutative) +
                 " throw_at=" + std::to_string(shape.throw_at));
    if (commutative) {
      std::vector<std::int64_t> in(n);
      for (auto &x : in) {
        x = static_cast<std::int64_t>(c.rng() % 1000);
      }
      auto const init = static_cast<std::int64_t>(c.rng() % 100);
      check_scan(c, in, init, magpie::commutative(add{shape}), std::plus<>{}, shape, opt);
    } else {
      auto const in = random_affine(c, n);
      affine const init = random_affine(c, 1)[0];
      check_scan(c, in, init, compose{shape}, compose{}, shape, opt);
    }
  });
}

TEST(algo_property, reductions_match_the_serial_fold) {
  for_cases([](property_case &c) {
    std::size_t const n = c.size();
    auto const opt = c.options();
    op_shape const shape = random_shape(c, n);
    bool const transformed = c.coin();
    SCOPED_TRACE("n=" + std::to_string(n) + " grain=" + std::to_string(opt.grain) + " throw_at=" +
                 std::to_string(shape.throw_at) + " transformed=" + std::to_string(transformed));
    if (c.coin()) { // not commutative: in order
      auto const in = random_affine(c, n);
      affine const init = random_affine(c, 1)[0];
      compose const op{shape};
      auto square = [](affine const &f) { return affine{f.a * f.a, f.a * f.b + f.b}; };
      affine got;
      bool const threw = runs_or_throws(shape, static_cast<long>(n), [&] {
        got = c.on([&](auto &s) {
          return transformed
                     ? magpie::transform_reduce(s, in.begin(), in.end(), init, op, square, opt)
                     : magpie::reduce(s, in.begin(), in.end(), init, op, opt);
        });
      });
      if (!threw) {
        affine want = init;
        for (auto const &f : in) {
          want = compose{}(want, transformed ? square(f) : f);
        }
        ASSERT_EQ(got, want);
      }
    } else {
      std::vector<std::int64_t> in(n);
      for (auto &x : in) {
        x = static_cast<std::int64_t>(c.rng() % 2001) - 1000;
      }
      auto op = magpie::commutative(add{shape});
      auto twice = [](std::int64_t x) { return 2 * x; };
      std::int64_t got = 0;
      bool const threw = runs_or_throws(shape, static_cast<long>(n), [&] {
        got = c.on([&](auto &s) {
          return transformed ? magpie::transform_reduce(s, in.begin(), in.end(), std::int64_t{7},
                                                        op, twice, opt)
                             : magpie::reduce(s, in.begin(), in.end(), std::int64_t{7}, op, opt);
        });
      });
      if (!threw) {
        std::int64_t want = 7;
        for (auto x : in) {
          want += transformed ? 2 * x : x;
        }
        ASSERT_EQ(got, want);
      }
    }
  });
}

TEST(algo_property, sorts_are_sorted_permutations_and_stable_sort_is_stable) {
  for_cases([](property_case &c) {
    std::size_t const n = c.size();
    auto const opt = c.options();
    op_shape const shape = random_shape(c, n);
    bool const stable = c.coin();
    std::size_t const keys = 1 + c.below(c.coin() ? 4 : 100000); // few keys: many equal ones
    SCOPED_TRACE("n=" + std::to_string(n) + " grain=" + std::to_string(opt.grain) +
                 " throw_at=" + std::to_string(shape.throw_at) +
                 " stable=" + std::to_string(stable) + " keys=" + std::to_string(keys));
    std::vector<std::pair<std::int64_t, std::int64_t>> v(n); // (key, original position)
    for (std::size_t i = 0; i < n; ++i) {
      v[i] = {static_cast<std::int64_t>(c.rng() % keys), static_cast<std::int64_t>(i)};
    }
    auto const original = v;
    auto by_key = [shape](auto const &a, auto const &b) {
      shape.tick();
      return a.first < b.first;
    };
    bool const threw = runs_or_throws(shape, n < 2 ? 0 : static_cast<long>(n) - 1, [&] {
      c.on([&](auto &s) {
        if (stable) {
          magpie::stable_sort(s, v, by_key, opt);
        } else {
          magpie::sort(s, v, by_key, opt);
        }
      });
    });
    ASSERT_TRUE(same_elements(v, original)) << "not a permutation of the input";
    if (!threw) {
      if (stable) {
        auto want = original;
        std::stable_sort(want.begin(), want.end(),
                         [](auto const &a, auto const &b) { return a.first < b.first; });
        ASSERT_EQ(first_difference(v, want), n) << "not the stable order";
      } else {
        ASSERT_TRUE(std::is_sorted(v.begin(), v.end(),
                                   [](auto const &a, auto const &b) { return a.first < b.first; }));
      }
    }
  });
}

TEST(algo_property, loops_and_searches_match_the_serial_ones) {
  for_cases([](property_case &c) {
    std::size_t const n = c.size();
    auto const opt = c.options();
    op_shape const shape = random_shape(c, n);
    int const what = static_cast<int>(c.below(4)); // for_each, transform, find_if, any/all/none
    SCOPED_TRACE("n=" + std::to_string(n) + " grain=" + std::to_string(opt.grain) +
                 " throw_at=" + std::to_string(shape.throw_at) + " what=" + std::to_string(what));
    // `what` 1 also draws whether transform runs in place.
    std::vector<std::int64_t> v(n);
    std::int64_t const density = 1 + static_cast<std::int64_t>(c.below(3000));
    for (auto &x : v) {
      x = static_cast<std::int64_t>(c.rng() % static_cast<std::uint64_t>(density + 1));
    }
    auto pred = [shape](std::int64_t x) {
      shape.tick();
      return x == 0;
    };
    if (what == 0) {
      std::vector<std::atomic<int>> hits(n);
      bool const threw = runs_or_throws(shape, static_cast<long>(n), [&] {
        c.on([&](auto &s) {
          magpie::for_each_n(
              s, std::views::iota(std::size_t{0}).begin(), n,
              [&](std::size_t i) {
                shape.tick();
                hits[i].fetch_add(1, std::memory_order_relaxed);
              },
              opt);
        });
      });
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_LE(hits[i].load(), 1) << i;
        if (!threw) {
          ASSERT_EQ(hits[i].load(), 1) << i;
        }
      }
    } else if (what == 1) {
      bool const aliased = c.coin(); // transform in place: the output is the input
      std::vector<std::int64_t> out = aliased ? v : std::vector<std::int64_t>(n);
      auto const &src = aliased ? out : v;
      bool const threw = runs_or_throws(shape, static_cast<long>(n), [&] {
        c.on([&](auto &s) {
          magpie::transform(
              s, src.begin(), src.end(), out.begin(),
              [shape](std::int64_t x) {
                shape.tick();
                return 3 * x + 1;
              },
              opt);
        });
      });
      // After an exception each element is transformed or as it was (in place: the input).
      for (std::size_t i = 0; i < n; ++i) {
        std::int64_t const before = aliased ? v[i] : 0;
        if (!threw || out[i] != before) {
          ASSERT_EQ(out[i], 3 * v[i] + 1) << i;
        }
      }
    } else if (what == 2) {
      auto const want = std::find_if(v.begin(), v.end(), [](std::int64_t x) { return x == 0; });
      std::optional<std::vector<std::int64_t>::iterator> got;
      // find_if may stop before the throwing call: no call count is required.
      bool const threw = runs_or_throws(
          shape, 0, [&] { got = c.on([&](auto &s) { return magpie::find_if(s, v, pred, opt); }); });
      if (!threw) {
        ASSERT_EQ(*got - v.begin(), want - v.begin());
      }
    } else {
      bool const want_any = std::any_of(v.begin(), v.end(), [](std::int64_t x) { return x == 0; });
      bool const want_all = std::all_of(v.begin(), v.end(), [](std::int64_t x) { return x == 0; });
      bool got_any = false;
      bool got_all = false;
      bool got_none = false;
      bool const threw = runs_or_throws(shape, 0, [&] {
        c.on([&](auto &s) {
          got_any = magpie::any_of(s, v, pred, opt);
          got_all = magpie::all_of(s, v, pred, opt);
          got_none = magpie::none_of(s, v, pred, opt);
        });
      });
      if (!threw) {
        ASSERT_EQ(got_any, want_any);
        ASSERT_EQ(got_all, want_all);
        ASSERT_EQ(got_none, !want_any);
      }
    }
  });
}

} // namespace
} // namespace magpie::test
