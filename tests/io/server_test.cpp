// The example server (examples/server/magpie_server.hpp) against hostile clients, over real
// loopback sockets: a peer that disconnects mid-request, a handler that throws, a client that
// trickles its request a byte at a time, one that goes silent, one that never reads its replies,
// and stop() while many clients are mid-request. Each case checks its outcome counters (one per
// accepted connection, adding up to the connections opened), that other clients are served
// meanwhile (no worker blocks), and that nothing leaks: no live handler, no descriptor (entries
// of /proc/self/fd), no stacklet (every task frame lives on a stacklet, so a task that never
// finished would keep its chain: stacklets_live returns to its value from before the pool).
// Every wait is bounded; a hang fails through the watchdog.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "common/test_support.hpp"
#include "io/open_fds.hpp"
#include "loadgen.hpp"
#include "magpie/io.hpp"
#include "magpie_server.hpp"

namespace {

using namespace std::chrono_literals;
using clk = std::chrono::steady_clock;
using magpie::test::open_fds;
using magpie::test::scaled;

/// Polls `pred` every millisecond for at most `limit`; returns its last value.
template <typename Pred>
bool wait_until(Pred pred, std::chrono::milliseconds limit) {
  auto const end = clk::now() + limit;
  while (!pred()) {
    if (clk::now() > end) {
      return pred();
    }
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

/// Generous bounds: far above what a healthy run needs, also under sanitizers.
constexpr std::chrono::milliseconds settle{5'000};

/// A request on the wire (header + payload) and the checksum the server must reply.
struct request {
  std::vector<unsigned char> wire;
  std::uint64_t sum = 0;
  explicit request(std::string const &payload) : wire(4 + payload.size()) {
    server::write_length(wire.data(), static_cast<std::uint32_t>(payload.size()));
    std::memcpy(wire.data() + 4, payload.data(), payload.size());
    sum = server::checksum(wire.data() + 4, 0, payload.size());
  }
};

/// A blocking client socket whose sends and receives give up after a few seconds (no test can
/// hang on one), closed on destruction.
class client {
public:
  explicit client(std::uint16_t port, int rcvbuf = 0) {
    m_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    EXPECT_GE(m_fd, 0);
    if (rcvbuf > 0) { // before connect: it bounds the window the server sees
      (void)::setsockopt(m_fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    }
    timeval tv{5, 0};
    (void)::setsockopt(m_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    (void)::setsockopt(m_fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    EXPECT_EQ(::connect(m_fd, reinterpret_cast<sockaddr *>(&a), sizeof a), 0) << errno;
    server::set_nodelay(m_fd);
  }
  ~client() { close(); }
  client(client const &) = delete;
  client &operator=(client const &) = delete;

  int fd() const noexcept { return m_fd; }

  bool send_all(void const *p, std::size_t n) {
    auto const *b = static_cast<unsigned char const *>(p);
    while (n > 0) {
      ssize_t const r = ::send(m_fd, b, n, MSG_NOSIGNAL);
      if (r <= 0) {
        return false;
      }
      b += r, n -= static_cast<std::size_t>(r);
    }
    return true;
  }

  /// Sends `r` and reads its reply; true if the reply is r's checksum.
  bool round_trip(request const &r) {
    std::uint64_t got = 0;
    return send_all(r.wire.data(), r.wire.size()) && read_reply(got) && got == r.sum;
  }

  bool read_reply(std::uint64_t &out) {
    unsigned char b[8];
    std::size_t got = 0;
    while (got < 8) {
      ssize_t const r = ::recv(m_fd, b + got, 8 - got, 0);
      if (r <= 0) {
        return false;
      }
      got += static_cast<std::size_t>(r);
    }
    std::memcpy(&out, b, 8);
    return true;
  }

  /// Waits for the server to end the connection: true on end-of-stream or a reset, false if
  /// data arrived or nothing happened within the receive timeout.
  bool sees_the_end() {
    unsigned char b[64];
    ssize_t const r = ::recv(m_fd, b, sizeof b, 0);
    return r == 0 || (r < 0 && (errno == ECONNRESET || errno == EPIPE));
  }

  /// Closes with a reset rather than a FIN.
  void reset() {
    linger l{1, 0};
    (void)::setsockopt(m_fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close();
  }

  void close() {
    if (m_fd >= 0) {
      ::close(m_fd);
      m_fd = -1;
    }
  }

private:
  int m_fd = -1;
};

enum class pool_kind { lazy, busy };
struct pool_param {
  pool_kind kind;
  std::size_t workers;
};

std::string to_string(pool_param const &p) {
  return std::string(p.kind == pool_kind::lazy ? "lazy_" : "busy_") + std::to_string(p.workers);
}
[[maybe_unused]] void PrintTo(pool_param const &p, std::ostream *os) { *os << to_string(p); }
std::string name_of(::testing::TestParamInfo<pool_param> const &info) {
  return to_string(info.param);
}

class server_test : public ::testing::TestWithParam<pool_param> {
protected:
  void SetUp() override {
    m_fds = open_fds();
    m_stacklets = magpie::core::get_stack_stats().stacklets_live;
    pool_param const p = GetParam();
    if (p.kind == pool_kind::lazy) {
      m_pool = std::make_unique<magpie::lazy_pool>(p.workers);
    } else {
      m_pool = std::make_unique<magpie::busy_pool>(p.workers);
    }
  }

  void TearDown() override {
    m_srv.reset();
    m_pool.reset(); // waits for every task: a leaked one would hang here (the watchdog fires)
    EXPECT_EQ(open_fds(), m_fds) << "a descriptor leaked";
    EXPECT_EQ(magpie::core::get_stack_stats().stacklets_live, m_stacklets)
        << "a stacklet (a task frame) outlived the pool";
  }

  server::magpie_server &start(server::magpie_server::options opt) {
    m_srv = std::make_unique<server::magpie_server>(*m_pool, opt);
    m_srv->start();
    return *m_srv;
  }

  /// Every accepted connection has exactly one outcome and no handler is left.
  static void expect_accounted(server::magpie_server &s) {
    EXPECT_EQ(s.live_handlers(), 0);
    EXPECT_EQ(s.open_connections(), 0u);
    EXPECT_EQ(s.closed() + s.errors() + s.timeouts() + s.handler_throws() + s.shut_down(),
              s.connections());
  }

  /// Waits (bounded) until every accepted connection has ended.
  static bool all_ended(server::magpie_server &s, long connections) {
    return wait_until([&] { return s.connections() == connections && s.live_handlers() == 0; },
                      settle);
  }

  magpie::test::watchdog m_watchdog{magpie::test::current_test_name(), std::chrono::seconds(60)};
  magpie::test::fd_listing m_fds;
  std::size_t m_stacklets = 0;
  std::unique_ptr<magpie::pool> m_pool;
  std::unique_ptr<server::magpie_server> m_srv;
};

TEST_P(server_test, a_peer_that_disconnects_mid_request_ends_its_handler_with_an_error) {
  auto &s = start({});
  request const good(std::string(300, 'g'));
  client keeper(s.port());
  ASSERT_TRUE(keeper.round_trip(good));

  // Half a header; a header and part of the payload; the same ended by a reset.
  std::vector<std::unique_ptr<client>> bad;
  for (int i = 0; i < 6; ++i) {
    bad.push_back(std::make_unique<client>(s.port()));
    std::size_t const part = i % 3 == 0 ? 2 : 4 + 150;
    ASSERT_TRUE(bad.back()->send_all(good.wire.data(), part));
  }
  // Accepted (and the partial request read) before the peers go: the count is exact.
  ASSERT_TRUE(wait_until([&] { return s.connections() == 7; }, settle));
  for (std::size_t i = 0; i < bad.size(); ++i) {
    if (i % 3 == 2) {
      bad[i]->reset();
    } else {
      bad[i]->close();
    }
  }
  ASSERT_TRUE(wait_until([&] { return s.errors() == 6; }, settle)) << s.errors();
  // (a handler counts its outcome before it lets go of its descriptor and live count)
  EXPECT_TRUE(wait_until([&] { return s.live_handlers() == 1; }, settle)); // the keeper's

  ASSERT_TRUE(keeper.round_trip(good)); // still served
  keeper.close();
  ASSERT_TRUE(all_ended(s, 7));
  EXPECT_EQ(s.errors(), 6);
  EXPECT_EQ(s.closed(), 1);
  EXPECT_EQ(s.requests(), 2);
  s.stop();
  EXPECT_EQ(s.shut_down(), 0);
  expect_accounted(s);
}

TEST_P(server_test, a_handler_that_throws_closes_only_its_own_connection) {
  server::magpie_server::options opt;
  opt.throw_marker = true;
  auto &s = start(opt);
  request const good(std::string(5000, 'x')); // above the grain: a fork–join checksum
  request const bomb("THROW, please");
  client other(s.port());
  ASSERT_TRUE(other.round_trip(good));

  for (int i = 0; i < 3; ++i) {
    client c(s.port());
    if (i == 1) { // a connection that served a request before its handler throws
      ASSERT_TRUE(c.round_trip(good));
    }
    ASSERT_TRUE(c.send_all(bomb.wire.data(), bomb.wire.size()));
    EXPECT_TRUE(c.sees_the_end()) << "the throwing handler's connection was not closed";
    ASSERT_TRUE(other.round_trip(good)); // the others are still served
  }
  ASSERT_TRUE(wait_until([&] { return s.handler_throws() == 3; }, settle));
  client late(s.port());
  ASSERT_TRUE(late.round_trip(good));
  late.close();
  other.close();
  ASSERT_TRUE(all_ended(s, 5));
  EXPECT_EQ(s.handler_throws(), 3);
  EXPECT_EQ(s.closed(), 2);
  EXPECT_EQ(s.errors(), 0);
  EXPECT_EQ(s.requests(), 6);
  s.stop();
  expect_accounted(s);
}

TEST_P(server_test, a_client_that_trickles_its_request_is_served_and_blocks_no_worker) {
  server::magpie_server::options opt;
  opt.idle_timeout = 2s; // far above the pauses
  auto &s = start(opt);
  request const slow_req(std::string(40, 's'));
  request const fast_req(std::string(64, 'f'));
  std::atomic<bool> trickling{true};
  std::atomic<bool> slow_ok{false};
  std::thread slow([&] {
    client c(s.port());
    bool sent = true;
    for (unsigned char b : slow_req.wire) {
      sent = sent && c.send_all(&b, 1);
      std::this_thread::sleep_for(3ms);
    }
    trickling.store(false);
    std::uint64_t got = 0;
    slow_ok.store(sent && c.read_reply(got) && got == slow_req.sum);
  });
  client fast(s.port());
  long served_meanwhile = 0;
  bool fast_ok = true;
  while (trickling.load() && fast_ok) {
    fast_ok = fast.round_trip(fast_req);
    served_meanwhile += fast_ok ? 1 : 0;
  }
  slow.join();
  EXPECT_TRUE(fast_ok);
  EXPECT_TRUE(slow_ok.load()) << "the trickled request got no (or a wrong) reply";
  // 44 bytes 3 ms apart: well over 100 ms during which the fast client must be served, even by
  // a one-worker pool (a worker blocked on the slow socket would serve nobody).
  EXPECT_GE(served_meanwhile, 10);
  fast.close();
  ASSERT_TRUE(all_ended(s, 2));
  EXPECT_EQ(s.closed(), 2);
  EXPECT_EQ(s.timeouts(), 0);
  EXPECT_EQ(s.requests(), served_meanwhile + 1);
  s.stop();
  expect_accounted(s);
}

TEST_P(server_test, a_silent_client_is_dropped_after_the_idle_timeout) {
  server::magpie_server::options opt;
  opt.idle_timeout = 100ms;
  auto &s = start(opt);
  request const r(std::string(100, 'r'));
  auto const t0 = clk::now();
  client mute(s.port());    // never sends
  client stalled(s.port()); // half a request, then nothing
  ASSERT_TRUE(stalled.send_all(r.wire.data(), 50));
  {
    client brisk(s.port()); // served meanwhile, then closes well within the timeout
    ASSERT_TRUE(brisk.round_trip(r));
  }
  EXPECT_TRUE(mute.sees_the_end());
  EXPECT_TRUE(stalled.sees_the_end());
  EXPECT_GE(clk::now() - t0, 100ms) << "dropped before the idle timeout";
  ASSERT_TRUE(all_ended(s, 3));
  EXPECT_EQ(s.timeouts(), 2);
  EXPECT_EQ(s.closed(), 1);
  EXPECT_EQ(s.requests(), 1);
  s.stop();
  expect_accounted(s);
}

TEST_P(server_test, a_client_that_never_reads_its_replies_is_dropped_after_the_idle_timeout) {
  server::magpie_server::options opt;
  opt.idle_timeout = 150ms;
  auto &s = start(opt);
  // Pipelined one-byte requests with a small receive buffer: the server's replies fill the
  // window and its send buffer, its handler then waits to write, and the client's own sends
  // stall once the server's receive buffer is full too.
  client hog(s.port(), 4096);
  server::set_nonblocking(hog.fd());
  request const one("1");
  std::vector<unsigned char> burst;
  for (int i = 0; i < 4096; ++i) {
    burst.insert(burst.end(), one.wire.begin(), one.wire.end());
  }
  auto const give_up = clk::now() + settle;
  for (;;) {
    ssize_t const n = ::send(hog.fd(), burst.data(), burst.size(), MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN) {
      break; // the server already dropped it
    }
    if (n < 0) {
      pollfd p{hog.fd(), POLLOUT, 0};
      if (::poll(&p, 1, 300) == 0) {
        break; // stalled: the server has stopped reading
      }
    }
    ASSERT_LT(clk::now(), give_up) << "the server kept reading a client that never reads";
  }
  EXPECT_GT(s.requests(), 0);
  // The server first works through the requests the kernel already holds for it (some 10^5
  // one-byte requests, as far as its send buffer takes the replies: seconds under a sanitizer on
  // a loaded machine; on one worker nothing else runs meanwhile). The timeout is for a handler
  // that makes no progress: wait while requests are still being served, and for `settle` after
  // they stop. Another client is served once the hog's handler waits (20 ms without progress).
  auto const cap = clk::now() + 12 * settle; // against a server that serves forever
  auto served = s.requests();
  auto quiet_since = clk::now();
  auto const note_progress = [&] {
    if (auto const now_served = s.requests(); now_served != served) {
      served = now_served;
      quiet_since = clk::now();
    }
  };
  while (s.timeouts() == 0 && clk::now() - quiet_since < 20ms) {
    ASSERT_LT(clk::now(), cap) << "the server kept serving a client that never reads";
    note_progress();
    std::this_thread::sleep_for(1ms);
  }
  {
    request const r(std::string(100, 'r'));
    client other(s.port()); // served while the hog's handler waits
    ASSERT_TRUE(other.round_trip(r));
  }
  quiet_since = clk::now();
  while (s.timeouts() != 1) {
    ASSERT_LT(clk::now(), cap) << "the server kept serving a client that never reads";
    note_progress();
    ASSERT_LT(clk::now() - quiet_since, settle)
        << "a handler waiting to write to a client that never reads was never dropped";
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_TRUE(all_ended(s, 2));
  EXPECT_EQ(s.timeouts(), 1);
  EXPECT_EQ(s.closed(), 1);
  s.stop();
  expect_accounted(s);
}

TEST_P(server_test, stop_under_load_ends_every_connection_and_returns) {
  auto &s = start({});
  int const loaded = scaled(24, 8);
  int const partial = scaled(16, 6);
  std::atomic<bool> load_done{false};
  server::load_result res;
  std::thread load([&] {
    res = server::run_load(s.port(), loaded, 3.0, 2048); // cut short by stop()
    load_done.store(true);
  });
  struct joiner {
    std::thread &t;
    ~joiner() { t.join(); } // also when an assertion below returns early
  } const join_load{load};
  request const r(std::string(1000, 'p'));
  std::vector<std::unique_ptr<client>> mid;
  for (int i = 0; i < partial; ++i) {
    mid.push_back(std::make_unique<client>(s.port()));
    ASSERT_TRUE(mid.back()->send_all(r.wire.data(), 4 + 500)); // half a payload: mid-request
  }
  ASSERT_TRUE(
      wait_until([&] { return s.connections() == loaded + partial && s.requests() > 50; }, settle))
      << s.connections() << " connections, " << s.requests() << " requests";
  auto const t0 = clk::now();
  s.stop();
  auto const took = clk::now() - t0;
  EXPECT_LT(took, 2s) << "stop() took "
                      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                      << " ms";
  EXPECT_EQ(s.live_handlers(), 0); // stop() returned: every handler has finished
  EXPECT_EQ(s.shut_down(), loaded + partial);
  expect_accounted(s);
  for (auto &c : mid) {
    EXPECT_TRUE(c->sees_the_end());
  }
  ASSERT_TRUE(wait_until([&] { return load_done.load(); }, settle));
  // (joined by join_load; `res` is read below, after the thread's last write, via load_done)
  EXPECT_EQ(res.connected, loaded);
  EXPECT_EQ(res.wrong, 0);
  EXPECT_EQ(res.failed, loaded); // each connection ended by the shutdown, none by a wrong reply
  EXPECT_GT(res.requests, 0);
}

INSTANTIATE_TEST_SUITE_P(pools, server_test,
                         ::testing::Values(pool_param{pool_kind::lazy, 1},
                                           pool_param{pool_kind::lazy, 2},
                                           pool_param{pool_kind::busy, 2}),
                         name_of);

} // namespace
