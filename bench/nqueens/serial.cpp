// nqueens — the serial projection.
#include "nqueens/problem.hpp"

namespace {
using nqueens_problem::board;

long nq(int n, int j, board a) {
  if (j == n) {
    return 1;
  }
  std::array<long, nqueens_problem::max_n> parts{};
  for (int i = 0; i < n; ++i) {
    board b = a;
    b[j] = static_cast<char>(i);
    if (nqueens_problem::ok(b, j)) {
      parts[i] = nq(n, j + 1, b);
    }
  }
  long sum = 0;
  for (int i = 0; i < n; ++i) {
    sum += parts[i];
  }
  return sum;
}
} // namespace

int main(int argc, char **argv) {
  auto const o = bench::parse_options(argc, argv);
  auto const &z = nqueens_problem::find(o.size);
  int volatile n = z.n;
  return bench::measure(
      o, nqueens_problem::name, "serial", [&] { return nq(n, 0, board{}); },
      [&](long r) { return nqueens_problem::check(r, z); });
}
