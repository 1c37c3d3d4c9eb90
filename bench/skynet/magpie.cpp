// skynet — magpie: fork nine children, call the tenth, join.
#include <array>

#include "common/magpie_runtime.hpp"
#include "skynet/problem.hpp"

namespace {
magpie::task<std::int64_t> skynet(std::int64_t num, std::int64_t size) {
  if (size == 1) {
    co_return num;
  }
  std::int64_t const sub = size / 10;
  std::array<std::int64_t, 10> parts;
  for (std::int64_t i = 0; i < 9; ++i) {
    co_await magpie::fork(&parts[i], skynet, num + i * sub, sub);
  }
  co_await magpie::call(&parts[9], skynet, num + 9 * sub, sub);
  co_await magpie::join();
  std::int64_t sum = 0;
  for (auto p : parts) {
    sum += p;
  }
  co_return sum;
}
} // namespace

int main(int argc, char **argv) {
  auto const o = bench::parse_options(argc, argv);
  auto const &z = skynet_problem::find(o.size);
  bench::magpie_runtime rt(o);
  return bench::measure(
      o, skynet_problem::name, rt.name(),
      [&] { return rt.run(skynet, std::int64_t{0}, skynet_problem::leaves(z.depth)); },
      [&](std::int64_t r) { return skynet_problem::check(r, z); });
}
