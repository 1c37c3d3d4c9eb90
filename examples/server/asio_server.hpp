#pragma once
// examples/server/asio_server.hpp — the same server with plain Asio (callbacks) on a std::thread
// pool running one io_context: asynchronous accept, read of the header and the payload, the
// checksum computed serially in the completion handler, asynchronous write of the reply.

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include <asio.hpp>

#include "protocol.hpp"

namespace server {

class asio_server {
public:
  explicit asio_server(std::size_t threads)
      : m_acceptor(m_io, asio::ip::tcp::endpoint(asio::ip::address_v4::loopback(), 0)) {
    m_acceptor.listen(4096);
    accept();
    for (std::size_t i = 0; i < threads; ++i) {
      m_threads.emplace_back([this] { m_io.run(); });
    }
  }
  ~asio_server() { stop(); }
  asio_server(asio_server const &) = delete;
  asio_server &operator=(asio_server const &) = delete;

  std::uint16_t port() const { return m_acceptor.local_endpoint().port(); }
  long requests() const noexcept { return m_requests.load(); }

  void stop() {
    if (m_threads.empty()) {
      return;
    }
    m_io.stop(); // pending handlers (and their sessions) are destroyed with the io_context
    for (auto &t : m_threads) {
      t.join();
    }
    m_threads.clear();
  }

private:
  struct session : std::enable_shared_from_this<session> {
    session(asio::ip::tcp::socket s, std::atomic<long> &count)
        : m_socket(std::move(s)), m_count(count) {}

    void read_header() {
      asio::async_read(m_socket, asio::buffer(m_header),
                       [self = shared_from_this()](std::error_code ec, std::size_t) {
                         if (!ec) {
                           self->read_payload();
                         }
                       });
    }
    void read_payload() {
      std::uint32_t const n = read_length(m_header.data());
      if (n == 0 || n > max_payload) {
        return;
      }
      m_payload.resize(n);
      asio::async_read(m_socket, asio::buffer(m_payload),
                       [self = shared_from_this()](std::error_code ec, std::size_t n) {
                         if (!ec) {
                           self->m_sum = checksum(self->m_payload.data(), 0, n);
                           self->write_reply();
                         }
                       });
    }
    void write_reply() {
      asio::async_write(m_socket, asio::buffer(&m_sum, 8),
                        [self = shared_from_this()](std::error_code ec, std::size_t) {
                          if (!ec) {
                            self->m_count.fetch_add(1, std::memory_order_relaxed);
                            self->read_header();
                          }
                        });
    }

    asio::ip::tcp::socket m_socket;
    std::atomic<long> &m_count;
    std::array<unsigned char, 4> m_header{};
    std::vector<unsigned char> m_payload;
    std::uint64_t m_sum = 0;
  };

  void accept() {
    m_acceptor.async_accept([this](std::error_code ec, asio::ip::tcp::socket s) {
      if (!ec) {
        s.set_option(asio::ip::tcp::no_delay(true));
        std::make_shared<session>(std::move(s), m_requests)->read_header();
      }
      if (ec != asio::error::operation_aborted) {
        accept();
      }
    });
  }

  asio::io_context m_io;
  asio::ip::tcp::acceptor m_acceptor;
  std::atomic<long> m_requests{0};
  std::vector<std::thread> m_threads;
};

} // namespace server
