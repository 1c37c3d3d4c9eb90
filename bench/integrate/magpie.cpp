// integrate — magpie: fork the left half, call the right half, join.
#include "common/magpie_runtime.hpp"
#include "integrate/problem.hpp"

namespace {
using integrate_problem::f;

magpie::task<double> integ(double x1, double y1, double x2, double y2, double area, double eps) {
  double const half = (x2 - x1) / 2;
  double const x0 = x1 + half;
  double const y0 = f(x0);
  double const a1 = (y1 + y0) / 2 * half;
  double const a2 = (y0 + y2) / 2 * half;
  double const a12 = a1 + a2;
  if (a12 - area < eps && area - a12 < eps) {
    co_return a12;
  }
  double l = 0;
  double r = 0;
  co_await magpie::fork(&l, integ, x1, y1, x0, y0, a1, eps);
  co_await magpie::call(&r, integ, x0, y0, x2, y2, a2, eps);
  co_await magpie::join();
  co_return l + r;
}
} // namespace

int main(int argc, char **argv) {
  auto const o = bench::parse_options(argc, argv);
  auto const &z = integrate_problem::find(o.size);
  bench::magpie_runtime rt(o);
  return bench::measure(
      o, integrate_problem::name, rt.name(),
      [&] { return rt.run(integ, 0.0, f(0), z.n, f(z.n), 0.0, z.epsilon); },
      [&](double r) { return integrate_problem::check(r, z); });
}
