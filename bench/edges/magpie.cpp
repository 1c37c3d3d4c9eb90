// edges — magpie entered from a plain thread, as a user would: the blocking algorithms with the
// pool first (magpie::for_each(pool, v, fn), reduce, transform_reduce, find_if), sync_wait of a
// trivial root, spawn(...).get(), and a task_group filled and waited for from the thread.
#include <atomic>
#include <cstdint>
#include <functional>

#include "edges/problem.hpp"
#include "magpie/magpie.hpp"

namespace edges {
namespace {

magpie::task<int> trivial(int v) { co_return v + 1; }

magpie::task<int> stamped(stamps *s, int v) { co_return stamp(*s, v); }

magpie::task<void> add(std::atomic<std::int64_t> *sum, int i) {
  sum->fetch_add(i, std::memory_order_relaxed);
  co_return;
}

class magpie_door final : public door {
public:
  magpie_door(bool busy, unsigned workers, bool callers) {
    magpie::pool_options o;
    o.workers = workers;
    o.callers_run_roots = callers;
    if (busy) {
      m_pool = std::make_unique<magpie::busy_pool>(o);
    } else {
      m_pool = std::make_unique<magpie::lazy_pool>(o);
    }
  }

  void for_each(std::vector<double> &v) override {
    magpie::for_each(*m_pool, v, [](double &x) { step(x); });
  }
  double reduce(std::vector<double> const &w) override { return magpie::reduce(*m_pool, w, 0.0); }
  double transform_reduce(std::vector<double> const &w) override {
    return magpie::transform_reduce(*m_pool, w, 0.0, std::plus<>{},
                                    [](double x) { return lifted(x); });
  }
  std::size_t find(std::vector<std::int64_t> const &keys) override {
    auto const it = magpie::find_if(*m_pool, keys, [](std::int64_t k) { return is_match(k); });
    return static_cast<std::size_t>(it - keys.begin());
  }
  int root(int v) override { return magpie::sync_wait(*m_pool, trivial, v); }
  int spawn_and_get(stamps &s, int v) override {
    return magpie::spawn(*m_pool, stamped, &s, v).get();
  }
  std::int64_t group(int n) override {
    std::atomic<std::int64_t> sum{0};
    magpie::task_group g(*m_pool);
    for (int i = 0; i < n; ++i) {
      g.spawn(add, &sum, i);
    }
    g.wait();
    return sum.load();
  }

private:
  std::unique_ptr<magpie::pool> m_pool;
};

} // namespace

std::unique_ptr<door> make_magpie_door(bool busy, unsigned workers, bool callers) {
  return std::make_unique<magpie_door>(busy, workers, callers);
}

} // namespace edges
