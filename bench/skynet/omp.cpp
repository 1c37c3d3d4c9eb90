// skynet — OpenMP tasks: nine tasks, the tenth inline, taskwait.
#include <array>

#include "common/omp_runtime.hpp"
#include "skynet/problem.hpp"

namespace {
std::int64_t skynet(std::int64_t num, std::int64_t size) {
  if (size == 1) {
    return num;
  }
  std::int64_t const sub = size / 10;
  std::array<std::int64_t, 10> parts;
  for (std::int64_t i = 0; i < 9; ++i) {
#pragma omp task shared(parts) firstprivate(i, num, sub)
    parts[i] = skynet(num + i * sub, sub);
  }
  parts[9] = skynet(num + 9 * sub, sub);
#pragma omp taskwait
  std::int64_t sum = 0;
  for (auto p : parts) {
    sum += p;
  }
  return sum;
}
} // namespace

int main(int argc, char **argv) {
  bench::ensure_omp_stacksize(argv);
  auto const o = bench::parse_options(argc, argv);
  auto const &z = skynet_problem::find(o.size);
  bench::omp_runtime rt(o);
  return bench::measure(
      o, skynet_problem::name, rt.name(),
      [&] { return rt.run([&] { return skynet(0, skynet_problem::leaves(z.depth)); }); },
      [&](std::int64_t r) { return skynet_problem::check(r, z); },
      {{"omp_lib", bench::json_string(bench::omp_library())}});
}
