// magpie::readable / writable: a task waits for a pipe filled later by a thread; a deadline that
// passes first returns false; io::close wakes a waiter with operation_canceled; a second waiter
// for the same direction is refused; a reader and a writer wait on one socket at once; hundreds
// of descriptors waited on together; deadlines racing data (either outcome, never a hang);
// regular files are always ready; bad descriptors throw; no descriptor is leaked; a raw close
// under a deadline ends at the deadline; io::close before any wait starts no reactor.

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "common/test_support.hpp"
#include "io/open_fds.hpp"
#include "magpie/io.hpp"
#include "sync/sync_support.hpp"

namespace {

using namespace magpie::test;
using namespace std::chrono_literals;
using magpie::task;
using magpie::io::clock;

/// A non-blocking pipe or socket pair, closed on destruction.
struct fd_pair {
  int r = -1, w = -1;
  explicit fd_pair(bool sockets = false) {
    int fds[2];
    if (sockets) {
      EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds), 0);
    } else {
      EXPECT_EQ(::pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
    }
    r = fds[0];
    w = fds[1];
  }
  ~fd_pair() {
    if (r >= 0) {
      magpie::io::close(r);
    }
    if (w >= 0) {
      magpie::io::close(w);
    }
  }
  fd_pair(fd_pair const &) = delete;
  fd_pair &operator=(fd_pair const &) = delete;
};

/// Reads one int from `fd`, waiting as needed.
task<long> read_int(int fd) {
  int v = 0;
  for (;;) {
    ssize_t n = ::read(fd, &v, sizeof v);
    if (n == sizeof v) {
      co_return v;
    }
    if (n < 0 && errno != EAGAIN) {
      co_return -1;
    }
    co_await magpie::readable(fd);
  }
}

using fd_test = scheduler_test;

TEST_P(fd_test, a_task_waits_for_data_written_later_by_a_thread) {
  auto const fds = open_fds();
  {
    fd_pair p;
    side_thread writer([&] {
      std::this_thread::sleep_for(2ms);
      int v = 42;
      EXPECT_EQ(::write(p.w, &v, sizeof v), static_cast<ssize_t>(sizeof v));
    });
    EXPECT_EQ(m_sched.run(read_int, p.r), 42);
  }
  EXPECT_EQ(open_fds(), fds);
}

TEST_P(fd_test, a_deadline_that_passes_first_returns_false) {
  fd_pair p;
  auto const start = clock::now();
  bool ready =
      m_sched.run([](int fd) -> task<bool> { co_return co_await magpie::readable(fd, 5ms); }, p.r);
  EXPECT_FALSE(ready);
  EXPECT_GE(clock::now() - start, 5ms);
  // Data already there: ready at once, deadline or not.
  int v = 1;
  ASSERT_EQ(::write(p.w, &v, sizeof v), static_cast<ssize_t>(sizeof v));
  EXPECT_TRUE(m_sched.run(
      [](int fd) -> task<bool> { co_return co_await magpie::readable(fd, clock::now() + 10s); },
      p.r));
  EXPECT_EQ(magpie::io::reactor_statistics().pending_timers, 0u);
}

TEST_P(fd_test, closing_through_magpie_cancels_the_wait) {
  fd_pair p;
  std::atomic<int> waiting{0};
  side_thread closer([&] {
    ASSERT_TRUE(wait_for(waiting));
    std::this_thread::sleep_for(1ms); // let it reach the reactor (either order is fine)
    while (magpie::io::cancel(p.r) == 0) {
      std::this_thread::yield(); // not registered yet: try again
    }
  });
  auto body = [](int fd, std::atomic<int> *w) -> task<int> {
    w->store(1);
    try {
      co_await magpie::readable(fd, 10s);
    } catch (std::system_error const &e) {
      co_return e.code() == std::errc::operation_canceled ? 1 : 2;
    }
    co_return 0;
  };
  EXPECT_EQ(m_sched.run(body, p.r, &waiting), 1);
  EXPECT_EQ(magpie::io::reactor_statistics().pending_timers, 0u); // its deadline was dropped
}

task<long> read_or_refused(int fd, std::atomic<int> *refused) {
  int v = 0;
  for (;;) {
    if (::read(fd, &v, sizeof v) == sizeof v) {
      co_return v;
    }
    try {
      co_await magpie::readable(fd);
    } catch (std::logic_error const &) {
      refused->fetch_add(1);
      co_return 1000;
    }
  }
}

TEST_P(fd_test, a_second_waiter_for_the_same_direction_is_refused) {
  fd_pair p;
  std::atomic<int> refused{0};
  side_thread writer([&] {
    ASSERT_TRUE(wait_for(refused));
    int v = 7;
    EXPECT_EQ(::write(p.w, &v, sizeof v), static_cast<ssize_t>(sizeof v));
  });
  auto both = [](int fd, std::atomic<int> *r) -> task<long> {
    long a = 0, b = 0;
    co_await magpie::fork(&a, read_or_refused, fd, r); // waits (registered before we go on)
    co_await magpie::call(&b, read_or_refused, fd, r);
    co_await magpie::join();
    co_return a + b;
  };
  EXPECT_EQ(m_sched.run(both, p.r, &refused), 1007); // whichever came second was refused
  EXPECT_EQ(refused.load(), 1);
}

TEST_P(fd_test, a_reader_and_a_writer_wait_on_one_socket_at_once) {
  fd_pair p(true);
  // Fill the writer's side so that it must wait; the reader waits for the peer's reply.
  std::vector<char> junk(1 << 16, 'x');
  while (::write(p.r, junk.data(), junk.size()) > 0) {
  }
  side_thread peer([&] {
    std::this_thread::sleep_for(2ms);
    int v = 5;
    EXPECT_EQ(::write(p.w, &v, sizeof v), static_cast<ssize_t>(sizeof v)); // wakes the reader
    std::vector<char> sink(1 << 16);
    std::this_thread::sleep_for(2ms);
    while (::read(p.w, sink.data(), sink.size()) > 0) { // drains: wakes the writer
    }
  });
  auto reader_writer = [](int fd) -> task<long> {
    long got = 0, wrote = 0;
    co_await magpie::fork(&got, read_int, fd);
    co_await magpie::fork(
        &wrote,
        [](int f) -> task<long> {
          co_await magpie::writable(f, 5s);
          co_return 1;
        },
        fd);
    co_await magpie::join();
    co_return got * 10 + wrote;
  };
  EXPECT_EQ(m_sched.run(reader_writer, p.r), 51);
}

task<long> read_one_of(int i, std::vector<int> *fds) {
  long v = 0;
  co_await magpie::call(&v, read_int, (*fds)[static_cast<std::size_t>(i)]);
  co_return v == i ? 1 : 0;
}

TEST_P(fd_test, hundreds_of_descriptors_waited_on_at_once) {
  auto const fds_before = open_fds();
  int const n = scaled(300, 60);
  {
    std::vector<std::unique_ptr<fd_pair>> pairs;
    std::vector<int> readers;
    for (int i = 0; i < n; ++i) {
      pairs.push_back(std::make_unique<fd_pair>(i % 2 == 0));
      readers.push_back(pairs.back()->r);
    }
    side_thread writer([&] {
      std::this_thread::sleep_for(1ms);
      for (int i = n - 1; i >= 0; --i) { // reverse order: the last registered goes first
        int v = i;
        EXPECT_EQ(::write(pairs[static_cast<std::size_t>(i)]->w, &v, sizeof v),
                  static_cast<ssize_t>(sizeof v));
      }
    });
    EXPECT_EQ(
        m_sched.run(fork_n<decltype(&read_one_of), std::vector<int> *>, n, &read_one_of, &readers),
        n);
  }
  EXPECT_EQ(open_fds(), fds_before);
}

TEST_P(fd_test, deadlines_racing_data_give_one_answer_each) {
  int const rounds = scaled(200, 40);
  for (int k = 0; k < rounds; ++k) {
    fd_pair p;
    auto const delay = std::chrono::microseconds((k * 37) % 300);
    side_thread writer([&] {
      std::this_thread::sleep_for(delay);
      int v = k;
      EXPECT_EQ(::write(p.w, &v, sizeof v), static_cast<ssize_t>(sizeof v));
    });
    auto body = [](int fd, int kk) -> task<long> {
      // Either outcome is right; then the data must still be read exactly once.
      (void)co_await magpie::readable(fd, std::chrono::microseconds((kk * 53) % 300));
      long v = 0;
      co_await magpie::call(&v, read_int, fd);
      co_return v;
    };
    ASSERT_EQ(m_sched.run(body, p.r, k), k);
  }
  EXPECT_EQ(magpie::io::reactor_statistics().pending_timers, 0u);
}

TEST_P(fd_test, regular_files_are_always_ready_and_bad_descriptors_throw) {
  std::FILE *f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  int const file = fileno(f);
  EXPECT_TRUE(
      m_sched.run([](int fd) -> task<bool> { co_return co_await magpie::readable(fd); }, file));
  std::fclose(f); // `file` is closed now: its number is a bad descriptor (nothing else opens)
  auto code_of = [](int fd) -> task<int> {
    try {
      co_await magpie::writable(fd);
    } catch (std::system_error const &e) {
      co_return e.code().value();
    }
    co_return 0;
  };
  EXPECT_EQ(m_sched.run(code_of, -1), EBADF);
  EXPECT_EQ(m_sched.run(code_of, 1 << 30), EBADF);
}

TEST_P(fd_test, a_raw_close_under_a_deadline_ends_at_the_deadline) {
  // Documented misuse: epoll forgets a closed descriptor, so only the deadline ends the wait.
  // The misuse is a race on the descriptor by nature (close against the reactor's epoll_ctl),
  // which ThreadSanitizer rightly reports: not run under it.
  if (MAGPIE_UNDER_TSAN) {
    GTEST_SKIP() << "a raw close racing a wait is the documented misuse; TSan reports the race";
  }
  // The closer cannot see when the wait is registered: if it closes first (a loaded machine can
  // delay the task past the closer's 1 ms), epoll_ctl fails with EBADF and the co_await throws.
  // That round did not test a close *during* the wait: try again (bounded).
  // The reactor must exist before the race: started by the first wait, it would open its epoll
  // descriptor after an early close and get the closed number, and epoll_ctl(n, ADD, n) fails
  // with EINVAL, not EBADF (CI, release, lazy_2; reproduced under strace).
  (void)magpie::io::reactor_statistics();
  for (int attempt = 0; attempt < 10; ++attempt) {
    int fds[2];
    ASSERT_EQ(::pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
    std::atomic<int> waiting{0};
    bool ready = true;
    bool closed_first = false;
    {
      side_thread closer([&] {
        ASSERT_TRUE(wait_for(waiting));
        std::this_thread::sleep_for(1ms);
        ::close(fds[0]);
      });
      try {
        ready = m_sched.run(
            [](int fd, std::atomic<int> *w) -> task<bool> {
              w->store(1);
              co_return co_await magpie::readable(fd, 20ms);
            },
            fds[0], &waiting);
      } catch (std::system_error const &e) {
        closed_first = e.code() == std::error_code(EBADF, std::system_category());
        if (!closed_first) {
          throw;
        }
      }
    }
    ::close(fds[1]);
    if (!closed_first) {
      EXPECT_FALSE(ready);
      return;
    }
  }
  FAIL() << "the close came before the wait was registered in every attempt";
}

// ctest runs each test in its own process, so nothing has started the reactor here (a run of the
// whole binary may have: then the reactor's descriptors are in both listings and this passes
// without testing it). io::close and io::cancel of a descriptor nobody waited on find no
// reactor: they must not start one (a thread, an epoll and an eventfd descriptor), and they are
// noexcept, so a failure to start one could only terminate.
TEST(fd_close, closing_before_any_wait_starts_no_reactor) {
  auto const before = detail::read_fds();
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  EXPECT_EQ(magpie::io::cancel(fds[0]), 0u);
  EXPECT_EQ(magpie::io::close(fds[0]), 0);
  EXPECT_EQ(magpie::io::close(fds[1]), 0);
  EXPECT_EQ(magpie::io::close(fds[1]), -1); // closed: ::close's answer, errno EBADF
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(detail::read_fds(), before);
}

INSTANTIATE_TEST_SUITE_P(schedulers, fd_test, ::testing::ValuesIn(all_schedulers()), sched_name{});

} // namespace
