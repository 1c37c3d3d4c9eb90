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

/// One step of the adaptive trapezoid rule on [x1, x2] (BENCHMARKS.md): the midpoint and the two
/// halves' areas, and whether they agree with the parent's estimate `area` to within `eps`. Every
/// runtime does exactly this work per task; only how the two halves are spawned differs.
struct step {
  double x0, y0; ///< the midpoint and f there
  double a1, a2; ///< the left and right halves' trapezoids
  double a12;    ///< their sum
  bool done;     ///< a12 is accurate enough: no recursion
};

inline step split(double x1, double y1, double x2, double y2, double area, double eps) {
  double const half = (x2 - x1) / 2;
  double const x0 = x1 + half;
  double const y0 = f(x0);
  double const a1 = (y1 + y0) / 2 * half;
  double const a2 = (y0 + y2) / 2 * half;
  double const a12 = a1 + a2;
  return {x0, y0, a1, a2, a12, a12 - area < eps && area - a12 < eps};
}

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
