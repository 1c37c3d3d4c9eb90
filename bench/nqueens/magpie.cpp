// nqueens — magpie: fork a child per valid row (board by value), join, sum.
#include "common/magpie_runtime.hpp"
#include "nqueens/problem.hpp"

namespace {
using nqueens_problem::board;

magpie::task<long> nq(int n, int j, board a) {
  if (j == n) {
    co_return 1;
  }
  std::array<long, nqueens_problem::max_n> parts{};
  for (int i = 0; i < n; ++i) {
    board b = a;
    b[j] = static_cast<char>(i);
    if (nqueens_problem::ok(b, j)) {
      co_await magpie::fork(&parts[i], nq, n, j + 1, b); // b is copied into the child's frame
    }
  }
  co_await magpie::join();
  long sum = 0;
  for (int i = 0; i < n; ++i) {
    sum += parts[i];
  }
  co_return sum;
}
} // namespace

int main(int argc, char **argv) {
  auto const o = bench::parse_options(argc, argv);
  auto const &z = nqueens_problem::find(o.size);
  bench::magpie_runtime rt(o);
  return bench::measure(
      o, nqueens_problem::name, rt.name(), [&] { return rt.run(nq, z.n, 0, board{}); },
      [&](long r) { return nqueens_problem::check(r, z); });
}
