// edges — magpie at the door: how fast each runtime is when entered from ordinary code. One
// process; the runtimes take turns in rounds (the order rotates each round), each limited to the
// same number of workers P, each built for its turn and destroyed after it. bench/README.md
// ("Entering the pool from ordinary code") describes the cases; problem.hpp the answers checked.
//
//   edges [--quick] [--rounds R] [--workers 1,2] [--runtimes serial,magpie-lazy,...]
//         [--only loops,reduce,roots,spawn,group,asleep,wake,find,idle] [--slot-ms MS]
//         [--wake-samples N] [--wake-idle S] [--idle-seconds S]
//
// Prints a table (median, p99 and minimum of the samples pooled over the rounds) and one
// `@@EDGES {json}` line per row; exits 1 if any answer was wrong. MAGPIE_EDGES_QUICK=1 in the
// environment is --quick.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "edges/problem.hpp"

namespace {

using edges::door;
using edges::now_ns;

struct config {
  int rounds = 7;
  std::vector<unsigned> workers{1, 2};
  std::vector<std::string> runtimes{"serial",      "magpie-lazy", "magpie-lazy-handoff",
                                    "magpie-busy", "tbb",         "omp"};
  std::vector<std::string> only; // empty: every case
  double slot_ms = 15;           // loops: timed calls per turn ≈ this long (serial estimate)
  int settle_ms = 5;             // between turns: a finished runtime's spinning threads stop
  int warm_calls = 1000;         // roots and spawns per turn, back to back
  int asleep_samples = 4;        // roots and spawns per turn on sleeping workers...
  int asleep_gap_ms = 50;        // ...each after this long idle
  int wake_samples = 20;         // wake-up: samples per runtime...
  double wake_idle_s = 1.0;      // ...each after this long idle
  int find_calls = 200;          // find_if calls per turn
  double idle_s = 5.0;           // idle CPU: the window measured
  bool quick = false;
};

[[noreturn]] void usage(char const *argv0, char const *why) {
  std::fprintf(
      stderr,
      "%s: %s\nusage: %s [--quick] [--rounds R] [--workers 1,2] [--runtimes "
      "serial,magpie-lazy,magpie-lazy-handoff,magpie-busy,magpie-busy-handoff,tbb,omp]\n"
      "  [--only "
      "loops,reduce,roots,spawn,group,asleep,wake,find,idle] [--slot-ms MS] [--wake-samples N]\n"
      "  [--wake-idle S] [--idle-seconds S]\n",
      argv0, why, argv0);
  std::exit(2);
}

std::vector<std::string> split(std::string const &s) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= s.size()) {
    std::size_t const comma = std::min(s.find(',', at), s.size());
    if (comma > at) {
      out.push_back(s.substr(at, comma - at));
    }
    at = comma + 1;
  }
  return out;
}

void make_quick(config &c) {
  c.quick = true;
  c.rounds = 3;
  c.slot_ms = 2;
  c.settle_ms = 2;
  c.warm_calls = 200;
  c.asleep_samples = 2;
  c.asleep_gap_ms = 20;
  c.wake_samples = 3;
  c.wake_idle_s = 0.2;
  c.find_calls = 50;
  c.idle_s = 0.5;
}

config parse(int argc, char **argv) {
  config c;
  if (char const *q = std::getenv("MAGPIE_EDGES_QUICK"); q != nullptr && *q != '\0' && *q != '0') {
    make_quick(c);
  }
  for (int i = 1; i < argc; ++i) {
    std::string_view const a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        usage(argv[0], "missing value after an option");
      }
      return argv[++i];
    };
    if (a == "--quick") {
      make_quick(c);
    } else if (a == "--rounds") {
      c.rounds = std::atoi(value().c_str());
    } else if (a == "--workers") {
      c.workers.clear();
      for (auto const &w : split(value())) {
        c.workers.push_back(static_cast<unsigned>(std::atoi(w.c_str())));
      }
    } else if (a == "--runtimes") {
      c.runtimes = split(value());
    } else if (a == "--only") {
      c.only = split(value());
    } else if (a == "--slot-ms") {
      c.slot_ms = std::atof(value().c_str());
    } else if (a == "--wake-samples") {
      c.wake_samples = std::atoi(value().c_str());
    } else if (a == "--wake-idle") {
      c.wake_idle_s = std::atof(value().c_str());
    } else if (a == "--idle-seconds") {
      c.idle_s = std::atof(value().c_str());
    } else if (a.starts_with("--benchmark_")) {
      // scripts/bench.py passes Google Benchmark's flags to every plain binary: ignored
    } else {
      usage(argv[0], "unknown option");
    }
  }
  bool const workers_ok =
      !c.workers.empty() && std::ranges::all_of(c.workers, [](unsigned w) { return w >= 1; });
  if (c.rounds < 1 || !workers_ok || c.slot_ms <= 0 || c.wake_samples < 1 || c.wake_idle_s < 0 ||
      c.idle_s < 0.1) {
    usage(argv[0], "bad option value");
  }
  for (auto const &rt : c.runtimes) {
    if (rt != "serial" && rt != "magpie-lazy" && rt != "magpie-busy" &&
        rt != "magpie-lazy-handoff" && rt != "magpie-busy-handoff" && rt != "tbb" && rt != "omp") {
      usage(argv[0], "unknown runtime");
    }
  }
  for (auto const &o : c.only) {
    if (o != "loops" && o != "reduce" && o != "roots" && o != "spawn" && o != "group" &&
        o != "asleep" && o != "wake" && o != "find" && o != "idle") {
      usage(argv[0], "unknown case in --only");
    }
  }
  return c;
}

bool built(std::string const &rt) {
#if !MAGPIE_BENCH_HAVE_TBB
  if (rt == "tbb") {
    return false;
  }
#endif
#if !MAGPIE_BENCH_HAVE_OMP
  if (rt == "omp") {
    return false;
  }
#endif
  return !rt.empty();
}

std::unique_ptr<door> open(std::string const &rt, unsigned workers) {
  if (rt.starts_with("magpie-")) {
    return edges::make_magpie_door(rt.starts_with("magpie-busy"), workers,
                                   !rt.ends_with("-handoff"));
  }
#if MAGPIE_BENCH_HAVE_TBB
  if (rt == "tbb") {
    return edges::make_tbb_door(workers);
  }
#endif
#if MAGPIE_BENCH_HAVE_OMP
  if (rt == "omp") {
    return edges::make_omp_door(workers);
  }
#endif
  return edges::make_serial_door();
}

/// One runtime at one worker count.
struct entrant {
  std::string runtime;
  unsigned workers;
};

/// One line of the table: the samples of one case × runtime × worker count, over every round.
struct row {
  std::string what;
  std::string unit;
  std::string runtime;
  unsigned workers;
  std::vector<double> samples;
  long checked = 0;
  long wrong = 0;
  bool has_answers = true;
};

class table {
public:
  row &at(std::string const &what, std::string const &unit, entrant const &e) {
    for (auto &r : m_rows) {
      if (r.what == what && r.runtime == e.runtime && r.workers == e.workers) {
        return r;
      }
    }
    return m_rows.emplace_back(row{what, unit, e.runtime, e.workers, {}, 0, 0, true});
  }
  std::deque<row> const &rows() const noexcept { return m_rows; }

private:
  std::deque<row> m_rows; // a deque: a new row leaves references to the others valid
};

void check(row &r, bool ok) {
  ++r.checked;
  r.wrong += ok ? 0 : 1;
}

void sleep_ms(double ms) {
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
}

double us_since(std::int64_t t0, std::int64_t t1) { return static_cast<double>(t1 - t0) / 1e3; }

class bench {
public:
  explicit bench(config c) : m_cfg(std::move(c)) {
    for (auto const &rt : m_cfg.runtimes) {
      if (!built(rt)) {
        std::printf(
            "MISSING: edges: the %s runtime was not built (%s not found when configuring)\n",
            rt.c_str(), rt == "tbb" ? "oneTBB" : "OpenMP");
        continue;
      }
      m_runtimes.push_back(rt);
    }
  }

  bool wants(char const *what) const {
    return m_cfg.only.empty() || std::ranges::find(m_cfg.only, what) != m_cfg.only.end();
  }

  /// Every runtime (the serial projection once, at one worker) or only those with tasks.
  std::vector<entrant> entrants(bool with_serial, bool with_busy = true) const {
    std::vector<entrant> out;
    for (auto const &rt : m_runtimes) {
      if (rt == "serial") {
        if (with_serial) {
          out.push_back({rt, 1});
        }
        continue;
      }
      if (rt.starts_with("magpie-busy") && !with_busy) {
        continue;
      }
      for (unsigned p : m_cfg.workers) {
        out.push_back({rt, p});
      }
    }
    return out;
  }

  /// `es` rotated by `by`: each runtime takes each place in the order in turn.
  static std::vector<entrant> rotated(std::vector<entrant> es, std::size_t by) {
    if (!es.empty()) {
      std::rotate(es.begin(), es.begin() + static_cast<std::ptrdiff_t>(by % es.size()), es.end());
    }
    return es;
  }

  // ---- 1. loops called repeatedly from main() ---------------------------------------------

  enum class loop_kind { for_each, reduce, transform_reduce };

  void loops(loop_kind kind, std::size_t n) {
    static constexpr std::size_t max_group = 24; // see problem.hpp: still distinct after 24
    char const *name = kind == loop_kind::for_each ? "for_each"
                       : kind == loop_kind::reduce ? "reduce"
                                                   : "transform_reduce";
    int const exponent = static_cast<int>(std::lround(std::log10(static_cast<double>(n))));
    std::string const what = std::string(name) + " 1e" + std::to_string(exponent);

    std::vector<double> start(n), v(n), w(n);
    for (std::size_t i = 0; i < n; ++i) {
      start[i] = 1e300 / static_cast<double>(1 + i % 1000);
      w[i] = static_cast<double>(i % 1024) / 1024.0; // multiples of 2^-10: every sum exact
    }
    double const ns_per_element = kind == loop_kind::reduce ? 0.7 : 3.0;
    auto calls = static_cast<std::size_t>(
        std::clamp(m_cfg.slot_ms * 1e6 / (ns_per_element * static_cast<double>(n)), 4.0, 1e5));
    std::size_t const group = std::min(max_group, calls);
    calls = (calls + group - 1) / group * group;
    std::size_t const warm = std::max<std::size_t>(2, calls / 5);

    // The answers, from the serial projection.
    auto serial = edges::make_serial_door();
    std::vector<double> ref = start;
    for (std::size_t k = 0; k < group; ++k) {
      serial->for_each(ref);
    }
    double const sum = serial->reduce(w);
    double const lifted_sum = serial->transform_reduce(w);

    for (int r = 0; r < m_cfg.rounds; ++r) {
      for (auto const &e : rotated(entrants(true), static_cast<std::size_t>(r))) {
        row &out = m_table.at(what, "us/call", e);
        auto d = open(e.runtime, e.workers);
        v = start;
        // A runtime much slower than the serial estimate stops early (after whole groups), so
        // that a turn never takes much more than 10 × --slot-ms.
        auto const cap_ns = static_cast<std::int64_t>(m_cfg.slot_ms * 1e7);
        std::int64_t const began = now_ns();
        for (std::size_t k = 0; k < warm && now_ns() - began < cap_ns / 4; ++k) {
          run_once(*d, kind, v, w);
        }
        v = start;
        std::int64_t const timed = now_ns();
        for (std::size_t k = 0; k < calls; ++k) {
          std::int64_t const t0 = now_ns();
          double const got = run_once(*d, kind, v, w);
          std::int64_t const t1 = now_ns();
          out.samples.push_back(us_since(t0, t1));
          if (kind == loop_kind::for_each) {
            if ((k + 1) % group == 0) {
              check(out, std::memcmp(v.data(), ref.data(), n * sizeof(double)) == 0);
              v = start;
            }
          } else if (kind == loop_kind::reduce) {
            check(out, got == sum);
          } else {
            check(out, std::abs(got - lifted_sum) <= 1e-12 * std::abs(lifted_sum));
          }
          if ((k + 1) % group == 0 && now_ns() - timed > cap_ns) {
            break;
          }
        }
        d.reset();
        sleep_ms(m_cfg.settle_ms);
      }
    }
  }

  static double run_once(door &d, loop_kind kind, std::vector<double> &v,
                         std::vector<double> const &w) {
    switch (kind) {
    case loop_kind::for_each:
      d.for_each(v);
      return 0;
    case loop_kind::reduce:
      return d.reduce(w);
    case loop_kind::transform_reduce:
      return d.transform_reduce(w);
    }
    return 0;
  }

  // ---- 2 and 3. roots and spawns from a plain thread --------------------------------------

  /// One root round trip.
  void root_sample(door &d, row &out, int i) {
    std::int64_t const t0 = now_ns();
    int const got = d.root(i);
    std::int64_t const t1 = now_ns();
    out.samples.push_back(us_since(t0, t1));
    check(out, got == i + 1);
  }

  /// One spawn: spawn->start into `start`, the task's last stamp->get's return into `get`.
  void spawn_sample(door &d, row &start, row *get, int i) {
    edges::stamps s;
    std::int64_t const t0 = now_ns();
    int const got = d.spawn_and_get(s, i);
    std::int64_t const t1 = now_ns();
    start.samples.push_back(us_since(t0, s.start));
    check(start, got == i && s.start >= t0 && s.end <= t1);
    if (get != nullptr) {
      get->samples.push_back(us_since(s.end, t1));
      check(*get, got == i);
    }
  }

  void warm_roots_and_spawns() {
    for (int r = 0; r < m_cfg.rounds; ++r) {
      for (auto const &e : rotated(entrants(false), static_cast<std::size_t>(r))) {
        auto d = open(e.runtime, e.workers);
        row &root = m_table.at("root round trip, warm", "us", e);
        row &start = m_table.at("spawn->start, warm", "us", e);
        row &get = m_table.at("finish->get, warm", "us", e);
        row scratch{"", "", "", 0, {}, 0, 0, true};
        for (int i = 0; i < m_cfg.warm_calls / 10; ++i) { // warm-up: checked, not kept
          root_sample(*d, scratch, i);
          spawn_sample(*d, scratch, &scratch, i);
        }
        for (int i = 0; i < m_cfg.warm_calls; ++i) {
          root_sample(*d, root, i);
        }
        for (int i = 0; i < m_cfg.warm_calls; ++i) {
          spawn_sample(*d, start, &get, i);
        }
        root.wrong += scratch.wrong;
        d.reset();
        sleep_ms(m_cfg.settle_ms);
      }
    }
  }

  /// Groups of 1,000 tasks started and waited for from this thread, back to back.
  void groups() {
    constexpr int n = 1000;
    std::int64_t const want = std::int64_t{n} * (n - 1) / 2;
    int const calls = std::max(20, m_cfg.warm_calls / 10);
    for (int r = 0; r < m_cfg.rounds; ++r) {
      for (auto const &e : rotated(entrants(false), static_cast<std::size_t>(r))) {
        auto d = open(e.runtime, e.workers);
        row &out = m_table.at("group of 1000 from main", "us/call", e);
        for (int i = 0; i < calls / 5; ++i) { // warm-up: checked, not kept
          check(out, d->group(n) == want);
        }
        for (int i = 0; i < calls; ++i) {
          std::int64_t const t0 = now_ns();
          std::int64_t const got = d->group(n);
          std::int64_t const t1 = now_ns();
          out.samples.push_back(us_since(t0, t1));
          check(out, got == want);
        }
        d.reset();
        sleep_ms(m_cfg.settle_ms);
      }
    }
  }

  /// Roots and spawns on runtimes whose workers have gone to sleep (a gap before each call).
  void asleep_roots_and_spawns() {
    std::string const gap = std::to_string(m_cfg.asleep_gap_ms) + " ms";
    for (unsigned p : m_cfg.workers) {
      for (int r = 0; r < m_cfg.rounds; ++r) {
        std::vector<entrant> es;
        std::vector<std::unique_ptr<door>> doors;
        for (auto const &e : entrants(false, false)) {
          if (e.workers == p) {
            es.push_back(e);
            doors.push_back(open(e.runtime, e.workers));
          }
        }
        for (auto const &e : es) { // the table's order: root, start, get
          m_table.at("root round trip, idle " + gap, "us", e);
          m_table.at("spawn->start, idle " + gap, "us", e);
          m_table.at("finish->get, idle " + gap, "us", e);
        }
        row scratch{"", "", "", 0, {}, 0, 0, true};
        for (auto &d : doors) {
          for (int i = 0; i < 20; ++i) {
            root_sample(*d, scratch, i);
            spawn_sample(*d, scratch, nullptr, i);
          }
        }
        for (int s = 0; s < m_cfg.asleep_samples; ++s) {
          for (std::size_t j = 0; j < es.size(); ++j) {
            std::size_t const k = (j + static_cast<std::size_t>(r + s)) % es.size();
            sleep_ms(m_cfg.asleep_gap_ms);
            root_sample(*doors[k], m_table.at("root round trip, idle " + gap, "us", es[k]), s);
            sleep_ms(m_cfg.asleep_gap_ms);
            spawn_sample(*doors[k], m_table.at("spawn->start, idle " + gap, "us", es[k]),
                         &m_table.at("finish->get, idle " + gap, "us", es[k]), s);
          }
        }
        if (!es.empty()) {
          m_table.at("root round trip, idle " + gap, "us", es.front()).wrong += scratch.wrong;
        }
      }
    }
  }

  // ---- 4. wake-up after a long idle ---------------------------------------------------------

  void wake_ups() {
    char label[64];
    std::snprintf(label, sizeof label, "spawn->start, idle %g s", m_cfg.wake_idle_s);
    for (unsigned p : m_cfg.workers) {
      std::vector<entrant> es;
      std::vector<std::unique_ptr<door>> doors;
      for (auto const &e : entrants(false, false)) {
        if (e.workers == p) {
          es.push_back(e);
          doors.push_back(open(e.runtime, e.workers));
        }
      }
      row scratch{"", "", "", 0, {}, 0, 0, true};
      for (auto &d : doors) {
        for (int i = 0; i < 20; ++i) {
          spawn_sample(*d, scratch, nullptr, i);
        }
      }
      for (int s = 0; s < m_cfg.wake_samples; ++s) {
        sleep_ms(m_cfg.wake_idle_s * 1e3);
        for (std::size_t j = 0; j < es.size(); ++j) {
          std::size_t const k = (j + static_cast<std::size_t>(s)) % es.size();
          if (j > 0) {
            sleep_ms(m_cfg.asleep_gap_ms); // each runtime idle ≥ wake_idle_s before its sample
          }
          spawn_sample(*doors[k], m_table.at(label, "us", es[k]), nullptr, s);
        }
      }
      if (!es.empty()) {
        m_table.at(label, "us", es.front()).wrong += scratch.wrong;
      }
    }
  }

  // ---- 5. find_if with an early match -------------------------------------------------------

  void find() {
    std::vector<std::int64_t> keys(edges::find_length);
    for (std::size_t i = 0; i < keys.size(); ++i) {
      keys[i] = static_cast<std::int64_t>(i);
    }
    keys[edges::find_match_at] = -1;
    for (int r = 0; r < m_cfg.rounds; ++r) {
      for (auto const &e : rotated(entrants(true), static_cast<std::size_t>(r))) {
        row &out = m_table.at("find_if 1e6, match at 10", "us/call", e);
        auto d = open(e.runtime, e.workers);
        for (int i = 0; i < 10; ++i) {
          check(out, d->find(keys) == edges::find_match_at);
        }
        for (int i = 0; i < m_cfg.find_calls; ++i) {
          std::int64_t const t0 = now_ns();
          std::size_t const at = d->find(keys);
          std::int64_t const t1 = now_ns();
          out.samples.push_back(us_since(t0, t1));
          check(out, at == edges::find_match_at);
        }
        d.reset();
        sleep_ms(m_cfg.settle_ms);
      }
    }
  }

  // ---- 6. idle CPU after work -----------------------------------------------------------------

  static double cpu_seconds() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  }

  void idle_cpu() {
    unsigned const p = *std::ranges::max_element(m_cfg.workers);
    char first[64], all[64];
    std::snprintf(first, sizeof first, "idle CPU, first 0.1 s after work");
    std::snprintf(all, sizeof all, "idle CPU, %g s after work", m_cfg.idle_s);
    std::vector<double> v(100'000, 2.0);
    for (auto const &rt : m_runtimes) {
      entrant const e{rt, rt == "serial" ? 1 : p};
      sleep_ms(200); // the previous runtime's threads settle
      auto d = open(e.runtime, e.workers);
      for (int i = 0; i < 100; ++i) {
        d->for_each(v);
      }
      double const c0 = cpu_seconds();
      sleep_ms(100);
      double const c1 = cpu_seconds();
      sleep_ms(m_cfg.idle_s * 1e3 - 100);
      double const c2 = cpu_seconds();
      d.reset();
      row &a = m_table.at(first, "CPU ms", e);
      row &b = m_table.at(all, "CPU ms", e);
      a.samples.push_back((c1 - c0) * 1e3);
      b.samples.push_back((c2 - c0) * 1e3);
      a.has_answers = b.has_answers = false;
    }
  }

  // ---- the report ----------------------------------------------------------------------------

  static std::string fmt(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, x < 10 ? "%.3f" : x < 1000 ? "%.1f" : "%.0f", x);
    return buf;
  }

  int report() const {
    long wrong = 0;
    std::printf("\n%-36s %-8s %-12s %2s %10s %10s %10s %8s  %s\n", "case", "unit", "runtime", "P",
                "median", "p99", "min", "samples", "answers");
    // Grouped by case, the cases in the order they ran, the runtimes as they were added.
    std::vector<row const *> order;
    for (auto const &r : m_table.rows()) {
      if (std::ranges::find(order, r.what, [](row const *o) { return o->what; }) == order.end()) {
        for (auto const &same : m_table.rows()) {
          if (same.what == r.what && !same.samples.empty()) {
            order.push_back(&same);
          }
        }
      }
    }
    std::string prev;
    for (row const *p : order) {
      row const &r = *p;
      if (!prev.empty() && r.what != prev) {
        std::printf("\n");
      }
      prev = r.what;
      std::string answers = "-";
      if (r.has_answers) {
        answers = r.wrong == 0
                      ? "ok (" + std::to_string(r.checked) + ")"
                      : "WRONG: " + std::to_string(r.wrong) + " of " + std::to_string(r.checked);
      }
      std::printf("%-36s %-8s %-12s %2u %10s %10s %10s %8zu  %s\n", r.what.c_str(), r.unit.c_str(),
                  r.runtime.c_str(), r.workers, fmt(edges::quantile(r.samples, 0.5)).c_str(),
                  fmt(edges::quantile(r.samples, 0.99)).c_str(),
                  fmt(*std::ranges::min_element(r.samples)).c_str(), r.samples.size(),
                  answers.c_str());
      wrong += r.wrong;
    }
    std::printf("\n");
    for (row const *p : order) {
      row const &r = *p;
      std::printf("@@EDGES {\"case\": \"%s\", \"unit\": \"%s\", \"runtime\": \"%s\", \"workers\": "
                  "%u, \"median\": %.6g, \"p99\": %.6g, \"min\": %.6g, \"samples\": %zu, "
                  "\"check\": \"%s\"}\n",
                  r.what.c_str(), r.unit.c_str(), r.runtime.c_str(), r.workers,
                  edges::quantile(r.samples, 0.5), edges::quantile(r.samples, 0.99),
                  *std::ranges::min_element(r.samples), r.samples.size(),
                  !r.has_answers ? "NONE"
                  : r.wrong == 0 ? "OK"
                                 : "FAIL");
    }
    std::printf("edges: answers %s\n", wrong == 0 ? "checked: all correct" : "WRONG");
    return wrong == 0 ? 0 : 1;
  }

  config const &cfg() const noexcept { return m_cfg; }
  std::vector<std::string> const &runtimes() const noexcept { return m_runtimes; }

private:
  config m_cfg;
  std::vector<std::string> m_runtimes; // requested and built
  table m_table;
};

} // namespace

int main(int argc, char **argv) {
  bench b(parse(argc, argv));
  config const &c = b.cfg();
  std::string rts, ws;
  for (auto const &rt : b.runtimes()) {
    rts += rts.empty() ? "" : ",";
    rts += rt;
  }
  for (unsigned w : c.workers) {
    ws += ws.empty() ? "" : ",";
    ws += std::to_string(w);
  }
  double load[1] = {0};
  getloadavg(load, 1);
  std::printf("edges: magpie entered from ordinary code; %s; runtimes %s; workers %s; %d rounds "
              "(order rotated each round); %u cores, load average %.2f\n",
              c.quick ? "QUICK run" : "full run", rts.c_str(), ws.c_str(), c.rounds,
              std::thread::hardware_concurrency(), load[0]);
#if MAGPIE_BENCH_HAVE_OMP
  std::printf("edges: omp = %s, default wait policy\n", edges::omp_library());
#endif
  std::fflush(stdout);
  auto t0 = std::chrono::steady_clock::now();
  auto phase = [&](char const *name) {
    double const s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "edges: %6.1f s: %s\n", s, name);
  };
  if (b.wants("loops")) {
    for (std::size_t n : {1'000, 10'000, 100'000, 1'000'000}) {
      phase("for_each");
      b.loops(bench::loop_kind::for_each, n);
    }
  }
  if (b.wants("reduce")) {
    for (std::size_t n : {1'000, 10'000, 100'000, 1'000'000}) {
      phase("reduce, transform_reduce");
      b.loops(bench::loop_kind::reduce, n);
      b.loops(bench::loop_kind::transform_reduce, n);
    }
  }
  if (b.wants("roots") || b.wants("spawn")) {
    phase("roots and spawns, warm");
    b.warm_roots_and_spawns();
  }
  if (b.wants("group")) {
    phase("groups from main");
    b.groups();
  }
  if (b.wants("asleep")) {
    phase("roots and spawns, asleep");
    b.asleep_roots_and_spawns();
  }
  if (b.wants("wake")) {
    phase("wake-ups");
    b.wake_ups();
  }
  if (b.wants("find")) {
    phase("find_if");
    b.find();
  }
  if (b.wants("idle")) {
    phase("idle CPU");
    b.idle_cpu();
  }
  phase("done");
  return b.report();
}
