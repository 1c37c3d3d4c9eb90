// The program tools/gdb/magpie.py is tested on (check_gdb.py): a task parked on an event, and a
// chain gdb_level_a → gdb_level_b → gdb_level_c blocked in c; then it stops in
// magpie_gdb_stop_here() for gdb to look, releases everything and exits 0.

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "magpie/magpie.hpp"

namespace {

std::atomic<bool> reached{false};
std::atomic<bool> released{false};

[[gnu::noinline]] void block_here() {
  reached.store(true, std::memory_order_release);
  auto const deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!released.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

magpie::task<int> gdb_level_c(int depth) {
  block_here();
  co_return depth;
}

magpie::task<int> gdb_level_b(int depth) {
  int r = 0;
  co_await magpie::call(&r, gdb_level_c, depth + 1);
  co_return r;
}

magpie::task<int> gdb_level_a() {
  int r = 0;
  // Through with_stop's anchor: the extension must step over it (root_block::m_caller).
  co_await magpie::with_stop(magpie::stop_token{}, &r, gdb_level_b, 1);
  co_await magpie::join();
  co_return r;
}

magpie::task<int> gdb_parked_waiter(magpie::event *ev) {
  co_await ev->wait();
  co_return 1;
}

} // namespace

extern "C" [[gnu::noinline]] void magpie_gdb_stop_here() {
  asm volatile("" ::: "memory"); // kept: gdb breaks here
}

int main() {
  magpie::trace::track_parked parked;
  // Both roots go to the pool's worker (the caller hands them over): `magpie bt 0` shows them.
  magpie::pool_options options;
  options.workers = 1;
  options.callers_run_roots = false;
  magpie::lazy_pool pool(options);
  magpie::event ev;
  int waited = 0;
  int depth = 0;
  std::thread waiter([&] { waited = magpie::sync_wait(pool, gdb_parked_waiter, &ev); });
  while (magpie::trace::counters(pool).total.parks == 0) {
    std::this_thread::yield();
  }
  std::thread chain([&] { depth = magpie::sync_wait(pool, gdb_level_a); });
  while (!reached.load(std::memory_order_acquire)) {
    std::this_thread::yield();
  }
  magpie_gdb_stop_here();
  released.store(true, std::memory_order_release);
  ev.set();
  chain.join();
  waiter.join();
  std::printf("target done: depth %d, waited %d\n", depth, waited);
  return depth == 2 && waited == 1 ? 0 : 1;
}
