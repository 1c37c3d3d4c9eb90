// zipf — std::for_each(std::execution::par) as GCC 12's libstdc++ ships it (its parallel backend
// is oneTBB), inside one tbb arena of P threads per rep.
#include <algorithm>
#include <execution>
#include <numeric>
#include <vector>

#include "common/tbb_runtime.hpp"
#include "zipf/problem.hpp"

int main(int argc, char **argv) {
  auto const o = bench::parse_options(argc, argv);
  bench::tbb_runtime rt(o);
  return zipf::main_for(argc, argv, "pstl", o, [&](zipf::loop const &lp, int count) {
    std::vector<std::size_t> index(lp.ks.size());
    std::iota(index.begin(), index.end(), std::size_t{0});
    rt.run([&] {
      for (int l = 0; l < count; ++l) {
        std::for_each(std::execution::par, index.begin(), index.end(),
                      [&](std::size_t i) { lp.body(i); });
      }
    });
  });
}
