// tests/stress/soak.cpp — runs random fork–join programs for as long as asked.
//
//   magpie_soak --soak SECONDS [--seed N] [--slice SECONDS] [--quiet] [--adapters]
//
// Cycles through every scheduler (inline; busy and lazy pools with 1…8 workers), running programs
// against their serial projection in slices (see driver.hpp for the checks); every third slice
// also injects stacklet allocation failures. --adapters adds children reached through plain
// adapter functions (program.hpp: via_adapter). Reports the programs, tasks and
// steals executed, and exits non-zero at the first failure (printing the seed that reproduces it).

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "stress/driver.hpp"

namespace {

void usage() {
  std::fprintf(stderr, "usage: magpie_soak --soak SECONDS [--seed N] [--slice SECONDS] [--quiet] "
                       "[--adapters]\n");
}

} // namespace

int main(int argc, char **argv) {
  using namespace magpie::stress;
  double total = -1;
  double slice = 1.0;
  std::uint64_t seed =
      static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) %
      1000000000;
  bool quiet = false;
  bool adapters = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--soak") == 0 && i + 1 < argc) {
      total = std::atof(argv[++i]);
    } else if (std::strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (std::strcmp(argv[i], "--slice") == 0 && i + 1 < argc) {
      slice = std::atof(argv[++i]);
    } else if (std::strcmp(argv[i], "--quiet") == 0) {
      quiet = true;
    } else if (std::strcmp(argv[i], "--adapters") == 0) {
      adapters = true;
    } else {
      usage();
      return 2;
    }
  }
  if (total < 0) {
    usage();
    return 2;
  }

  std::vector<std::pair<sched_kind, std::size_t>> configs{{sched_kind::inline_, 1}};
  for (sched_kind k : {sched_kind::busy, sched_kind::lazy}) {
    for (std::size_t n = 1; n <= 8; ++n) {
      configs.emplace_back(k, n);
    }
  }

  std::printf("magpie soak: %.0f s, first seed %llu\n", total,
              static_cast<unsigned long long>(seed));
  auto const start = std::chrono::steady_clock::now();
  std::size_t programs = 0, skipped = 0, threw = 0, faulted = 0, injected = 0, slices = 0;
  std::uint64_t tasks = 0, steals = 0, resumes = 0;
  for (std::size_t round = 0;; ++round) {
    double const elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (elapsed >= total && round > 0) {
      break;
    }
    auto const [kind, workers] = configs[round % configs.size()];
    batch_config c;
    c.kind = kind;
    c.workers = workers;
    c.first_seed = seed;
    c.seconds = std::max(0.05, std::min(slice, total - elapsed));
    c.max_programs = 1000000;
    c.min_programs = 1;
    c.fault_per_million = (round / configs.size()) % 3 == 2 ? 150000 : 0;
    c.adapters = adapters;
    batch_result r;
    {
      watchdog dog(std::string("soak slice ") + name_of(kind) + "/" + std::to_string(workers),
                   std::chrono::seconds(static_cast<long>(c.seconds) + 240));
      r = run_batch(c);
    }
    ++slices;
    programs += r.programs;
    skipped += r.skipped;
    threw += r.threw;
    faulted += r.faulted;
    injected += r.injected;
    tasks += r.tasks;
    steals += r.steals;
    resumes += r.resumes;
    seed += r.programs + r.skipped;
    if (!quiet) {
      std::printf("  %-6s %zu workers%s: %6zu programs %10llu tasks %8llu steals\n", name_of(kind),
                  workers, c.fault_per_million != 0 ? " +faults" : "        ", r.programs,
                  static_cast<unsigned long long>(r.tasks),
                  static_cast<unsigned long long>(r.steals));
      std::fflush(stdout);
    }
    if (!r.failures.empty()) {
      for (auto const &f : r.failures) {
        std::printf("FAILED %s\n", f.c_str());
      }
      return 1;
    }
  }
  double const elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "magpie soak: %zu programs (%zu threw, %zu ended in an injected bad_alloc; %zu skipped "
      "as too large), %llu tasks, %llu steals, %llu resume_on, %zu allocation failures "
      "injected, %zu slices in %.1f s: all matched their serial projection\n",
      programs, threw, faulted, skipped, static_cast<unsigned long long>(tasks),
      static_cast<unsigned long long>(steals), static_cast<unsigned long long>(resumes), injected,
      slices, elapsed);
  return 0;
}
