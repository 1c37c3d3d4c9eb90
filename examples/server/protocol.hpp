#pragma once
// examples/server/protocol.hpp — the loopback request/reply protocol shared by the three servers
// (magpie tasks, a thread per connection, Asio on a thread pool) and the load generator.
//
// Request: a 4-byte little-endian length n (1 ≤ n ≤ max_payload), then n bytes of payload.
// Reply:   the 8-byte checksum of the payload (checksum() below), computed by the server.
// The checksum is a sum over the bytes of a mix of (byte, position): associative, so a server
// may split the payload and add the halves' sums (magpie does, fork–join).

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

namespace server {

inline constexpr std::uint32_t max_payload = 1 << 16;

/// The mix of one byte at one position.
inline std::uint64_t mix(std::uint8_t byte, std::size_t pos) noexcept {
  std::uint64_t z = (static_cast<std::uint64_t>(byte) << 32) ^ pos ^ 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/// The checksum of bytes [begin, end) of `p` (positions are offsets into the whole payload).
inline std::uint64_t checksum(std::uint8_t const *p, std::size_t begin, std::size_t end) noexcept {
  std::uint64_t s = 0;
  for (std::size_t i = begin; i < end; ++i) {
    s += mix(p[i], i);
  }
  return s;
}

[[noreturn]] inline void fail(char const *what) {
  throw std::system_error(errno, std::system_category(), what);
}

inline void set_nonblocking(int fd) {
  int const flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    fail("fcntl");
  }
}

inline void set_nodelay(int fd) {
  int one = 1;
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/// A listening TCP socket on 127.0.0.1 and an ephemeral port; returns the descriptor.
inline int listen_loopback(std::uint16_t &port, bool nonblocking) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0), 0);
  if (fd < 0) {
    fail("socket");
  }
  int one = 1;
  (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) < 0 || ::listen(fd, 4096) < 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) < 0) {
    int const e = errno;
    ::close(fd);
    errno = e;
    fail("bind/listen");
  }
  port = ntohs(a.sin_port);
  return fd;
}

/// Raises this process's descriptor limit to its hard limit; returns the new soft limit.
inline rlim_t raise_fd_limit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    (void)::setrlimit(RLIMIT_NOFILE, &r);
  }
  (void)::getrlimit(RLIMIT_NOFILE, &r);
  return r.rlim_cur;
}

/// A request's header: the payload length, little-endian.
inline std::uint32_t read_length(unsigned char const *h) noexcept {
  return static_cast<std::uint32_t>(h[0]) | static_cast<std::uint32_t>(h[1]) << 8 |
         static_cast<std::uint32_t>(h[2]) << 16 | static_cast<std::uint32_t>(h[3]) << 24;
}

inline void write_length(unsigned char *h, std::uint32_t n) noexcept {
  for (int i = 0; i < 4; ++i) {
    h[i] = static_cast<unsigned char>(n >> (8 * i));
  }
}

} // namespace server
