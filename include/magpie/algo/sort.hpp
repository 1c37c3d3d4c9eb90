#pragma once
// magpie/algo/sort.hpp — sort (unstable: parallel quicksort) and stable_sort (parallel merge
// sort with a parallel merge).
//
//   magpie::sort(pool, v);                          // ascending, by operator<
//   magpie::stable_sort(pool, v, std::greater<>{});
//
// sort: a quicksort whose partitions (median of three, Hoare's scheme) are serial and whose two
// sides run as parallel tasks; a side shorter than the base size (2,048 elements, or the grain,
// at least 32) is sorted serially (std::sort where neither the comparator nor a move can throw,
// else the same quicksort with insertion sort below 32 elements); a
// recursion deeper than 2·log₂ n falls back to heap sort (an introsort: O(n log n) worst case).
// Keys equal to the pivot split evenly between the sides, so many equal keys cost no more than
// distinct ones. stable_sort: sorts halves in parallel, then
// merges them with a parallel merge (split at the longer run's middle, binary search in the
// other) through a buffer of n value_type elements (value_type must be default-constructible and
// move-assignable). Work O(n log n); span O(log³ n) for stable_sort, O(n) for sort (the first
// partition). Move-only value types are sorted by moves and swaps alone.
//
// Exceptions and stops never lose an element: after an exception from the comparator or from a
// move, rethrown once every running task has finished, or after a stop request, the range holds
// a permutation of its original elements, in an unspecified order (detail/serial_sort.hpp says
// how; a move that throws must leave its operands as they were, and not throw again at once).

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <functional>
#include <iterator>
#include <memory>
#include <ranges>
#include <utility>

#include "magpie/algo/detail/loop.hpp"
#include "magpie/algo/detail/serial_sort.hpp"
#include "magpie/algo/options.hpp"
#include "magpie/sched/sync_wait.hpp"

namespace magpie::algo {

namespace detail {

inline constexpr std::size_t sort_base = 2048;

template <typename I, typename Comp>
core::task<void> quicksort(loop_control *ctl, I first, std::size_t n, Comp *comp, std::size_t base,
                           int depth) {
  while (n > base && !ctl->stopped()) {
    std::size_t cut = 0;
    try {
      if (depth-- <= 0) {
        serial_sort(first, n, *comp, 0); // heap sort: bounded worst case
        n = 0;
        break;
      }
      cut = partition(first, n, *comp);
    } catch (...) {
      ctl->fail(std::current_exception());
      break;
    }
    // [0, cut) not above the pivot, [cut, n) not below it: the left side as a child, the right
    // side as our continuation (a thief takes it).
    co_await core::fork(quicksort<I, Comp>, ctl, first, cut, comp, base, depth);
    first = nth(first, cut);
    n -= cut;
  }
  if (n > 1 && n <= base && !ctl->stopped()) {
    try {
      sort_run(first, n, *comp, depth);
    } catch (...) {
      ctl->fail(std::current_exception());
    }
  }
  co_await core::join();
}

template <typename I, typename Comp>
core::task<void> sort_impl(I first, std::size_t n, Comp comp, loop_options opt) {
  loop_control ctl(opt.grain, std::move(opt.stop), co_await core::enclosing_scope());
  // Runs shorter than insertion sort's are never split (a partition needs 4 elements or more).
  std::size_t const base = std::max(opt.grain != 0 ? opt.grain : sort_base, insertion_base);
  co_await core::call(quicksort<I, Comp>, &ctl, first, n, &comp, base, sort_depth(n));
  co_await core::join();
  ctl.rethrow_if_failed();
}

/// Merges sorted [a, a + na) and [b, b + nb) into out (moving), stably (a's before b's on ties),
/// splitting at the longer side's middle. Every element reaches out: after an exception or a
/// stop the pieces not yet merged are moved there unmerged (merge_moving).
template <typename A, typename B, typename O, typename Comp>
core::task<void> merge(loop_control *ctl, A a, std::size_t na, B b, std::size_t nb, O out,
                       Comp *comp, std::size_t base) {
  // Past 2 elements the longer side has 2 or more, so both pieces of a split are shorter than
  // the whole (with base 1, two single elements would split into nothing and themselves forever).
  while (na + nb > std::max<std::size_t>(base, 2) && na != 0 && nb != 0 && !ctl->stopped()) {
    std::size_t ma = 0;
    std::size_t mb = 0;
    try {
      if (na >= nb) {
        ma = na / 2;
        mb = static_cast<std::size_t>(std::lower_bound(b, nth(b, nb), at(a, ma), *comp) -
                                      b); // b's < a[ma] go left
      } else {
        mb = nb / 2;
        ma = static_cast<std::size_t>(std::upper_bound(a, nth(a, na), at(b, mb), *comp) -
                                      a); // a's <= b[mb] go left
      }
    } catch (...) {
      ctl->fail(std::current_exception());
      break;
    }
    co_await core::fork(merge<A, B, O, Comp>, ctl, a, ma, b, mb, out, comp, base);
    out = nth(out, ma + mb);
    a = nth(a, ma);
    b = nth(b, mb);
    na -= ma;
    nb -= mb;
  }
  merge_moving(a, na, b, nb, out, *comp, *ctl); // after a stop: moves only
  co_await core::join();
}

/// Sorts [first, first + n) stably; every element lands in `first` (ToBuffer = false) or in
/// `buf` — sorted, or after an exception or a stop in some order (never lost).
template <bool ToBuffer, typename I, typename T, typename Comp>
core::task<void> merge_sort(loop_control *ctl, I first, T *buf, std::size_t n, Comp *comp,
                            std::size_t base) {
  if (n <= base || ctl->stopped()) {
    serial_merge_sort<ToBuffer>(first, buf, n, *comp, *ctl); // after a stop: moves only
    co_return;
  }
  std::size_t const h = n / 2;
  // Both halves land in the other array, then merge back into ours.
  co_await core::fork(merge_sort<!ToBuffer, I, T, Comp>, ctl, first, buf, h, comp, base);
  co_await core::call(merge_sort<!ToBuffer, I, T, Comp>, ctl, nth(first, h), buf + h, n - h, comp,
                      base);
  co_await core::join();
  if constexpr (ToBuffer) {
    co_await core::call(merge<I, I, T *, Comp>, ctl, first, h, nth(first, h), n - h, buf, comp,
                        base);
  } else {
    co_await core::call(merge<T *, T *, I, Comp>, ctl, buf, h, buf + h, n - h, first, comp, base);
  }
  co_await core::join();
}

template <typename I, typename Comp>
core::task<void> stable_sort_impl(I first, std::size_t n, Comp comp, loop_options opt) {
  using T = std::iter_value_t<I>;
  static_assert(std::default_initializable<T>,
                "magpie::stable_sort needs a default-constructible value_type (it merges through "
                "a buffer of n elements); use magpie::sort if stability is not needed");
  if (n < 2) {
    co_return;
  }
  loop_control ctl(opt.grain, std::move(opt.stop), co_await core::enclosing_scope());
  std::size_t const base = opt.grain != 0 ? opt.grain : sort_base;
  std::unique_ptr<T[]> buf(new T[n]); // freed after the join below (every task has finished)
  co_await core::call(merge_sort<false, I, T, Comp>, &ctl, first, buf.get(), n, &comp, base);
  co_await core::join();
  ctl.rethrow_if_failed();
}

/// The shared shape of sort and stable_sort's function objects.
template <bool Stable>
struct sort_fn {
  template <std::input_or_output_iterator I, typename Comp = std::ranges::less>
  core::task<void> operator()(I first, I last, Comp comp = {}, loop_options opt = {}) const {
    if constexpr (require_random_access<I>()) {
      if constexpr (Stable) {
        return stable_sort_impl(first, count_between(first, last), std::move(comp), std::move(opt));
      } else {
        return sort_impl(first, count_between(first, last), std::move(comp), std::move(opt));
      }
    } else {
      return rejected_iterator<void>();
    }
  }
  template <sched::scheduler S, std::input_or_output_iterator I, typename Comp = std::ranges::less>
  void operator()(S &s, I first, I last, Comp comp = {}, loop_options opt = {}) const {
    if constexpr (require_random_access<I>()) {
      if constexpr (Stable) {
        sched::sync_wait(s, stable_sort_impl<I, Comp>, first, count_between(first, last),
                         std::move(comp), std::move(opt));
      } else {
        sched::sync_wait(s, sort_impl<I, Comp>, first, count_between(first, last), std::move(comp),
                         std::move(opt));
      }
    }
  }
  template <sched::scheduler S, std::ranges::range R, typename Comp = std::ranges::less>
  void operator()(S &s, R &&r, Comp comp = {}, loop_options opt = {}) const {
    (*this)(s, std::ranges::begin(r), end_of(r), std::move(comp), std::move(opt));
  }
};

} // namespace detail

/// Parallel std::sort (unstable): see detail::sort_fn and the header comment.
inline constexpr detail::sort_fn<false> sort{};
/// Parallel std::stable_sort: see detail::sort_fn and the header comment.
inline constexpr detail::sort_fn<true> stable_sort{};

} // namespace magpie::algo
