// algo — oneTBB: parallel_reduce, parallel_scan, parallel_sort, and a find as parallel_for with an
// atomic minimum that cancels the group once a match is found (TBB has no find_if).
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>
#include <tbb/parallel_scan.h>
#include <tbb/parallel_sort.h>
#include <tbb/task_group.h>

#include <atomic>
#include <functional>

#include "algo/problem.hpp"
#include "common/tbb_runtime.hpp"

int main(int argc, char **argv) {
  auto const o = bench::parse_options(argc, argv);
  bench::tbb_runtime rt(o);
  using range = tbb::blocked_range<std::size_t>;
  auto ops = algo_bench::ops{
      [&](auto const &v) {
        return rt.run([&] {
          return tbb::parallel_reduce(
              range(0, v.size()), 0.0,
              [&](range const &r, double acc) {
                for (std::size_t i = r.begin(); i != r.end(); ++i) {
                  acc += v[i];
                }
                return acc;
              },
              std::plus<>{});
        });
      },
      [&](auto const &in, auto &out) {
        rt.run([&] {
          tbb::parallel_scan(
              range(0, in.size()), 0,
              [&](range const &r, int acc, bool final) {
                for (std::size_t i = r.begin(); i != r.end(); ++i) {
                  acc += in[i];
                  if (final) {
                    out[i] = acc;
                  }
                }
                return acc;
              },
              std::plus<>{});
        });
      },
      [&](auto &v) { rt.run([&] { tbb::parallel_sort(v.begin(), v.end()); }); },
      [&](auto const &v) {
        return rt.run([&] {
          std::atomic<std::size_t> best{v.size()};
          tbb::task_group_context ctx;
          tbb::parallel_for(
              range(0, v.size()),
              [&](range const &r) {
                for (std::size_t i = r.begin(); i != r.end(); ++i) {
                  if (i >= best.load(std::memory_order_relaxed)) {
                    return;
                  }
                  if (algo_bench::is_match{}(v[i])) {
                    std::size_t seen = best.load(std::memory_order_relaxed);
                    while (i < seen && !best.compare_exchange_weak(seen, i)) {
                    }
                    ctx.cancel_group_execution(); // every match has the one planted index
                    return;
                  }
                }
              },
              tbb::auto_partitioner(), ctx);
          return best.load();
        });
      }};
  return algo_bench::main_for("tbb", o, ops);
}
