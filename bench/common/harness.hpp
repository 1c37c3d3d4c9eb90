#pragma once
// bench/common/harness.hpp — what every benchmark binary shares: options, timing, checking and
// the one machine-readable result line.
//
// A binary runs ONE configuration (problem × size × runtime × workers) per process, so that the
// process's peak RSS belongs to that configuration alone. It runs `--warmup` untimed repetitions,
// then `--reps` timed ones, checks every answer and prints
//
//   @@RESULT {"problem": ..., "runtime": ..., "size": ..., "workers": ..., "times": [...],
//             "answer": ..., "check": "OK" | "FAIL" | "UNREF", ...}
//
// "UNREF" means the size has no reference answer (BENCHMARKS.md says "print it"): every rep
// agreed, and the runner compares the answer across runtimes. Exit status 1 on any FAIL.

#include <pthread.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bench {

/// Command-line options understood by every benchmark binary.
struct options {
  std::string size = "default";       ///< a size name known to the problem's problem.hpp
  unsigned workers = 1;               ///< worker threads (the serial projection ignores it)
  int reps = 5;                       ///< timed repetitions
  int warmup = 1;                     ///< untimed repetitions before them
  std::string pool = "lazy";          ///< magpie only: lazy | busy
  std::string placement = "unpinned"; ///< magpie only: unpinned | cores | pus | numa:N | cpus:A,B
  std::string victims = "uniform";    ///< magpie only: uniform | weighted
  bool star = false;                  ///< UTS only: magpie* (child results in stack_alloc arrays)
  double max_seconds = 0; ///< if > 0: fewer reps (never < 3) when the first rep predicts more
  std::string variant;    ///< a runtime's variant (zipf: omp static|dynamic|guided, ...)
  std::string trace;      ///< magpie only: write a Chrome/Perfetto trace of the run to this file
  bool trace_every_event = false; ///< magpie only, with --trace: read the clock at every event
  bool workspan = false;          ///< magpie only: analyse the first repetition's work and span
  double burden = -1; ///< magpie only, with --workspan: burden per fork in ns (<0: default)
  std::string clock = "steady"; ///< magpie only, with --workspan: steady | thread_cpu
};

/// An option that one binary adds to the common ones: its name ("--batch"), its usage text
/// ("[--batch NODES]") and what to do with its value.
struct extra_option {
  std::string_view name;
  std::string_view usage;
  std::function<void(char const *value)> set;
};

/// What parse_options accepts: every common option, or (a binary whose runtimes take only a few
/// of them, as the MPI ones) only --size, --workers, --reps and --warmup.
enum class option_set { all, basic };

[[noreturn]] inline void usage(char const *argv0, char const *why, option_set set = option_set::all,
                               std::span<extra_option const> extra = {}) {
  std::fprintf(stderr, "%s: %s\nusage: %s [--size NAME] [--workers P] [--reps R] [--warmup W]",
               argv0, why, argv0);
  if (set == option_set::all) {
    std::fprintf(stderr, " [--max-seconds S] [--pool lazy|busy] [--star] [--variant NAME] "
                         "[--placement P]\n  [--victims uniform|weighted] [--trace FILE.json "
                         "[--trace-timing adaptive|every_event]]\n  [--workspan [--burden NS] "
                         "[--clock steady|thread_cpu]]");
  }
  for (extra_option const &e : extra) {
    std::fprintf(stderr, " %.*s", static_cast<int>(e.usage.size()), e.usage.data());
  }
  std::fprintf(stderr, "\n");
  std::exit(2);
}

/// Parses the command line over the defaults `o`: the common options (all of them, or the basic
/// four), then the binary's `extra` ones. Anything else is an error (usage, exit status 2).
inline options parse_options(int argc, char **argv, options o = {},
                             option_set set = option_set::all,
                             std::span<extra_option const> extra = {}) {
  auto const fail = [&](char const *why) { usage(argv[0], why, set, extra); };
  for (int i = 1; i < argc; ++i) {
    std::string_view const a = argv[i];
    auto value = [&]() -> char const * {
      if (i + 1 >= argc) {
        fail("missing value after an option");
      }
      return argv[++i];
    };
    auto const added = std::find_if(extra.begin(), extra.end(),
                                    [&](extra_option const &e) { return e.name == a; });
    bool const basic = a == "--size" || a == "--workers" || a == "--reps" || a == "--warmup";
    if (added != extra.end()) {
      added->set(value());
    } else if (!basic && set == option_set::basic) {
      fail("unknown option");
    } else if (a == "--size") {
      o.size = value();
    } else if (a == "--workers") {
      o.workers = static_cast<unsigned>(std::atoi(value()));
    } else if (a == "--reps") {
      o.reps = std::atoi(value());
    } else if (a == "--warmup") {
      o.warmup = std::atoi(value());
    } else if (a == "--pool") {
      o.pool = value();
    } else if (a == "--placement") {
      o.placement = value();
    } else if (a == "--victims") {
      o.victims = value();
    } else if (a == "--max-seconds") {
      o.max_seconds = std::atof(value());
    } else if (a == "--variant") {
      o.variant = value();
    } else if (a == "--star") {
      o.star = true;
    } else if (a == "--trace") {
      o.trace = value();
    } else if (a == "--trace-timing") {
      std::string const timing = value();
      if (timing != "adaptive" && timing != "every_event") {
        fail("--trace-timing takes adaptive or every_event");
      }
      o.trace_every_event = timing == "every_event";
    } else if (a == "--workspan") {
      o.workspan = true;
    } else if (a == "--burden") {
      o.burden = std::atof(value());
    } else if (a == "--clock") {
      o.clock = value();
    } else {
      fail("unknown option");
    }
  }
  if (o.workers < 1 || o.reps < 1 || o.warmup < 0 || (o.pool != "lazy" && o.pool != "busy") ||
      (o.clock != "steady" && o.clock != "thread_cpu")) {
    fail("bad option value");
  }
  if (o.trace_every_event && o.trace.empty()) {
    fail("--trace-timing needs --trace FILE.json");
  }
  return o;
}

/// The outcome of checking one answer.
struct verdict {
  enum kind_t { ok, fail, unref } kind;
  std::string answer; ///< printable, and compared verbatim across runtimes by the runner
  std::string note;   ///< what was expected, on failure
};

inline verdict check_equal(long long got, long long want) {
  return {got == want ? verdict::ok : verdict::fail, std::to_string(got),
          got == want ? "" : "expected " + std::to_string(want)};
}

/// Extra key/value pairs (already JSON-encoded values) a binary adds to its result line.
using extras = std::vector<std::pair<std::string, std::string>>;

inline std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
    }
    out += c;
  }
  return out + "\"";
}

/// Runs `fn` on a thread with a large stack (the peers and the serial projections recurse on
/// the OS stack; UTS T3XXL is ~10^5 deep). Pages are touched only as used, so RSS is honest.
inline void run_on_big_stack(std::function<void()> fn, std::size_t bytes = std::size_t{1} << 30) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, bytes);
  pthread_t th;
  auto tramp = [](void *p) -> void * {
    (*static_cast<std::function<void()> *>(p))();
    return nullptr;
  };
  if (pthread_create(&th, &attr, tramp, &fn) != 0) {
    std::fprintf(stderr, "bench: cannot create the measuring thread\n");
    std::exit(3);
  }
  pthread_join(th, nullptr);
  pthread_attr_destroy(&attr);
}

/// This process's peak resident set (VmHWM of /proc/self/status), in KiB. Unlike ru_maxrss
/// (getrusage, or wait4 in the runner), it belongs to this program's own address space: ru_maxrss
/// survives exec and so includes the RSS of the process that forked us (the runner's Python).
inline long peak_rss_kib() {
  if (std::FILE *f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    long kib = -1;
    while (std::fgets(line, sizeof line, f) != nullptr) {
      if (std::strncmp(line, "VmHWM:", 6) == 0) {
        kib = std::strtol(line + 6, nullptr, 10);
        break;
      }
    }
    std::fclose(f);
    if (kib >= 0) {
      return kib;
    }
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

/// Times `reps` calls of `run` (after `warmup` untimed ones), checks each answer with `check`,
/// and prints the result line. Returns the process exit status.
template <typename Run, typename Check>
int measure(options const &o, std::string_view problem, std::string_view runtime, Run &&run,
            Check &&check, extras const &more = {}) {
  std::vector<double> times;
  std::vector<verdict> verdicts;
  int reps = o.reps;
  run_on_big_stack([&] {
    for (int r = 0; r < o.warmup + reps; ++r) {
      auto const t0 = std::chrono::steady_clock::now();
      auto answer = run();
      auto const t1 = std::chrono::steady_clock::now();
      verdicts.push_back(check(answer));
      double const seconds = std::chrono::duration<double>(t1 - t0).count();
      if (r >= o.warmup) {
        times.push_back(seconds);
      }
      if (r == 0 && o.max_seconds > 0 && seconds * reps > o.max_seconds) {
        // A slow configuration: keep the run's length bounded, but keep a median of ≥ 3.
        reps = std::max(std::min(3, reps), static_cast<int>(o.max_seconds / seconds));
      }
    }
  });

  bool failed = false;
  bool unref = false;
  std::string note;
  for (auto const &v : verdicts) {
    if (v.kind == verdict::fail || v.answer != verdicts.front().answer) {
      failed = true;
      note = v.kind == verdict::fail
                 ? v.note
                 : "repetitions disagree: " + v.answer + " vs " + verdicts.front().answer;
    }
    unref = unref || v.kind == verdict::unref;
  }
  char const *status = failed ? "FAIL" : unref ? "UNREF" : "OK";

  std::string line = "@@RESULT {";
  line += "\"problem\": " + json_string(problem);
  line += ", \"runtime\": " + json_string(runtime);
  line += ", \"size\": " + json_string(o.size);
  line += ", \"workers\": " + std::to_string(o.workers);
  if (runtime.substr(0, 6) == "magpie") { // the pool's placement and victim policy
    line += ", \"placement\": " + json_string(o.placement);
    line += ", \"victims\": " + json_string(o.victims);
  }
  line += ", \"reps\": " + std::to_string(times.size());
  line += ", \"times\": [";
  for (std::size_t i = 0; i < times.size(); ++i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%s%.9g", i == 0 ? "" : ", ", times[i]);
    line += buf;
  }
  line += "]";
  line += ", \"answer\": " + json_string(verdicts.front().answer);
  line += ", \"check\": " + json_string(status);
  if (!note.empty()) {
    line += ", \"note\": " + json_string(note);
  }
  line += ", \"vmhwm_kib\": " + std::to_string(peak_rss_kib());
  for (auto const &[k, v] : more) {
    line += ", " + json_string(k) + ": " + v;
  }
  line += "}";
  std::printf("%s\n", line.c_str());

  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  std::fprintf(stderr, "%.*s %.*s size=%s P=%u: median %.6f s, answer %s — %s%s%s\n",
               static_cast<int>(problem.size()), problem.data(), static_cast<int>(runtime.size()),
               runtime.data(), o.size.c_str(), o.workers, sorted[sorted.size() / 2],
               verdicts.front().answer.c_str(), status, note.empty() ? "" : ": ", note.c_str());
  return failed ? 1 : 0;
}

/// SplitMix64: the benchmarks' deterministic random numbers (BENCHMARKS.md).
inline std::uint64_t splitmix64(std::uint64_t &state) noexcept {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

[[noreturn]] inline void unknown_size(std::string_view problem, std::string const &size);

/// The entry of `sizes` (an array of structs with a `name`) called `name`; exits if none is.
template <typename Sizes>
auto const &find_named(Sizes const &sizes, std::string const &name, std::string_view problem) {
  for (auto const &z : sizes) {
    if (name == z.name) {
      return z;
    }
  }
  unknown_size(problem, name);
}

/// Exits with a message when a size name is unknown.
[[noreturn]] inline void unknown_size(std::string_view problem, std::string const &size) {
  std::fprintf(stderr, "%.*s: unknown size '%s'\n", static_cast<int>(problem.size()),
               problem.data(), size.c_str());
  std::exit(2);
}

} // namespace bench
