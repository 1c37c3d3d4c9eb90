#pragma once
// bench/common/magpie_runtime.hpp — a magpie pool (lazy or busy) chosen by --pool. With
// --trace FILE, a trace::session records the whole run (its rings keep the latest events, i.e.
// the last repetitions) and is written to FILE at exit, with the counters table on stderr.
// With --workspan (a MAGPIE_OBSERVE_TASKS build: cmake -DMAGPIE_OBSERVE_TASKS=ON), the first
// repetition (a warm-up by default) runs on a one-worker pool under a trace::work_span_probe: its
// work, span and predicted speedups go to stderr as a table and to stdout as `@@WORKSPAN {json}`.

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "common/harness.hpp"
#include "magpie/magpie.hpp"

namespace bench {

class magpie_runtime {
public:
  explicit magpie_runtime(options const &o)
      : m_name(std::string(o.star ? "magpie*-" : "magpie-") + o.pool) {
    magpie::pool_options po(magpie::placement::parse(o.placement)); // throws on a bad name
    po.workers = o.workers;
    po.victims = magpie::sched::parse_victim_policy(o.victims);
    // The root goes to the workers, so that P workers are all the threads that run it, as P
    // threads are for every peer (a caller running its root would make P + 1: bench/edges
    // measures that door).
    po.callers_run_roots = false;
    if (o.pool == "busy") {
      m_pool = std::make_unique<magpie::busy_pool>(po);
    } else {
      m_pool = std::make_unique<magpie::lazy_pool>(po);
    }
    if (o.placement != "unpinned") {
      std::fputs(m_pool->describe().c_str(), stderr); // where the workers run, for the log
    }
    if (!o.trace.empty()) {
      m_trace_file = o.trace;
      m_session = std::make_unique<magpie::trace::session>(
          *m_pool, magpie::trace::session::default_events_per_worker,
          o.trace_every_event ? magpie::trace::session::timing::every_event
                              : magpie::trace::session::timing::adaptive);
    }
    m_workspan = o.workspan;
    m_burden = o.burden;
    m_clock = o.clock == "thread_cpu" ? magpie::trace::work_span_clock::thread_cpu
                                      : magpie::trace::work_span_clock::steady;
  }
  magpie_runtime(magpie_runtime const &) = delete;
  magpie_runtime &operator=(magpie_runtime const &) = delete;
  ~magpie_runtime() {
    if (m_session) {
      m_session->stop(); // the counters below then include nothing the trace lacks
      std::fputs(magpie::trace::counters(*m_pool).to_table().c_str(), stderr);
      try {
        m_session->to_file(m_trace_file);
        std::fprintf(stderr, "trace: %s (%llu events, %llu read the clock, %llu not written)\n",
                     m_trace_file.c_str(), static_cast<unsigned long long>(m_session->recorded()),
                     static_cast<unsigned long long>(m_session->clock_reads()),
                     static_cast<unsigned long long>(m_session->dropped()));
      } catch (std::exception const &e) {
        std::fprintf(stderr, "trace: %s\n", e.what());
      }
      m_session.reset(); // before the pool
    }
  }

  std::string const &name() const noexcept { return m_name; }

  /// sync_wait on the pool (the first call with --workspan: on a one-worker pool, analysed).
  template <typename Fn, typename... Args>
  auto run(Fn &&fn, Args &&...args) {
    if (m_workspan) [[unlikely]] {
      m_workspan = false;
      return analysed(std::forward<Fn>(fn), std::forward<Args>(args)...);
    }
    return magpie::sync_wait(*m_pool, std::forward<Fn>(fn), std::forward<Args>(args)...);
  }

private:
  template <typename Fn, typename... Args>
  auto analysed(Fn &&fn, Args &&...args) {
    magpie::lazy_pool one(1);
    std::unique_ptr<magpie::trace::work_span_probe> probe;
    try {
      probe = std::make_unique<magpie::trace::work_span_probe>(
          one, magpie::trace::work_span_options{m_clock, m_burden});
    } catch (std::exception const &e) {
      std::fprintf(stderr, "--workspan: %s\n", e.what());
      std::exit(2);
    }
    auto report = [&] {
      magpie::trace::work_span const ws = probe->stop();
      std::fputs(ws.to_table().c_str(), stderr);
      std::printf("@@WORKSPAN %s\n", ws.to_json().c_str());
    };
    if constexpr (std::is_void_v<magpie::core::async_result_t<Fn, Args...>>) {
      magpie::sync_wait(one, std::forward<Fn>(fn), std::forward<Args>(args)...);
      report();
    } else {
      auto value = magpie::sync_wait(one, std::forward<Fn>(fn), std::forward<Args>(args)...);
      report();
      return value;
    }
  }

  std::string m_name;
  std::unique_ptr<magpie::pool> m_pool;
  std::string m_trace_file;
  std::unique_ptr<magpie::trace::session> m_session; // declared after m_pool: destroyed first
  bool m_workspan = false;                           // the next run() is analysed
  double m_burden = -1;                              // --burden
  magpie::trace::work_span_clock m_clock{};          // --clock
};

} // namespace bench
