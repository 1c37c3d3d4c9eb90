// The algorithms keep their contracts where they are easy to get wrong: scans and reduce with an
// associative operation that is not commutative (a 2×2 matrix product, string concatenation) at
// every block boundary, and sort / stable_sort after an exception from the comparator or from a
// move, or a stop: the range still holds a permutation of its elements, none lost.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "algo/algo_support.hpp"
#include "algo/contract_support.hpp"

namespace magpie::test {
namespace {

using algo_contract = algo_test;

/// Lengths around every boundary of the block scheme: runs inside a block (8), the 2,048 blocks,
/// block lengths 1→2 (4,096) and 4→5 (8,192), up to 10⁶ (10⁵ + 3 under sanitizers).
std::vector<std::size_t> boundary_sizes() {
  std::vector<std::size_t> v = {0,    1,    7,    8,     9,     2047,  2048,  2049,
                                8191, 8192, 8193, 16383, 16384, 16385, 100003};
  if (!sanitized) {
    v.push_back(1000000);
  }
  return v;
}

TEST_P(algo_contract, scans_keep_the_order_of_a_non_commutative_operation) {
  for (std::size_t n : boundary_sizes()) {
    auto const in = random_matrices(n, 7 * n + 1);
    mat2 const init = random_matrices(1, n + 99)[0];
    std::vector<mat2> out(n);
    std::vector<mat2> want(n);

    on([&](auto &s) { magpie::inclusive_scan(s, in.begin(), in.end(), out.begin(), mat_mul{}); });
    std::inclusive_scan(in.begin(), in.end(), want.begin(), mat_mul{});
    ASSERT_EQ(first_difference(out, want), n) << "inclusive_scan, n=" << n;

    on([&](auto &s) {
      magpie::inclusive_scan(s, in.begin(), in.end(), out.begin(), mat_mul{}, init);
    });
    std::inclusive_scan(in.begin(), in.end(), want.begin(), mat_mul{}, init);
    ASSERT_EQ(first_difference(out, want), n) << "inclusive_scan with init, n=" << n;

    on([&](auto &s) {
      magpie::exclusive_scan(s, in.begin(), in.end(), out.begin(), init, mat_mul{});
    });
    std::exclusive_scan(in.begin(), in.end(), want.begin(), init, mat_mul{});
    ASSERT_EQ(first_difference(out, want), n) << "exclusive_scan, n=" << n;

    // In place (the output is the input).
    std::vector<mat2> inout = in;
    on([&](auto &s) {
      magpie::exclusive_scan(s, inout.begin(), inout.end(), inout.begin(), init, mat_mul{});
    });
    ASSERT_EQ(first_difference(inout, want), n) << "exclusive_scan in place, n=" << n;
  }
}

TEST_P(algo_contract, reduce_keeps_the_order_of_a_non_commutative_operation) {
  for (std::size_t n : boundary_sizes()) {
    auto const in = random_matrices(n, 3 * n + 5);
    mat2 const init = random_matrices(1, n + 7)[0];
    mat2 const want = std::accumulate(in.begin(), in.end(), init, mat_mul{});
    mat2 const got =
        on([&](auto &s) { return magpie::reduce(s, in.begin(), in.end(), init, mat_mul{}); });
    ASSERT_EQ(got, want) << "reduce, n=" << n;
    // transform_reduce: the transformation's results, combined in order.
    mat2 const want_t = std::transform_reduce(in.begin(), in.end(), init, mat_mul{}, transposed{});
    mat2 const got_t = on([&](auto &s) {
      return magpie::transform_reduce(s, in.begin(), in.end(), init, mat_mul{}, transposed{});
    });
    ASSERT_EQ(got_t, want_t) << "transform_reduce, n=" << n;
  }
}

TEST_P(algo_contract, strings_concatenate_in_order_at_every_grain) {
  // The grain fixes the block length: blocks shorter than, at and above the four-run threshold.
  for (std::size_t n :
       {std::size_t{1}, std::size_t{9}, std::size_t{100}, std::size_t{2049}, std::size_t{4099}}) {
    std::vector<std::string> in(n);
    for (std::size_t i = 0; i < n; ++i) {
      in[i] = std::string(1, static_cast<char>('a' + static_cast<int>(i * 7 % 26)));
    }
    for (std::size_t grain : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{8},
                              std::size_t{9}, std::size_t{33}}) {
      magpie::loop_options const opt{.grain = grain};
      std::string const want = std::accumulate(in.begin(), in.end(), std::string(">"));
      std::string const got = on([&](auto &s) {
        return magpie::reduce(s, in.begin(), in.end(), std::string(">"), std::plus<>{}, opt);
      });
      ASSERT_EQ(got, want) << "reduce, n=" << n << " grain=" << grain;
      std::vector<std::string> out(n);
      std::vector<std::string> ref(n);
      on([&](auto &s) {
        magpie::inclusive_scan(s, in.begin(), in.end(), out.begin(), std::plus<>{}, opt);
      });
      std::inclusive_scan(in.begin(), in.end(), ref.begin(), std::plus<>{});
      ASSERT_EQ(first_difference(out, ref), n) << "inclusive_scan, n=" << n << " grain=" << grain;
      on([&](auto &s) {
        magpie::exclusive_scan(s, in.begin(), in.end(), out.begin(), std::string("<"),
                               std::plus<>{}, opt);
      });
      std::exclusive_scan(in.begin(), in.end(), ref.begin(), std::string("<"), std::plus<>{});
      ASSERT_EQ(first_difference(out, ref), n) << "exclusive_scan, n=" << n << " grain=" << grain;
    }
  }
}

TEST_P(algo_contract, scans_inside_a_task_keep_the_order) {
  std::size_t const n = 16385;
  auto const in = random_matrices(n, 11);
  std::vector<mat2> out(n);
  std::vector<mat2> want(n);
  std::inclusive_scan(in.begin(), in.end(), want.begin(), mat_mul{});
  m_sched.run(
      [](std::vector<mat2> const *src, std::vector<mat2> *dst) -> magpie::task<void> {
        co_await magpie::call(magpie::inclusive_scan, src->begin(), src->end(), dst->begin(),
                              mat_mul{}, magpie::loop_options{});
        co_await magpie::join();
      },
      &in, &out);
  EXPECT_EQ(first_difference(out, want), n);
}

TEST_P(algo_contract, declared_commutative_operations_give_the_same_sums) {
  for (std::size_t n : boundary_sizes()) {
    auto const v = random_values(n, n + 3);
    auto add = [](std::int64_t a, std::int64_t b) { return a + b; };
    std::int64_t const want = std::accumulate(v.begin(), v.end(), std::int64_t{5});
    EXPECT_EQ(on([&](auto &s) {
                return magpie::reduce(s, v.begin(), v.end(), std::int64_t{5},
                                      magpie::commutative(add));
              }),
              want)
        << n;
    std::vector<std::int64_t> out(n);
    std::vector<std::int64_t> ref(n);
    on([&](auto &s) {
      magpie::inclusive_scan(s, v.begin(), v.end(), out.begin(), magpie::commutative(add));
    });
    std::inclusive_scan(v.begin(), v.end(), ref.begin());
    ASSERT_EQ(out, ref) << n;
  }
}

// ---------------------------------------------------------------------------------------------
// Sorts: exceptions and stops leave a permutation.

/// Sorts v with a comparator that throws at its k-th call (counted over every worker); returns
/// whether it threw.
template <bool Stable, typename S, typename T>
bool sort_throwing_at(S &s, std::vector<T> &v, long k) {
  std::atomic<long> calls{0};
  auto comp = [&](T const &a, T const &b) {
    if (calls.fetch_add(1, std::memory_order_relaxed) + 1 == k) {
      throw std::runtime_error("comparator");
    }
    return sort_key(a) < sort_key(b);
  };
  try {
    if constexpr (Stable) {
      magpie::stable_sort(s, v, comp);
    } else {
      magpie::sort(s, v, comp);
    }
  } catch (std::runtime_error const &e) {
    EXPECT_STREQ(e.what(), "comparator");
    return true;
  }
  return false;
}

/// The throwing points: early (in the first partition or the first runs), middle, and late (in
/// the last merges), and beyond the last comparison (no throw).
std::vector<long> throw_points(std::size_t n) {
  auto const nl = static_cast<long>(n);
  return {1, 10, 1000, nl, 5 * nl, 10 * nl, 17 * nl, 40 * nl};
}

template <bool Stable>
void comparator_throws_keep_a_permutation(algo_contract &t, std::size_t n) {
  for (long k : throw_points(n)) {
    auto const original = random_values(n, static_cast<std::uint64_t>(k) + n, 1000);
    auto v = original;
    bool const threw = t.on([&](auto &s) { return sort_throwing_at<Stable>(s, v, k); });
    ASSERT_TRUE(same_elements(v, original)) << "k=" << k << " n=" << n << " threw=" << threw;
    if (!threw) {
      ASSERT_TRUE(std::is_sorted(v.begin(), v.end())) << k;
    }
  }
}

TEST_P(algo_contract, sort_comparator_throws_keep_a_permutation) {
  comparator_throws_keep_a_permutation<false>(*this, sized(300000, 30000));
}

TEST_P(algo_contract, stable_sort_comparator_throws_keep_a_permutation) {
  comparator_throws_keep_a_permutation<true>(*this, sized(300000, 30000));
}

template <bool Stable>
void strings_keep_a_permutation(algo_contract &t) {
  std::size_t const n = sized(20000, 5000);
  for (long k : throw_points(n)) {
    std::vector<std::string> original(n);
    std::mt19937_64 g(static_cast<std::uint64_t>(k));
    for (auto &x : original) {
      x = "long enough not to fit the small string buffer " + std::to_string(g() % 5000);
    }
    auto v = original;
    t.on([&](auto &s) { return sort_throwing_at<Stable>(s, v, k); });
    ASSERT_TRUE(same_elements(v, original)) << "k=" << k;
  }
}

TEST_P(algo_contract, sort_of_strings_loses_none_when_the_comparator_throws) {
  strings_keep_a_permutation<false>(*this);
}

TEST_P(algo_contract, stable_sort_of_strings_loses_none_when_the_comparator_throws) {
  strings_keep_a_permutation<true>(*this);
}

template <bool Stable>
void throwing_moves_keep_a_permutation(algo_contract &t) {
  std::size_t const n = sized(40000, 6000);
  for (long k : {1L, 100L, 5000L, 50000L, 200000L, 400000L, 900000L}) {
    std::vector<fragile> v;
    v.reserve(n);
    std::mt19937_64 g(static_cast<std::uint64_t>(k));
    for (std::size_t i = 0; i < n; ++i) {
      v.emplace_back(static_cast<long>(g() % 3000), static_cast<long>(i));
    }
    auto const original = ids_of(v);
    long const live = fragile::live().load();
    fragile::throw_at(k);
    bool threw = false;
    try {
      t.on([&](auto &s) {
        if constexpr (Stable) {
          magpie::stable_sort(s, v);
        } else {
          magpie::sort(s, v);
        }
      });
    } catch (std::runtime_error const &e) {
      EXPECT_STREQ(e.what(), "fragile move");
      threw = true;
    }
    fragile::throw_at(0);
    EXPECT_EQ(fragile::live().load(), live) << k;
    auto got = ids_of(v);
    std::sort(got.begin(), got.end());
    ASSERT_EQ(got, original) << "k=" << k << " threw=" << threw;
    if (!threw) {
      ASSERT_TRUE(std::is_sorted(v.begin(), v.end())) << k;
    }
  }
}

TEST_P(algo_contract, sort_throwing_moves_keep_a_permutation) {
  throwing_moves_keep_a_permutation<false>(*this);
}

TEST_P(algo_contract, stable_sort_throwing_moves_keep_a_permutation) {
  throwing_moves_keep_a_permutation<true>(*this);
}

TEST_P(algo_contract, tracked_values_are_neither_lost_nor_duplicated) {
  std::size_t const n = sized(60000, 8000);
  for (long k : throw_points(n)) {
    tracked_counters().reset();
    {
      std::vector<tracked> v;
      v.reserve(n);
      std::mt19937_64 g(static_cast<std::uint64_t>(k));
      for (std::size_t i = 0; i < n; ++i) {
        v.emplace_back(static_cast<long>(g() % 100000));
      }
      std::vector<long> original;
      for (auto const &x : v) {
        original.push_back(x.value());
      }
      on([&](auto &s) { return sort_throwing_at<true>(s, v, k); });
      EXPECT_EQ(tracked_counters().live(), static_cast<long>(n)) << k;
      std::vector<long> got;
      for (auto const &x : v) {
        got.push_back(x.value());
      }
      ASSERT_TRUE(same_elements(got, original)) << k;
    }
    EXPECT_EQ(tracked_counters().live(), 0) << k;
    EXPECT_EQ(tracked_counters().errors.load(), 0) << k;
  }
}

TEST_P(algo_contract, a_stop_leaves_a_permutation) {
  std::size_t const n = sized(50000, 8000);
  for (int stable = 0; stable < 2; ++stable) {
    for (long when : {1L, 1000L, 100000L, 400000L}) {
      std::vector<std::string> original(n);
      std::mt19937_64 g(static_cast<std::uint64_t>(when));
      for (auto &x : original) {
        x = "a string past the small buffer " + std::to_string(g() % 100000);
      }
      auto v = original;
      magpie::stop_source src;
      std::atomic<long> calls{0};
      auto comp = [&](std::string const &a, std::string const &b) {
        if (calls.fetch_add(1, std::memory_order_relaxed) + 1 == when) {
          src.request_stop();
        }
        return a < b;
      };
      magpie::loop_options opt{.stop = src.get_token()};
      on([&](auto &s) {
        if (stable != 0) {
          magpie::stable_sort(s, v, comp, opt);
        } else {
          magpie::sort(s, v, comp, opt);
        }
      });
      ASSERT_TRUE(same_elements(v, original)) << "stable=" << stable << " when=" << when;
    }
  }
}

TEST_P(algo_contract, equivalent_keys_sort_by_key_and_stable_sort_keeps_their_order) {
  // A strict weak order that is not total: pairs compared by their first member only.
  std::size_t const n = sized(200000, 20000);
  std::vector<std::pair<int, int>> v(n);
  std::mt19937 g(5);
  for (std::size_t i = 0; i < n; ++i) {
    v[i] = {static_cast<int>(g() % 50), static_cast<int>(i)};
  }
  auto by_key = [](auto const &a, auto const &b) { return a.first < b.first; };
  auto unstable = v;
  on([&](auto &s) { magpie::sort(s, unstable, by_key); });
  EXPECT_TRUE(std::is_sorted(unstable.begin(), unstable.end(), by_key));
  EXPECT_TRUE(same_elements(unstable, v));
  auto stable = v;
  auto want = v;
  on([&](auto &s) { magpie::stable_sort(s, stable, by_key); });
  std::stable_sort(want.begin(), want.end(), by_key);
  EXPECT_EQ(stable, want);
}

TEST_P(algo_contract, sorts_finish_at_every_small_grain) {
  // With grain 1 the merge once split two single elements into nothing and themselves forever.
  for (std::size_t grain : {std::size_t{1}, std::size_t{2}, std::size_t{3}}) {
    for (std::size_t n : {std::size_t{2}, std::size_t{3}, std::size_t{17}, std::size_t{1000}}) {
      auto const original = random_values(n, n + grain, 10);
      for (int stable = 0; stable < 2; ++stable) {
        auto v = original;
        magpie::loop_options const opt{.grain = grain};
        on([&](auto &s) {
          if (stable != 0) {
            magpie::stable_sort(s, v, std::less<>{}, opt);
          } else {
            magpie::sort(s, v, std::less<>{}, opt);
          }
        });
        auto want = original;
        std::stable_sort(want.begin(), want.end());
        ASSERT_EQ(v, want) << "grain=" << grain << " n=" << n << " stable=" << stable;
      }
    }
  }
}

TEST_P(algo_contract, move_only_values_sort) {
  std::size_t const n = sized(100000, 10000);
  for (int stable = 0; stable < 2; ++stable) {
    std::vector<std::unique_ptr<int>> v;
    std::mt19937 g(static_cast<unsigned>(stable));
    for (std::size_t i = 0; i < n; ++i) {
      v.push_back(std::make_unique<int>(static_cast<int>(g() % 1000)));
    }
    auto deref = [](auto const &a, auto const &b) { return *a < *b; };
    on([&](auto &s) {
      if (stable != 0) {
        magpie::stable_sort(s, v, deref);
      } else {
        magpie::sort(s, v, deref);
      }
    });
    ASSERT_TRUE(std::all_of(v.begin(), v.end(), [](auto const &p) { return p != nullptr; }));
    EXPECT_TRUE(std::is_sorted(v.begin(), v.end(), deref));
  }
}

TEST_P(algo_contract, find_if_returns_the_first_of_many_matches) {
  std::size_t const n = sized(500000, 50000);
  for (std::size_t first : {std::size_t{0}, std::size_t{1}, n / 3, n - 1}) {
    std::vector<int> v(n, 0);
    for (std::size_t i = first; i < n; i += 3) {
      v[i] = 1; // every third element from `first` on matches
    }
    auto it = on([&](auto &s) { return magpie::find_if(s, v, [](int x) { return x == 1; }); });
    EXPECT_EQ(it - v.begin(), static_cast<std::ptrdiff_t>(first));
  }
}

INSTANTIATE_TEST_SUITE_P(all, algo_contract, ::testing::ValuesIn(all_schedulers()), sched_name());

} // namespace
} // namespace magpie::test
