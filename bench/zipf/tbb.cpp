// zipf — oneTBB parallel_for (grain 1) inside one arena.execute per rep: `--variant auto` (the
// default partitioner, auto_partitioner) or `--variant simple` (simple_partitioner: split down to
// single iterations).
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include "common/tbb_runtime.hpp"
#include "zipf/problem.hpp"

int main(int argc, char **argv) {
  auto const o = bench::parse_options(argc, argv);
  bench::tbb_runtime rt(o);
  bool const simple = o.variant == "simple";
  return zipf::main_for(argc, argv, simple ? "tbb-simple" : "tbb", o,
                        [&](zipf::loop const &lp, int count) {
                          rt.run([&] {
                            tbb::blocked_range<std::size_t> all(0, lp.ks.size(), 1);
                            auto body = [&](tbb::blocked_range<std::size_t> const &r) {
                              for (std::size_t i = r.begin(); i != r.end(); ++i) {
                                lp.body(i);
                              }
                            };
                            for (int l = 0; l < count; ++l) {
                              if (simple) {
                                tbb::parallel_for(all, body, tbb::simple_partitioner());
                              } else {
                                tbb::parallel_for(all, body, tbb::auto_partitioner());
                              }
                            }
                          });
                        });
}
