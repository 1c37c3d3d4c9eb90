// zipf — OpenMP `for` inside one parallel region per rep: `--variant dynamic` (the default:
// schedule(dynamic) with chunk 1), `static` (schedule(static)) or `guided` (schedule(guided)).
#include <string>

#include "common/omp_runtime.hpp"
#include "zipf/problem.hpp"

int main(int argc, char **argv) {
  bench::ensure_omp_stacksize(argv);
  auto const o = bench::parse_options(argc, argv);
  omp_set_dynamic(0);
  int const workers = static_cast<int>(o.workers); // see omp_runtime.hpp: num_threads, not the ICV
  std::string const variant = o.variant.empty() ? "dynamic" : o.variant;
  omp_sched_t kind = omp_sched_dynamic;
  if (variant == "static") {
    kind = omp_sched_static;
  } else if (variant == "guided") {
    kind = omp_sched_guided;
  } else if (variant != "dynamic") {
    bench::usage(argv[0], "--variant must be static, dynamic or guided");
  }
  // schedule(runtime) with the kind set here; chunk 1 for dynamic and guided (their minimum),
  // 0 = the default (equal blocks) for static.
  omp_set_schedule(kind, kind == omp_sched_static ? 0 : 1);
  std::string const name = variant == "dynamic" ? "omp" : "omp-" + variant;
  return zipf::main_for(argc, argv, name.c_str(), o,
                        [&](zipf::loop const &lp, int count) {
                          auto const n = static_cast<long>(lp.ks.size());
#pragma omp parallel num_threads(workers)
                          for (int l = 0; l < count; ++l) {
#pragma omp for schedule(runtime)
                            for (long i = 0; i < n; ++i) {
                              lp.body(static_cast<std::size_t>(i));
                            }
                          }
                        },
                        {{"omp_lib", bench::json_string(bench::omp_library())}});
}
