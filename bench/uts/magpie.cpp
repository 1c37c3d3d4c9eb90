// uts — magpie: compute the child states, fork a task per child (call the last), join.
// Child slots live in a heap std::vector, as in the peers (uts/magpie_task.hpp); with --star
// ("magpie*", the paper's starred variant) they live in a magpie::stack_alloc array on the task's
// own segmented stack.
#include "common/magpie_runtime.hpp"
#include "uts/magpie_task.hpp"
#include "uts/problem.hpp"

namespace {

magpie::task<uts::result> visit_star(uts::tree const *t, uts::node const *n) {
  int const k = uts::num_children(*t, *n);
  if (k == 0) {
    co_return uts::leaf(*n);
  }
  auto kids = co_await magpie::stack_alloc<uts::slot>(static_cast<std::size_t>(k));
  for (int i = 0; i < k; ++i) {
    kids[i].n = uts::child(*n, i);
  }
  for (int i = 0; i < k - 1; ++i) {
    co_await magpie::fork(&kids[i].r, visit_star, t, &kids[i].n);
  }
  co_await magpie::call(&kids[k - 1].r, visit_star, t, &kids[k - 1].n);
  co_await magpie::join();
  co_return uts::combine(*n, kids);
}
} // namespace

int main(int argc, char **argv) {
  auto const o = bench::parse_options(argc, argv);
  auto const &t = uts::find(o.size);
  uts::node const root = uts::root(t);
  bench::magpie_runtime rt(o);
  auto const check = [&](uts::result const &r) { return uts::check(r, t); };
  if (o.star) {
    return bench::measure(
        o, uts::problem_name, rt.name(), [&] { return rt.run(visit_star, &t, &root); }, check);
  }
  return bench::measure(
      o, uts::problem_name, rt.name(), [&] { return rt.run(uts::magpie_visit, &t, &root); }, check);
}
