// Tasks that wait on the outside world: twenty tasks sleep at once on a two-worker pool, one task
// reads a pipe that another writes slowly, and a wait with a deadline gives up.
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <string>
#include <system_error>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "magpie/magpie.hpp"

using namespace std::chrono_literals;

// [sleep]
magpie::task<int> nap(int id) {
  co_await magpie::sleep_for(100ms); // suspends; the worker runs other tasks meanwhile
  co_return id;
}
// [sleep]

// [pipe]
magpie::task<std::string> read_all(int fd) {
  std::string text;
  char buf[64];
  for (;;) {
    ssize_t const n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      text.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0) {
      co_return text; // end of file: the writer closed its end
    } else if (errno == EAGAIN) {
      co_await magpie::readable(fd); // suspends until there is data (or end of file)
    } else {
      throw std::system_error(errno, std::generic_category(), "read");
    }
  }
}

magpie::task<void> write_slowly(int fd, std::string text) {
  for (char const c : text) {
    co_await magpie::sleep_for(2ms);
    if (::write(fd, &c, 1) != 1) {
      throw std::system_error(errno, std::generic_category(), "write");
    }
  }
  ::close(fd);
}
// [pipe]

// [deadline]
magpie::task<bool> wait_briefly(int fd) {
  co_return co_await magpie::readable(fd, 20ms); // false: 20 ms passed with nothing to read
}
// [deadline]

int main() {
  magpie::lazy_pool pool(2);

  auto const start = std::chrono::steady_clock::now();
  std::vector<magpie::future<int>> naps;
  for (int i = 1; i <= 20; ++i) {
    naps.push_back(magpie::spawn(pool, nap, i));
  }
  int sum = 0;
  for (magpie::future<int> &f : naps) {
    sum += f.get();
  }
  bool const overlapped = std::chrono::steady_clock::now() - start < 900ms; // not 20 x 100 ms
  std::printf("20 naps of 100 ms on 2 workers overlapped: %s (ids sum to %d)\n",
              overlapped ? "yes" : "NO", sum);

  int fds[2];
  if (::pipe2(fds, O_NONBLOCK) != 0) {
    std::perror("pipe2");
    return 1;
  }
  bool const timed_out = !magpie::sync_wait(pool, wait_briefly, fds[0]);
  std::printf("nothing to read within 20 ms: %s\n", timed_out ? "gave up" : "WRONG");
  magpie::future<std::string> text = magpie::spawn(pool, read_all, fds[0]);
  magpie::future<void> writer = magpie::spawn(pool, write_slowly, fds[1], std::string("magpie"));
  writer.get();
  std::string const got = text.get();
  ::close(fds[0]);
  std::printf("read from the pipe: %s\n", got.c_str());
  return overlapped && sum == 210 && timed_out && got == "magpie" ? 0 : 1;
}
