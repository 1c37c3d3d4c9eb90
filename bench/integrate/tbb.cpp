// integrate — oneTBB task_group.
#include <tbb/task_group.h>

#include "common/tbb_runtime.hpp"
#include "integrate/problem.hpp"

namespace {
using integrate_problem::f;

double integ(double x1, double y1, double x2, double y2, double area, double eps) {
  auto const s = integrate_problem::split(x1, y1, x2, y2, area, eps);
  if (s.done) {
    return s.a12;
  }
  double l = 0;
  tbb::task_group g;
  g.run([&] { l = integ(x1, y1, s.x0, s.y0, s.a1, eps); });
  double const r = integ(s.x0, s.y0, x2, y2, s.a2, eps);
  g.wait();
  return l + r;
}
} // namespace

int main(int argc, char **argv) {
  auto const o = bench::parse_options(argc, argv);
  auto const &z = integrate_problem::find(o.size);
  bench::tbb_runtime rt(o);
  return bench::measure(
      o, integrate_problem::name, rt.name(),
      [&] { return rt.run([&] { return integ(0, f(0), z.n, f(z.n), 0, z.epsilon); }); },
      [&](double r) { return integrate_problem::check(r, z); });
}
