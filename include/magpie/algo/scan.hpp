#pragma once
// magpie/algo/scan.hpp — inclusive_scan and exclusive_scan.
//
//   magpie::inclusive_scan(pool, in.begin(), in.end(), out.begin());          // running sums
//   magpie::exclusive_scan(pool, in.begin(), in.end(), out.begin(), 0L);
//
// Over fixed blocks (detail/blocks.hpp), in up to two passes: in the first, a task that reaches a
// block when every block before it is scanned (always on one worker, and along the first
// worker's run of blocks on more) scans it at once, reducing it in the same read; the other
// blocks are only reduced. A serial step turns their sums into block offsets, and a second pass
// scans them from their offsets. `op` must be associative (as for std::inclusive_scan), and need
// not be commutative: operands are combined in their order (operation.hpp). The grouping is fixed
// by n and the grain, so the result is the same on every run and worker count, whichever pass
// scanned a block. The output may be the input (in place). Cost: from 1 to 2 reads from memory and
// 1 write per element; ≤ 2048 partials on the task's stack.

#include <atomic>
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

/// One step of a scan at element i, whose value is x: inclusive, acc ← acc ⊕ x and out[i] = acc;
/// exclusive, out[i] = acc and then acc ← acc ⊕ x.
template <bool Inclusive, typename T, typename X, typename O, typename Op>
void scan_step(T &acc, X &&x, O out, std::size_t i, Op &op) {
  if constexpr (Inclusive) {
    acc = std::invoke(op, std::move(acc), std::forward<X>(x));
    at(out, i) = acc;
  } else {
    T next = std::invoke(op, acc, std::forward<X>(x));
    at(out, i) = std::move(acc);
    acc = std::move(next);
  }
}

/// The scan's first step, at element 0 of a block, returning the running value after it: from
/// `carry`, or, with none (an inclusive scan's first block without init), x itself.
template <bool Inclusive, typename T, typename O, typename Op>
T scan_first(std::optional<T> carry, T const &x, O out, Op &op) {
  if (!carry) {
    at(out, 0) = x;
    return x;
  }
  T acc = std::move(*carry);
  scan_step<Inclusive>(acc, x, out, 0, op);
  return acc;
}

/// Scans one block from `carry` (none for the very first element when there is no init).
/// Exclusive: out[i] = carry ⊕ x₀ ⊕ … ⊕ xᵢ₋₁; inclusive: … ⊕ xᵢ. Reads x[i] before writing out[i].
template <bool Inclusive, typename T, typename I, typename O, typename Op>
void scan_block(I in, O out, std::size_t len, std::optional<T> carry, Op &op) {
  T acc = scan_first<Inclusive>(std::move(carry), T(at(in, 0)), out, op);
  for (std::size_t i = 1; i < len; ++i) {
    scan_step<Inclusive>(acc, at(in, i), out, i, op);
  }
}

/// scan_block, returning the block's sum as well, grouped exactly as block_reduce groups it (so
/// that the offsets after it are the same bits as the two passes give), in one read of the block:
/// each element is read once, before its output is written (the output may be the input).
template <bool Inclusive, typename T, typename I, typename O, typename Op>
T scan_and_reduce_block(I in, O out, std::size_t len, std::optional<T> carry, Op &op) {
  T x0 = at(in, 0);
  T acc = scan_first<Inclusive>(std::move(carry), x0, out, op);
  // Scans [lo, hi) after `sum` (which holds element lo − 1's contribution), folding them into it.
  auto fold = [&](T sum, std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) {
      T x = at(in, i);
      sum = std::invoke(op, std::move(sum), x);
      scan_step<Inclusive>(acc, std::move(x), out, i, op);
    }
    return sum;
  };
  if (len < min_grouped_len) {
    return fold(std::move(x0), 1, len);
  }
  if constexpr (reorderable<Op, T>) { // four interleaved accumulators
    T a1 = at(in, 1);
    T a2 = at(in, 2);
    T a3 = at(in, 3);
    T a0 = std::move(x0);
    scan_step<Inclusive>(acc, a1, out, 1, op);
    scan_step<Inclusive>(acc, a2, out, 2, op);
    scan_step<Inclusive>(acc, a3, out, 3, op);
    std::size_t i = 4;
    for (; i + 4 <= len; i += 4) {
      T y0 = at(in, i);
      T y1 = at(in, i + 1);
      T y2 = at(in, i + 2);
      T y3 = at(in, i + 3);
      a0 = std::invoke(op, std::move(a0), y0);
      a1 = std::invoke(op, std::move(a1), y1);
      a2 = std::invoke(op, std::move(a2), y2);
      a3 = std::invoke(op, std::move(a3), y3);
      scan_step<Inclusive>(acc, std::move(y0), out, i, op);
      scan_step<Inclusive>(acc, std::move(y1), out, i + 1, op);
      scan_step<Inclusive>(acc, std::move(y2), out, i + 2, op);
      scan_step<Inclusive>(acc, std::move(y3), out, i + 3, op);
    }
    T sum = std::invoke(op, std::invoke(op, std::move(a0), std::move(a1)),
                        std::invoke(op, std::move(a2), std::move(a3)));
    return fold(std::move(sum), i, len);
  } else {                            // groups of four consecutive elements, in order
    auto group = [&](std::size_t i) { // scans x[i, i + 4) and returns (xᵢ ⊕ xᵢ₊₁) ⊕ (xᵢ₊₂ ⊕ xᵢ₊₃)
      T y0 = at(in, i);
      T y1 = at(in, i + 1);
      T y2 = at(in, i + 2);
      T y3 = at(in, i + 3);
      T g = std::invoke(op, std::invoke(op, y0, y1), std::invoke(op, y2, y3));
      scan_step<Inclusive>(acc, std::move(y0), out, i, op);
      scan_step<Inclusive>(acc, std::move(y1), out, i + 1, op);
      scan_step<Inclusive>(acc, std::move(y2), out, i + 2, op);
      scan_step<Inclusive>(acc, std::move(y3), out, i + 3, op);
      return g;
    };
    T y1 = at(in, 1);
    T y2 = at(in, 2);
    T y3 = at(in, 3);
    T sum = std::invoke(op, std::invoke(op, x0, y1), std::invoke(op, y2, y3));
    scan_step<Inclusive>(acc, std::move(y1), out, 1, op);
    scan_step<Inclusive>(acc, std::move(y2), out, 2, op);
    scan_step<Inclusive>(acc, std::move(y3), out, 3, op);
    std::size_t i = 4;
    for (; i + 4 <= len; i += 4) {
      sum = std::invoke(op, std::move(sum), group(i));
    }
    return fold(std::move(sum), i, len);
  }
}

template <bool Inclusive, typename I, typename O, typename T, typename Op>
core::task<O> scan_impl(I first, std::size_t n, O d_first, std::optional<T> init, Op op,
                        loop_options opt) {
  if (n == 0) {
    co_return d_first;
  }
  block_plan const plan = plan_blocks(n, opt.grain);
  std::size_t const last = plan.count - 1;
  // sum[b]: block b's sum, for the blocks the first pass reduced but could not scan; then, from
  // the frontier on, what block b starts from.
  auto sum = co_await core::stack_alloc<std::optional<T>>(plan.count);
  // The frontier: blocks [0, frontier) are scanned and `carry` is what block `frontier` starts
  // from. Only the task that finds frontier == b when it reaches block b scans it and
  // advances the frontier, so `carry` has one user at a time, handed on by the release store
  // (docs/algorithms.md, "Scans"; docs/protocols.md §14).
  std::atomic<std::size_t> frontier{0};
  std::optional<T> carry = std::move(init);
  loop_control ctl(0, std::move(opt.stop), co_await core::enclosing_scope());
  identity id;
  auto scan_at = [&](std::size_t b, std::optional<T> from) {
    scan_block<Inclusive, T>(nth(first, plan.begin(b)), nth(d_first, plan.begin(b)),
                             plan.length(b, n), std::move(from), op);
  };
  auto up = [&](std::size_t lo, std::size_t hi) {
    for (std::size_t b = lo; b < hi; ++b) {
      if (b == last) { // its sum is never needed: scan it here only if it is next
        if (frontier.load(std::memory_order_acquire) == b) {
          scan_at(b, std::move(carry));
          frontier.store(b + 1, std::memory_order_relaxed); // nobody reads it before the join
        }
        break; // the last block is the last index of any range that holds it
      }
      // acquire: pairs with the release below, by the task that scanned block b - 1: its
      // `carry` is ours to use.
      if (frontier.load(std::memory_order_acquire) != b) {
        sum[b].emplace(block_reduce<T>(nth(first, plan.begin(b)), plan.length(b, n), op, id));
        continue; // scanned in the second pass
      }
      // Block b is next: scan it and reduce it in one read, from the same carry and grouped as
      // the two passes would (the result does not depend on which way a block went).
      T s = scan_and_reduce_block<Inclusive, T>(
          nth(first, plan.begin(b)), nth(d_first, plan.begin(b)), plan.length(b, n), carry, op);
      carry = carry ? std::optional<T>(std::invoke(op, std::move(*carry), std::move(s)))
                    : std::optional<T>(std::move(s));
      frontier.store(b + 1, std::memory_order_release); // release: our `carry` is the next's
    }
  };
  co_await core::call(run_loop<decltype(up)>, &ctl, &up, plan.count);
  co_await core::join();
  std::size_t const done = frontier.load(std::memory_order_relaxed); // ordered by the join
  if (ctl.stopped() || done == plan.count) {
    co_return nth(d_first, n);
  }
  // Serial: from the frontier on, block sums → block offsets (an exclusive scan of the sums).
  for (std::size_t b = done; b < plan.count; ++b) {
    std::optional<T> s = std::move(sum[b]);
    sum[b] = carry;
    if (b != last) {
      carry = carry ? std::optional<T>(std::invoke(op, std::move(*carry), std::move(*s)))
                    : std::move(s);
    }
  }
  auto down = [&](std::size_t lo, std::size_t hi) {
    for (std::size_t b = done + lo; b < done + hi; ++b) {
      scan_at(b, std::move(sum[b]));
    }
  };
  co_await core::call(run_loop<decltype(down)>, &ctl, &down, plan.count - done);
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
