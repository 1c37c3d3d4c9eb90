// skynet-tasks — skynet (BENCHMARKS.md) written the carb.tasking ways: every inner node starts
// ten tasks and waits for them. One source, one binary per way (SKYNET_WAY):
//   futures  magpie::spawn ten children, co_await each future (unstarted ones are helped)
//   group    magpie::task_group: spawn ten children, co_await g.wait()
//   counter  magpie::counter: spawn ten children against it, co_await c.wait()
//   forkjoin magpie::fork nine, call the tenth, join (the reference: bench/skynet/magpie.cpp)
//   tbb      oneTBB task_group: run nine, the tenth inline, wait
//   async    std::async(std::launch::async) — a thread per call, so only for the top levels:
//            MAGPIE_ASYNC_LEVELS (default 3: 1,110 threads) levels use std::async, the rest runs
//            serially. A thread per task cannot reach 10^6 leaves (1.1 M threads).
//   serial   plain recursion
#include <array>
#include <cstdint>
#include <cstdlib>
#include <future>
#include <memory>

#include "common/harness.hpp"
#include "skynet/problem.hpp"

#define SKYNET_FUTURES 1
#define SKYNET_GROUP 2
#define SKYNET_COUNTER 3
#define SKYNET_FORKJOIN 4
#define SKYNET_TBB 5
#define SKYNET_ASYNC 6
#define SKYNET_SERIAL 7

#if SKYNET_WAY <= SKYNET_FORKJOIN
#  include "magpie/magpie.hpp"
#elif SKYNET_WAY == SKYNET_TBB
#  include <tbb/task_group.h>

#  include "common/tbb_runtime.hpp"
#endif

namespace {

using i64 = std::int64_t;

#if SKYNET_WAY <= SKYNET_FORKJOIN
#  if SKYNET_WAY == SKYNET_FUTURES
char const *const way = "magpie-futures";
magpie::task<i64> skynet(magpie::pool *p, i64 num, i64 size) {
  if (size == 1) {
    co_return num;
  }
  i64 const sub = size / 10;
  std::array<magpie::future<i64>, 10> f;
  for (i64 i = 0; i < 10; ++i) {
    f[i] = magpie::spawn(*p, skynet, p, num + i * sub, sub);
  }
  i64 sum = 0;
  for (auto &x : f) {
    sum += co_await x;
  }
  co_return sum;
}
#  elif SKYNET_WAY == SKYNET_GROUP || SKYNET_WAY == SKYNET_COUNTER
#    if SKYNET_WAY == SKYNET_GROUP
char const *const way = "magpie-group";
#    else
char const *const way = "magpie-counter";
#    endif
magpie::task<void> node(magpie::pool *p, i64 num, i64 size, i64 *out) {
  if (size == 1) {
    *out = num;
    co_return;
  }
  i64 const sub = size / 10;
  std::array<i64, 10> parts{};
#    if SKYNET_WAY == SKYNET_GROUP
  magpie::task_group g(*p);
  for (i64 i = 0; i < 10; ++i) {
    g.spawn(node, p, num + i * sub, sub, &parts[i]);
  }
  co_await g.wait();
#    else
  magpie::counter c;
  for (i64 i = 0; i < 10; ++i) {
    magpie::spawn(*p, c, node, p, num + i * sub, sub, &parts[i]);
  }
  co_await c.wait();
#    endif
  i64 sum = 0;
  for (auto v : parts) {
    sum += v;
  }
  *out = sum;
}
magpie::task<i64> skynet(magpie::pool *p, i64 num, i64 size) {
  i64 r = 0;
  co_await magpie::call(node, p, num, size, &r);
  co_return r;
}
#  else
char const *const way = "magpie";
magpie::task<i64> skynet(magpie::pool *p, i64 num, i64 size) {
  if (size == 1) {
    co_return num;
  }
  i64 const sub = size / 10;
  std::array<i64, 10> parts;
  for (i64 i = 0; i < 9; ++i) {
    co_await magpie::fork(&parts[i], skynet, p, num + i * sub, sub);
  }
  co_await magpie::call(&parts[9], skynet, p, num + 9 * sub, sub);
  co_await magpie::join();
  i64 sum = 0;
  for (auto v : parts) {
    sum += v;
  }
  co_return sum;
}
#  endif
#elif SKYNET_WAY == SKYNET_TBB
i64 skynet(i64 num, i64 size) {
  if (size == 1) {
    return num;
  }
  i64 const sub = size / 10;
  std::array<i64, 10> parts;
  tbb::task_group g;
  for (i64 i = 0; i < 9; ++i) {
    g.run([&parts, i, num, sub] { parts[i] = skynet(num + i * sub, sub); });
  }
  parts[9] = skynet(num + 9 * sub, sub);
  g.wait();
  i64 sum = 0;
  for (auto v : parts) {
    sum += v;
  }
  return sum;
}
#else
i64 serial(i64 num, i64 size) {
  if (size == 1) {
    return num;
  }
  i64 const sub = size / 10;
  i64 sum = 0;
  for (i64 i = 0; i < 10; ++i) {
    sum += serial(num + i * sub, sub);
  }
  return sum;
}
#  if SKYNET_WAY == SKYNET_ASYNC
i64 skynet(i64 num, i64 size, int async_levels) {
  if (size == 1 || async_levels == 0) {
    return serial(num, size);
  }
  i64 const sub = size / 10;
  std::array<std::future<i64>, 10> f;
  for (i64 i = 0; i < 10; ++i) {
    f[i] = std::async(std::launch::async, skynet, num + i * sub, sub, async_levels - 1);
  }
  i64 sum = 0;
  for (auto &x : f) {
    sum += x.get();
  }
  return sum;
}
#  endif
#endif

} // namespace

int main(int argc, char **argv) {
  auto const o = bench::parse_options(argc, argv);
  auto const &z = skynet_problem::find(o.size);
  i64 const leaves = skynet_problem::leaves(z.depth);
  auto check = [&](i64 r) { return skynet_problem::check(r, z); };
#if SKYNET_WAY <= SKYNET_FORKJOIN
  std::unique_ptr<magpie::pool> pool;
  if (o.pool == "busy") {
    pool = std::make_unique<magpie::busy_pool>(o.workers);
  } else {
    pool = std::make_unique<magpie::lazy_pool>(o.workers);
  }
  std::string const name = std::string(way) + "-" + o.pool;
  return bench::measure(
      o, "skynet-tasks", name,
      [&] { return magpie::sync_wait(*pool, skynet, pool.get(), i64{0}, leaves); }, check);
#elif SKYNET_WAY == SKYNET_TBB
  bench::tbb_runtime rt(o);
  return bench::measure(
      o, "skynet-tasks", rt.name(), [&] { return rt.run([&] { return skynet(0, leaves); }); },
      check);
#elif SKYNET_WAY == SKYNET_ASYNC
  char const *env = std::getenv("MAGPIE_ASYNC_LEVELS");
  int const levels = env != nullptr ? std::atoi(env) : 3;
  return bench::measure(
      o, "skynet-tasks", "async", [&] { return skynet(0, leaves, levels); }, check);
#else
  return bench::measure(
      o, "skynet-tasks", "serial", [&] { return serial(0, leaves); }, check);
#endif
}
