// zipf — OpenMP `for schedule(dynamic)` (chunk 1), inside one parallel region per rep.
#include "common/omp_runtime.hpp"
#include "zipf/problem.hpp"

int main(int argc, char **argv) {
  bench::ensure_omp_stacksize(argv);
  auto const o = bench::parse_options(argc, argv);
  omp_set_dynamic(0);
  int const workers = static_cast<int>(o.workers); // see omp_runtime.hpp: num_threads, not the ICV
  return zipf::main_for(argc, argv, "omp", o,
                        [&](zipf::loop const &lp, int count) {
                          auto const n = static_cast<long>(lp.ks.size());
#pragma omp parallel num_threads(workers)
                          for (int l = 0; l < count; ++l) {
#pragma omp for schedule(dynamic)
                            for (long i = 0; i < n; ++i) {
                              lp.body(static_cast<std::size_t>(i));
                            }
                          }
                        },
                        {{"omp_lib", bench::json_string(bench::omp_library())}});
}
