// The parallel algorithms inside a task (their async form, started with call or fork), and an
// exception thrown by one iteration reaching the caller after every started iteration finished.
#include <cmath>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "magpie/magpie.hpp"

// [in_task]
magpie::task<double> root_mean_square(std::vector<double> const *v) {
  double sum_of_squares = 0;
  co_await magpie::call(&sum_of_squares, magpie::transform_reduce, v->begin(), v->end(), 0.0,
                        std::plus<>{}, [](double x) { return x * x; });
  co_await magpie::join();
  co_return std::sqrt(sum_of_squares / static_cast<double>(v->size()));
}
// [in_task]

int main() {
  magpie::lazy_pool pool(2);
  std::vector<double> v(1 << 20, 3.0);
  for (std::size_t i = 0; i < v.size(); i += 2) {
    v[i] = -3.0;
  }
  double const rms = magpie::sync_wait(pool, root_mean_square, &v);
  std::printf("root mean square: %g\n", rms);

  // [exception]
  std::vector<std::string> const text = {"12", "7", "x", "40", "5"};
  std::vector<int> numbers(text.size());
  bool threw = false;
  try {
    magpie::transform(pool, text.begin(), text.end(), numbers.begin(),
                      [](std::string const &s) { return std::stoi(s); }); // "x" throws
  } catch (std::invalid_argument const &) {
    threw = true;
    std::printf("transform rethrew std::invalid_argument from one iteration\n");
  }
  // [exception]
  return rms == 3.0 && threw ? 0 : 1;
}
