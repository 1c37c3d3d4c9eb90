#pragma once
// bench/integrate/problem.hpp — adaptive trapezoid integration of f(x) = (x·x + 1)·x on [0, n]
// (BENCHMARKS.md, "integrate"). Compiled with -ffp-contract=off so that every runtime and both
// compilers do the same floating-point operations; the call tree is then deterministic.

#include <cmath>
#include <cstdio>
#include <string>

#include "common/harness.hpp"

namespace integrate_problem {

inline constexpr char const *name = "integrate";

struct size {
  char const *name;
  double n;
  double epsilon;
};

inline constexpr size sizes[] = {
    {"default", 1'000, 1e-9}, // ~16 M calls
    {"paper", 10'000, 1e-9},  // 350,009,975 calls, max depth 32
    {"small", 100, 1e-9},
};

inline size const &find(std::string const &s) {
  for (auto const &z : sizes) {
    if (s == z.name) {
      return z;
    }
  }
  bench::unknown_size(name, s);
}

inline double f(double x) { return (x * x + 1.0) * x; }

/// Exact integral n⁴/4 + n²/2.
inline double exact(double n) { return n * n * n * n / 4.0 + n * n / 2.0; }

inline bench::verdict check(double got, size const &z) {
  double const want = exact(z.n);
  bool const ok = std::fabs(got - want) <= 1e-8 * std::fmax(std::fabs(want), 1.0);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", got);
  char note[96];
  std::snprintf(note, sizeof note, "expected %.17g within relative 1e-8", want);
  return {ok ? bench::verdict::ok : bench::verdict::fail, buf, ok ? "" : note};
}

} // namespace integrate_problem
