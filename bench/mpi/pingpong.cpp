// bench/mpi/pingpong — what awaiting MPI from a magpie task costs, on 2 ranks:
//   1. round-trip latency of a one-long ping-pong: plain blocking MPI_Send/MPI_Recv on the main
//      thread vs a task that co_awaits magpie::mpi::isend / irecv (median of the repeats): with
//      the default spin before parking (the reply is caught on the worker), and with no spin
//      (every wait goes through the poller and the pool's wake-up), on a lazy_pool (the idle
//      worker sleeps) and on a busy_pool (it keeps looking for work);
//   2. the CPU the process burns while a task waits on an unmatched receive (getrusage over
//      the wait), i.e. what the poller's back-off costs at rest;
//   3. the poller's cost per pending request: one scan of N unmatched receives, by MPI_Testany
//      (what the poller calls) and by MPI_Testsome.
// Every answer is checked (the partner returns the value plus one).
//
//   mpiexec -n 2 bench/bin/mpi_pingpong [rounds=2000] [repeats=7] [idle_seconds=5]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <vector>

#include <sys/resource.h>

#include "magpie/magpie.hpp"
#include "magpie/mpi.hpp"

namespace {

namespace mpi = magpie::mpi;
using clk = std::chrono::steady_clock;

double seconds_since(clk::time_point t0) {
  return std::chrono::duration<double>(clk::now() - t0).count();
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Plain MPI: seconds per round trip; false in *ok if an answer was wrong.
double blocking(int rank, int rounds, bool *ok) {
  MPI_Barrier(MPI_COMM_WORLD);
  auto const t0 = clk::now();
  for (long i = 0; i < rounds; ++i) {
    long v = i;
    if (rank == 0) {
      MPI_Send(&v, 1, MPI_LONG, 1, 1, MPI_COMM_WORLD);
      MPI_Recv(&v, 1, MPI_LONG, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      *ok = *ok && v == i + 1;
    } else {
      MPI_Recv(&v, 1, MPI_LONG, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      ++v;
      MPI_Send(&v, 1, MPI_LONG, 0, 1, MPI_COMM_WORLD);
    }
  }
  return seconds_since(t0) / rounds;
}

/// The same exchange, awaited by a task.
magpie::task<bool> awaited_rounds(int rank, int rounds) {
  bool ok = true;
  for (long i = 0; i < rounds; ++i) {
    if (rank == 0) {
      co_await mpi::isend(i, 1, 2, MPI_COMM_WORLD);
      long const v = co_await mpi::irecv<long>(1, 2, MPI_COMM_WORLD);
      ok = ok && v == i + 1;
    } else {
      long const v = co_await mpi::irecv<long>(0, 2, MPI_COMM_WORLD);
      co_await mpi::isend(v + 1, 0, 2, MPI_COMM_WORLD);
    }
  }
  co_return ok;
}

template <typename Pool>
double awaited(Pool &pool, int rank, int rounds, bool *ok) {
  MPI_Barrier(MPI_COMM_WORLD);
  auto const t0 = clk::now();
  *ok = magpie::sync_wait(pool, awaited_rounds, rank, rounds) && *ok;
  return seconds_since(t0) / rounds;
}

/// A task waits `secs` on a receive nobody matches, then cancels it. Returns the process's CPU
/// seconds over the wait; *ok: the wait timed out and the cancel took effect.
magpie::task<double> idle_wait(double secs, bool *ok) {
  long v = 0;
  MPI_Request r;
  MPI_Irecv(&v, 1, MPI_LONG, 0, 3, MPI_COMM_SELF, &r);
  double const cpu0 = cpu_seconds();
  std::optional<MPI_Status> const st =
      co_await mpi::wait_for(r, std::chrono::duration<double>(secs));
  double const cpu = cpu_seconds() - cpu0;
  MPI_Cancel(&r);
  MPI_Status const end = co_await mpi::wait(r);
  int cancelled = 0;
  MPI_Test_cancelled(&end, &cancelled);
  *ok = *ok && !st.has_value() && cancelled != 0;
  co_return cpu;
}

/// Nanoseconds of one scan of n pending (unmatched) receives — the poller's loop body — by
/// MPI_Testany (`any`) or MPI_Testsome.
double scan_ns(int n, bool any) {
  std::vector<long> bufs(static_cast<std::size_t>(n));
  std::vector<MPI_Request> reqs(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    MPI_Irecv(&bufs[i], 1, MPI_LONG, 0, 4, MPI_COMM_SELF, &reqs[i]);
  }
  std::vector<int> idx(static_cast<std::size_t>(n));
  std::vector<MPI_Status> st(static_cast<std::size_t>(n));
  int const calls = std::max(20, 200000 / n);
  std::vector<double> samples;
  for (int rep = 0; rep < 5; ++rep) {
    auto const t0 = clk::now();
    for (int c = 0; c < calls; ++c) {
      int done = 0;
      if (any) {
        int flag = 0;
        MPI_Testany(n, reqs.data(), &done, &flag, st.data());
      } else {
        MPI_Testsome(n, reqs.data(), &done, idx.data(), st.data());
      }
    }
    samples.push_back(seconds_since(t0) * 1e9 / calls);
  }
  for (auto &r : reqs) {
    MPI_Cancel(&r);
  }
  MPI_Waitall(n, reqs.data(), MPI_STATUSES_IGNORE);
  return median(samples);
}

} // namespace

int main(int argc, char **argv) {
  mpi::environment env(argc, argv);
  int const rounds = argc > 1 ? std::atoi(argv[1]) : 2000;
  int const repeats = argc > 2 ? std::atoi(argv[2]) : 7;
  double const idle = argc > 3 ? std::atof(argv[3]) : 5.0;
  if (env.size() != 2) {
    if (env.rank() == 0) {
      std::fprintf(stderr, "mpi_pingpong: run on 2 ranks (mpiexec -n 2)\n");
    }
    return 2;
  }
  int const rank = env.rank();
  bool ok = true;
  std::vector<double> plain;
  std::vector<double> spun;
  std::vector<double> lazy;
  std::vector<double> busy;
  {
    magpie::lazy_pool lazy_pool(1);
    magpie::busy_pool busy_pool(1);
    blocking(rank, rounds / 10, &ok); // warm-up: connections, the poller thread
    awaited(lazy_pool, rank, rounds / 10, &ok);
    for (int r = 0; r < repeats; ++r) { // interleaved, so that drift hits all alike
      plain.push_back(blocking(rank, rounds, &ok));
      mpi::set_spin_before_park(std::chrono::microseconds(5)); // the default
      spun.push_back(awaited(lazy_pool, rank, rounds, &ok));
      mpi::set_spin_before_park(std::chrono::nanoseconds(0));
      lazy.push_back(awaited(lazy_pool, rank, rounds, &ok));
      busy.push_back(awaited(busy_pool, rank, rounds, &ok));
    }
    mpi::set_spin_before_park(std::chrono::microseconds(5));
    if (rank == 0) {
      std::printf("round trip of one long (%d rounds, median of %d): blocking MPI_Send/Recv %.2f "
                  "us; awaited by a task: %.2f us (spin 5 us, lazy_pool), through the poller "
                  "(no spin) %.2f us on a lazy_pool, %.2f us on a busy_pool\n",
                  rounds, repeats, median(plain) * 1e6, median(spun) * 1e6, median(lazy) * 1e6,
                  median(busy) * 1e6);
    }
  }
  {
    magpie::lazy_pool pool(1);
    MPI_Barrier(MPI_COMM_WORLD);
    double const cpu = magpie::sync_wait(pool, idle_wait, idle, &ok);
    double cpus[2] = {};
    MPI_Gather(&cpu, 1, MPI_DOUBLE, cpus, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    mpi::poller_stats const st = mpi::poller_statistics();
    if (rank == 0) {
      std::printf("CPU while a task waits %.1f s on an unmatched receive: rank 0 %.3f s, rank 1 "
                  "%.3f s (%.2f %% of a core); poller scans so far on rank 0: %llu\n",
                  idle, cpus[0], cpus[1], 100.0 * (cpus[0] + cpus[1]) / (2 * idle),
                  static_cast<unsigned long long>(st.tests));
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    for (bool const any : {true, false}) {
      std::printf("%s over n pending receives:", any ? "MPI_Testany" : "MPI_Testsome");
      for (int const n : {1, 10, 100, 1000, 10000}) {
        double const ns = scan_ns(n, any);
        std::printf(" n=%d %.0f ns (%.1f ns/request)%s", n, ns, ns / n, n == 10000 ? "\n" : ";");
      }
    }
  }
  int mine = ok ? 0 : 1;
  int any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) {
    std::printf("check: %s\n", any == 0 ? "ok" : "FAILED");
  }
  return any;
}
