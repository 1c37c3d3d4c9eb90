// algo — magpie's parallel algorithms, each started as the root of a sync_wait on the pool
// (exactly what the blocking forms magpie::reduce(pool, ...) do).
#include "algo/problem.hpp"
#include "common/magpie_runtime.hpp"

int main(int argc, char **argv) {
  auto const o = bench::parse_options(argc, argv);
  bench::magpie_runtime rt(o);
  magpie::loop_options const none{};
  auto ops = algo_bench::ops{
      [&](auto const &v) {
        return rt.run(magpie::reduce, v.begin(), v.end(), 0.0, std::plus<>{}, none);
      },
      [&](auto const &in, auto &out) {
        rt.run(magpie::inclusive_scan, in.begin(), in.end(), out.begin(), std::plus<>{}, none);
      },
      [&](auto &v) { rt.run(magpie::sort, v.begin(), v.end(), std::ranges::less{}, none); },
      [&](auto const &v) {
        return static_cast<std::size_t>(
            rt.run(magpie::find_if, v.begin(), v.end(), algo_bench::is_match{}, none) - v.begin());
      }};
  return algo_bench::main_for(rt.name().c_str(), o, ops);
}
