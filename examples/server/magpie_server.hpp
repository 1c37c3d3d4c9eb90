#pragma once
// examples/server/magpie_server.hpp — the loopback server whose connection handlers are magpie
// tasks: an acceptor task spawns one handler task per connection into a task_group; a handler
// reads a request (co_await magpie::readable when the socket has nothing), computes the payload's
// checksum with fork–join (halves in parallel down to a grain), and writes the reply
// (co_await magpie::writable when the socket is full), then yields (co_await magpie::yield) so
// that the other connections' woken handlers go first. No worker ever blocks on a socket.
//
// Outcomes, each counted, exactly one per accepted connection (tests/io/server_test.cpp checks
// them): a peer that closes between requests ends its handler quietly (closed); one that
// disconnects or resets mid-request, or sends a malformed request, ends it with an error
// (errors); a handler that throws (a payload beginning with "THROW" when throw_marker is on)
// closes only its own connection (handler_throws); a client silent for longer than idle_timeout
// (or that reads none of its replies for that long) is disconnected (timeouts); a handler still
// running when stop() begins ends because stop() shut its socket down (shut_down), whatever it
// was doing. stop() wakes the acceptor, shuts every socket down, and waits for every handler to
// finish: no task, stacklet or descriptor outlives it.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <unordered_set>
#include <vector>

#include <sys/socket.h>

#include "magpie/io.hpp"
#include "magpie/magpie.hpp"
#include "protocol.hpp"

namespace server {

/// The server. start() and stop() from a plain thread; stop() is idempotent (and called by the
/// destructor).
class magpie_server {
public:
  struct options {
    std::size_t grain = 4096; ///< bytes below which the checksum is computed serially
    std::chrono::milliseconds idle_timeout{10'000};
    bool throw_marker = false; ///< a payload starting with "THROW" makes its handler throw
  };

  magpie_server(magpie::pool &pool, options opt) : m_opt(opt), m_group(pool) {
    m_listen = listen_loopback(m_port, true);
  }
  explicit magpie_server(magpie::pool &pool) : magpie_server(pool, options{}) {}
  ~magpie_server() { stop(); }
  magpie_server(magpie_server const &) = delete;
  magpie_server &operator=(magpie_server const &) = delete;

  std::uint16_t port() const noexcept { return m_port; }

  void start() { m_group.spawn(accept_loop, this); }

  /// Stops accepting, shuts every connection down and waits for every handler. Connections
  /// still queued in the listen backlog are reset when the listening socket closes.
  void stop() {
    if (m_stopping.exchange(true)) {
      return;
    }
    {
      std::lock_guard lock(m_mutex);
      for (int fd : m_open) {
        ::shutdown(fd, SHUT_RDWR); // its handler sees end-of-stream (or an error) and ends
      }
    }
    // Wakes the acceptor if it waits for a connection; if it is between two waits it sees
    // m_stopping before the next one, or within that wait's 50 ms poll at worst.
    (void)magpie::io::cancel(m_listen);
    m_group.wait();
    magpie::io::close(m_listen);
  }

  long requests() const noexcept { return m_requests.load(); }
  long connections() const noexcept { return m_connections.load(); } ///< accepted
  long closed() const noexcept { return m_closed.load(); }         ///< peer closed between requests
  long errors() const noexcept { return m_errors.load(); }         ///< ended by an error
  long timeouts() const noexcept { return m_timeouts.load(); }     ///< idle clients dropped
  long handler_throws() const noexcept { return m_throws.load(); } ///< handlers that threw
  long shut_down() const noexcept { return m_shut_down.load(); }   ///< ended by stop()
  /// Handlers started and not yet finished (each holds one descriptor).
  long live_handlers() const noexcept { return m_live.load(); }
  std::size_t open_connections() {
    std::lock_guard lock(m_mutex);
    return m_open.size();
  }

private:
  struct idle_timeout : std::runtime_error {
    idle_timeout() : std::runtime_error("idle client") {}
  };
  struct handler_threw : std::runtime_error {
    handler_threw() : std::runtime_error("the handler threw (THROW marker)") {}
  };

  static magpie::task<void> accept_loop(magpie_server *self) {
    while (!self->m_stopping.load()) {
      int fd = ::accept4(self->m_listen, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED) {
          try {
            (void)co_await magpie::readable(self->m_listen, std::chrono::milliseconds(50));
          } catch (std::system_error const &) {
            // stop() cancelled the wait (operation_canceled): the loop's test ends it.
          }
        } else if (errno == EMFILE || errno == ENFILE) {
          co_await magpie::sleep_for(std::chrono::milliseconds(1)); // out of descriptors: later
        } else {
          break;
        }
        continue;
      }
      set_nodelay(fd);
      {
        std::lock_guard lock(self->m_mutex);
        if (self->m_stopping.load()) { // stop() has shut the others down already
          ::close(fd);
          break;
        }
        self->m_open.insert(fd);
      }
      self->m_connections.fetch_add(1);
      self->m_live.fetch_add(1);
      try {
        self->m_group.spawn(serve, self, fd);
      } catch (std::exception const &) { // out of memory: this connection only is refused
        self->finish(fd, self->m_errors);
      }
    }
  }

  /// The end of a connection: counts its outcome (or shut_down, once stop() has begun), closes
  /// its descriptor.
  void finish(int fd, std::atomic<long> &outcome) {
    (m_stopping.load() ? m_shut_down : outcome).fetch_add(1);
    {
      std::lock_guard lock(m_mutex); // stop() does not shut down a number reused later
      m_open.erase(fd);
    }
    magpie::io::close(fd);
    m_live.fetch_sub(1); // last: a test that sees 0 finds every descriptor closed
  }

  /// Reads exactly n bytes; false if the peer closed before the first byte and `eof_ok`.
  static magpie::task<bool> read_exact(magpie_server *self, int fd, unsigned char *p, std::size_t n,
                                       bool eof_ok) {
    std::size_t got = 0;
    while (got < n) {
      ssize_t r = ::recv(fd, p + got, n - got, 0);
      if (r > 0) {
        got += static_cast<std::size_t>(r);
      } else if (r == 0) {
        if (got == 0 && eof_ok) {
          co_return false;
        }
        throw std::runtime_error("peer disconnected mid-request");
      } else if (errno == EAGAIN || errno == EINTR) {
        if (!co_await magpie::readable(fd, self->m_opt.idle_timeout)) {
          throw idle_timeout();
        }
      } else {
        throw std::system_error(errno, std::system_category(), "recv");
      }
    }
    co_return true;
  }

  /// Writes n bytes; a client that has not made room (read) for idle_timeout is dropped.
  static magpie::task<void> write_all(magpie_server *self, int fd, unsigned char const *p,
                                      std::size_t n) {
    std::size_t sent = 0;
    while (sent < n) {
      ssize_t r = ::send(fd, p + sent, n - sent, MSG_NOSIGNAL);
      if (r >= 0) {
        sent += static_cast<std::size_t>(r);
      } else if (errno == EAGAIN || errno == EINTR) {
        if (!co_await magpie::writable(fd, self->m_opt.idle_timeout)) {
          throw idle_timeout();
        }
      } else {
        throw std::system_error(errno, std::system_category(), "send");
      }
    }
  }

  /// The checksum of bytes [b, e) of p: fork–join halves down to the grain.
  static magpie::task<std::uint64_t> sum(unsigned char const *p, std::size_t b, std::size_t e,
                                         std::size_t grain) {
    if (e - b <= grain) {
      co_return checksum(p, b, e);
    }
    std::size_t const mid = b + (e - b) / 2;
    std::uint64_t left = 0, right = 0;
    co_await magpie::fork(&left, sum, p, b, mid, grain);
    co_await magpie::call(&right, sum, p, mid, e, grain);
    co_await magpie::join();
    co_return left + right;
  }

  static magpie::task<void> serve(magpie_server *self, int fd) {
    std::vector<unsigned char> payload;
    std::atomic<long> *outcome = &self->m_closed;
    try {
      for (;;) {
        unsigned char header[4];
        bool more = false;
        // A called child's exception surfaces at the parent's next join (core/fork.hpp), not
        // at the call: each call below is followed by one, so that a failed read or write ends
        // the loop with its own outcome here rather than escaping into the task_group.
        co_await magpie::call(&more, read_exact, self, fd, header, 4, true);
        co_await magpie::join();
        if (!more) {
          break; // closed between requests: the normal end
        }
        std::uint32_t const n = read_length(header);
        if (n == 0 || n > max_payload) {
          throw std::runtime_error("malformed request");
        }
        payload.resize(n);
        co_await magpie::call(&more, read_exact, self, fd, payload.data(), n, false);
        co_await magpie::join();
        if (self->m_opt.throw_marker && n >= 5 && std::memcmp(payload.data(), "THROW", 5) == 0) {
          throw handler_threw();
        }
        std::uint64_t s = 0;
        co_await magpie::call(&s, sum, payload.data(), 0, n, self->m_opt.grain);
        unsigned char reply[8];
        std::memcpy(reply, &s, 8);
        co_await magpie::call(write_all, self, fd, reply, 8);
        co_await magpie::join();
        self->m_requests.fetch_add(1, std::memory_order_relaxed);
        // The next request may be there already, and then this loop never suspends: without a
        // yield, a busy connection would keep its worker while the handlers that the reactor
        // woke for other connections wait in that worker's queue (p99 latency in ms).
        co_await magpie::yield();
      }
    } catch (idle_timeout const &) {
      outcome = &self->m_timeouts;
    } catch (handler_threw const &) {
      outcome = &self->m_throws;
    } catch (std::exception const &) {
      outcome = &self->m_errors;
    }
    self->finish(fd, *outcome);
  }

  options m_opt;
  magpie::task_group m_group;
  int m_listen = -1;
  std::uint16_t m_port = 0;
  std::atomic<bool> m_stopping{false};
  std::mutex m_mutex;
  std::unordered_set<int> m_open;
  std::atomic<long> m_requests{0}, m_connections{0}, m_live{0};
  std::atomic<long> m_closed{0}, m_errors{0}, m_timeouts{0}, m_throws{0}, m_shut_down{0};
};

} // namespace server
