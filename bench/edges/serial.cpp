// edges — the serial projection: the plain loops, called directly.
#include <algorithm>

#include "edges/problem.hpp"

namespace edges {
namespace {

class serial_door final : public door {
public:
  void for_each(std::vector<double> &v) override {
    for (double &x : v) {
      step(x);
    }
  }
  double reduce(std::vector<double> const &w) override {
    double s = 0;
    for (double x : w) {
      s += x;
    }
    return s;
  }
  double transform_reduce(std::vector<double> const &w) override {
    double s = 0;
    for (double x : w) {
      s += lifted(x);
    }
    return s;
  }
  std::size_t find(std::vector<std::int64_t> const &keys) override {
    return static_cast<std::size_t>(std::find_if(keys.begin(), keys.end(), is_match) -
                                    keys.begin());
  }
  int root(int v) override { return v + 1; }
  int spawn_and_get(stamps &s, int v) override { return stamp(s, v); }
  std::int64_t group(int n) override {
    std::int64_t sum = 0;
    for (int i = 0; i < n; ++i) {
      sum += i;
    }
    return sum;
  }
  bool has_tasks() const noexcept override { return false; }
};

} // namespace

std::unique_ptr<door> make_serial_door() { return std::make_unique<serial_door>(); }

} // namespace edges
