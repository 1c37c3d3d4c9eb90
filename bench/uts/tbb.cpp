// uts — oneTBB task_group: compute the child states, run a task per child (the last inline), wait.
#include <tbb/task_group.h>

#include <vector>

#include "common/tbb_runtime.hpp"
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
  tbb::task_group g;
  for (int i = 0; i < k - 1; ++i) {
    g.run([&t, &kids, i] { kids[i].r = visit(t, kids[i].n); });
  }
  kids[k - 1].r = visit(t, kids[k - 1].n);
  g.wait();
  return uts::combine(n, kids);
}
} // namespace

int main(int argc, char **argv) {
  auto const o = bench::parse_options(argc, argv);
  auto const &t = uts::find(o.size);
  uts::node const root = uts::root(t);
  bench::tbb_runtime rt(o);
  return bench::measure(
      o, uts::problem_name, rt.name(), [&] { return rt.run([&] { return visit(t, root); }); },
      [&](uts::result const &r) { return uts::check(r, t); });
}
