#pragma once
// bench/nqueens/problem.hpp — count the placements of n non-attacking queens
// (BENCHMARKS.md, "nqueens"). nq(j, a): if j == n return 1; for each row i, b = a[0..j−1] with
// b[j] = i; if no pair in b[0..j] shares a row or a diagonal (all pairs are tested, as in the
// paper's version), fork nq(j+1, b) with the board passed by value; join; return the sum.

#include <array>
#include <string>

#include "common/harness.hpp"

namespace nqueens_problem {

inline constexpr char const *name = "nqueens";
inline constexpr int max_n = 16;

using board = std::array<char, max_n>;

struct size {
  char const *name;
  int n;
  long expected;
};

inline constexpr size sizes[] = {
    {"default", 12, 14'200}, {"paper", 14, 365'596}, {"8", 8, 92},
    {"10", 10, 724},         {"13", 13, 73'712},     {"15", 15, 2'279'184},
};

inline size const &find(std::string const &s) {
  for (auto const &z : sizes) {
    if (s == z.name) {
      return z;
    }
  }
  bench::unknown_size(name, s);
}

/// True if no two queens of b[0..j] (inclusive) share a row or a diagonal.
inline bool ok(board const &b, int j) {
  for (int p = 0; p <= j; ++p) {
    for (int q = p + 1; q <= j; ++q) {
      int const d = b[q] - b[p];
      if (d == 0 || d == q - p || d == p - q) {
        return false;
      }
    }
  }
  return true;
}

inline bench::verdict check(long got, size const &z) { return bench::check_equal(got, z.expected); }

} // namespace nqueens_problem
