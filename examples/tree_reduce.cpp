// A reduction over a user data structure: an organisation chart (a tree with any number of
// children per node), summing salaries and finding the deepest chain of command, one child task
// per subtree, each writing its result into a slot of an array on the parent's stack.
//
//   magpie_example_tree_reduce [depth]   builds a tree of the given depth (default 10) and checks
//                                        the parallel result against a serial walk.
#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "magpie/magpie.hpp"

namespace {

// [reduce]
/// The user's data structure: magpie needs nothing from it.
struct employee {
  std::string name;
  long salary = 0;
  std::vector<employee> reports;
};

/// What the reduction computes for a subtree.
struct summary {
  long people = 0;
  long payroll = 0;
  int depth = 0; // levels of management, the subtree's root included
};

summary combine(summary a, summary const &b) {
  return {a.people + b.people, a.payroll + b.payroll, std::max(a.depth, b.depth)};
}

magpie::task<summary> summarise(employee const &boss) {
  // One slot per direct report, on this task's stack: allocated before the first fork, freed
  // when `parts` goes out of scope after the join. Children write their results into it.
  auto parts = co_await magpie::stack_alloc<summary>(boss.reports.size());
  for (std::size_t i = 0; i < boss.reports.size(); ++i) {
    // `boss.reports[i]` is an lvalue that outlives the join: a forked child may take it by
    // reference (a temporary would be rejected at compile time).
    co_await magpie::fork(&parts[i], summarise, boss.reports[i]);
  }
  co_await magpie::join();

  summary s{1, boss.salary, 0};
  for (summary const &p : parts) {
    s = combine(s, p);
  }
  s.depth += 1;
  co_return s;
}
// [reduce]

/// A deterministic, irregular chart: node k has (k * 7 + level) % 5 reports.
employee make_chart(int depth, int level = 0, long id = 1) {
  employee e{"employee " + std::to_string(id), 30'000 + (id * 7919) % 90'000, {}};
  if (level + 1 < depth) {
    auto const n = static_cast<std::size_t>((id * 7 + level) % 5);
    for (std::size_t i = 0; i < n; ++i) {
      e.reports.push_back(make_chart(depth, level + 1, id * 5 + static_cast<long>(i)));
    }
  }
  return e;
}

summary summarise_serially(employee const &boss) {
  summary s{1, boss.salary, 0};
  for (employee const &r : boss.reports) {
    s = combine(s, summarise_serially(r));
  }
  s.depth += 1;
  return s;
}

} // namespace

int main(int argc, char **argv) {
  int const depth = argc > 1 ? std::atoi(argv[1]) : 10;
  employee const ceo = make_chart(depth);

  magpie::lazy_pool pool;
  summary const s = magpie::sync_wait(pool, summarise, ceo);
  summary const expected = summarise_serially(ceo);

  bool const ok =
      s.people == expected.people && s.payroll == expected.payroll && s.depth == expected.depth;
  std::printf("%ld people, payroll %ld, %d levels: %s\n", s.people, s.payroll, s.depth,
              ok ? "ok" : "WRONG");
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
