// integrate — OpenMP tasks.
#include "common/omp_runtime.hpp"
#include "integrate/problem.hpp"

namespace {
using integrate_problem::f;

double integ(double x1, double y1, double x2, double y2, double area, double eps) {
  double const half = (x2 - x1) / 2;
  double const x0 = x1 + half;
  double const y0 = f(x0);
  double const a1 = (y1 + y0) / 2 * half;
  double const a2 = (y0 + y2) / 2 * half;
  double const a12 = a1 + a2;
  if (a12 - area < eps && area - a12 < eps) {
    return a12;
  }
  double l = 0;
#pragma omp task shared(l) firstprivate(x1, y1, x0, y0, a1, eps)
  l = integ(x1, y1, x0, y0, a1, eps);
  double const r = integ(x0, y0, x2, y2, a2, eps);
#pragma omp taskwait
  return l + r;
}
} // namespace

int main(int argc, char **argv) {
  bench::ensure_omp_stacksize(argv);
  auto const o = bench::parse_options(argc, argv);
  auto const &z = integrate_problem::find(o.size);
  bench::omp_runtime rt(o);
  return bench::measure(
      o, integrate_problem::name, rt.name(),
      [&] { return rt.run([&] { return integ(0, f(0), z.n, f(z.n), 0, z.epsilon); }); },
      [&](double r) { return integrate_problem::check(r, z); },
      {{"omp_lib", bench::json_string(bench::omp_library())}});
}
