#pragma once
// examples/server/thread_server.hpp — the same server with a thread per connection: blocking
// accept on one thread, a std::thread per connection doing blocking reads and writes and the
// checksum serially. The baseline of the comparison in bench/io/server.cpp.

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <vector>

#include <sys/socket.h>
#include <unistd.h>

#include "protocol.hpp"

namespace server {

class thread_server {
public:
  thread_server() {
    m_listen = listen_loopback(m_port, false);
    m_acceptor = std::thread([this] { accept_loop(); });
  }
  ~thread_server() { stop(); }
  thread_server(thread_server const &) = delete;
  thread_server &operator=(thread_server const &) = delete;

  std::uint16_t port() const noexcept { return m_port; }
  long requests() const noexcept { return m_requests.load(); }

  void stop() {
    if (m_stopping.exchange(true)) {
      return;
    }
    ::shutdown(m_listen, SHUT_RDWR); // accept() returns EINVAL
    m_acceptor.join();
    {
      std::lock_guard lock(m_mutex);
      for (int fd : m_open) {
        ::shutdown(fd, SHUT_RDWR);
      }
    }
    for (auto &t : m_threads) {
      t.join();
    }
    ::close(m_listen);
  }

private:
  void accept_loop() {
    while (!m_stopping.load()) {
      int fd = ::accept4(m_listen, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) {
          continue;
        }
        break;
      }
      set_nodelay(fd);
      std::lock_guard lock(m_mutex);
      m_open.insert(fd);
      m_threads.emplace_back([this, fd] { serve(fd); });
    }
  }

  static bool read_exact(int fd, unsigned char *p, std::size_t n) {
    std::size_t got = 0;
    while (got < n) {
      ssize_t r = ::recv(fd, p + got, n - got, 0);
      if (r <= 0) {
        if (r < 0 && errno == EINTR) {
          continue;
        }
        return false;
      }
      got += static_cast<std::size_t>(r);
    }
    return true;
  }

  void serve(int fd) {
    std::vector<unsigned char> payload;
    unsigned char header[4];
    while (read_exact(fd, header, 4)) {
      std::uint32_t const n = read_length(header);
      if (n == 0 || n > max_payload) {
        break;
      }
      payload.resize(n);
      if (!read_exact(fd, payload.data(), n)) {
        break;
      }
      std::uint64_t const s = checksum(payload.data(), 0, n);
      if (::send(fd, &s, 8, MSG_NOSIGNAL) != 8) {
        break;
      }
      m_requests.fetch_add(1, std::memory_order_relaxed);
    }
    std::lock_guard lock(m_mutex);
    m_open.erase(fd);
    ::close(fd);
  }

  int m_listen = -1;
  std::uint16_t m_port = 0;
  std::atomic<bool> m_stopping{false};
  std::atomic<long> m_requests{0};
  std::thread m_acceptor;
  std::mutex m_mutex;
  std::unordered_set<int> m_open;
  std::vector<std::thread> m_threads; // joined by stop()
};

} // namespace server
