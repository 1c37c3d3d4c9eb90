#pragma once
// magpie/algo/for_each.hpp — for_each, for_each_n, for_range and transform.
//
//   magpie::for_each(pool, v.begin(), v.end(), fn);          // from any thread: blocks
//   magpie::for_each(pool, v, fn, {.stop = token});          // a range; options
//   co_await magpie::call(magpie::for_each, first, last, fn); // inside a task: an async function
//
// Every iteration runs exactly once (unless stopped or an iteration throws), on any worker, in
// any order; distinct iterations may run concurrently, so `fn` must not race with itself. The
// blocking forms take a scheduler (a pool or an inline_scheduler) as their first argument; the
// others are async functions to start with fork/call/sync_wait (their arguments as given).

#include <concepts>
#include <cstddef>
#include <functional>
#include <iterator>
#include <ranges>
#include <type_traits>
#include <utility>

#include "magpie/algo/detail/loop.hpp"
#include "magpie/algo/options.hpp"
#include "magpie/sched/sync_wait.hpp"

namespace magpie::algo {

namespace detail {

template <typename I, typename Fn>
core::task<void> for_each_impl(I first, std::size_t n, Fn fn, loop_options opt) {
  loop_control ctl(opt.grain, std::move(opt.stop), co_await core::enclosing_scope());
  auto body = [&](std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) {
      std::invoke(fn, at(first, i));
    }
  };
  co_await core::call(run_loop<decltype(body)>, &ctl, &body, n);
  co_await core::join();
}

template <typename I, typename Fn>
core::task<I> for_each_n_impl(I first, std::size_t n, Fn fn, loop_options opt) {
  co_await core::call(for_each_impl<I, Fn>, first, n, std::move(fn), std::move(opt));
  co_await core::join();
  co_return nth(first, n);
}

template <typename Int, typename Fn>
core::task<void> for_range_impl(Int lo, Int hi, Fn fn, loop_options opt) {
  loop_control ctl(opt.grain, std::move(opt.stop), co_await core::enclosing_scope());
  auto body = [&](std::size_t a, std::size_t b) {
    for (std::size_t i = a; i < b; ++i) {
      std::invoke(fn, static_cast<Int>(lo + static_cast<Int>(i)));
    }
  };
  std::size_t const n = hi > lo ? static_cast<std::size_t>(hi - lo) : 0;
  co_await core::call(run_loop<decltype(body)>, &ctl, &body, n);
  co_await core::join();
}

template <typename I, typename O, typename Op>
core::task<O> transform_impl(I first, std::size_t n, O d_first, Op op, loop_options opt) {
  loop_control ctl(opt.grain, std::move(opt.stop), co_await core::enclosing_scope());
  auto body = [&](std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) {
      at(d_first, i) = std::invoke(op, at(first, i));
    }
  };
  co_await core::call(run_loop<decltype(body)>, &ctl, &body, n);
  co_await core::join();
  co_return nth(d_first, n);
}

template <typename I1, typename I2, typename O, typename Op>
core::task<O> transform2_impl(I1 first1, std::size_t n, I2 first2, O d_first, Op op,
                              loop_options opt) {
  loop_control ctl(opt.grain, std::move(opt.stop), co_await core::enclosing_scope());
  auto body = [&](std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) {
      at(d_first, i) = std::invoke(op, at(first1, i), at(first2, i));
    }
  };
  co_await core::call(run_loop<decltype(body)>, &ctl, &body, n);
  co_await core::join();
  co_return nth(d_first, n);
}

} // namespace detail

/// The type of magpie::for_each: `fn(*it)` for every `it` in [first, last).
struct for_each_fn {
  /// Async form: `co_await magpie::call(magpie::for_each, first, last, fn)`.
  template <std::input_or_output_iterator I, typename Fn>
  core::task<void> operator()(I first, I last, Fn fn, loop_options opt = {}) const {
    if constexpr (detail::require_random_access<I>()) {
      return detail::for_each_impl(first, detail::count_between(first, last), std::move(fn),
                                   std::move(opt));
    } else {
      return detail::rejected_iterator<void>();
    }
  }
  /// Async form over a random-access range (which must outlive the task).
  template <std::ranges::range R, typename Fn>
  core::task<void> operator()(R &&r, Fn fn, loop_options opt = {}) const {
    return (*this)(std::ranges::begin(r), detail::end_of(r), std::move(fn), std::move(opt));
  }
  /// Blocking form: runs on `s` and returns when every iteration has finished; rethrows the first
  /// exception an iteration threw.
  template <sched::scheduler S, std::input_or_output_iterator I, typename Fn>
  void operator()(S &s, I first, I last, Fn fn, loop_options opt = {}) const {
    if constexpr (detail::require_random_access<I>()) {
      sched::sync_wait(s, detail::for_each_impl<I, Fn>, first, detail::count_between(first, last),
                       std::move(fn), std::move(opt));
    }
  }
  /// Blocking form over a range.
  template <sched::scheduler S, std::ranges::range R, typename Fn>
  void operator()(S &s, R &&r, Fn fn, loop_options opt = {}) const {
    (*this)(s, std::ranges::begin(r), detail::end_of(r), std::move(fn), std::move(opt));
  }
};

/// Parallel std::for_each: see for_each_fn.
inline constexpr for_each_fn for_each{};

/// The type of magpie::for_each_n: `fn(first[i])` for i in [0, n); returns first + n.
struct for_each_n_fn {
  /// Inside a task: a task to `call` or `fork` (then `join`) on the caller's pool, splitting on
  /// demand.
  template <std::input_or_output_iterator I, std::integral N, typename Fn>
  core::task<I> operator()(I first, N n, Fn fn, loop_options opt = {}) const {
    if constexpr (detail::require_random_access<I>()) {
      return detail::for_each_n_impl(first, n > 0 ? static_cast<std::size_t>(n) : 0, std::move(fn),
                                     std::move(opt));
    } else {
      return detail::rejected_iterator<I>();
    }
  }
  /// Blocking, from a plain thread: runs on scheduler `s` and returns when every started iteration
  /// has finished, rethrowing the first exception.
  template <sched::scheduler S, std::input_or_output_iterator I, std::integral N, typename Fn>
  I operator()(S &s, I first, N n, Fn fn, loop_options opt = {}) const {
    if constexpr (detail::require_random_access<I>()) {
      return sched::sync_wait(s, detail::for_each_n_impl<I, Fn>, first,
                              n > 0 ? static_cast<std::size_t>(n) : 0, std::move(fn),
                              std::move(opt));
    } else {
      return first;
    }
  }
};

/// Parallel std::for_each_n: see for_each_n_fn.
inline constexpr for_each_n_fn for_each_n{};

/// The type of magpie::for_range: `fn(i)` for every integer i in [lo, hi) (none if hi <= lo).
struct for_range_fn {
  /// Inside a task: a task to `call` or `fork` (then `join`) on the caller's pool, splitting on
  /// demand.
  template <std::integral Int, typename Fn>
  core::task<void> operator()(Int lo, std::type_identity_t<Int> hi, Fn fn,
                              loop_options opt = {}) const {
    return detail::for_range_impl(lo, hi, std::move(fn), std::move(opt));
  }
  /// Blocking, from a plain thread: runs on scheduler `s` and returns when every started iteration
  /// has finished, rethrowing the first exception.
  template <sched::scheduler S, std::integral Int, typename Fn>
  void operator()(S &s, Int lo, std::type_identity_t<Int> hi, Fn fn, loop_options opt = {}) const {
    sched::sync_wait(s, detail::for_range_impl<Int, Fn>, lo, hi, std::move(fn), std::move(opt));
  }
};

/// A parallel index loop: see for_range_fn.
inline constexpr for_range_fn for_range{};

/// The type of magpie::transform: `d_first[i] = op(first[i])` (or `op(first1[i], first2[i])`);
/// returns d_first + n. The output may be the input (in place); other overlaps are undefined.
struct transform_fn {
  /// Inside a task: a task to `call` or `fork` (then `join`) on the caller's pool, splitting on
  /// demand.
  template <std::input_or_output_iterator I, std::input_or_output_iterator O, typename Op>
  core::task<O> operator()(I first, I last, O d_first, Op op, loop_options opt = {}) const {
    if constexpr (detail::require_random_access<I>() && detail::require_random_access<O>()) {
      return detail::transform_impl(first, detail::count_between(first, last), d_first,
                                    std::move(op), std::move(opt));
    } else {
      return detail::rejected_iterator<O>();
    }
  }
  /// Inside a task: a task to `call` or `fork` (then `join`) on the caller's pool, splitting on
  /// demand.
  template <std::input_or_output_iterator I1, std::input_or_output_iterator I2,
            std::input_or_output_iterator O, detail::not_options Op>
  core::task<O> operator()(I1 first1, I1 last1, I2 first2, O d_first, Op op,
                           loop_options opt = {}) const {
    if constexpr (detail::require_random_access<I1>() && detail::require_random_access<I2>() &&
                  detail::require_random_access<O>()) {
      return detail::transform2_impl(first1, detail::count_between(first1, last1), first2, d_first,
                                     std::move(op), std::move(opt));
    } else {
      return detail::rejected_iterator<O>();
    }
  }
  /// Blocking, from a plain thread: runs on scheduler `s` and returns when every started iteration
  /// has finished, rethrowing the first exception.
  template <sched::scheduler S, std::input_or_output_iterator I, std::input_or_output_iterator O,
            typename Op>
  O operator()(S &s, I first, I last, O d_first, Op op, loop_options opt = {}) const {
    if constexpr (detail::require_random_access<I>() && detail::require_random_access<O>()) {
      return sched::sync_wait(s, detail::transform_impl<I, O, Op>, first,
                              detail::count_between(first, last), d_first, std::move(op),
                              std::move(opt));
    } else {
      return d_first;
    }
  }
  /// Blocking, from a plain thread: runs on scheduler `s` and returns when every started iteration
  /// has finished, rethrowing the first exception.
  template <sched::scheduler S, std::input_or_output_iterator I1, std::input_or_output_iterator I2,
            std::input_or_output_iterator O, detail::not_options Op>
  O operator()(S &s, I1 first1, I1 last1, I2 first2, O d_first, Op op,
               loop_options opt = {}) const {
    if constexpr (detail::require_random_access<I1>() && detail::require_random_access<I2>() &&
                  detail::require_random_access<O>()) {
      return sched::sync_wait(s, detail::transform2_impl<I1, I2, O, Op>, first1,
                              detail::count_between(first1, last1), first2, d_first, std::move(op),
                              std::move(opt));
    } else {
      return d_first;
    }
  }
  /// Blocking, over a range: the iterator form on std::ranges::begin(r) and its end.
  template <sched::scheduler S, std::ranges::range R, std::input_or_output_iterator O, typename Op>
  O operator()(S &s, R &&r, O d_first, Op op, loop_options opt = {}) const {
    return (*this)(s, std::ranges::begin(r), detail::end_of(r), d_first, std::move(op),
                   std::move(opt));
  }
};

/// Parallel std::transform: see transform_fn.
inline constexpr transform_fn transform{};

} // namespace magpie::algo
