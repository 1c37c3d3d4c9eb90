// magpie::use_task: a task co_awaits Asio operations (a steady_timer, a resolver, an accept, a
// connect, reads and writes on sockets) run by an io_context on another thread, and resumes on
// its own pool; errors are thrown as asio::system_error (or returned with as_tuple); a handler
// destroyed unrun (the io_context destroyed with the operation pending) gives abandoned_wait.

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include <asio.hpp>
#include <asio/experimental/as_tuple.hpp>

#include <gtest/gtest.h>

#include "common/test_support.hpp"
#include "magpie/io/asio.hpp"

namespace {

using namespace magpie::test;
using namespace std::chrono_literals;
using asio::ip::tcp;
using magpie::task;

/// An io_context run by one thread until destroyed.
struct io_thread {
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  std::thread thread{[this] { io.run(); }};
  ~io_thread() {
    work.reset();
    io.stop();
    thread.join();
  }
};

using asio_test = scheduler_test;

TEST_P(asio_test, a_timer_and_a_resolver) {
  io_thread t;
  auto body = [](asio::io_context *io) -> task<long> {
    asio::steady_timer timer(*io, 2ms);
    auto const start = std::chrono::steady_clock::now();
    co_await timer.async_wait(magpie::use_task);
    bool const waited = std::chrono::steady_clock::now() - start >= 2ms;
    tcp::resolver resolver(*io);
    auto results = co_await resolver.async_resolve("127.0.0.1", "80", magpie::use_task);
    co_return (waited ? 1 : 0) + (results.begin()->endpoint().port() == 80 ? 10 : 0);
  };
  EXPECT_EQ(m_sched.run(body, &t.io), 11);
}

TEST_P(asio_test, accept_connect_write_read_on_loopback) {
  io_thread t;
  auto body = [](asio::io_context *io) -> task<long> {
    tcp::acceptor acceptor(*io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
    tcp::socket client(*io);
    // Waiting inside a fork-join scope is refused: each side waits in its own child task.
    long sent = 0, received = 0;
    co_await magpie::fork(
        &sent,
        [](tcp::socket *c, tcp::endpoint ep) -> task<long> {
          co_await c->async_connect(ep, magpie::use_task);
          std::string msg = "hello magpie";
          std::size_t n = co_await asio::async_write(*c, asio::buffer(msg), magpie::use_task);
          co_return static_cast<long>(n);
        },
        &client, acceptor.local_endpoint());
    co_await magpie::call(
        &received,
        [](tcp::acceptor *a) -> task<long> {
          tcp::socket server = co_await a->async_accept(magpie::use_task);
          char buf[12];
          std::size_t n = co_await asio::async_read(server, asio::buffer(buf), magpie::use_task);
          co_return n == 12 && std::string(buf, 12) == "hello magpie" ? 1 : 0;
        },
        &acceptor);
    co_await magpie::join();
    co_return sent == 12 && received == 1 ? 1 : 0;
  };
  EXPECT_EQ(m_sched.run(body, &t.io), 1);
}

TEST_P(asio_test, errors_throw_or_come_back_as_values) {
  io_thread t;
  auto body = [](asio::io_context *io) -> task<long> {
    long score = 0;
    tcp::socket s(*io);
    // A port bound but never listened on refuses connections, and stays ours while `reserved`
    // is open (a port closed again could be taken by a test running in parallel).
    tcp::socket reserved(*io);
    reserved.open(tcp::v4());
    reserved.bind(tcp::endpoint(asio::ip::address_v4::loopback(), 0));
    tcp::endpoint const ep(asio::ip::address_v4::loopback(), reserved.local_endpoint().port());
    try {
      co_await s.async_connect(ep, magpie::use_task);
    } catch (asio::system_error const &e) {
      score += e.code() == asio::error::connection_refused ? 1 : 100;
    }
    tcp::socket s2(*io);
    auto [ec] = co_await s2.async_connect(ep, asio::experimental::as_tuple(magpie::use_task));
    score += ec == asio::error::connection_refused ? 10 : 1000;
    co_return score;
  };
  EXPECT_EQ(m_sched.run(body, &t.io), 11);
}

TEST_P(asio_test, an_operation_whose_handler_is_destroyed_unrun_throws_abandoned_wait) {
  auto io = std::make_unique<asio::io_context>();
  std::atomic<int> queued{0};
  std::thread killer([&] {
    ASSERT_TRUE(wait_for(queued));
    io.reset(); // nobody ran it: the queued completion handler is destroyed
  });
  auto body = [](asio::io_context *ctx, std::atomic<int> *q) -> task<long> {
    // An operation of our own whose completion is queued on a context nobody runs; it says so
    // only once queued, so the context is destroyed strictly after (no I/O object outlives it).
    auto queue = [ctx, q](auto handler) {
      asio::post(*ctx, std::move(handler));
      q->store(1);
    };
    try {
      co_await asio::async_initiate<magpie::io::use_task_t const, void()>(queue, magpie::use_task);
    } catch (magpie::abandoned_wait const &) {
      co_return 1;
    }
    co_return 0;
  };
  long r = m_sched.run(body, io.get(), &queued);
  killer.join();
  EXPECT_EQ(r, 1);
}

INSTANTIATE_TEST_SUITE_P(schedulers, asio_test, ::testing::ValuesIn(all_schedulers()),
                         sched_name{});

} // namespace
