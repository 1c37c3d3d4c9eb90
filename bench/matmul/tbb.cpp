// matmul — oneTBB task_group: two phases of three runs and an inline call, each waited.
#include <tbb/task_group.h>

#include "common/tbb_runtime.hpp"
#include "matmul/problem.hpp"

namespace {
using matmul_problem::base;

void mm(float const *a, float const *b, float *r, std::size_t n, std::size_t s, bool add) {
  if (n <= base) {
    matmul_problem::base_case(a, b, r, s, add);
    return;
  }
  std::size_t const h = n / 2;
  std::size_t const o00 = 0, o01 = h, o10 = h * s, o11 = h * s + h;
  tbb::task_group g;
  g.run([=] { mm(a + o00, b + o00, r + o00, h, s, add); });
  g.run([=] { mm(a + o00, b + o01, r + o01, h, s, add); });
  g.run([=] { mm(a + o10, b + o00, r + o10, h, s, add); });
  mm(a + o10, b + o01, r + o11, h, s, add);
  g.wait();
  g.run([=] { mm(a + o01, b + o10, r + o00, h, s, true); });
  g.run([=] { mm(a + o01, b + o11, r + o01, h, s, true); });
  g.run([=] { mm(a + o11, b + o10, r + o10, h, s, true); });
  mm(a + o11, b + o11, r + o11, h, s, true);
  g.wait();
}
} // namespace

int main(int argc, char **argv) {
  auto const o = bench::parse_options(argc, argv);
  auto const &z = matmul_problem::find(o.size);
  matmul_problem::matrices m(z.n);
  bench::tbb_runtime rt(o);
  return bench::measure(
      o, matmul_problem::name, rt.name(),
      [&] {
        rt.run([&] { mm(m.a.get(), m.b.get(), m.r.get(), z.n, z.n, false); });
        return 0;
      },
      [&](int) { return matmul_problem::check(m); });
}
