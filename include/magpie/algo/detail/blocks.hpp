#pragma once
// magpie/algo/detail/blocks.hpp — the fixed block partition of reduce and the scans, and the
// serial block reduction (in the operands' order unless the operation may reorder them). Blocks
// depend only on n and the grain, never on timing, so a reduction's grouping — and a floating-point
// result — is the same on every run and every worker count.

#include <algorithm>
#include <cstddef>
#include <functional>
#include <optional>

#include "magpie/algo/detail/loop.hpp"
#include "magpie/algo/operation.hpp"

namespace magpie::algo::detail {

/// At most this many blocks: partial results take max_blocks slots on the task's stack.
inline constexpr std::size_t max_blocks = 2048;

struct block_plan {
  std::size_t size;  ///< elements per block (the last may be shorter)
  std::size_t count; ///< blocks
  std::size_t begin(std::size_t b) const noexcept { return b * size; }
  std::size_t length(std::size_t b, std::size_t n) const noexcept {
    return b + 1 < count ? size : n - b * size;
  }
};

/// Without a grain, blocks hold at least this many elements: each block costs a result slot, its
/// write and a step of the final fold (about 5 ns), far more than a cheap element does. (A
/// reduction of a few costly elements that needs more blocks than n / min_block_len passes a
/// grain.)
inline constexpr std::size_t min_block_len = 16;

/// `grain` 0: n / max_blocks rounded up, at least min_block_len; else the grain.
inline block_plan plan_blocks(std::size_t n, std::size_t grain) noexcept {
  std::size_t const size =
      grain != 0 ? grain : std::max(min_block_len, (n + max_blocks - 1) / max_blocks);
  std::size_t const s = size == 0 ? 1 : size;
  return {s, (n + s - 1) / s};
}

/// Blocks shorter than this are folded left to right in one chain; longer ones in one of the
/// two groupings of block_reduce.
inline constexpr std::size_t min_grouped_len = 8;

/// The generalized sum of `tr(first[0]) … tr(first[len − 1])` (len >= 1) under `op`, in a fixed
/// grouping that depends only on len (operation.hpp): when `op` may reorder (reorderable<Op, T>),
/// four interleaved accumulators (x₀ x₄ …)(x₁ x₅ …)(x₂ …)(x₃ …); otherwise groups of four
/// consecutive elements folded in order, acc ⊕ ((x₄ₖ ⊕ x₄ₖ₊₁) ⊕ (x₄ₖ₊₂ ⊕ x₄ₖ₊₃)), which keeps the
/// operands' order, reads memory in one stream and still lets the CPU overlap operations.
template <typename T, typename I, typename Op, typename Tr>
T block_reduce(I first, std::size_t len, Op &op, Tr &tr) {
  if (len < min_grouped_len) {
    T acc = std::invoke(tr, at(first, 0));
    for (std::size_t i = 1; i < len; ++i) {
      acc = std::invoke(op, std::move(acc), std::invoke(tr, at(first, i)));
    }
    return acc;
  }
  if constexpr (reorderable<Op, T>) {
    T a0 = std::invoke(tr, at(first, 0));
    T a1 = std::invoke(tr, at(first, 1));
    T a2 = std::invoke(tr, at(first, 2));
    T a3 = std::invoke(tr, at(first, 3));
    std::size_t i = 4;
    for (; i + 4 <= len; i += 4) {
      a0 = std::invoke(op, std::move(a0), std::invoke(tr, at(first, i)));
      a1 = std::invoke(op, std::move(a1), std::invoke(tr, at(first, i + 1)));
      a2 = std::invoke(op, std::move(a2), std::invoke(tr, at(first, i + 2)));
      a3 = std::invoke(op, std::move(a3), std::invoke(tr, at(first, i + 3)));
    }
    T acc = std::invoke(op, std::invoke(op, std::move(a0), std::move(a1)),
                        std::invoke(op, std::move(a2), std::move(a3)));
    for (; i < len; ++i) {
      acc = std::invoke(op, std::move(acc), std::invoke(tr, at(first, i)));
    }
    return acc;
  } else {
    // acc ⊕ ((x₄ₖ ⊕ x₄ₖ₊₁) ⊕ (x₄ₖ₊₂ ⊕ x₄ₖ₊₃)) per group of four: the groups' inner operations do
    // not wait for acc, so the chain on acc has one operation per four elements.
    auto group = [&](std::size_t i) {
      return std::invoke(
          op, std::invoke(op, std::invoke(tr, at(first, i)), std::invoke(tr, at(first, i + 1))),
          std::invoke(op, std::invoke(tr, at(first, i + 2)), std::invoke(tr, at(first, i + 3))));
    };
    T acc = group(0);
    std::size_t i = 4;
    for (; i + 4 <= len; i += 4) {
      acc = std::invoke(op, std::move(acc), group(i));
    }
    for (; i < len; ++i) {
      acc = std::invoke(op, std::move(acc), std::invoke(tr, at(first, i)));
    }
    return acc;
  }
}

/// The identity transformation.
struct identity {
  template <typename X>
  X &&operator()(X &&x) const noexcept {
    return std::forward<X>(x);
  }
};

} // namespace magpie::algo::detail
