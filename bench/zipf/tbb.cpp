// zipf — oneTBB parallel_for (default partitioner, grain 1), inside one arena.execute per rep.
#include <tbb/parallel_for.h>

#include "common/tbb_runtime.hpp"
#include "zipf/problem.hpp"

int main(int argc, char **argv) {
  auto const o = bench::parse_options(argc, argv);
  bench::tbb_runtime rt(o);
  return zipf::main_for(argc, argv, rt.name(), o, [&](zipf::loop const &lp, int count) {
    rt.run([&] {
      for (int l = 0; l < count; ++l) {
        tbb::parallel_for(std::size_t{0}, lp.ks.size(), [&](std::size_t i) { lp.body(i); });
      }
    });
  });
}
