#pragma once
// bench/uts/magpie_task.hpp — a UTS node as a magpie task: compute the child states, fork a task
// per child (call the last), join; child slots in a heap std::vector, as in the peers. Shared by
// the UTS benchmark (magpie.cpp) and trace_overhead (bench/trace/).
#include <vector>

#include "magpie/magpie.hpp"
#include "uts/problem.hpp"

namespace uts {
// Internal linkage, as when it was local to the benchmark's file: an inline (external) coroutine
// compiles to a different, longer resume function with GCC 12 (fib: 328 instructions, not 281).
namespace {
magpie::task<result> magpie_visit(tree const *t, node const *n) {
  int const k = num_children(*t, *n);
  if (k == 0) {
    co_return leaf(*n);
  }
  std::vector<slot> kids(static_cast<std::size_t>(k));
  for (int i = 0; i < k; ++i) {
    kids[i].n = child(*n, i);
  }
  for (int i = 0; i < k - 1; ++i) {
    co_await magpie::fork(&kids[i].r, magpie_visit, t, &kids[i].n);
  }
  co_await magpie::call(&kids[k - 1].r, magpie_visit, t, &kids[k - 1].n);
  co_await magpie::join();
  co_return combine(*n, kids);
}
} // namespace
} // namespace uts
