// zipf — magpie: a recursive fork–join range split down to single iterations.
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

magpie::task<void> loops(zipf::loop const *lp, int count) {
  for (int l = 0; l < count; ++l) {
    co_await magpie::call(range, lp, std::size_t{0}, lp->ks.size());
  }
}
} // namespace

int main(int argc, char **argv) {
  auto const o = bench::parse_options(argc, argv);
  bench::magpie_runtime rt(o);
  return zipf::main_for(argc, argv, rt.name().c_str(), o,
                        [&](zipf::loop const &lp, int count) { rt.run(loops, &lp, count); });
}
