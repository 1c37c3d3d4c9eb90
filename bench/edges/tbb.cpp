// edges — oneTBB called from main() as its users do: parallel_for / parallel_reduce over a
// blocked_range with the default partitioner, task_group run + wait, under a global_control that
// limits the process to P threads (the calling thread and P − 1 workers). TBB has no find_if: the
// find is a parallel_for that keeps the smallest match and cancels its group (right here because
// exactly one key matches).
#include <tbb/blocked_range.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>
#include <tbb/task_group.h>

#include <atomic>
#include <cstdint>
#include <functional>

#include "edges/problem.hpp"

namespace edges {
namespace {

using range = tbb::blocked_range<std::size_t>;

class tbb_door final : public door {
public:
  explicit tbb_door(unsigned workers)
      : m_threads(tbb::global_control::max_allowed_parallelism, workers) {}

  void for_each(std::vector<double> &v) override {
    tbb::parallel_for(range(0, v.size()), [&](range const &r) {
      for (std::size_t i = r.begin(); i != r.end(); ++i) {
        step(v[i]);
      }
    });
  }
  double reduce(std::vector<double> const &w) override {
    return tbb::parallel_reduce(
        range(0, w.size()), 0.0,
        [&](range const &r, double acc) {
          for (std::size_t i = r.begin(); i != r.end(); ++i) {
            acc += w[i];
          }
          return acc;
        },
        std::plus<>{});
  }
  double transform_reduce(std::vector<double> const &w) override {
    return tbb::parallel_reduce(
        range(0, w.size()), 0.0,
        [&](range const &r, double acc) {
          for (std::size_t i = r.begin(); i != r.end(); ++i) {
            acc += lifted(w[i]);
          }
          return acc;
        },
        std::plus<>{});
  }
  std::size_t find(std::vector<std::int64_t> const &keys) override {
    std::atomic<std::size_t> best{keys.size()};
    tbb::task_group_context ctx;
    tbb::parallel_for(
        range(0, keys.size()),
        [&](range const &r) {
          for (std::size_t i = r.begin(); i != r.end(); ++i) {
            if (i >= best.load(std::memory_order_relaxed)) {
              return;
            }
            if (is_match(keys[i])) {
              std::size_t seen = best.load(std::memory_order_relaxed);
              while (i < seen && !best.compare_exchange_weak(seen, i)) {
              }
              ctx.cancel_group_execution();
              return;
            }
          }
        },
        tbb::auto_partitioner(), ctx);
    return best.load();
  }
  int root(int v) override {
    int out = -1;
    tbb::task_group g;
    g.run([&] { out = v + 1; });
    g.wait();
    return out;
  }
  int spawn_and_get(stamps &s, int v) override {
    int out = -1;
    tbb::task_group g;
    g.run([&] { out = stamp(s, v); });
    g.wait();
    return out;
  }
  std::int64_t group(int n) override {
    std::atomic<std::int64_t> sum{0};
    tbb::task_group g;
    for (int i = 0; i < n; ++i) {
      g.run([&sum, i] { sum.fetch_add(i, std::memory_order_relaxed); });
    }
    g.wait();
    return sum.load();
  }

private:
  tbb::global_control m_threads;
};

} // namespace

std::unique_ptr<door> make_tbb_door(unsigned workers) {
  return std::make_unique<tbb_door>(workers);
}

} // namespace edges
