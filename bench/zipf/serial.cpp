// zipf — the serial projection: a plain for loop.
#include "zipf/problem.hpp"

int main(int argc, char **argv) {
  auto const o = bench::parse_options(argc, argv);
  return zipf::main_for(argc, argv, "serial", o, [](zipf::loop const &lp, int loops) {
    for (int l = 0; l < loops; ++l) {
      for (std::size_t i = 0; i < lp.ks.size(); ++i) {
        lp.body(i);
      }
    }
  });
}
