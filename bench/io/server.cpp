// bench/io/server.cpp — the loopback server (examples/server) under the closed-loop load
// generator: magpie task handlers on a lazy_pool(2) against a thread per connection and plain
// Asio on a 2-thread pool, at several concurrency levels; then 10,000 connections held by the
// magpie server's 2-worker pool. Every reply is checked ("ERROR OCCURRED", exit status 1, on a
// wrong or missing one). Usage: io_server [seconds per level = 1] [payload bytes = 4096]

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "../../examples/server/loadgen.hpp"
#include "../../examples/server/magpie_server.hpp"
#include "../../examples/server/thread_server.hpp"
#if MAGPIE_BENCH_HAVE_ASIO
#  include "../../examples/server/asio_server.hpp"
#endif

namespace {

bool failed = false;

template <typename Server>
void measure(char const *name, Server &srv, int connections, double seconds, std::size_t payload) {
  server::load_result r = server::run_load(srv.port(), connections, seconds, payload);
  bool const ok = r.wrong == 0 && r.failed == 0 && r.connected == connections && r.requests > 0;
  std::printf("%-8s %6d conns: %9.0f req/s  p50 %8.0f us  p99 %8.0f us  (%ld replies%s)\n", name,
              connections, r.per_second(), r.percentile(0.5), r.percentile(0.99), r.requests,
              ok ? "" : ", ERROR OCCURRED: wrong or missing replies");
  std::fflush(stdout);
  failed = failed || !ok;
}

} // namespace

int main(int argc, char **argv) {
  // Positional arguments only: options such as --benchmark_color=false (scripts/bench.py passes
  // it to every microbenchmark binary) are not ours and are skipped.
  char const *positional[2] = {nullptr, nullptr};
  int n = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--", 2) != 0 && n < 2) {
      positional[n++] = argv[i];
    }
  }
  double const seconds = positional[0] != nullptr ? std::atof(positional[0]) : 1.0;
  long const payload_arg = positional[1] != nullptr ? std::atol(positional[1]) : 4096;
  if (!(seconds > 0) || payload_arg <= 0) {
    std::fprintf(stderr, "usage: %s [seconds per level > 0] [payload bytes > 0]\n", argv[0]);
    return 2;
  }
  auto const payload = static_cast<std::size_t>(payload_arg);
  auto const limit = server::raise_fd_limit();
  std::printf("loopback server, %zu-byte requests, %.1f s per level, 2 load threads, fd limit "
              "%llu\n",
              payload, seconds, static_cast<unsigned long long>(limit));
  for (int c : {10, 100, 1000}) {
    {
      magpie::lazy_pool pool(2);
      server::magpie_server srv(pool);
      srv.start();
      measure("magpie", srv, c, seconds, payload);
    }
    {
      server::thread_server srv;
      measure("threads", srv, c, seconds, payload);
    }
#if MAGPIE_BENCH_HAVE_ASIO
    {
      server::asio_server srv(2);
      measure("asio", srv, c, seconds, payload);
    }
#endif
  }
  // Both ends of every connection live in this process: 10,000 connections need 20,000
  // descriptors; with a lower hard limit, as many as fit.
  int const held = static_cast<int>(std::min<rlim_t>(10000, limit > 400 ? (limit - 400) / 2 : 0));
  if (held >= 1000) {
    magpie::lazy_pool pool(2);
    server::magpie_server srv(pool);
    srv.start();
    measure("magpie", srv, held, seconds, payload);
  } else {
    std::printf("held connections: skipped (descriptor limit %llu)\n",
                static_cast<unsigned long long>(limit));
  }
  return failed ? 1 : 0;
}
