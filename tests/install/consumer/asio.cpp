// magpie::asio, as docs/guide/outside-world.md names it: magpie/io/asio.hpp's completion token
// awaited by a task, with Asio's io_context on a thread of its own.
#include <chrono>
#include <thread>

#include <asio.hpp>

#include <magpie/io/asio.hpp>
#include <magpie/magpie.hpp>

namespace {
magpie::task<int> tick(asio::io_context *io, int times) {
  asio::steady_timer timer(*io);
  int ticks = 0;
  for (int i = 0; i < times; ++i) {
    timer.expires_after(std::chrono::milliseconds(1));
    co_await timer.async_wait(magpie::use_task);
    ++ticks;
  }
  co_return ticks;
}
} // namespace

int main() {
  asio::io_context io;
  auto work = asio::make_work_guard(io);
  std::thread runner([&io] { io.run(); });
  magpie::lazy_pool pool(2);
  int const ticks = magpie::sync_wait(pool, tick, &io, 3);
  work.reset();
  runner.join();
  return ticks == 3 ? 0 : 1;
}
