// A magpie task that co_awaits Asio operations with the completion token magpie::use_task: the
// io_context runs on its own thread, and each completion resumes the task on its pool. Built when
// standalone Asio (libasio-dev) is found.
#include <chrono>
#include <cstdio>
#include <thread>

#include <asio.hpp>

#include "magpie/io/asio.hpp"
#include "magpie/magpie.hpp"

// [task]
magpie::task<int> tick(asio::io_context *io, int times) {
  asio::steady_timer timer(*io);
  int ticks = 0;
  for (int i = 0; i < times; ++i) {
    timer.expires_after(std::chrono::milliseconds(5));
    co_await timer.async_wait(magpie::use_task); // suspends; resumes on the pool, not on `io`
    ++ticks;
  }
  co_return ticks;
}
// [task]

int main() {
  // [main]
  asio::io_context io;
  auto work = asio::make_work_guard(io); // keeps io.run() going while nothing is pending
  std::thread io_thread([&io] { io.run(); });
  magpie::lazy_pool pool(2);
  int const ticks = magpie::sync_wait(pool, tick, &io, 10);
  work.reset();
  io_thread.join();
  // [main]
  std::printf("ticks: %d\n", ticks);
  return ticks == 10 ? 0 : 1;
}
