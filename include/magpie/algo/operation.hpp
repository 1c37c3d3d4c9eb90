#pragma once
// magpie/algo/operation.hpp — what reduce, transform_reduce and the scans assume of their
// operation, and magpie::commutative(op), which says more.
//
//   auto m = magpie::reduce(pool, ms.begin(), ms.end(), identity, mat_mul);     // in order
//   auto s = magpie::reduce(pool, v, 0.0, magpie::commutative(my_add));         // any order
//
// The operation must be associative; it need not be commutative. The algorithms regroup their
// operands — fixed blocks, and groups of four consecutive elements inside a block — but combine
// them in their order: the result is x₀ ⊕ … ⊕ xₙ₋₁ for a matrix product or a string concatenation.
// When the operation is known to be commutative as well, a block is folded instead in four
// interleaved accumulators (x₀ x₄ x₈ …)(x₁ x₅ …)…, which a compiler can vectorise. That is known
// for std::plus, std::multiplies, std::bit_and, std::bit_or and std::bit_xor (typed or
// transparent) on arithmetic value types, and for an operation wrapped in magpie::commutative.

#include <functional>
#include <type_traits>
#include <utility>

namespace magpie::algo {

/// An operation that its user declares commutative (a ⊕ b = b ⊕ a) as well as associative: made
/// by magpie::commutative(op); calls `op`. reduce, transform_reduce and the scans may then
/// combine a block's operands out of order. Wrapping an operation that is not commutative gives
/// unspecified results, as std::reduce does with such an operation.
template <typename Op>
struct commutative_op {
  Op op; ///< the wrapped operation

  /// op(a, b).
  template <typename A, typename B>
  constexpr decltype(auto) operator()(A &&a, B &&b) {
    return std::invoke(op, std::forward<A>(a), std::forward<B>(b));
  }
  /// op(a, b), on a const operation.
  template <typename A, typename B>
  constexpr decltype(auto) operator()(A &&a, B &&b) const {
    return std::invoke(op, std::forward<A>(a), std::forward<B>(b));
  }
};

/// Declares `op` commutative for reduce, transform_reduce and the scans (see commutative_op).
template <typename Op>
constexpr commutative_op<std::decay_t<Op>> commutative(Op &&op) {
  return {std::forward<Op>(op)};
}

namespace detail {

/// The standard operations that are commutative on arithmetic types.
template <typename Op>
inline constexpr bool commutative_on_arithmetic = false;
template <typename U>
inline constexpr bool commutative_on_arithmetic<std::plus<U>> = true;
template <typename U>
inline constexpr bool commutative_on_arithmetic<std::multiplies<U>> = true;
template <typename U>
inline constexpr bool commutative_on_arithmetic<std::bit_and<U>> = true;
template <typename U>
inline constexpr bool commutative_on_arithmetic<std::bit_or<U>> = true;
template <typename U>
inline constexpr bool commutative_on_arithmetic<std::bit_xor<U>> = true;

template <typename Op>
inline constexpr bool declared_commutative = false;
template <typename Op>
inline constexpr bool declared_commutative<commutative_op<Op>> = true;

/// Whether a fold of T values under Op may take its operands out of order.
template <typename Op, typename T>
inline constexpr bool reorderable =
    declared_commutative<std::remove_cvref_t<Op>> ||
    (std::is_arithmetic_v<T> && commutative_on_arithmetic<std::remove_cvref_t<Op>>);

} // namespace detail

} // namespace magpie::algo
