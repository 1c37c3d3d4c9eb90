#pragma once
// examples/server/loadgen.hpp — a closed-loop load generator: `connections` loopback connections
// spread over a few threads (each an epoll loop), each sending a request, checking the reply's
// checksum, and sending the next, until `seconds` have passed. Bounded in count and time: it
// stops sending at the deadline and waits at most two more seconds for outstanding replies.
// Every reply is checked; latencies are kept per request. load_process runs it in a child
// process, for more connections than one process's descriptor limit holds at both ends.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "protocol.hpp"

namespace server {

struct load_result {
  long requests = 0;  ///< replies received and correct
  long wrong = 0;     ///< replies with a wrong checksum
  long failed = 0;    ///< connections that failed (refused, reset, closed early)
  long connected = 0; ///< connections established
  double seconds = 0; ///< measured interval
  std::vector<float> latency_us;

  double per_second() const { return seconds > 0 ? static_cast<double>(requests) / seconds : 0; }
  double percentile(double q) {
    if (latency_us.empty()) {
      return 0;
    }
    auto k = static_cast<std::size_t>(q * static_cast<double>(latency_us.size() - 1));
    std::nth_element(latency_us.begin(), latency_us.begin() + static_cast<std::ptrdiff_t>(k),
                     latency_us.end());
    return latency_us[k];
  }
};

/// Opens a blocking connection to 127.0.0.1:port; -1 on failure.
inline int connect_loopback(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return -1;
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) < 0) {
    ::close(fd);
    return -1;
  }
  set_nodelay(fd);
  return fd;
}

/// Requests: a few random payloads of `size` bytes and their checksums.
struct request_set {
  std::vector<std::vector<unsigned char>> wire; // header + payload
  std::vector<std::uint64_t> sums;
  explicit request_set(std::size_t size, int count = 16) {
    std::mt19937 rng(12345);
    for (int i = 0; i < count; ++i) {
      std::vector<unsigned char> w(4 + size);
      write_length(w.data(), static_cast<std::uint32_t>(size));
      for (std::size_t j = 0; j < size; ++j) {
        w[4 + j] = static_cast<unsigned char>(rng());
      }
      sums.push_back(checksum(w.data() + 4, 0, size));
      wire.push_back(std::move(w));
    }
  }
};

/// Runs the load. `threads` epoll loops share the connections.
inline load_result run_load(std::uint16_t port, int connections, double seconds,
                            std::size_t payload, int threads = 2) {
  using clk = std::chrono::steady_clock;
  request_set const reqs(payload);
  struct conn {
    int fd = -1;
    std::size_t which = 0, off = 0;
    bool reading = false;
    unsigned char reply[8];
    clk::time_point sent;
  };
  std::vector<load_result> parts(static_cast<std::size_t>(threads));
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  clk::time_point start, stop_at;
  auto body = [&](int t) {
    load_result &res = parts[static_cast<std::size_t>(t)];
    int const mine = connections / threads + (t < connections % threads ? 1 : 0);
    std::vector<conn> cs(static_cast<std::size_t>(mine));
    int ep = ::epoll_create1(EPOLL_CLOEXEC);
    for (int i = 0; i < mine; ++i) {
      conn &c = cs[static_cast<std::size_t>(i)];
      c.fd = connect_loopback(port);
      if (c.fd < 0) {
        ++res.failed;
        continue;
      }
      set_nonblocking(c.fd);
      ++res.connected;
      c.which = static_cast<std::size_t>(i + t) % reqs.wire.size();
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLOUT | EPOLLET;
      ev.data.ptr = &c;
      (void)::epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev);
    }
    ready.fetch_add(1);
    while (!go.load()) {
      std::this_thread::yield();
    }
    long outstanding = res.connected;
    auto progress = [&](conn &c) {
      for (;;) {
        if (!c.reading) {
          if (clk::now() >= stop_at) {
            --outstanding;
            c.reading = true;
            c.off = 8; // finished: nothing more to send or read
            return;
          }
          auto const &w = reqs.wire[c.which];
          if (c.off == 0) {
            c.sent = clk::now();
          }
          ssize_t n = ::send(c.fd, w.data() + c.off, w.size() - c.off, MSG_NOSIGNAL);
          if (n < 0) {
            if (errno != EAGAIN) {
              ++res.failed, --outstanding, c.reading = true, c.off = 8;
            }
            return;
          }
          c.off += static_cast<std::size_t>(n);
          if (c.off == w.size()) {
            c.reading = true;
            c.off = 0;
          }
        } else {
          if (c.off == 8) {
            return; // done
          }
          ssize_t n = ::recv(c.fd, c.reply + c.off, 8 - c.off, 0);
          if (n <= 0) {
            if (n == 0 || errno != EAGAIN) {
              ++res.failed, --outstanding, c.off = 8;
            }
            return;
          }
          c.off += static_cast<std::size_t>(n);
          if (c.off == 8) {
            std::uint64_t got;
            std::memcpy(&got, c.reply, 8);
            if (got == reqs.sums[c.which]) {
              ++res.requests;
            } else {
              ++res.wrong;
            }
            res.latency_us.push_back(
                std::chrono::duration<float, std::micro>(clk::now() - c.sent).count());
            c.which = (c.which + 1) % reqs.wire.size();
            c.reading = false;
            c.off = 0;
          }
        }
      }
    };
    for (auto &c : cs) {
      if (c.fd >= 0) {
        progress(c);
      }
    }
    epoll_event evs[256];
    while (outstanding > 0 && clk::now() < stop_at + std::chrono::seconds(2)) {
      int n = ::epoll_wait(ep, evs, 256, 50);
      for (int i = 0; i < n; ++i) {
        progress(*static_cast<conn *>(evs[i].data.ptr));
      }
      if (n == 0 && clk::now() >= stop_at) { // idle connections past the deadline: finish them
        for (auto &c : cs) {
          if (c.fd >= 0 && !c.reading) {
            progress(c);
          }
        }
      }
    }
    res.failed += outstanding; // no reply within the grace period
    for (auto &c : cs) {
      if (c.fd >= 0) {
        ::close(c.fd);
      }
    }
    ::close(ep);
  };
  std::vector<std::thread> ts;
  ts.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back(body, t);
  }
  while (ready.load() < threads) {
    std::this_thread::yield();
  }
  start = clk::now();
  stop_at =
      start + std::chrono::duration_cast<clk::duration>(std::chrono::duration<double>(seconds));
  go.store(true);
  for (auto &t : ts) {
    t.join();
  }
  load_result total;
  total.seconds = seconds;
  for (auto &p : parts) {
    total.requests += p.requests;
    total.wrong += p.wrong;
    total.failed += p.failed;
    total.connected += p.connected;
    total.latency_us.insert(total.latency_us.end(), p.latency_us.begin(), p.latency_us.end());
  }
  return total;
}

/// What a load run reports, without the latencies themselves: small enough for a pipe.
struct load_summary {
  long requests = 0, wrong = 0, failed = 0, connected = 0;
  double seconds = 0, per_second = 0, p50_us = 0, p99_us = 0;

  static load_summary of(load_result &r) {
    return {r.requests, r.wrong,        r.failed,          r.connected,
            r.seconds,  r.per_second(), r.percentile(0.5), r.percentile(0.99)};
  }
};

/// The load generator in a child process, so that each process holds one end of each
/// connection: 10,000 connections then need 10,000 descriptors on each side rather than 20,000
/// in one process (whose hard limit may be lower). Construct it before starting any thread (a
/// pool, the reactor): the child of a multi-threaded process may only call async-signal-safe
/// functions, and this child starts threads. One run per object; the parent calls run().
class load_process {
public:
  load_process() {
    int to_child[2], to_parent[2];
    if (::pipe2(to_child, O_CLOEXEC) < 0 || ::pipe2(to_parent, O_CLOEXEC) < 0) {
      fail("pipe2");
    }
    m_pid = ::fork();
    if (m_pid < 0) {
      fail("fork");
    }
    if (m_pid == 0) {
      ::close(to_child[1]);
      ::close(to_parent[0]);
      job j{};
      load_summary out{};
      out.failed = -1; // no job: the parent went away
      if (read_all(to_child[0], &j, sizeof j)) {
        load_result r = run_load(j.port, j.connections, j.seconds, j.payload, j.threads);
        out = load_summary::of(r);
      }
      bool const sent = write_all(to_parent[1], &out, sizeof out);
      ::_exit(sent ? 0 : 1); // no static destructors: they belong to the parent
    }
    ::close(to_child[0]);
    ::close(to_parent[1]);
    m_to_child = to_child[1];
    m_from_child = to_parent[0];
  }
  ~load_process() {
    ::close(m_to_child); // a child still waiting for a job reads end-of-file and exits
    ::close(m_from_child);
    int status = 0;
    (void)::waitpid(m_pid, &status, 0);
  }
  load_process(load_process const &) = delete;
  load_process &operator=(load_process const &) = delete;

  /// Runs the load in the child (as run_load does) and returns what it measured. Blocks.
  load_summary run(std::uint16_t port, int connections, double seconds, std::size_t payload,
                   int threads = 2) {
    job const j{port, connections, threads, seconds, payload};
    load_summary out{};
    if (!write_all(m_to_child, &j, sizeof j) || !read_all(m_from_child, &out, sizeof out)) {
      fail("load_process: the child did not answer");
    }
    return out;
  }

private:
  struct job {
    std::uint16_t port;
    int connections, threads;
    double seconds;
    std::size_t payload;
  };

  static bool read_all(int fd, void *p, std::size_t n) {
    auto *b = static_cast<unsigned char *>(p);
    while (n > 0) {
      ssize_t const r = ::read(fd, b, n);
      if (r <= 0 && !(r < 0 && errno == EINTR)) {
        return false;
      }
      if (r > 0) {
        b += r, n -= static_cast<std::size_t>(r);
      }
    }
    return true;
  }
  static bool write_all(int fd, void const *p, std::size_t n) {
    auto const *b = static_cast<unsigned char const *>(p);
    while (n > 0) {
      ssize_t const r = ::write(fd, b, n);
      if (r <= 0 && !(r < 0 && errno == EINTR)) {
        return false;
      }
      if (r > 0) {
        b += r, n -= static_cast<std::size_t>(r);
      }
    }
    return true;
  }

  pid_t m_pid = -1;
  int m_to_child = -1, m_from_child = -1;
};

} // namespace server
