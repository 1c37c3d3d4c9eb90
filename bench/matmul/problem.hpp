#pragma once
// bench/matmul/problem.hpp — recursive blocked matrix multiplication without temporaries
// (BENCHMARKS.md, "matmul"). Row-major n×n floats, n a power of two, row stride n everywhere.
//
// Inputs A[i] = (7i+3) mod 4 and B[i] = (5i+1) mod 4 over the flat index make every partial sum
// an integer below 2^24, so the float result is exact in any summation order. The check compares
// a sample of entries bit for bit with integer dot products, and the sum of all entries with
// Σ_k (column k of A summed) · (row k of B summed), computed exactly in 64-bit integers.

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "common/harness.hpp"

namespace matmul_problem {

inline constexpr char const *name = "matmul";
inline constexpr std::size_t base = 16; ///< the base-case block

struct size {
  char const *name;
  std::size_t n;
};

inline constexpr size sizes[] = {
    {"default", 1024},
    {"paper", 8192},
    {"small", 128},
};

inline size const &find(std::string const &s) {
  for (auto const &z : sizes) {
    if (s == z.name) {
      return z;
    }
  }
  bench::unknown_size(name, s);
}

/// The base case: loops i, j, k with a float accumulator; R = sum, or R += sum when `add`.
inline void base_case(float const *a, float const *b, float *r, std::size_t s, bool add) {
  for (std::size_t i = 0; i < base; ++i) {
    for (std::size_t j = 0; j < base; ++j) {
      float sum = 0;
      for (std::size_t k = 0; k < base; ++k) {
        sum += a[i * s + k] * b[k * s + j];
      }
      r[i * s + j] = add ? r[i * s + j] + sum : sum;
    }
  }
}

/// The three matrices, filled.
struct matrices {
  explicit matrices(std::size_t n)
      : n(n), a(new float[n * n]), b(new float[n * n]), r(new float[n * n]) {
    for (std::size_t i = 0; i < n * n; ++i) {
      a[i] = static_cast<float>((7 * i + 3) % 4);
      b[i] = static_cast<float>((5 * i + 1) % 4);
      r[i] = -1.0f; // poison: every entry must be overwritten
    }
  }
  std::size_t n;
  std::unique_ptr<float[]> a, b, r;
};

inline std::int64_t a_at(std::size_t n, std::size_t i, std::size_t j) {
  return static_cast<std::int64_t>((7 * (i * n + j) + 3) % 4);
}
inline std::int64_t b_at(std::size_t n, std::size_t i, std::size_t j) {
  return static_cast<std::int64_t>((5 * (i * n + j) + 1) % 4);
}

/// Checks R (then poisons it again, so that the next repetition must rewrite every entry); the
/// answer printed is the exact sum of all entries.
inline bench::verdict check(matrices &m) {
  struct repoison {
    matrices &m;
    ~repoison() {
      for (std::size_t i = 0; i < m.n * m.n; ++i) {
        m.r[i] = -1.0f;
      }
    }
  } const again{m};
  std::size_t const n = m.n;
  // Full sum: exact in double while < 2^53 (n = 8192: < 2^43).
  double total = 0;
  for (std::size_t i = 0; i < n * n; ++i) {
    total += m.r[i];
  }
  std::int64_t want_total = 0;
  for (std::size_t k = 0; k < n; ++k) {
    std::int64_t col = 0;
    std::int64_t row = 0;
    for (std::size_t i = 0; i < n; ++i) {
      col += a_at(n, i, k);
      row += b_at(n, k, i);
    }
    want_total += col * row;
  }
  std::string const answer = std::to_string(static_cast<std::int64_t>(total));
  if (static_cast<std::int64_t>(total) != want_total) {
    return {bench::verdict::fail, answer, "sum of entries should be " + std::to_string(want_total)};
  }
  // A sample of entries, bit for bit: a deterministic scatter plus the four corners.
  std::uint64_t x = 42;
  for (int t = 0; t < 1024 + 4; ++t) {
    std::size_t i = 0;
    std::size_t j = 0;
    if (t < 4) {
      i = (t & 1) ? n - 1 : 0;
      j = (t & 2) ? n - 1 : 0;
    } else {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      i = (x >> 33) % n;
      j = (x >> 13) % n;
    }
    std::int64_t dot = 0;
    for (std::size_t k = 0; k < n; ++k) {
      dot += a_at(n, i, k) * b_at(n, k, j);
    }
    if (m.r[i * n + j] != static_cast<float>(dot)) {
      char buf[128];
      std::snprintf(buf, sizeof buf, "R[%zu][%zu] = %.1f, expected %lld", i, j,
                    static_cast<double>(m.r[i * n + j]), static_cast<long long>(dot));
      return {bench::verdict::fail, answer, buf};
    }
  }
  return {bench::verdict::ok, answer, ""};
}

} // namespace matmul_problem
