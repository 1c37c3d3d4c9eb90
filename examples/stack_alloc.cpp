// Stack allocation: arrays on the task's own stack, for scratch memory and for children's
// results. A word-length histogram, counted in parallel chunks.
#include <array>
#include <cstddef>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>

#include "magpie/magpie.hpp"

using histogram = std::array<long, 8>; // words of length 1, 2, ..., 7, and 8 or more

magpie::task<histogram> count_words(std::span<std::string_view const> words) {
  histogram h{};
  for (std::string_view w : words) {
    h[std::min<std::size_t>(w.size(), h.size()) - 1] += 1;
  }
  co_return h;
}

magpie::task<histogram> histogram_of(std::span<std::string_view const> words, std::size_t chunks) {
  std::size_t const per_chunk = (words.size() + chunks - 1) / chunks;
  // Allocated before the first fork: one result slot per chunk, value-initialised.
  auto partial = co_await magpie::stack_alloc<histogram>(chunks);
  for (std::size_t i = 0; i < chunks; ++i) {
    std::size_t const first = std::min(i * per_chunk, words.size());
    std::size_t const count = std::min(per_chunk, words.size() - first);
    co_await magpie::fork(&partial[i], count_words, words.subspan(first, count));
  }
  co_await magpie::join(); // every slot is written once join returns
  histogram total{};
  for (histogram const &h : partial) {
    for (std::size_t k = 0; k < total.size(); ++k) {
      total[k] += h[k];
    }
  }
  co_return total;
  // `partial` goes back to the stack here, after the join: FILO, no heap.
}

int main() {
  std::array<std::string_view, 12> const words{"a",     "stack", "of",      "arrays",
                                               "freed", "first", "in",      "last",
                                               "out",   "order", "without", "allocation"};
  magpie::lazy_pool pool(2);
  histogram const h = magpie::sync_wait(pool, histogram_of, std::span(words), std::size_t{3});
  for (std::size_t k = 0; k < h.size(); ++k) {
    std::printf("length %zu%s: %ld\n", k + 1, k + 1 == h.size() ? "+" : "", h[k]);
  }
}
