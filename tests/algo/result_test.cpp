// The parallel algorithms give the serial standard algorithms' results, on every scheduler, at
// sizes 0, 1, small primes and large, in their blocking and async forms.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "algo/algo_support.hpp"

namespace magpie::test {
namespace {

using algo_results = algo_test;

TEST_P(algo_results, for_each_runs_every_iteration_once) {
  for (std::size_t n : algo_sizes()) {
    std::vector<std::atomic<int>> hits(n);
    on([&](auto &s) { magpie::for_each(s, hits.begin(), hits.end(), [](auto &h) { ++h; }); });
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
    }
    std::vector<int> v(n, 1);
    on([&](auto &s) { magpie::for_each(s, v, [](int &x) { x += 2; }); });
    EXPECT_EQ(std::count(v.begin(), v.end(), 3), static_cast<std::ptrdiff_t>(n));
  }
}

TEST_P(algo_results, for_each_n_and_for_range) {
  for (std::size_t n : algo_sizes()) {
    std::vector<long> v(n + 5, 0);
    auto end =
        on([&](auto &s) { return magpie::for_each_n(s, v.begin(), n, [](long &x) { ++x; }); });
    EXPECT_EQ(end - v.begin(), static_cast<std::ptrdiff_t>(n));
    EXPECT_EQ(std::accumulate(v.begin(), v.end(), 0L), static_cast<long>(n));
    std::vector<std::atomic<int>> hits(n);
    on([&](auto &s) {
      magpie::for_range(s, std::int64_t{-3}, static_cast<std::int64_t>(n) - 3,
                        [&](std::int64_t i) { ++hits[static_cast<std::size_t>(i + 3)]; });
    });
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
    }
  }
  std::atomic<int> none{0};
  on([&](auto &s) { magpie::for_range(s, 5, 2, [&](int) { ++none; }); });
  EXPECT_EQ(none.load(), 0);
}

TEST_P(algo_results, transform_unary_binary_and_in_place) {
  for (std::size_t n : algo_sizes()) {
    auto a = random_values(n, n + 1);
    auto b = random_values(n, n + 2);
    std::vector<std::int64_t> out(n), want(n);
    auto end = on([&](auto &s) {
      return magpie::transform(s, a.begin(), a.end(), out.begin(), [](auto x) { return 3 * x; });
    });
    std::transform(a.begin(), a.end(), want.begin(), [](auto x) { return 3 * x; });
    EXPECT_EQ(end, out.end());
    EXPECT_EQ(out, want);
    on([&](auto &s) {
      magpie::transform(s, a.begin(), a.end(), b.begin(), out.begin(), std::minus<>{});
    });
    std::transform(a.begin(), a.end(), b.begin(), want.begin(), std::minus<>{});
    EXPECT_EQ(out, want);
    auto c = a; // in place, over a range
    on([&](auto &s) { magpie::transform(s, c, c.begin(), [](auto x) { return x + 1; }); });
    std::transform(a.begin(), a.end(), want.begin(), [](auto x) { return x + 1; });
    EXPECT_EQ(c, want);
  }
}

TEST_P(algo_results, reduce_and_transform_reduce_equal_serial) {
  for (std::size_t n : algo_sizes()) {
    auto v = random_values(n, 7 * n + 3);
    EXPECT_EQ(on([&](auto &s) { return magpie::reduce(s, v.begin(), v.end()); }),
              std::reduce(v.begin(), v.end()));
    EXPECT_EQ(on([&](auto &s) { return magpie::reduce(s, v, std::int64_t{5}); }),
              std::reduce(v.begin(), v.end(), std::int64_t{5}));
    auto mx = [](std::int64_t a, std::int64_t b) { return std::max(a, b); };
    EXPECT_EQ(on([&](auto &s) { return magpie::reduce(s, v, INT64_MIN, mx); }),
              std::reduce(v.begin(), v.end(), INT64_MIN, mx));
    auto sq = [](std::int64_t x) { return x * x % 1000; };
    EXPECT_EQ(on([&](auto &s) { return magpie::transform_reduce(s, v, 0L, std::plus<>{}, sq); }),
              std::transform_reduce(v.begin(), v.end(), 0L, std::plus<>{}, sq));
    auto w = random_values(n, n + 99, 1000);
    EXPECT_EQ(on([&](auto &s) {
                return magpie::transform_reduce(s, v.begin(), v.end(), w.begin(), std::int64_t{1});
              }),
              std::transform_reduce(v.begin(), v.end(), w.begin(), std::int64_t{1}));
  }
}

/// Doubles of mixed magnitudes (2^-39 … 10^5), whose sums depend on the grouping.
std::vector<double> mixed_magnitudes(std::uint64_t seed) {
  std::vector<double> v(static_cast<std::size_t>(scaled(100003, 20011)));
  std::mt19937_64 g(seed);
  for (auto &x : v) {
    x = std::ldexp(static_cast<double>(g() % 100000), -static_cast<int>(g() % 40));
  }
  return v;
}

TEST_P(algo_results, floating_reduce_is_deterministic) {
  auto const v = mixed_magnitudes(5);
  double const first = on([&](auto &s) { return magpie::reduce(s, v); });
  for (int r = 0; r < 5; ++r) {
    EXPECT_EQ(on([&](auto &s) { return magpie::reduce(s, v); }), first); // bit for bit
  }
  EXPECT_NEAR(first, std::accumulate(v.begin(), v.end(), 0.0), 1e-9 * std::abs(first) + 1e-9);
  magpie::inline_scheduler one; // another worker count: the same grouping, the same bits
  EXPECT_EQ(magpie::reduce(one, v), first);
}

// A block's output does not depend on whether the first pass scanned it (the blocks before it
// were done) or the second pass did: both start from the offset the two-pass grouping gives
// (offsets chained from the blocks' four-accumulator sums). Checked bit for bit against that
// grouping computed here, on one worker (every block in the first pass), on the pool (a mix that
// depends on timing) and with a grain that makes many small blocks.
TEST_P(algo_results, floating_scan_is_deterministic_whichever_pass_scans_a_block) {
  auto const v = mixed_magnitudes(9);
  std::size_t const n = v.size();
  for (std::size_t grain : {std::size_t{0}, std::size_t{37}}) {
    auto const plan = magpie::algo::detail::plan_blocks(n, grain);
    std::vector<double> want(n);
    double offset = 0.5; // the init
    magpie::algo::detail::identity id;
    std::plus<> plus;
    for (std::size_t b = 0; b < plan.count; ++b) {
      double acc = offset;
      for (std::size_t i = plan.begin(b); i < plan.begin(b) + plan.length(b, n); ++i) {
        want[i] = acc = acc + v[i];
      }
      offset += magpie::algo::detail::block_reduce<double>(v.data() + plan.begin(b),
                                                           plan.length(b, n), plus, id);
    }
    magpie::loop_options opt;
    opt.grain = grain;
    std::vector<double> out(n);
    for (int r = 0; r < 3; ++r) {
      std::fill(out.begin(), out.end(), -1.0);
      on([&](auto &s) {
        magpie::inclusive_scan(s, v.begin(), v.end(), out.begin(), std::plus<>{}, 0.5, opt);
      });
      ASSERT_EQ(out, want) << "grain " << grain << ", round " << r; // bit for bit
    }
    magpie::inline_scheduler one;
    std::fill(out.begin(), out.end(), -1.0);
    magpie::inclusive_scan(one, v.begin(), v.end(), out.begin(), std::plus<>{}, 0.5, opt);
    EXPECT_EQ(out, want) << "one worker, grain " << grain;
  }
}

TEST_P(algo_results, scans_equal_serial_including_in_place) {
  for (std::size_t n : algo_sizes()) {
    auto v = random_values(n, 3 * n + 1);
    std::vector<std::int64_t> out(n), want(n);
    EXPECT_EQ(
        on([&](auto &s) { return magpie::inclusive_scan(s, v.begin(), v.end(), out.begin()); }),
        out.end());
    std::inclusive_scan(v.begin(), v.end(), want.begin());
    EXPECT_EQ(out, want) << "inclusive n=" << n;
    on([&](auto &s) {
      magpie::inclusive_scan(s, v.begin(), v.end(), out.begin(), std::plus<>{}, std::int64_t{-7});
    });
    std::inclusive_scan(v.begin(), v.end(), want.begin(), std::plus<>{}, std::int64_t{-7});
    EXPECT_EQ(out, want) << "inclusive with init n=" << n;
    on([&](auto &s) { magpie::exclusive_scan(s, v, out.begin(), std::int64_t{11}); });
    std::exclusive_scan(v.begin(), v.end(), want.begin(), std::int64_t{11});
    EXPECT_EQ(out, want) << "exclusive n=" << n;
    auto in_place = v;
    on([&](auto &s) {
      magpie::exclusive_scan(s, in_place.begin(), in_place.end(), in_place.begin(),
                             std::int64_t{0});
    });
    std::exclusive_scan(v.begin(), v.end(), want.begin(), std::int64_t{0});
    EXPECT_EQ(in_place, want) << "exclusive in place n=" << n;
    std::vector<std::string> words(n % 50);
    for (std::size_t i = 0; i < words.size(); ++i) {
      words[i] = std::string(1, static_cast<char>('a' + i % 26)); // not commutative: order matters
    }
    std::vector<std::string> got(words.size()), ref(words.size());
    on([&](auto &s) { magpie::inclusive_scan(s, words, got.begin()); });
    std::inclusive_scan(words.begin(), words.end(), ref.begin());
    EXPECT_EQ(got, ref);
  }
}

TEST_P(algo_results, sorts_equal_std_sort_and_stable_sort) {
  for (std::size_t n : algo_sizes()) {
    for (std::int64_t range : {std::int64_t{3}, std::int64_t{1} << 40}) { // many equal keys, few
      auto v = random_values(n, n * 5 + static_cast<std::uint64_t>(range % 7), range);
      auto want = v;
      std::sort(want.begin(), want.end());
      auto got = v;
      on([&](auto &s) { magpie::sort(s, got); });
      EXPECT_EQ(got, want) << "sort n=" << n;
      // Stability: sort pairs by key only; equal keys keep their input order.
      std::vector<std::pair<std::int64_t, std::size_t>> p(n), q;
      for (std::size_t i = 0; i < n; ++i) {
        p[i] = {v[i] % 97, i};
      }
      q = p;
      auto by_key = [](auto const &a, auto const &b) { return a.first < b.first; };
      on([&](auto &s) { magpie::stable_sort(s, p.begin(), p.end(), by_key); });
      std::stable_sort(q.begin(), q.end(), by_key);
      EXPECT_EQ(p, q) << "stable_sort n=" << n;
    }
  }
  std::vector<int> sorted(5000), reversed(5000);
  std::iota(sorted.begin(), sorted.end(), 0);
  std::iota(reversed.rbegin(), reversed.rend(), 0);
  on([&](auto &s) { magpie::sort(s, reversed, std::ranges::less{}, {.grain = 16}); });
  EXPECT_EQ(reversed, sorted);
}

TEST_P(algo_results, find_if_returns_the_first_match) {
  for (std::size_t n : algo_sizes()) {
    auto v = random_values(n, n + 17, 100);
    for (std::int64_t key : {std::int64_t{-50}, std::int64_t{7}, std::int64_t{1000}}) {
      auto pred = [key](std::int64_t x) { return x == key; };
      auto got = on([&](auto &s) { return magpie::find_if(s, v.begin(), v.end(), pred); });
      EXPECT_EQ(got, std::find_if(v.begin(), v.end(), pred)) << "n=" << n << " key=" << key;
      EXPECT_EQ(on([&](auto &s) { return magpie::any_of(s, v, pred); }),
                std::any_of(v.begin(), v.end(), pred));
      EXPECT_EQ(on([&](auto &s) { return magpie::none_of(s, v, pred); }),
                std::none_of(v.begin(), v.end(), pred));
      auto not_key = [key](std::int64_t x) { return x != key; };
      EXPECT_EQ(on([&](auto &s) { return magpie::all_of(s, v, not_key); }),
                std::all_of(v.begin(), v.end(), not_key));
    }
  }
}

/// The async forms, started from a task with call and fork.
task<std::int64_t> async_pipeline(std::vector<std::int64_t> *v, std::vector<std::int64_t> *out) {
  std::int64_t total = 0;
  std::vector<std::int64_t>::iterator end;
  auto twice = [](std::int64_t &x) { x *= 2; };
  co_await magpie::call(magpie::for_each, v->begin(), v->end(), twice);
  co_await magpie::call(&end, magpie::inclusive_scan, v->begin(), v->end(), out->begin(),
                        std::plus<>{}, magpie::loop_options{});
  co_await magpie::call(&total, magpie::reduce, v->begin(), v->end(), std::int64_t{0},
                        std::plus<>{}, magpie::loop_options{});
  co_await magpie::join();
  co_return total;
}

TEST_P(algo_results, async_forms_compose_inside_tasks) {
  for (std::size_t n : algo_sizes()) {
    auto v = random_values(n, n);
    auto doubled = v;
    for (auto &x : doubled) {
      x *= 2;
    }
    std::vector<std::int64_t> out(n), want(n);
    std::int64_t const total = m_sched.run(async_pipeline, &v, &out);
    std::inclusive_scan(doubled.begin(), doubled.end(), want.begin());
    EXPECT_EQ(v, doubled);
    EXPECT_EQ(out, want);
    EXPECT_EQ(total, std::reduce(doubled.begin(), doubled.end()));
  }
}

INSTANTIATE_TEST_SUITE_P(all, algo_results, ::testing::ValuesIn(all_schedulers()), sched_name());

} // namespace
} // namespace magpie::test
