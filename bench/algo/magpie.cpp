// algo — magpie's parallel algorithms, each started as the root of a sync_wait on the pool
// (exactly what the blocking forms magpie::reduce(pool, ...) do).
#include "algo/problem.hpp"
#include "common/magpie_runtime.hpp"

namespace {
using key_iterator = std::vector<std::int64_t>::const_iterator;

/// find_if, then the time on the worker: the call returns once every iteration has finished or
/// been skipped (fully strict), so this is when the search stopped, before the caller wakes.
magpie::task<key_iterator> find_and_stamp(key_iterator first, key_iterator last) {
  key_iterator at{};
  co_await magpie::call(&at, magpie::find_if, first, last, algo_bench::is_match{},
                        magpie::loop_options{});
  algo_bench::quiesced_ns.store(algo_bench::now_ns(), std::memory_order_relaxed);
  co_return at;
}
} // namespace

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
        return static_cast<std::size_t>(rt.run(find_and_stamp, v.begin(), v.end()) - v.begin());
      }};
  return algo_bench::main_for(rt.name().c_str(), o, ops);
}
