// algo — the serial projection: the standard algorithms without an execution policy.
#include <algorithm>
#include <numeric>

#include "algo/problem.hpp"

int main(int argc, char **argv) {
  auto const o = bench::parse_options(argc, argv);
  auto rt = algo_bench::ops{
      [](auto const &v) { return std::reduce(v.begin(), v.end(), 0.0); },
      [](auto const &in, auto &out) { std::inclusive_scan(in.begin(), in.end(), out.begin()); },
      [](auto &v) { std::sort(v.begin(), v.end()); },
      [](auto const &v) {
        return static_cast<std::size_t>(std::find_if(v.begin(), v.end(), algo_bench::is_match{}) -
                                        v.begin());
      }};
  return algo_bench::main_for("serial", o, rt);
}
