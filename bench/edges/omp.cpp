// edges — OpenMP called from main(): `parallel for schedule(static)` (and `reduction(+:s)`) with
// num_threads(P) on the construct, a parallel region whose `single` thread starts one task for a
// root or a spawn (the region's end is its wait), and a find written by hand (OpenMP has none and
// `cancel` needs OMP_CANCELLATION): each thread scans its static share in chunks of 4,096 keys and
// stops once a smaller match is known. Wait policy: the library's default (no OMP_WAIT_POLICY).
#include <omp.h>

#include <algorithm>
#include <atomic>

#include "edges/problem.hpp"

namespace edges {
namespace {

class omp_door final : public door {
public:
  explicit omp_door(unsigned workers) : m_workers(static_cast<int>(workers)) { omp_set_dynamic(0); }

  void for_each(std::vector<double> &v) override {
    auto const n = static_cast<long>(v.size());
    double *x = v.data();
#pragma omp parallel for schedule(static) num_threads(m_workers)
    for (long i = 0; i < n; ++i) {
      step(x[i]);
    }
  }
  double reduce(std::vector<double> const &w) override {
    auto const n = static_cast<long>(w.size());
    double const *x = w.data();
    double s = 0;
#pragma omp parallel for schedule(static) reduction(+ : s) num_threads(m_workers)
    for (long i = 0; i < n; ++i) {
      s += x[i];
    }
    return s;
  }
  double transform_reduce(std::vector<double> const &w) override {
    auto const n = static_cast<long>(w.size());
    double const *x = w.data();
    double s = 0;
#pragma omp parallel for schedule(static) reduction(+ : s) num_threads(m_workers)
    for (long i = 0; i < n; ++i) {
      s += lifted(x[i]);
    }
    return s;
  }
  std::size_t find(std::vector<std::int64_t> const &keys) override {
    constexpr std::size_t chunk = 4096;
    std::size_t const n = keys.size();
    std::atomic<std::size_t> best{n};
#pragma omp parallel num_threads(m_workers)
    {
      auto const t = static_cast<std::size_t>(omp_get_thread_num());
      auto const team = static_cast<std::size_t>(omp_get_num_threads());
      std::size_t const hi = n * (t + 1) / team;
      for (std::size_t c = n * t / team; c < hi && c < best.load(std::memory_order_relaxed);
           c += chunk) {
        std::size_t const e = std::min(hi, c + chunk);
        std::size_t i = c;
        while (i < e && !is_match(keys[i])) {
          ++i;
        }
        if (i < e) {
          std::size_t seen = best.load(std::memory_order_relaxed);
          while (i < seen && !best.compare_exchange_weak(seen, i)) {
          }
          break;
        }
      }
    }
    return best.load();
  }
  int root(int v) override {
    int out = -1;
#pragma omp parallel num_threads(m_workers)
#pragma omp single
#pragma omp task shared(out)
    out = v + 1;
    return out;
  }
  int spawn_and_get(stamps &s, int v) override {
    int out = -1;
#pragma omp parallel num_threads(m_workers)
#pragma omp single
#pragma omp task shared(out, s)
    out = stamp(s, v);
    return out;
  }
  std::int64_t group(int n) override {
    std::atomic<std::int64_t> sum{0};
#pragma omp parallel num_threads(m_workers)
#pragma omp single
    for (int i = 0; i < n; ++i) {
#pragma omp task shared(sum) firstprivate(i)
      sum.fetch_add(i, std::memory_order_relaxed);
    }
    return sum.load();
  }

private:
  int m_workers;
};

} // namespace

std::unique_ptr<door> make_omp_door(unsigned workers) {
  return std::make_unique<omp_door>(workers);
}

char const *omp_library() noexcept {
#if defined(__clang__)
  return "libomp";
#else
  return "libgomp";
#endif
}

} // namespace edges
