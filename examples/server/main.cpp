// examples/server/main.cpp — the loopback server whose handlers are magpie tasks, under load:
// a lazy pool of two workers serves `connections` concurrent clients for a short while; every
// reply is checked. Prints the numbers and "PASS" if every reply was right and nothing failed.
//
//   magpie_example_server [connections=50] [seconds=0.5] [payload=4096]

#include <cstdio>
#include <cstdlib>

#include "loadgen.hpp"
#include "magpie_server.hpp"

int main(int argc, char **argv) {
  int const connections = argc > 1 ? std::atoi(argv[1]) : 50;
  double const seconds = argc > 2 ? std::atof(argv[2]) : 0.5;
  std::size_t const payload = argc > 3 ? static_cast<std::size_t>(std::atol(argv[3])) : 4096;
  server::raise_fd_limit();
  magpie::lazy_pool pool(2);
  server::magpie_server srv(pool);
  srv.start();
  server::load_result r = server::run_load(srv.port(), connections, seconds, payload);
  srv.stop();
  std::printf("%d connections, %.1f s, %zu-byte requests: %ld replies (%.0f/s), p50 %.0f us, "
              "p99 %.0f us; wrong %ld, failed %ld; server saw %ld requests, %ld connections\n",
              connections, seconds, payload, r.requests, r.per_second(), r.percentile(0.5),
              r.percentile(0.99), r.wrong, r.failed, srv.requests(), srv.connections());
  bool const ok = r.requests > 0 && r.wrong == 0 && r.failed == 0 && r.connected == connections &&
                  srv.requests() == r.requests;
  std::printf(ok ? "PASS\n" : "FAIL\n");
  return ok ? 0 : 1;
}
