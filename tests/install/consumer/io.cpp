// Only the outside world's umbrella header, as docs/guide/outside-world.md says: a task sleeps
// with magpie::sleep_for, started with the spawn and pool it brings in.
#if defined(__linux__)
#  include <chrono>

#  include <magpie/io.hpp>

namespace {
magpie::task<int> nap() {
  auto const start = std::chrono::steady_clock::now();
  co_await magpie::sleep_for(std::chrono::milliseconds(5));
  co_return std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(5) ? 1 : 0;
}
} // namespace

bool use_io() {
  magpie::lazy_pool pool(2);
  magpie::future<int> f = magpie::spawn(pool, nap);
  return f.get() == 1 && magpie::sync_wait(pool, nap) == 1;
}
#else
bool use_io() { return true; }
#endif
