// examples/server/main.cpp — the loopback server whose handlers are magpie tasks, under load:
// a lazy pool of two workers serves `connections` concurrent clients for a short while; every
// reply is checked. Prints the numbers and "PASS" if every reply was right and nothing failed.
//
//   magpie_example_server [connections=50] [seconds=0.5] [payload=4096] [--process]
//
// With --process the load generator runs in a child process, so that this process holds only
// the server's end of each connection (10,000 connections: about 10,000 descriptors here).

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "loadgen.hpp"
#include "magpie_server.hpp"

int main(int argc, char **argv) {
  bool process = false;
  char const *args[3] = {};
  for (int i = 1, n = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--process") == 0) {
      process = true;
    } else if (n < 3) {
      args[n++] = argv[i];
    }
  }
  int const connections = args[0] != nullptr ? std::atoi(args[0]) : 50;
  double const seconds = args[1] != nullptr ? std::atof(args[1]) : 0.5;
  std::size_t const payload =
      args[2] != nullptr ? static_cast<std::size_t>(std::atol(args[2])) : 4096;
  auto const limit = server::raise_fd_limit();
  // Forked before the pool starts any thread (see load_process).
  std::unique_ptr<server::load_process> child =
      process ? std::make_unique<server::load_process>() : nullptr;
  magpie::lazy_pool pool(2);
  server::magpie_server srv(pool);
  srv.start();
  server::load_summary r;
  if (child) {
    r = child->run(srv.port(), connections, seconds, payload);
  } else {
    server::load_result full = server::run_load(srv.port(), connections, seconds, payload);
    r = server::load_summary::of(full);
  }
  srv.stop();
  std::printf("%d connections, %.1f s, %zu-byte requests: %ld replies (%.0f/s), p50 %.0f us, "
              "p99 %.0f us; wrong %ld, failed %ld; server saw %ld requests, %ld connections\n",
              connections, seconds, payload, r.requests, r.per_second, r.p50_us, r.p99_us, r.wrong,
              r.failed, srv.requests(), srv.connections());
  if (r.connected < connections) {
    std::printf("only %ld connections opened (descriptor limit %llu%s)\n", r.connected,
                static_cast<unsigned long long>(limit),
                process ? "" : "; --process halves what this process needs");
  }
  bool const ok = r.requests > 0 && r.wrong == 0 && r.failed == 0 && r.connected == connections &&
                  srv.requests() == r.requests;
  std::printf(ok ? "PASS\n" : "FAIL\n");
  return ok ? 0 : 1;
}
