#pragma once
// magpie/algo/find.hpp — find_if, any_of, all_of, none_of: parallel searches that return early.
//
//   auto it = magpie::find_if(pool, v, pred);     // the FIRST match, as std::find_if
//   bool b = magpie::any_of(pool, v, pred);       // stops every task once one match is found
//
// find_if: once a match at index m is found, every iteration above m that has not started is
// skipped (those below still run: a smaller index may match too). any_of / all_of / none_of stop
// the whole search at the first match (counter-example) found, through the algorithm's stop flag,
// which running predicates see with magpie::stop_requested(). A stop token that fires first ends
// the search with "not found" (find_if returns a match only if it found one below every skipped
// index, else last; any_of returns what it saw).

#include <atomic>
#include <cstddef>
#include <functional>
#include <iterator>
#include <ranges>
#include <utility>

#include "magpie/algo/detail/loop.hpp"
#include "magpie/algo/options.hpp"
#include "magpie/sched/sync_wait.hpp"

namespace magpie::algo {

namespace detail {

/// The chunk body of find_if: records the smallest matching index.
template <typename I, typename Pred>
struct find_body {
  I first;
  Pred *pred;
  mutable std::atomic<std::size_t> best; ///< smallest match so far, or n

  /// Ranges starting at or above the best match are skipped by the engine (a hint: relaxed).
  std::size_t skip_from() const noexcept { return best.load(std::memory_order_relaxed); }

  void operator()(std::size_t lo, std::size_t hi) const {
    for (std::size_t i = lo; i < hi; ++i) {
      if (i >= best.load(std::memory_order_relaxed)) { // no edge: the index is the only data
        return;
      }
      if (std::invoke(*pred, at(first, i))) {
        std::size_t seen = best.load(std::memory_order_relaxed);
        // relaxed: an atomic minimum; the caller reads it after the join, which orders it.
        while (i < seen && !best.compare_exchange_weak(seen, i, std::memory_order_relaxed)) {
        }
        return;
      }
    }
  }
};

template <typename I, typename Pred>
core::task<I> find_if_impl(I first, std::size_t n, Pred pred, loop_options opt) {
  loop_control ctl(opt.grain, std::move(opt.stop), co_await core::enclosing_scope());
  find_body<I, Pred> body{first, &pred, {n}};
  co_await core::call(run_loop<find_body<I, Pred>>, &ctl, &body, n);
  co_await core::join();
  co_return nth(first, body.best.load(std::memory_order_relaxed)); // ordered by the join
}

/// Whether some element satisfies `pred` (Want = true) or fails it (Want = false), negated if
/// Negate.
template <bool Want, bool Negate, typename I, typename Pred>
core::task<bool> exists_impl(I first, std::size_t n, Pred pred, loop_options opt) {
  loop_control ctl(opt.grain, std::move(opt.stop), co_await core::enclosing_scope());
  std::atomic<bool> found{false};
  auto body = [&](std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) {
      if (static_cast<bool>(std::invoke(pred, at(first, i))) == Want) {
        found.store(true, std::memory_order_relaxed); // read after the join, which orders it
        ctl.request_stop();
        return;
      }
    }
  };
  co_await core::call(run_loop<decltype(body)>, &ctl, &body, n);
  co_await core::join();
  co_return found.load(std::memory_order_relaxed) != Negate;
}

} // namespace detail

/// The type of magpie::find_if: the first `it` in [first, last) with `pred(*it)`, or last.
struct find_if_fn {
  /// Inside a task: a task to `call` or `fork` (then `join`) on the caller's pool, splitting on
  /// demand.
  template <std::input_or_output_iterator I, typename Pred>
  core::task<I> operator()(I first, I last, Pred pred, loop_options opt = {}) const {
    if constexpr (detail::require_random_access<I>()) {
      return detail::find_if_impl(first, detail::count_between(first, last), std::move(pred),
                                  std::move(opt));
    } else {
      return detail::rejected_iterator<I>();
    }
  }
  /// Blocking, from a plain thread: runs on scheduler `s` and returns when every started iteration
  /// has finished, rethrowing the first exception.
  template <sched::scheduler S, std::input_or_output_iterator I, typename Pred>
  I operator()(S &s, I first, I last, Pred pred, loop_options opt = {}) const {
    if constexpr (detail::require_random_access<I>()) {
      return sched::sync_wait(s, detail::find_if_impl<I, Pred>, first,
                              detail::count_between(first, last), std::move(pred), std::move(opt));
    } else {
      return first;
    }
  }
  /// Blocking, over a range: the iterator form on std::ranges::begin(r) and its end.
  template <sched::scheduler S, std::ranges::range R, typename Pred>
  auto operator()(S &s, R &&r, Pred pred, loop_options opt = {}) const {
    return (*this)(s, std::ranges::begin(r), detail::end_of(r), std::move(pred), std::move(opt));
  }
};

/// Parallel std::find_if: see find_if_fn.
inline constexpr find_if_fn find_if{};

namespace detail {

/// any_of (Want = true, Result = found), none_of (true, !found), all_of (false, !found).
template <bool Want, bool Negate>
struct exists_fn {
  template <std::input_or_output_iterator I, typename Pred>
  core::task<bool> operator()(I first, I last, Pred pred, loop_options opt = {}) const {
    if constexpr (require_random_access<I>()) {
      return exists_impl<Want, Negate>(first, count_between(first, last), std::move(pred),
                                       std::move(opt));
    } else {
      return rejected_iterator<bool>();
    }
  }
  template <sched::scheduler S, std::input_or_output_iterator I, typename Pred>
  bool operator()(S &s, I first, I last, Pred pred, loop_options opt = {}) const {
    if constexpr (require_random_access<I>()) {
      return sched::sync_wait(s, exists_impl<Want, Negate, I, Pred>, first,
                              count_between(first, last), std::move(pred), std::move(opt));
    } else {
      return false;
    }
  }
  template <sched::scheduler S, std::ranges::range R, typename Pred>
  bool operator()(S &s, R &&r, Pred pred, loop_options opt = {}) const {
    return (*this)(s, std::ranges::begin(r), end_of(r), std::move(pred), std::move(opt));
  }
};

} // namespace detail

/// Parallel std::any_of: true if `pred` holds for some element.
inline constexpr detail::exists_fn<true, false> any_of{};
/// Parallel std::none_of: true if `pred` holds for no element.
inline constexpr detail::exists_fn<true, true> none_of{};
/// Parallel std::all_of: true if `pred` holds for every element.
inline constexpr detail::exists_fn<false, true> all_of{};

} // namespace magpie::algo
