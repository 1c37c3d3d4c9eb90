#pragma once
// bench/mpi/uts/driver.hpp — distributed UTS: the command line, the repetitions, the checked
// result line, and the rank loop of the versions whose runtime cannot wait on MPI (OpenMP,
// oneTBB). The algorithm and its termination argument: rank_state.hpp.
//
//   mpirun -np N mpi_uts_<version> --size NAME [--workers W] [--reps R] [--warmup K]
//          [--batch NODES] [--levels L] [--capacity NODES]
//
// Rank 0 prints one human-readable line per repetition, then exactly one final line
//   RESULT {"problem":"uts","size":…,"version":…,"ranks":…,"workers":…,"seconds":[…],
//           "seconds_median":…,"answer":nodes,"expected":nodes,"ok":bool,
//           "peak_rss_kb":[per rank],"steals":n}
// `seconds`: wall time of each timed repetition on rank 0, from one MPI_Barrier to the next;
// `steals`: non-empty steal replies, summed over ranks and timed repetitions; `peak_rss_kb`: each
// rank's peak resident set (VmHWM, which unlike ru_maxrss does not include the RSS of the process
// that forked it; ru_maxrss where /proc is missing). `ok` (and exit status 0): every repetition
// found the reference's nodes, leaves and depth.

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/harness.hpp"
#include "mpi/uts/rank_state.hpp"
#include "uts/problem.hpp"

namespace mpi_uts {

inline constexpr int tag_control = 101; ///< requests, tokens, DONE, QUIT: one `control`
inline constexpr int tag_reply = 102;   ///< a steal reply: 0 … max_share nodes

struct options {
  std::string size = "T1-d7";
  unsigned workers = 1;
  int reps = 3;
  int warmup = 0;
  params run;
};

/// The harness's basic options (--size, --workers, --reps, --warmup) and this driver's own.
inline options parse(int argc, char **argv) {
  options o;
  bench::extra_option const extra[] = {
      {"--batch", "[--batch NODES]",
       [&](char const *v) { o.run.batch_nodes = static_cast<std::size_t>(std::atol(v)); }},
      {"--levels", "[--levels L]", [&](char const *v) { o.run.batch_levels = std::atoi(v); }},
      {"--capacity", "[--capacity NODES]",
       [&](char const *v) { o.run.pool_capacity = static_cast<std::size_t>(std::atol(v)); }},
  };
  bench::options defaults;
  defaults.size = o.size;
  defaults.reps = o.reps;
  defaults.warmup = o.warmup;
  bench::options const common =
      bench::parse_options(argc, argv, defaults, bench::option_set::basic, extra);
  o.size = common.size;
  o.workers = common.workers;
  o.reps = common.reps;
  o.warmup = common.warmup;
  if (o.run.batch_nodes < 1 || o.run.batch_levels < 1 || o.run.pool_capacity < 1) {
    bench::usage(argv[0], "--batch, --levels and --capacity must be at least 1",
                 bench::option_set::basic, extra);
  }
  o.run.max_share = std::min(o.run.max_share, o.run.pool_capacity); // a reply always fits
  if (uts::find(o.size).nodes == 0) {
    bench::usage(argv[0],
                 "this size has no reference answer to check against (sizes: T1-d7, T1, T3L, "
                 "T3, T1L-paper, T3L-paper, ...: bench/uts/problem.hpp)",
                 bench::option_set::basic, extra);
  }
  return o;
}

/// Aborts the job on an MPI failure (the versions without magpie keep MPI_ERRORS_ARE_FATAL;
/// magpie's environment sets MPI_ERRORS_RETURN).
inline void check(int rc, char const *what) {
  if (rc != MPI_SUCCESS) {
    std::fprintf(stderr, "mpi_uts: %s failed (%d)\n", what, rc);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
}

/// Sends a control message (blocking, but small enough to go eagerly).
inline void send_control(control m, int to) {
  check(MPI_Send(&m, sizeof m, MPI_BYTE, to, tag_control, MPI_COMM_WORLD), "MPI_Send");
}

/// The rank loop of the OpenMP and oneTBB versions: one thread makes every MPI call, between
/// batches (MPI_THREAD_FUNNELED); `explore(batch)` explores a batch in parallel and returns its
/// count. Returns this rank's count.
template <typename Explore>
uts::result run_funneled(rank_state &s, Explore &&explore) {
  uts::result total;
  std::vector<uts::node> batch;
  std::vector<uts::node> share;
  std::vector<uts::node> reply(s.parameters().max_share);
  bool waiting = false; // a steal request is out
  int victim = 0;
  auto perform = [&](step const &st) {
    if (st.what == step::send) {
      send_control(st.msg, st.to);
    } else if (st.what == step::finish) {
      for (int r = 1; r < s.ranks(); ++r) {
        send_control({control::done, 0, 0, 0, 0}, r);
      }
      s.set_done();
    }
  };
  auto serve = [&] {
    for (;;) {
      int flag = 0;
      MPI_Status st;
      check(MPI_Iprobe(MPI_ANY_SOURCE, tag_control, MPI_COMM_WORLD, &flag, &st), "MPI_Iprobe");
      if (flag == 0) {
        break;
      }
      control m;
      check(MPI_Recv(&m, sizeof m, MPI_BYTE, st.MPI_SOURCE, tag_control, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE),
            "MPI_Recv");
      if (m.kind == control::request) {
        s.take_share(share);
        check(MPI_Send(share.data(), static_cast<int>(share.size() * sizeof(uts::node)), MPI_BYTE,
                       m.from, tag_reply, MPI_COMM_WORLD),
              "MPI_Send");
      } else if (m.kind == control::token) {
        perform(s.on_token(m));
      } else if (m.kind == control::done) {
        s.set_done();
      }
    }
    int flag = 0;
    MPI_Status st;
    if (waiting) {
      check(MPI_Iprobe(victim, tag_reply, MPI_COMM_WORLD, &flag, &st), "MPI_Iprobe");
    }
    if (flag != 0) {
      check(MPI_Recv(reply.data(), static_cast<int>(reply.size() * sizeof(uts::node)), MPI_BYTE,
                     victim, tag_reply, MPI_COMM_WORLD, &st),
            "MPI_Recv");
      int bytes = 0;
      MPI_Get_count(&st, MPI_BYTE, &bytes);
      s.receive(std::span(reply).first(static_cast<std::size_t>(bytes) / sizeof(uts::node)));
      waiting = false;
    }
  };
  for (;;) {
    serve();
    if (s.take_batch(batch)) {
      total.add(explore(std::span<uts::node const>(batch)));
      s.end_batch();
      continue;
    }
    perform(s.advance_token());
    if (waiting) {
      continue;
    }
    if (s.done()) {
      break;
    }
    victim = s.victim();
    send_control({control::request, s.rank(), 0, 0, 0}, victim);
    waiting = true;
  }
  // Every rank has its last reply once all are in the barrier; until then, answer requests.
  MPI_Request barrier;
  check(MPI_Ibarrier(MPI_COMM_WORLD, &barrier), "MPI_Ibarrier");
  for (int flag = 0; flag == 0;) {
    serve();
    check(MPI_Test(&barrier, &flag, MPI_STATUS_IGNORE), "MPI_Test");
  }
  return total;
}

/// Runs the warm-up and timed repetitions (`run_rep(state)` runs one on this rank and returns
/// its count), checks them on rank 0 and prints the result line. Returns the exit status (the
/// same on every rank).
template <typename RunRep>
int measure(options const &o, char const *version, RunRep &&run_rep) {
  int rank = 0;
  int ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  uts::tree const &t = uts::find(o.size);
  rank_state state(rank, ranks, o.run);
  std::vector<double> seconds;
  std::uint64_t steals = 0;
  std::uint64_t answer = 0; ///< the nodes of the first wrong timed repetition, else of the last
  bool ok = true;
  for (int r = 0; r < o.warmup + o.reps; ++r) {
    state.reset(t);
    check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    auto const t0 = std::chrono::steady_clock::now();
    uts::result const mine = run_rep(state);
    check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    double const secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::uint64_t const sums[3] = {mine.nodes, mine.leaves, state.steals()};
    std::uint64_t all[3] = {};
    std::uint64_t depth = 0;
    check(MPI_Reduce(sums, all, 3, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD), "MPI_Reduce");
    check(MPI_Reduce(&mine.depth, &depth, 1, MPI_UINT64_T, MPI_MAX, 0, MPI_COMM_WORLD),
          "MPI_Reduce");
    if (rank == 0) {
      bool const good = all[0] == t.nodes && all[1] == t.leaves && depth == t.depth;
      std::printf("%s %s ranks=%d workers=%u rep %d%s: %.6f s, nodes=%llu leaves=%llu depth=%llu "
                  "steals=%llu %s\n",
                  version, o.size.c_str(), ranks, o.workers, r, r < o.warmup ? " (warm-up)" : "",
                  secs, static_cast<unsigned long long>(all[0]),
                  static_cast<unsigned long long>(all[1]), static_cast<unsigned long long>(depth),
                  static_cast<unsigned long long>(all[2]), good ? "ok" : "WRONG");
      std::fflush(stdout);
      if (r >= o.warmup) {
        answer = ok ? all[0] : answer;
        ok = ok && good;
        seconds.push_back(secs);
        steals += all[2];
      }
    }
  }
  long const rss = bench::peak_rss_kib();
  std::vector<long> rss_all(static_cast<std::size_t>(ranks));
  check(MPI_Gather(&rss, 1, MPI_LONG, rss_all.data(), 1, MPI_LONG, 0, MPI_COMM_WORLD),
        "MPI_Gather");
  int status = ok ? 0 : 1;
  check(MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
  if (rank != 0) {
    return status;
  }
  std::vector<double> sorted = seconds;
  std::sort(sorted.begin(), sorted.end());
  std::string line = "RESULT {\"problem\":\"uts\",\"size\":" + bench::json_string(o.size) +
                     ",\"version\":\"" + version + "\",\"ranks\":" + std::to_string(ranks) +
                     ",\"workers\":" + std::to_string(o.workers) + ",\"seconds\":[";
  char buf[32];
  for (std::size_t i = 0; i < seconds.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s%.6f", i == 0 ? "" : ",", seconds[i]);
    line += buf;
  }
  std::snprintf(buf, sizeof buf, "%.6f", sorted[sorted.size() / 2]);
  line += std::string("],\"seconds_median\":") + buf;
  line += ",\"answer\":" + std::to_string(answer);
  line += ",\"expected\":" + std::to_string(t.nodes);
  line += std::string(",\"ok\":") + (ok ? "true" : "false") + ",\"peak_rss_kb\":[";
  for (std::size_t i = 0; i < rss_all.size(); ++i) {
    line += i == 0 ? "" : ",";
    line += std::to_string(rss_all[i]);
  }
  line += "],\"steals\":" + std::to_string(steals) + "}";
  std::printf("%s\n", line.c_str());
  return status;
}

} // namespace mpi_uts
