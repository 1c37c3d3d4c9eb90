#pragma once
// magpie/algo/detail/serial_sort.hpp — the serial pieces of sort and stable_sort, written so that
// an exception never loses an element: after a comparator or a move throws, every element is
// still in the range (or, for a merge, in its output), in some order.
//
// The rule (docs/algorithms.md, "Sorts"): an element is only ever in one place. An element held
// in a local (insertion sort's key, a swap's temporary) is put back into the hole it left before
// the exception goes on; a merge interrupted by an exception moves the elements it had not yet
// merged after those it had. A move that throws is assumed to leave both of its operands as they
// were (the strong guarantee, which a move that is really a copy gives); it is then tried once
// more, or its element is put back where it came from. So a permutation remains unless a move
// throws twice in a row for the same element. The standard's std::sort and std::stable_sort
// promise nothing of the kind (libstdc++ loses the element held in its insertion sort's key, and
// the elements in its merge buffer), so neither is used here.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <exception>
#include <iterator>
#include <type_traits>
#include <utility>

#include "magpie/algo/detail/control.hpp"
#include "magpie/algo/detail/loop.hpp"

namespace magpie::algo::detail {

/// Below this many elements a run is sorted by insertion.
inline constexpr std::size_t insertion_base = 32;

/// `*dst = std::move(*src)`, tried once more if it throws (a move with the strong guarantee left
/// both as they were); the exception of the first try goes to `ctl`.
template <typename D, typename S>
void move_retrying(D dst, S src, loop_control &ctl) {
  try {
    *dst = std::ranges::iter_move(src);
  } catch (...) {
    ctl.fail(std::current_exception());
    *dst = std::ranges::iter_move(src); // throws on: the caller gives up on this element
  }
}

/// Moves [src, src + n) to [dst, dst + n), every element even if some moves throw (the first
/// exception goes to `ctl`; an element whose move throws twice stays in src).
template <typename S, typename D>
void move_all(S src, std::size_t n, D dst, loop_control &ctl) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    try {
      move_retrying(nth(dst, i), nth(src, i), ctl);
    } catch (...) { // thrown twice: the element stays in src (the first exception is kept)
    }
  }
}

/// Swaps *a and *b, leaving both elements in the pair whatever throws: with the type's swap when
/// it cannot throw, else with three moves, each undone or retried if it throws.
template <typename I>
void swap_keeping(I a, I b) {
  using T = std::iter_value_t<I>;
  if constexpr (std::is_nothrow_swappable_v<T>) {
    using std::swap;
    swap(*a, *b);
  } else {
    T tmp = std::move(*a); // throws: nothing moved
    try {
      *a = std::move(*b);
    } catch (...) {
      *a = std::move(tmp); // a's element back home
      throw;
    }
    try {
      *b = std::move(tmp);
    } catch (...) {
      *b = std::move(tmp); // tried once more; b still held only a moved-from value
      throw;
    }
  }
}

/// Stable insertion sort of [first, first + n). If `comp` or a move throws, the element being
/// inserted goes back into the hole it left: the range holds a permutation.
template <typename I, typename Comp>
void insertion_sort(I first, std::size_t n, Comp &comp) {
  for (std::size_t i = 1; i < n; ++i) {
    if (!comp(at(first, i), at(first, i - 1))) {
      continue;
    }
    std::iter_value_t<I> key = std::move(at(first, i)); // throws: nothing moved
    std::size_t hole = i;
    try {
      do {
        at(first, hole) = std::move(at(first, hole - 1));
        --hole;
      } while (hole > 0 && comp(key, at(first, hole - 1)));
    } catch (...) {
      at(first, hole) = std::move(key); // the key back into the hole
      throw;
    }
    try {
      at(first, hole) = std::move(key);
    } catch (...) {
      at(first, hole) = std::move(key); // tried once more
      throw;
    }
  }
}

/// Merges sorted [a, a + na) and [b, b + nb) into out by moving, stably (a's first on ties). If
/// `comp` or a move throws, the exception goes to `ctl` and the elements not yet merged are moved
/// after the merged ones: out holds every element either way. After a stop (ctl.stopped()) it
/// only moves them.
template <typename A, typename B, typename O, typename Comp>
void merge_moving(A a, std::size_t na, B b, std::size_t nb, O out, Comp &comp,
                  loop_control &ctl) noexcept {
  std::size_t i = 0;
  std::size_t j = 0;
  if (!ctl.stopped()) {
    try {
      while (i < na && j < nb) {
        if (comp(at(b, j), at(a, i))) {
          at(out, i + j) = std::move(at(b, j));
          ++j;
        } else {
          at(out, i + j) = std::move(at(a, i));
          ++i;
        }
      }
    } catch (...) { // i and j still count what reached out (a throwing move moved nothing)
      ctl.fail(std::current_exception());
    }
  }
  move_all(nth(a, i), na - i, nth(out, i + j), ctl);
  move_all(nth(b, j), nb - j, nth(out, na + j), ctl);
}

/// Sorts [first, first + n) stably by merging through buf[0, n): every element ends in `first`
/// (ToBuffer false) or in `buf` (true) — sorted, or, after an exception (recorded in `ctl`) or a
/// stop, in some order. Runs of insertion_base elements are sorted by insertion, then merged in
/// rounds that alternate between the two arrays (ping-pong).
template <bool ToBuffer, typename I, typename T, typename Comp>
void serial_merge_sort(I first, T *buf, std::size_t n, Comp &comp, loop_control &ctl) noexcept {
  if (n <= insertion_base || ctl.stopped()) {
    if (!ctl.stopped()) {
      try {
        insertion_sort(first, n, comp);
      } catch (...) {
        ctl.fail(std::current_exception());
      }
    }
    if constexpr (ToBuffer) {
      move_all(first, n, buf, ctl);
    }
    return;
  }
  std::size_t const h = n / 2;
  // Both halves land in the other array, then merge into ours.
  serial_merge_sort<!ToBuffer>(first, buf, h, comp, ctl);
  serial_merge_sort<!ToBuffer>(nth(first, h), buf + h, n - h, comp, ctl);
  if constexpr (ToBuffer) {
    merge_moving(first, h, nth(first, h), n - h, buf, comp, ctl);
  } else {
    merge_moving(buf, h, buf + h, n - h, first, comp, ctl);
  }
}

/// Moves the median of first[a], first[b], first[c] (distinct indices above 0) to first[0].
template <typename I, typename Comp>
void median_to_front(I first, std::size_t a, std::size_t b, std::size_t c, Comp &comp) {
  auto less = [&](std::size_t x, std::size_t y) { return comp(at(first, x), at(first, y)); };
  std::size_t m = less(a, b) ? (less(b, c) ? b : (less(a, c) ? c : a))
                             : (less(a, c) ? a : (less(b, c) ? c : b));
  swap_keeping(first, nth(first, m));
}

/// Hoare's partition of [first, first + n), n >= 4, around the pivot first[0] that
/// median_to_front chose among three distinct positions, by swaps: returns cut, 1 <= cut < n, with
/// [0, cut) not above the pivot and [cut, n) not below it (keys equal to it may go either way, so
/// many equal keys split evenly). The scans need no bounds checks: the largest of the three
/// candidates stops the first upward scan and the pivot itself the first downward one, and after
/// each swap the swapped elements stop the next ones.
template <typename I, typename Comp>
std::size_t partition_around_first(I first, std::size_t n, Comp &comp) {
  auto const &pivot = *first; // stays at first[0] until the scans are done
  std::size_t lo = 1;
  std::size_t hi = n;
  for (;;) {
    while (comp(at(first, lo), pivot)) {
      ++lo;
    }
    --hi;
    while (comp(pivot, at(first, hi))) {
      --hi;
    }
    if (lo >= hi) {
      return lo;
    }
    swap_keeping(nth(first, lo), nth(first, hi));
    ++lo;
  }
}

/// Chooses a pivot (median of three) and partitions [first, first + n), n >= 4, around it: see
/// partition_around_first.
template <typename I, typename Comp>
std::size_t partition(I first, std::size_t n, Comp &comp) {
  std::size_t const q = n >= 8 ? n / 4 : 1; // three distinct positions past 0
  median_to_front(first, q, n / 2, n - 1 - q, comp);
  return partition_around_first(first, n, comp);
}

/// Sift-down heap sort of [first, first + n) by swaps (the fallback of a quicksort that recursed
/// too deep: O(n log n) whatever the input).
template <typename I, typename Comp>
void heap_sort(I first, std::size_t n, Comp &comp) {
  auto sift = [&](std::size_t root, std::size_t len) {
    for (;;) {
      std::size_t child = 2 * root + 1;
      if (child >= len) {
        return;
      }
      if (child + 1 < len && comp(at(first, child), at(first, child + 1))) {
        ++child;
      }
      if (!comp(at(first, root), at(first, child))) {
        return;
      }
      swap_keeping(nth(first, root), nth(first, child));
      root = child;
    }
  };
  for (std::size_t i = n / 2; i-- > 0;) {
    sift(i, n);
  }
  for (std::size_t len = n; len > 1; --len) {
    swap_keeping(first, nth(first, len - 1));
    sift(0, len - 1);
  }
}

/// Serial introsort of [first, first + n): quicksort (median of three, Hoare's partition),
/// insertion sort below insertion_base, heap sort below `depth`. Exceptions go on, with the range
/// a permutation.
template <typename I, typename Comp>
void serial_sort(I first, std::size_t n, Comp &comp, int depth) {
  while (n > insertion_base) {
    if (depth-- <= 0) {
      heap_sort(first, n, comp);
      return;
    }
    std::size_t const cut = partition(first, n, comp);
    // Recurse into the smaller side, loop on the larger: O(log n) deep.
    if (cut < n - cut) {
      serial_sort(first, cut, comp, depth);
      first = nth(first, cut);
      n -= cut;
    } else {
      serial_sort(nth(first, cut), n - cut, comp, depth);
      n = cut;
    }
  }
  insertion_sort(first, n, comp);
}

/// Whether sorting I's elements with Comp can throw at all: a comparator that is noexcept on
/// them, and elements that swap and move without throwing.
template <typename I, typename Comp>
inline constexpr bool sort_cannot_throw =
    std::is_nothrow_invocable_v<Comp &, std::iter_reference_t<I>, std::iter_reference_t<I>> &&
    std::is_nothrow_swappable_v<std::iter_value_t<I>> &&
    std::is_nothrow_move_constructible_v<std::iter_value_t<I>> &&
    std::is_nothrow_move_assignable_v<std::iter_value_t<I>>;

/// Sorts a run of a parallel sort serially: std::sort where nothing can throw (it keeps no
/// promise after an exception, but then there is none), serial_sort otherwise.
template <typename I, typename Comp>
void sort_run(I first, std::size_t n, Comp &comp, int depth) {
  if constexpr (sort_cannot_throw<I, Comp>) {
    std::sort(first, nth(first, n), comp);
  } else {
    serial_sort(first, n, comp, depth);
  }
}

/// The introsort depth limit for n elements.
inline int sort_depth(std::size_t n) noexcept { return 2 * static_cast<int>(std::bit_width(n)); }

} // namespace magpie::algo::detail
