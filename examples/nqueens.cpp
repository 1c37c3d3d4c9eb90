// N-queens two ways: counting every solution (a reduction over the search tree), and finding one
// solution with an early exit (the first task to find one tells the others to stop).
//
//   magpie_example_nqueens [n_count] [n_find]   defaults 10 and 24
//
// A board is three bitmasks: the columns, and the two diagonals, that queens placed so far attack.
#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdio>
#include <cstdlib>

#include "magpie/magpie.hpp"

namespace {

constexpr int max_n = 32;

// [count]
/// Solutions that complete a board whose first `row` rows hold queens.
magpie::task<long> count(int n, int row, unsigned cols, unsigned diag1, unsigned diag2) {
  if (row == n) {
    co_return 1;
  }
  unsigned const full = (1U << n) - 1;
  unsigned free = full & ~(cols | diag1 | diag2);
  // One result slot per possible column of this row's queen, on this task's stack.
  auto found = co_await magpie::stack_alloc<long>(static_cast<std::size_t>(n));
  while (free != 0) {
    unsigned const bit = free & (0U - free); // the lowest free column
    free &= free - 1;
    auto const c = static_cast<std::size_t>(std::countr_zero(bit));
    co_await magpie::fork(&found[c], count, n, row + 1, cols | bit, (diag1 | bit) << 1,
                          (diag2 | bit) >> 1);
  }
  co_await magpie::join();
  long total = 0;
  for (long f : found) {
    total += f;
  }
  co_return total;
}
// [count]

// [find]
/// Shared by every task of one search.
struct search {
  int n = 0;
  std::atomic<bool> done{false};
  std::array<int, max_n> solution{}; // written once, by the task that sets `done`
};

/// Places queens from row `row` on; `board[r]` is the column of the queen in row r < row.
magpie::task<void> find(search &s, std::array<int, max_n> board, int row, unsigned cols,
                        unsigned diag1, unsigned diag2) {
  // relaxed: only a hint to stop early; the solution itself is published by the exchange below.
  if (s.done.load(std::memory_order_relaxed)) {
    co_return; // early exit: another task has found a solution
  }
  if (row == s.n) {
    // relaxed: exactly one task wins the exchange and writes `solution`; the reader (main) sees
    // the write through sync_wait's completion, which happens after every task has finished.
    if (!s.done.exchange(true, std::memory_order_relaxed)) {
      s.solution = board;
    }
    co_return;
  }
  unsigned free = ((1U << s.n) - 1) & ~(cols | diag1 | diag2);
  // relaxed: a hint, as above; stop forking once a solution is known.
  while (free != 0 && !s.done.load(std::memory_order_relaxed)) {
    unsigned const bit = free & (0U - free);
    free &= free - 1;
    board[static_cast<std::size_t>(row)] = std::countr_zero(bit);
    // `board` is copied into the child (a by-value parameter): the loop may change ours.
    co_await magpie::fork(find, s, board, row + 1, cols | bit, (diag1 | bit) << 1,
                          (diag2 | bit) >> 1);
  }
  co_await magpie::join();
}
// [find]

bool is_solution(int n, std::array<int, max_n> const &board) {
  for (int r = 0; r < n; ++r) {
    for (int q = 0; q < r; ++q) {
      int const dc = board[static_cast<std::size_t>(r)] - board[static_cast<std::size_t>(q)];
      if (dc == 0 || dc == r - q || dc == q - r) {
        return false;
      }
    }
  }
  return true;
}

} // namespace

int main(int argc, char **argv) {
  int const n_count = argc > 1 ? std::atoi(argv[1]) : 10;
  int const n_find = argc > 2 ? std::atoi(argv[2]) : 24;
  if (n_count < 1 || n_count >= max_n || n_find < 4 || n_find >= max_n) {
    std::fprintf(stderr, "n must be in 1..%d (count) and 4..%d (find)\n", max_n - 1, max_n - 1);
    return EXIT_FAILURE;
  }
  // Known totals (OEIS A000170) for checking.
  constexpr std::array<long, 16> known{1,  1,   0,   0,    2,     10,    4,      40,
                                       92, 352, 724, 2680, 14200, 73712, 365596, 2279184};

  magpie::lazy_pool pool;
  long const solutions = magpie::sync_wait(pool, count, n_count, 0, 0U, 0U, 0U);
  bool const count_ok = n_count >= static_cast<int>(known.size()) ||
                        solutions == known[static_cast<std::size_t>(n_count)];
  std::printf("%d-queens: %ld solutions: %s\n", n_count, solutions, count_ok ? "ok" : "WRONG");

  search s;
  s.n = n_find;
  magpie::sync_wait(pool, find, s, std::array<int, max_n>{}, 0, 0U, 0U, 0U);
  bool const find_ok = s.done.load(std::memory_order_relaxed) && is_solution(n_find, s.solution);
  std::printf("%d-queens: found a solution: %s\n", n_find, find_ok ? "ok" : "WRONG");
  return count_ok && find_ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
