#pragma once
// magpie/algo/scan.hpp — inclusive_scan and exclusive_scan.
//
//   magpie::inclusive_scan(pool, in.begin(), in.end(), out.begin());          // running sums
//   magpie::exclusive_scan(pool, in.begin(), in.end(), out.begin(), 0L);
//
// Two passes over fixed blocks (detail/blocks.hpp): the first reduces every block but the last,
// a serial pass turns the block sums into block offsets, the second scans every block from its
// offset. `op` must be associative (as for std::inclusive_scan); the grouping is fixed by n and
// the grain, so the result is the same on every run and worker count. The output may be the
// input (in place). Cost: 2 reads and 1 write per element, ≤ 2048 partials on the task's stack.

#include <cstddef>
#include <functional>
#include <iterator>
#include <optional>
#include <ranges>
#include <utility>

#include "magpie/algo/detail/blocks.hpp"
#include "magpie/algo/detail/loop.hpp"
#include "magpie/algo/options.hpp"
#include "magpie/core/stack_alloc.hpp"
#include "magpie/sched/sync_wait.hpp"

namespace magpie::algo {

namespace detail {

/// Scans one block from `carry` (none for the very first element when there is no init).
/// Exclusive: out[i] = carry ⊕ x₀ ⊕ … ⊕ xᵢ₋₁; inclusive: … ⊕ xᵢ. Reads x[i] before writing out[i].
template <bool Inclusive, typename T, typename I, typename O, typename Op>
void scan_block(I in, O out, std::size_t len, std::optional<T> carry, Op &op) {
  std::size_t i = 0;
  if (!carry) { // inclusive, first block, no init
    carry.emplace(at(in, 0));
    at(out, 0) = *carry;
    i = 1;
  }
  T acc = std::move(*carry);
  for (; i < len; ++i) {
    if constexpr (Inclusive) {
      acc = std::invoke(op, std::move(acc), at(in, i));
      at(out, i) = acc;
    } else {
      T next = std::invoke(op, acc, at(in, i));
      at(out, i) = std::move(acc);
      acc = std::move(next);
    }
  }
}

template <bool Inclusive, typename I, typename O, typename T, typename Op>
core::task<O> scan_impl(I first, std::size_t n, O d_first, std::optional<T> init, Op op,
                        loop_options opt) {
  if (n == 0) {
    co_return d_first;
  }
  block_plan const plan = plan_blocks(n, opt.grain);
  // offset[b]: what block b starts from (block sums first, then prefixes in place).
  auto offset = co_await core::stack_alloc<std::optional<T>>(plan.count);
  loop_control ctl(0, std::move(opt.stop), co_await core::enclosing_scope());
  identity id;
  auto up = [&](std::size_t lo, std::size_t hi) {
    for (std::size_t b = lo; b < hi; ++b) {
      offset[b].emplace(block_reduce<T>(nth(first, plan.begin(b)), plan.length(b, n), op, id));
    }
  };
  if (plan.count > 1) {
    co_await core::call(run_loop<decltype(up)>, &ctl, &up, plan.count - 1); // the last: unused
    co_await core::join();
    if (ctl.stopped()) {
      co_return nth(d_first, n);
    }
  }
  // Serial: block sums → block offsets (an exclusive scan of the sums, from init).
  std::optional<T> carry = std::move(init);
  for (std::size_t b = 0; b < plan.count; ++b) {
    std::optional<T> sum = std::move(offset[b]);
    offset[b] = carry;
    if (b + 1 < plan.count) {
      carry = carry ? std::optional<T>(std::invoke(op, std::move(*carry), std::move(*sum)))
                    : std::move(sum);
    }
  }
  auto down = [&](std::size_t lo, std::size_t hi) {
    for (std::size_t b = lo; b < hi; ++b) {
      scan_block<Inclusive, T>(nth(first, plan.begin(b)), nth(d_first, plan.begin(b)),
                               plan.length(b, n), std::move(offset[b]), op);
    }
  };
  co_await core::call(run_loop<decltype(down)>, &ctl, &down, plan.count);
  co_await core::join();
  co_return nth(d_first, n);
}

/// The value type a scan accumulates without an init (std::inclusive_scan's choice).
template <typename I>
using scan_value_t = std::iter_value_t<I>;

} // namespace detail

/// The type of magpie::inclusive_scan: out[i] = [init ⊕] x₀ ⊕ … ⊕ xᵢ (default ⊕ = +); returns the
/// end of the output.
struct inclusive_scan_fn {
  /// Inside a task: a task to `call` or `fork` (then `join`) on the caller's pool, splitting on
  /// demand.
  template <std::input_or_output_iterator I, std::input_or_output_iterator O,
            typename Op = std::plus<>>
  core::task<O> operator()(I first, I last, O d_first, Op op = {}, loop_options opt = {}) const {
    if constexpr (detail::require_random_access<I>() && detail::require_random_access<O>()) {
      return detail::scan_impl<true>(first, detail::count_between(first, last), d_first,
                                     std::optional<detail::scan_value_t<I>>(), std::move(op),
                                     std::move(opt));
    } else {
      return detail::rejected_iterator<O>();
    }
  }
  /// Blocking, from a plain thread: runs on scheduler `s` and returns when every started iteration
  /// has finished, rethrowing the first exception.
  template <sched::scheduler S, std::input_or_output_iterator I, std::input_or_output_iterator O,
            typename Op = std::plus<>>
  O operator()(S &s, I first, I last, O d_first, Op op = {}, loop_options opt = {}) const {
    if constexpr (detail::require_random_access<I>() && detail::require_random_access<O>()) {
      using T = detail::scan_value_t<I>;
      return sched::sync_wait(s, detail::scan_impl<true, I, O, T, Op>, first,
                              detail::count_between(first, last), d_first, std::optional<T>(),
                              std::move(op), std::move(opt));
    } else {
      return d_first;
    }
  }
  /// With an initial value: out[i] = init ⊕ x₀ ⊕ … ⊕ xᵢ.
  template <sched::scheduler S, std::input_or_output_iterator I, std::input_or_output_iterator O,
            typename Op, detail::not_options T>
  O operator()(S &s, I first, I last, O d_first, Op op, T init, loop_options opt = {}) const {
    if constexpr (detail::require_random_access<I>() && detail::require_random_access<O>()) {
      return sched::sync_wait(s, detail::scan_impl<true, I, O, T, Op>, first,
                              detail::count_between(first, last), d_first,
                              std::optional<T>(std::move(init)), std::move(op), std::move(opt));
    } else {
      return d_first;
    }
  }
  /// Blocking, over a range: the iterator form on std::ranges::begin(r) and its end.
  template <sched::scheduler S, std::ranges::range R, std::input_or_output_iterator O,
            typename Op = std::plus<>>
  O operator()(S &s, R &&r, O d_first, Op op = {}, loop_options opt = {}) const {
    return (*this)(s, std::ranges::begin(r), detail::end_of(r), d_first, std::move(op),
                   std::move(opt));
  }
};

/// Parallel std::inclusive_scan: see inclusive_scan_fn.
inline constexpr inclusive_scan_fn inclusive_scan{};

/// The type of magpie::exclusive_scan: out[i] = init ⊕ x₀ ⊕ … ⊕ xᵢ₋₁ (out[0] = init; default
/// ⊕ = +); returns the end of the output.
struct exclusive_scan_fn {
  /// Inside a task: a task to `call` or `fork` (then `join`) on the caller's pool, splitting on
  /// demand.
  template <std::input_or_output_iterator I, std::input_or_output_iterator O, typename T,
            typename Op = std::plus<>>
  core::task<O> operator()(I first, I last, O d_first, T init, Op op = {},
                           loop_options opt = {}) const {
    if constexpr (detail::require_random_access<I>() && detail::require_random_access<O>()) {
      return detail::scan_impl<false>(first, detail::count_between(first, last), d_first,
                                      std::optional<T>(std::move(init)), std::move(op),
                                      std::move(opt));
    } else {
      return detail::rejected_iterator<O>();
    }
  }
  /// Blocking, from a plain thread: runs on scheduler `s` and returns when every started iteration
  /// has finished, rethrowing the first exception.
  template <sched::scheduler S, std::input_or_output_iterator I, std::input_or_output_iterator O,
            typename T, typename Op = std::plus<>>
  O operator()(S &s, I first, I last, O d_first, T init, Op op = {}, loop_options opt = {}) const {
    if constexpr (detail::require_random_access<I>() && detail::require_random_access<O>()) {
      return sched::sync_wait(s, detail::scan_impl<false, I, O, T, Op>, first,
                              detail::count_between(first, last), d_first,
                              std::optional<T>(std::move(init)), std::move(op), std::move(opt));
    } else {
      return d_first;
    }
  }
  /// Blocking, over a range: the iterator form on std::ranges::begin(r) and its end.
  template <sched::scheduler S, std::ranges::range R, std::input_or_output_iterator O, typename T,
            typename Op = std::plus<>>
  O operator()(S &s, R &&r, O d_first, T init, Op op = {}, loop_options opt = {}) const {
    return (*this)(s, std::ranges::begin(r), detail::end_of(r), d_first, std::move(init),
                   std::move(op), std::move(opt));
  }
};

/// Parallel std::exclusive_scan: see exclusive_scan_fn.
inline constexpr exclusive_scan_fn exclusive_scan{};

} // namespace magpie::algo
