// uts — the serial projection: recursion (on the harness's 1 GiB stack: T3XXL is ~10^5 deep).
#include <vector>

#include "uts/problem.hpp"

namespace {
uts::result visit(uts::tree const &t, uts::node const &n) {
  int const k = uts::num_children(t, n);
  if (k == 0) {
    return uts::leaf(n);
  }
  std::vector<uts::slot> kids(static_cast<std::size_t>(k));
  for (int i = 0; i < k; ++i) {
    kids[i].n = uts::child(n, i);
  }
  for (int i = 0; i < k; ++i) {
    kids[i].r = visit(t, kids[i].n);
  }
  return uts::combine(n, kids);
}
} // namespace

int main(int argc, char **argv) {
  auto const o = bench::parse_options(argc, argv);
  auto const &t = uts::find(o.size);
  uts::node const root = uts::root(t);
  return bench::measure(
      o, uts::problem_name, "serial", [&] { return visit(t, root); },
      [&](uts::result const &r) { return uts::check(r, t); });
}
