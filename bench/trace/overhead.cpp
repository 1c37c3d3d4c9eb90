// trace_overhead — what a trace::session costs a running program, measured in one process:
// repetitions of fib(30) and of UTS T1 on the same pool alternate without a session, with one
// (session::timing::adaptive, the default) and with one that reads the clock at every event
// (timing::every_event), in a rotating order; the medians of each and of the per-round ratios to
// the plain repetition are printed. One process and alternation take out what varies between
// processes and over minutes on a shared machine (placement, frequency, neighbours).
//
// In the default build a session records strands only (roots, steals, resumptions ...): a few
// events per repetition. Configure with -DMAGPIE_OBSERVE_TASKS=ON to record every fork, call and
// task end — the case that costs (the targets: fib within 2×, UTS T1 within 5 %).
//
//   trace_overhead [--rounds N] [--workers P] [--uts TREE]   (defaults: 21 rounds, 1 worker, T1;
//                                                             T1-paper is BENCHMARKS.md's size)
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fib/magpie_task.hpp"
#include "magpie/magpie.hpp"
#include "uts/magpie_task.hpp"
#include "uts/problem.hpp"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  std::size_t const h = v.size() / 2;
  return v.size() % 2 != 0 ? v[h] : (v[h - 1] + v[h]) / 2;
}

enum mode : std::size_t { plain, adaptive, every_event, modes };
constexpr std::array<char const *, modes> mode_names{"no session", "session (adaptive)",
                                                     "session (every_event)"};

struct problem {
  char const *name;
  double tasks; // per repetition (for ns per task)
  bool (*run)(magpie::sched::pool &);
};

bool run_fib(magpie::sched::pool &pool) {
  return magpie::sync_wait(pool, fib_problem::magpie_fib, 30) == 832'040;
}

uts::tree const *uts_tree = nullptr; // --uts

bool run_uts(magpie::sched::pool &pool) {
  uts::node const root = uts::root(*uts_tree);
  return uts::check(magpie::sync_wait(pool, uts::magpie_visit, uts_tree, &root), *uts_tree).kind ==
         bench::verdict::ok;
}

} // namespace

int main(int argc, char **argv) {
  int rounds = 21;
  std::size_t workers = 1;
  std::string tree = "T1";
  for (int i = 1; i < argc; ++i) {
    std::string const a = argv[i];
    if (a == "--rounds" && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else if (a == "--workers" && i + 1 < argc) {
      workers = static_cast<std::size_t>(std::atol(argv[++i]));
    } else if (a == "--uts" && i + 1 < argc) {
      tree = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--rounds N] [--workers P] [--uts TREE]\n", argv[0]);
      return 2;
    }
  }
  if (rounds < 1 || workers < 1) {
    std::fprintf(stderr, "%s: --rounds and --workers must be at least 1\n", argv[0]);
    return 2;
  }
  uts_tree = &uts::find(tree); // exits with the known names if there is no such tree
  if (uts_tree->nodes == 0) {
    std::fprintf(stderr, "%s: UTS %s has no reference answer to check against\n", argv[0],
                 tree.c_str());
    return 2;
  }
  std::string const uts_name = "UTS " + tree;
  magpie::sched::lazy_pool pool(workers);
  std::printf("trace_overhead: %d rounds (+2 warm-up), %zu worker(s), per-task events %s\n", rounds,
              workers,
              magpie::core::observes_tasks ? "recorded (MAGPIE_OBSERVE_TASKS)"
                                           : "not recorded (strands only; default build)");
  std::array<problem, 2> const problems{
      {{"fib(30)", 2'692'537.0, run_fib},
       {uts_name.c_str(), static_cast<double>(uts_tree->nodes), run_uts}}};
  int status = 0;
  for (problem const &p : problems) {
    std::array<std::vector<double>, modes> seconds;
    std::array<std::vector<double>, modes> ratio;
    std::uint64_t events = 0;
    std::uint64_t reads = 0;
    for (int r = 0; r < rounds + 2; ++r) {
      std::array<double, modes> t{};
      for (std::size_t k = 0; k < modes; ++k) {
        auto const m = static_cast<mode>((k + static_cast<std::size_t>(r)) % modes); // rotate
        std::optional<magpie::trace::session> s;
        if (m != plain) {
          s.emplace(pool, magpie::trace::session::default_events_per_worker,
                    m == adaptive ? magpie::trace::session::timing::adaptive
                                  : magpie::trace::session::timing::every_event);
        }
        auto const t0 = std::chrono::steady_clock::now();
        bool const ok = p.run(pool);
        t[m] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (!ok) {
          std::fprintf(stderr, "%s: wrong answer\n", p.name);
          status = 1;
        }
        if (s) {
          s->stop();
          if (m == adaptive && r >= 2) {
            events += s->recorded();
            reads += s->clock_reads();
          }
        }
      }
      if (r < 2) {
        continue; // warm-up rounds
      }
      for (std::size_t m = 0; m < modes; ++m) {
        seconds[m].push_back(t[m]);
        ratio[m].push_back(t[m] / t[plain]);
      }
    }
    std::printf("\n%s (%.0f tasks; adaptive: %.1f events per repetition, %.1f %% read the clock)\n",
                p.name, p.tasks, static_cast<double>(events) / rounds,
                events != 0 ? 100.0 * static_cast<double>(reads) / static_cast<double>(events)
                            : 0.0);
    std::printf("  %-22s %12s %12s %24s\n", "", "median s", "ns per task", "vs no session (range)");
    for (std::size_t m = 0; m < modes; ++m) {
      auto const [lo, hi] = std::minmax_element(ratio[m].begin(), ratio[m].end());
      std::printf("  %-22s %12.4f %12.2f %10.3fx (%.2f-%.2f)\n", mode_names[m], median(seconds[m]),
                  1e9 * median(seconds[m]) / p.tasks, median(ratio[m]), *lo, *hi);
    }
  }
  return status;
}
