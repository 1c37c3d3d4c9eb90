// matmul — magpie: two phases of three forks and a call, each joined.
#include "common/magpie_runtime.hpp"
#include "matmul/problem.hpp"

namespace {
using matmul_problem::base;

magpie::task<void> mm(float const *a, float const *b, float *r, std::size_t n, std::size_t s,
                      bool add) {
  if (n <= base) {
    matmul_problem::base_case(a, b, r, s, add);
    co_return;
  }
  std::size_t const h = n / 2;
  std::size_t const o00 = 0, o01 = h, o10 = h * s, o11 = h * s + h;
  co_await magpie::fork(mm, a + o00, b + o00, r + o00, h, s, add);
  co_await magpie::fork(mm, a + o00, b + o01, r + o01, h, s, add);
  co_await magpie::fork(mm, a + o10, b + o00, r + o10, h, s, add);
  co_await magpie::call(mm, a + o10, b + o01, r + o11, h, s, add);
  co_await magpie::join();
  co_await magpie::fork(mm, a + o01, b + o10, r + o00, h, s, true);
  co_await magpie::fork(mm, a + o01, b + o11, r + o01, h, s, true);
  co_await magpie::fork(mm, a + o11, b + o10, r + o10, h, s, true);
  co_await magpie::call(mm, a + o11, b + o11, r + o11, h, s, true);
  co_await magpie::join();
}
} // namespace

int main(int argc, char **argv) {
  auto const o = bench::parse_options(argc, argv);
  auto const &z = matmul_problem::find(o.size);
  matmul_problem::matrices m(z.n);
  bench::magpie_runtime rt(o);
  return bench::measure(
      o, matmul_problem::name, rt.name(),
      [&] {
        rt.run(mm, m.a.get(), m.b.get(), m.r.get(), z.n, z.n, false);
        return 0;
      },
      [&](int) { return matmul_problem::check(m); });
}
