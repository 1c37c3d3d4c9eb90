#pragma once
// magpie/algo/reduce.hpp — reduce and transform_reduce.
//
//   double s = magpie::reduce(pool, v.begin(), v.end());                 // 0.0 + Σ v
//   long   n = magpie::transform_reduce(pool, v, 0L, std::plus<>{}, f);  // Σ f(x)
//
// `op` must be associative. Unlike std::reduce's, it need not be commutative: the operands are
// regrouped but combined in their order (operation.hpp), so a matrix product or a string
// concatenation reduces to x₀ ⊕ … ⊕ xₙ₋₁; magpie::commutative(op) lets a block be folded out of
// order, as std::plus on arithmetic types is. The grouping is fixed by n and the grain alone
// (detail/blocks.hpp): the result — floating point included — is the same on every run, whatever
// the number of workers or the stealing. Cost: ≤ 2048 partial results on the task's
// stack, one serial pass over them at the end.

#include <cstddef>
#include <functional>
#include <iterator>
#include <memory>
#include <new>
#include <ranges>
#include <type_traits>
#include <utility>

#include "magpie/algo/detail/blocks.hpp"
#include "magpie/algo/detail/loop.hpp"
#include "magpie/algo/options.hpp"
#include "magpie/core/stack_alloc.hpp"
#include "magpie/sched/sync_wait.hpp"

namespace magpie::algo {

namespace detail {

/// A block's result, constructed in place by the task that reduces the block (raw storage: the
/// array is not written before the loop, so its lines stay wherever the last call left them).
template <typename T>
struct block_result {
  alignas(T) std::byte bytes[sizeof(T)];
  T &get() noexcept { return *std::launder(reinterpret_cast<T *>(bytes)); }
};

/// Destroys the block results that were constructed (flag set), when T needs it.
template <typename T>
struct block_results_guard {
  block_results_guard(block_result<T> *results, unsigned char const *done,
                      std::size_t count) noexcept
      : results(results), done(done), count(count) {}
  block_results_guard(block_results_guard const &) = delete;
  block_results_guard &operator=(block_results_guard const &) = delete;
  ~block_results_guard() {
    if constexpr (!std::is_trivially_destructible_v<T>) {
      for (std::size_t b = 0; b < count; ++b) {
        if (done[b] != 0) {
          std::destroy_at(&results[b].get());
        }
      }
    }
  }

private:
  block_result<T> *results;
  unsigned char const *done;
  std::size_t count;
};

template <typename I, typename T, typename Op, typename Tr>
core::task<T> transform_reduce_impl(I first, std::size_t n, T init, Op op, Tr tr,
                                    loop_options opt) {
  if (n == 0) {
    co_return init;
  }
  block_plan const plan = plan_blocks(n, opt.grain);
  // Only the flags are written before the loop (a byte per block); the results are constructed
  // by the blocks' tasks.
  auto partial = co_await core::stack_alloc_uninitialized<block_result<T>>(plan.count);
  auto done = co_await core::stack_alloc<unsigned char>(plan.count);
  block_results_guard<T> const guard{partial.data(), done.data(), plan.count};
  loop_control ctl(0, std::move(opt.stop), co_await core::enclosing_scope());
  auto body = [&](std::size_t lo, std::size_t hi) {
    for (std::size_t b = lo; b < hi; ++b) {
      std::construct_at(&partial[b].get(),
                        block_reduce<T>(nth(first, plan.begin(b)), plan.length(b, n), op, tr));
      done[b] = 1;
    }
  };
  co_await core::call(run_loop<decltype(body)>, &ctl, &body, plan.count);
  co_await core::join();
  if (!ctl.stopped()) {
    // Every block ran (a stop is sticky): fold their results in block_reduce's grouping too, so
    // that the chain on the accumulator has one operation per four blocks, not one per block.
    auto take = [](block_result<T> &r) -> T && { return std::move(r.get()); };
    co_return std::invoke(op, std::move(init),
                          block_reduce<T>(partial.begin(), plan.count, op, take));
  }
  T acc = std::move(init);
  for (std::size_t b = 0; b < plan.count; ++b) {
    if (done[b] != 0) { // unset only for blocks skipped by a stop request
      acc = std::invoke(op, std::move(acc), std::move(partial[b].get()));
    }
  }
  co_return acc;
}

} // namespace detail

/// The type of magpie::transform_reduce: `init ⊕ tr(x₀) ⊕ … ⊕ tr(xₙ₋₁)` with ⊕ = `op`, or
/// `init ⊕ (a₀ ⊗ b₀) ⊕ …` with ⊗ = `tr2` over two sequences (default ⊕ = +, ⊗ = ×).
struct transform_reduce_fn {
  /// Inside a task: a task to `call` or `fork` (then `join`) on the caller's pool, splitting on
  /// demand.
  template <std::input_or_output_iterator I, typename T, typename Op, typename Tr>
  core::task<T> operator()(I first, I last, T init, Op op, Tr tr, loop_options opt = {}) const {
    if constexpr (detail::require_random_access<I>()) {
      return detail::transform_reduce_impl(first, detail::count_between(first, last),
                                           std::move(init), std::move(op), std::move(tr),
                                           std::move(opt));
    } else {
      return detail::rejected_iterator<T>();
    }
  }
  /// Blocking, from a plain thread: runs on scheduler `s` and returns when every started iteration
  /// has finished, rethrowing the first exception.
  template <sched::scheduler S, std::input_or_output_iterator I, typename T, typename Op,
            typename Tr>
  T operator()(S &s, I first, I last, T init, Op op, Tr tr, loop_options opt = {}) const {
    if constexpr (detail::require_random_access<I>()) {
      return sched::sync_wait(s, detail::transform_reduce_impl<I, T, Op, Tr>, first,
                              detail::count_between(first, last), std::move(init), std::move(op),
                              std::move(tr), std::move(opt));
    } else {
      return init;
    }
  }
  /// Inner product: `init + Σ first1[i] * first2[i]`.
  template <sched::scheduler S, std::input_or_output_iterator I1, std::input_or_output_iterator I2,
            typename T>
  T operator()(S &s, I1 first1, I1 last1, I2 first2, T init, loop_options opt = {}) const {
    if constexpr (detail::require_random_access<I1>() && detail::require_random_access<I2>()) {
      auto index = [first1, first2](std::size_t i) {
        return detail::at(first1, i) * detail::at(first2, i);
      };
      return (*this)(s, std::views::iota(std::size_t{0}).begin(),
                     std::views::iota(std::size_t{0}).begin() +
                         static_cast<std::ptrdiff_t>(detail::count_between(first1, last1)),
                     std::move(init), std::plus<>{}, index, std::move(opt));
    } else {
      return init;
    }
  }
  /// Blocking, over a range: the iterator form on std::ranges::begin(r) and its end.
  template <sched::scheduler S, std::ranges::range R, typename T, typename Op, typename Tr>
  T operator()(S &s, R &&r, T init, Op op, Tr tr, loop_options opt = {}) const {
    return (*this)(s, std::ranges::begin(r), detail::end_of(r), std::move(init), std::move(op),
                   std::move(tr), std::move(opt));
  }
};

/// Parallel std::transform_reduce: see transform_reduce_fn.
inline constexpr transform_reduce_fn transform_reduce{};

/// The type of magpie::reduce: `init ⊕ x₀ ⊕ … ⊕ xₙ₋₁` (default init = value_type{}, ⊕ = +).
struct reduce_fn {
  /// Inside a task: a task to `call` or `fork` (then `join`) on the caller's pool, splitting on
  /// demand.
  template <std::input_or_output_iterator I, typename T = std::iter_value_t<I>,
            typename Op = std::plus<>>
  core::task<T> operator()(I first, I last, T init = T{}, Op op = {}, loop_options opt = {}) const {
    return transform_reduce(first, last, std::move(init), std::move(op), detail::identity{},
                            std::move(opt));
  }
  /// Blocking, from a plain thread: runs on scheduler `s` and returns when every started iteration
  /// has finished, rethrowing the first exception.
  template <sched::scheduler S, std::input_or_output_iterator I, typename T = std::iter_value_t<I>,
            typename Op = std::plus<>>
  T operator()(S &s, I first, I last, T init = T{}, Op op = {}, loop_options opt = {}) const {
    return transform_reduce(s, first, last, std::move(init), std::move(op), detail::identity{},
                            std::move(opt));
  }
  /// Blocking, over a range: the iterator form on std::ranges::begin(r) and its end.
  template <sched::scheduler S, std::ranges::range R, typename T = std::ranges::range_value_t<R>,
            typename Op = std::plus<>>
  T operator()(S &s, R &&r, T init = T{}, Op op = {}, loop_options opt = {}) const {
    return (*this)(s, std::ranges::begin(r), detail::end_of(r), std::move(init), std::move(op),
                   std::move(opt));
  }
};

/// Parallel std::reduce: see reduce_fn.
inline constexpr reduce_fn reduce{};

} // namespace magpie::algo
