// zipf — magpie: magpie::for_each over the iterations (lazy binary splitting, no grain), the
// loops back to back inside one root task. `--variant split`: the earlier hand-written recursive
// fork–join split down to single iterations.
#include <cstddef>
#include <ranges>

#include "common/magpie_runtime.hpp"
#include "zipf/problem.hpp"

namespace {
magpie::task<void> range(zipf::loop const *lp, std::size_t lo, std::size_t hi) {
  if (hi - lo == 1) {
    lp->body(lo);
    co_return;
  }
  std::size_t const mid = lo + (hi - lo) / 2;
  co_await magpie::fork(range, lp, lo, mid);
  co_await magpie::call(range, lp, mid, hi);
  co_await magpie::join();
}

magpie::task<void> split_loops(zipf::loop const *lp, int count) {
  for (int l = 0; l < count; ++l) {
    co_await magpie::call(range, lp, std::size_t{0}, lp->ks.size());
  }
}

magpie::task<void> for_each_loops(zipf::loop const *lp, int count) {
  auto body = [lp](std::size_t i) { lp->body(i); };
  std::size_t const n = lp->ks.size();
  for (int l = 0; l < count; ++l) {
    co_await magpie::call(magpie::for_range, std::size_t{0}, n, body, magpie::loop_options{});
    co_await magpie::join();
  }
}
} // namespace

int main(int argc, char **argv) {
  auto const o = bench::parse_options(argc, argv);
  bench::magpie_runtime rt(o);
  bool const split = o.variant == "split";
  return zipf::main_for(argc, argv, rt.name().c_str(), o, [&](zipf::loop const &lp, int count) {
    if (split) {
      rt.run(split_loops, &lp, count);
    } else {
      rt.run(for_each_loops, &lp, count);
    }
  });
}
