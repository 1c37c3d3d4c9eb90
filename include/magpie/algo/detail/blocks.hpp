#pragma once
// magpie/algo/detail/blocks.hpp — the fixed block partition of reduce and the scans, and the
// serial block reduction. Blocks depend only on n and the grain, never on timing, so a reduction's
// grouping — and a floating-point result — is the same on every run and every worker count.

#include <cstddef>
#include <functional>
#include <optional>

#include "magpie/algo/detail/loop.hpp"

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

/// `grain` 0: n / max_blocks rounded up (at least 1); else the grain.
inline block_plan plan_blocks(std::size_t n, std::size_t grain) noexcept {
  std::size_t const size = grain != 0 ? grain : (n + max_blocks - 1) / max_blocks;
  std::size_t const s = size == 0 ? 1 : size;
  return {s, (n + s - 1) / s};
}

/// The generalized sum of `tr(first[0]) … tr(first[len − 1])` (len >= 1) under `op`, grouped in
/// four interleaved accumulators (a fixed grouping: the result depends only on the elements).
template <typename T, typename I, typename Op, typename Tr>
T block_reduce(I first, std::size_t len, Op &op, Tr &tr) {
  if (len < 8) {
    T acc = std::invoke(tr, at(first, 0));
    for (std::size_t i = 1; i < len; ++i) {
      acc = std::invoke(op, std::move(acc), std::invoke(tr, at(first, i)));
    }
    return acc;
  }
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
}

/// The identity transformation.
struct identity {
  template <typename X>
  X &&operator()(X &&x) const noexcept {
    return std::forward<X>(x);
  }
};

} // namespace magpie::algo::detail
