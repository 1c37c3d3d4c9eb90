// uts — OpenMP tasks: compute the child states, a task per child (the last inline), taskwait.
#include <vector>

#include "common/omp_runtime.hpp"
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
  for (int i = 0; i < k - 1; ++i) {
#pragma omp task shared(t, kids) firstprivate(i)
    kids[i].r = visit(t, kids[i].n);
  }
  kids[k - 1].r = visit(t, kids[k - 1].n);
#pragma omp taskwait
  return uts::combine(n, kids);
}
} // namespace

int main(int argc, char **argv) {
  bench::ensure_omp_stacksize(argv);
  auto const o = bench::parse_options(argc, argv);
  auto const &t = uts::find(o.size);
  uts::node const root = uts::root(t);
  bench::omp_runtime rt(o);
  return bench::measure(
      o, uts::problem_name, rt.name(), [&] { return rt.run([&] { return visit(t, root); }); },
      [&](uts::result const &r) { return uts::check(r, t); },
      {{"omp_lib", bench::json_string(bench::omp_library())}});
}
