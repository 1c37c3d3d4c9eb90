// bench/mpi/pingpong — what awaiting MPI from a magpie task costs, on 2 ranks:
//   1. round-trip latency of a one-long ping-pong: plain blocking MPI_Send/MPI_Recv on the main
//      thread vs a task that co_awaits magpie::mpi::isend / irecv (median of the repeats): with
//      the default spin before parking (the reply is caught on the worker), and with no spin
//      (every wait goes through the poller and the pool's wake-up), on a lazy_pool (the idle
//      worker sleeps) and on a busy_pool (it keeps looking for work);
//   2. the CPU the process burns while a task waits on an unmatched receive (getrusage over
//      the wait), i.e. what the poller's back-off costs at rest;
//   3. the poller's cost per pending request: one scan of N unmatched receives, by MPI_Testany
//      (what the poller calls) and by MPI_Testsome;
//   4. the latency a busy rank adds to a request's completion: rank 0 pings (blocking, one ping
//      every 100 µs, so that rank 1's task has parked on its receive when the ping comes) and
//      rank 1's task answers; rank 1's one-worker lazy_pool is idle, or saturated with
//      fork–join work (two plain threads keep fib(load_n) roots queued on it). The task's
//      resumption waits until the worker's current root ends (a worker takes resumed tasks when it
//      returns to its queues, never in the middle of a fork–join tree); and the poller must run
//      to see the ping: where it shares a core with the busy worker, its yield between tests
//      waits out the worker's time slice (2 cores shared by the 2 ranks: about 3 ms). So the
//      busy round trip exceeds the idle one by up to a root's length plus, on a full machine,
//      a time slice. Printed with the mean root length (gaps between roots included: a small
//      load_n leaves the worker idle between roots, not saturated).
// Every answer is checked (the partner returns the value plus one; each root's fib against a
// serial one).
//
// The last line is `RESULT {json}`, with keys: "problem" ("mpi_pingpong"), "rounds", "repeats";
// round trips in µs (medians): "blocking_us", "awaited_spin_us", "poller_lazy_us",
// "poller_busy_pool_us"; "idle_seconds", "idle_cpu_seconds" ([rank 0, rank 1]);
// "testany_ns_per_request" and "testsome_ns_per_request" (objects keyed by the number of pending
// requests); the busy rank's figure: "busy_rank_rounds", "busy_rank_idle_us" and
// "busy_rank_busy_us" (median round trip against an idle and a saturated rank 1),
// "busy_rank_idle_p90_us", "busy_rank_busy_p90_us", "busy_rank_added_us" (busy − idle medians),
// "busy_rank_root_us" (mean length of one load root on rank 1), "busy_rank_load_n" (its fib's n);
// and "ok" (every answer right).
//
//   mpiexec -n 2 bench/bin/mpi_pingpong [rounds=2000] [repeats=7] [idle_seconds=5] [load_n=22]

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <sys/resource.h>

#include "fib/magpie_task.hpp"
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

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

/// Rank 0's side of the busy-rank figure: `rounds` blocking round trips, one every `gap`; appends
/// each round trip's seconds to *rtt.
void ping(int rounds, std::chrono::microseconds gap, std::vector<double> *rtt, bool *ok) {
  MPI_Barrier(MPI_COMM_WORLD);
  auto next = clk::now();
  for (long i = 0; i < rounds; ++i) {
    next += gap;
    while (clk::now() < next) { // spaced, so that the answering task has parked
    }
    long v = i;
    auto const t0 = clk::now();
    MPI_Send(&v, 1, MPI_LONG, 1, 5, MPI_COMM_WORLD);
    MPI_Recv(&v, 1, MPI_LONG, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    rtt->push_back(seconds_since(t0));
    *ok = *ok && v == i + 1;
    next = std::max(next, clk::now());
  }
}

/// Rank 1's answering task.
magpie::task<void> answer(int rounds) {
  for (long i = 0; i < rounds; ++i) {
    long const v = co_await mpi::irecv<long>(0, 5, MPI_COMM_WORLD);
    co_await mpi::isend(v + 1, 0, 5, MPI_COMM_WORLD);
  }
}

long serial_fib(int n) { return n < 2 ? n : serial_fib(n - 1) + serial_fib(n - 2); }

/// Rank 1's side: answers `rounds` pings on `pool`, idle or (`busy`) while two plain threads keep
/// fib(load_n) roots queued on it. Returns the mean seconds of one root (0 when idle).
double answer_pings(magpie::pool &pool, int rounds, int load_n, bool busy, bool *ok) {
  long const want = serial_fib(load_n);
  // Flags and counts only: the loaders' joins order everything read after them.
  std::atomic<bool> done{false};
  std::atomic<long> roots{0};
  std::atomic<bool> wrong{false};
  auto load = [&] {
    while (!done.load(std::memory_order_relaxed)) { // relaxed: a late stop costs one more root
      if (magpie::sync_wait(pool, fib_problem::magpie_fib, load_n) != want) {
        wrong.store(true, std::memory_order_relaxed);
      }
      roots.fetch_add(1, std::memory_order_relaxed);
    }
  };
  std::vector<std::thread> loaders;
  auto const t0 = clk::now();
  if (busy) {
    loaders.emplace_back(load);
    loaders.emplace_back(load);
    while (roots.load(std::memory_order_relaxed) < 4) { // the load runs before the first ping
      std::this_thread::yield();
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  magpie::sync_wait(pool, answer, rounds);
  done.store(true, std::memory_order_relaxed);
  for (auto &t : loaders) {
    t.join();
  }
  *ok = *ok && !wrong.load(std::memory_order_relaxed);
  return busy ? seconds_since(t0) / static_cast<double>(roots.load(std::memory_order_relaxed))
              : 0.0;
}

std::string json_per_request(std::vector<int> const &ns, std::vector<double> const &per) {
  std::string out = "{";
  for (std::size_t i = 0; i < ns.size(); ++i) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s\"%d\":%.3g", i == 0 ? "" : ",", ns[i], per[i]);
    out += buf;
  }
  return out + "}";
}

} // namespace

int main(int argc, char **argv) {
  mpi::environment env(argc, argv);
  int const rounds = argc > 1 ? std::atoi(argv[1]) : 2000;
  int const repeats = argc > 2 ? std::atoi(argv[2]) : 7;
  double const idle = argc > 3 ? std::atof(argv[3]) : 5.0;
  int const load_n = argc > 4 ? std::atoi(argv[4]) : 22;
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
  double cpus[2] = {};
  {
    magpie::lazy_pool pool(1);
    MPI_Barrier(MPI_COMM_WORLD);
    double const cpu = magpie::sync_wait(pool, idle_wait, idle, &ok);
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
  std::vector<int> const pending = {1, 10, 100, 1000, 10000};
  std::vector<double> per_any;
  std::vector<double> per_some;
  if (rank == 0) {
    for (bool const any : {true, false}) {
      std::printf("%s over n pending receives:", any ? "MPI_Testany" : "MPI_Testsome");
      for (int const n : pending) {
        double const ns = scan_ns(n, any);
        (any ? per_any : per_some).push_back(ns / n);
        std::printf(" n=%d %.0f ns (%.1f ns/request)%s", n, ns, ns / n, n == 10000 ? "\n" : ";");
      }
    }
  }
  // 4. What a busy rank adds: rounds/4 spaced pings per repeat, against rank 1 idle then busy.
  int const spaced = std::max(1, rounds / 4);
  auto const gap = std::chrono::microseconds(100);
  std::vector<double> rtt_idle;
  std::vector<double> rtt_busy;
  double root_s = 0;
  {
    magpie::pool_options po;
    po.workers = 1;
    po.callers_run_roots = false; // every root, the answering task's too, runs on the worker
    magpie::lazy_pool pool(po);
    for (int r = 0; r < repeats; ++r) {
      for (bool const loaded : {false, true}) {
        if (rank == 0) {
          ping(spaced, gap, loaded ? &rtt_busy : &rtt_idle, &ok);
        } else {
          double const s = answer_pings(pool, spaced, load_n, loaded, &ok);
          root_s += loaded ? s / repeats : 0.0;
        }
      }
    }
  }
  MPI_Bcast(&root_s, 1, MPI_DOUBLE, 1, MPI_COMM_WORLD);
  if (rank == 0) {
    std::printf("round trip to a rank whose task answers (%d pings %.0f us apart, %d repeats; "
                "rank 1 a one-worker lazy_pool): idle %.2f us (p90 %.2f), saturated with "
                "fork-join roots (fib(%d), %.0f us each) %.2f us (p90 %.2f): the busy rank adds "
                "%.2f us\n",
                spaced, static_cast<double>(gap.count()), repeats, median(rtt_idle) * 1e6,
                percentile(rtt_idle, 0.9) * 1e6, load_n, root_s * 1e6, median(rtt_busy) * 1e6,
                percentile(rtt_busy, 0.9) * 1e6, (median(rtt_busy) - median(rtt_idle)) * 1e6);
  }
  int mine = ok ? 0 : 1;
  int any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) {
    std::printf("check: %s\n", any == 0 ? "ok" : "FAILED");
    std::printf(
        "RESULT {\"problem\":\"mpi_pingpong\",\"rounds\":%d,\"repeats\":%d,\"blocking_us\":%.4g,"
        "\"awaited_spin_us\":%.4g,\"poller_lazy_us\":%.4g,\"poller_busy_pool_us\":%.4g,"
        "\"idle_seconds\":%.4g,\"idle_cpu_seconds\":[%.4g,%.4g],\"testany_ns_per_request\":%s,"
        "\"testsome_ns_per_request\":%s,\"busy_rank_rounds\":%d,\"busy_rank_idle_us\":%.4g,"
        "\"busy_rank_busy_us\":%.4g,\"busy_rank_idle_p90_us\":%.4g,\"busy_rank_busy_p90_us\":%.4g,"
        "\"busy_rank_added_us\":%.4g,\"busy_rank_root_us\":%.4g,\"busy_rank_load_n\":%d,\"ok\":%s}"
        "\n",
        rounds, repeats, median(plain) * 1e6, median(spun) * 1e6, median(lazy) * 1e6,
        median(busy) * 1e6, idle, cpus[0], cpus[1], json_per_request(pending, per_any).c_str(),
        json_per_request(pending, per_some).c_str(), spaced * repeats, median(rtt_idle) * 1e6,
        median(rtt_busy) * 1e6, percentile(rtt_idle, 0.9) * 1e6, percentile(rtt_busy, 0.9) * 1e6,
        (median(rtt_busy) - median(rtt_idle)) * 1e6, root_s * 1e6, load_n,
        any == 0 ? "true" : "false");
  }
  return any;
}
