// algo — std::reduce / inclusive_scan / sort / find_if with std::execution::par, as GCC 12's
// libstdc++ ships them (the oneTBB backend), inside a tbb arena of P threads.
#include <algorithm>
#include <execution>
#include <numeric>

#include "algo/problem.hpp"
#include "common/tbb_runtime.hpp"

int main(int argc, char **argv) {
  auto const o = bench::parse_options(argc, argv);
  bench::tbb_runtime rt(o);
  auto const par = std::execution::par;
  auto ops = algo_bench::ops{
      [&](auto const &v) {
        return rt.run([&] { return std::reduce(par, v.begin(), v.end(), 0.0); });
      },
      [&](auto const &in, auto &out) {
        rt.run([&] { std::inclusive_scan(par, in.begin(), in.end(), out.begin()); });
      },
      [&](auto &v) { rt.run([&] { std::sort(par, v.begin(), v.end()); }); },
      [&](auto const &v) {
        return rt.run([&] {
          return static_cast<std::size_t>(
              std::find_if(par, v.begin(), v.end(), algo_bench::is_match{}) - v.begin());
        });
      }};
  return algo_bench::main_for("pstl", o, ops);
}
