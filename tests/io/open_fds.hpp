#pragma once
// The open descriptors of this process, for the I/O tests' "no descriptor leaked" checks.

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <system_error>
#include <thread>

#include "magpie/io.hpp"

namespace magpie::test {

/// Descriptor number -> what it refers to (the link in /proc/self/fd), printed by a failing
/// EXPECT_EQ, so a leak names its descriptor.
using fd_listing = std::map<int, std::string>;

namespace detail {
inline fd_listing read_fds() {
  fd_listing fds;
  std::error_code ec;
  for (auto const &e : std::filesystem::directory_iterator("/proc/self/fd")) {
    int const fd = std::stoi(e.path().filename().string());
    auto target = std::filesystem::read_symlink(e.path(), ec); // gone meanwhile: an empty target
    fds.emplace(fd, ec ? std::string() : target.string());
  }
  return fds;
}
} // namespace detail

/// The open descriptors of this process, with the reactor started first (its descriptors are not
/// leaks). Read until two readings a millisecond apart agree: a runtime may hold a descriptor for
/// a moment on another thread — the listing's own is one, and under ASan a newly started thread
/// (the reactor's) was seen to hold one when the first reading came (CI, inline scheduler). A
/// leaked descriptor stays, so it is in every reading.
inline fd_listing open_fds() {
  (void)magpie::io::reactor_statistics();
  fd_listing last = detail::read_fds();
  for (int i = 0; i < 1000; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    fd_listing now = detail::read_fds();
    if (now == last) {
      return now;
    }
    last = std::move(now);
  }
  return last;
}

} // namespace magpie::test
