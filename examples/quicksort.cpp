// Parallel quicksort whose partition step is parallel too, on scratch memory from the task's own
// stack (magpie::stack_alloc): no heap allocation per task, however deep the recursion.
//
//   magpie_example_quicksort [n]   sorts n pseudo-random ints (default 1,000,000) and checks the
//                                  result against std::sort.
//
// Each level partitions its range around a pivot in three parallel passes over blocks: count
// (each block's number of elements less than / equal to the pivot), scatter (each block copies
// its elements to their places in a scratch buffer, at offsets from a prefix sum of the counts)
// and copy back. Then the "less" and "greater" sides are sorted in parallel.
#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <vector>

#include "magpie/magpie.hpp"

namespace {

constexpr std::size_t serial_cutoff = 2048; // below this, std::sort: a task costs ~20 ns
constexpr std::size_t block_size = 8192;    // elements per block of the partition passes

// [count]
struct block_counts {
  std::size_t less = 0;
  std::size_t equal = 0;
};

magpie::task<block_counts> count_block(std::span<int const> block, int pivot) {
  block_counts c;
  for (int x : block) {
    c.less += x < pivot ? 1 : 0;
    c.equal += x == pivot ? 1 : 0;
  }
  co_return c;
}
// [count]

/// Copies the elements of `block` to `out`: those less than the pivot from `less_at` on, the
/// equal ones from `equal_at`, the greater ones from `greater_at`.
magpie::task<void> scatter_block(std::span<int const> block, int pivot, std::span<int> out,
                                 std::size_t less_at, std::size_t equal_at,
                                 std::size_t greater_at) {
  for (int x : block) {
    if (x < pivot) {
      out[less_at++] = x;
    } else if (x == pivot) {
      out[equal_at++] = x;
    } else {
      out[greater_at++] = x;
    }
  }
  co_return;
}

magpie::task<void> copy_block(std::span<int const> from, std::span<int> to) {
  std::copy(from.begin(), from.end(), to.begin());
  co_return;
}

int median_of_three(std::span<int const> v) {
  int a = v.front();
  int b = v[v.size() / 2];
  int c = v.back();
  return std::max(std::min(a, b), std::min(std::max(a, b), c));
}

// [quicksort]
magpie::task<void> quicksort(std::span<int> v) {
  if (v.size() <= serial_cutoff) {
    std::sort(v.begin(), v.end());
    co_return;
  }
  int const pivot = median_of_three(v);
  std::size_t const blocks = (v.size() + block_size - 1) / block_size;
  auto block = [&](std::span<int> s, std::size_t i) {
    return s.subspan(i * block_size, std::min(block_size, s.size() - i * block_size));
  };
  std::size_t less = 0;  // elements less than the pivot
  std::size_t equal = 0; // elements equal to it
  {
    // Scratch memory on this task's stack, allocated before the first fork and freed (at the end
    // of this block) after the last join: a FILO, overflow-free alloca.
    auto counts = co_await magpie::stack_alloc<block_counts>(blocks);
    auto scratch = co_await magpie::stack_alloc_uninitialized<int>(v.size()); // written first

    for (std::size_t i = 0; i < blocks; ++i) { // pass 1: count, one child per block
      co_await magpie::fork(&counts[i], count_block, block(v, i), pivot);
    }
    co_await magpie::join();

    for (block_counts const &c : counts) {
      less += c.less;
      equal += c.equal;
    }
    std::size_t less_at = 0;
    std::size_t equal_at = less;
    std::size_t greater_at = less + equal;
    for (std::size_t i = 0; i < blocks; ++i) { // pass 2: scatter into the scratch buffer
      std::span<int const> const b = block(v, i);
      co_await magpie::fork(scatter_block, b, pivot, scratch.span(), less_at, equal_at, greater_at);
      less_at += counts[i].less;
      equal_at += counts[i].equal;
      greater_at += b.size() - counts[i].less - counts[i].equal;
    }
    co_await magpie::join();

    for (std::size_t i = 0; i < blocks; ++i) { // pass 3: copy back
      co_await magpie::fork(copy_block, block(scratch.span(), i), block(v, i));
    }
    co_await magpie::join();
  } // scratch, then counts, go back to the stack here (FILO)

  co_await magpie::fork(quicksort, v.first(less));
  co_await magpie::call(quicksort, v.subspan(less + equal));
  co_await magpie::join();
}
// [quicksort]

} // namespace

int main(int argc, char **argv) {
  std::size_t const n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1'000'000;
  std::vector<int> v(n);
  unsigned state = 12345;
  for (int &x : v) { // a fixed linear congruential sequence: the same input on every run
    state = state * 1103515245U + 12345U;
    x = static_cast<int>((state >> 8) % 100'000);
  }
  std::vector<int> expected = v;
  std::sort(expected.begin(), expected.end());

  magpie::lazy_pool pool;
  magpie::sync_wait(pool, quicksort, std::span<int>(v));

  std::printf("sorted %zu ints: %s\n", n, v == expected ? "ok" : "WRONG");
  return v == expected ? EXIT_SUCCESS : EXIT_FAILURE;
}
