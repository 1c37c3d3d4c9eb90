// skynet — the serial projection.
#include "skynet/problem.hpp"

namespace {
std::int64_t skynet(std::int64_t num, std::int64_t size) {
  if (size == 1) {
    return num;
  }
  std::int64_t const sub = size / 10;
  std::int64_t sum = 0;
  for (std::int64_t i = 0; i < 10; ++i) {
    sum += skynet(num + i * sub, sub);
  }
  return sum;
}
} // namespace

int main(int argc, char **argv) {
  auto const o = bench::parse_options(argc, argv);
  auto const &z = skynet_problem::find(o.size);
  std::int64_t volatile l = skynet_problem::leaves(z.depth);
  return bench::measure(
      o, skynet_problem::name, "serial", [&] { return skynet(0, l); },
      [&](std::int64_t r) { return skynet_problem::check(r, z); });
}
