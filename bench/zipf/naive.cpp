// zipf — a naive pool: P threads (the caller and P − 1 helpers), each running a static slice
// [t·N/P, (t+1)·N/P) of every loop, with a barrier after each loop. No balancing at all.
#include <barrier>
#include <thread>
#include <vector>

#include "zipf/problem.hpp"

int main(int argc, char **argv) {
  auto const o = bench::parse_options(argc, argv);
  unsigned const p = o.workers;
  return zipf::main_for(argc, argv, "naive", o, [&](zipf::loop const &lp, int count) {
    std::size_t const n = lp.ks.size();
    std::barrier sync(static_cast<std::ptrdiff_t>(p));
    auto slice = [&](unsigned t) {
      for (int l = 0; l < count; ++l) {
        for (std::size_t i = t * n / p; i < (t + 1) * n / p; ++i) {
          lp.body(i);
        }
        sync.arrive_and_wait();
      }
    };
    std::vector<std::jthread> helpers; // started per rep: the pool lives for the rep's loops
    for (unsigned t = 1; t < p; ++t) {
      helpers.emplace_back(slice, t);
    }
    slice(0);
  });
}
