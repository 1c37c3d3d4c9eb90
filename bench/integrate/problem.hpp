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
  double reference; ///< the serial recursion's result, bit for bit (see check())
};

// References: the serial projection's result (GCC 12 and Clang 16, -ffp-contract=off), as exact
// hexadecimal literals. The exact integral n⁴/4 + n²/2 is 250,000,500,000, 2,500,000,050,000,000
// and 25,005,000; the rule's error is 1.0e-3, 0 and 4.0e-5 of it.
inline constexpr size sizes[] = {
    {"default", 1'000, 1e-9, 0x1.d1a9872900021p+37}, // 15,016,391 calls, depth 23
    {"paper", 10'000, 1e-9, 0x1.1c3793dd661p+51},    // 350,009,975 calls, depth 32
    {"small", 100, 1e-9, 0x1.7d8bc80002972p+24},     // 779,923 calls, depth 19
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

/// Every runtime must return the serial recursion's result bit for bit. The call tree and every
/// operation are fixed (split() above, -ffp-contract=off), and every runtime combines the halves
/// as l + r, so the sum is the same expression tree whatever runs where; any difference is a lost,
/// duplicated or wrong subtree. Why no tolerance: f ≥ 0 on [0, n], so the smallest subtree is a
/// leaf, and the smallest leaf (at x = 0) contributes 2.9e-5 at the default size, one unit in the
/// last place of the 2.5e11 result (3.05e-5): any tolerance would let it go. Dropping any one of
/// the 623 subtrees worth < 1e-3 (33 ulps) changes the default result (tried one by one); a
/// larger subtree moves it by more than the ≤ 23 roundings on its path (≤ 11.5 ulps) can undo.
/// At the paper size (ulp 0.5) the smallest leaves are worth ~1e-5 and may be lost unseen; a
/// relative 1e-8 would have passed any lost subtree worth < 2,500 at the default size.
inline bench::verdict check(double got, size const &z) {
  bool const ok = got == z.reference;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", got);
  char note[128];
  std::snprintf(note, sizeof note, "expected %.17g (%a), the serial recursion's result; got %a",
                z.reference, z.reference, got);
  return {ok ? bench::verdict::ok : bench::verdict::fail, buf, ok ? "" : note};
}

} // namespace integrate_problem
