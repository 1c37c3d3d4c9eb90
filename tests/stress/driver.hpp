#pragma once
// tests/stress/driver.hpp — runs batches of random programs on one scheduler and audits them.
//
// Used by the gtest (stress_test.cpp) and by the standalone soak executable (soak.cpp). A batch:
//   1. installs a stacklet_ledger (before the scheduler exists, so it sees every stacklet);
//   2. creates the scheduler; optionally arms random allocation failures;
//   3. for each seed: evaluates the serial projection (skipping programs that are too large), runs
//      the program, compares (program.hpp: check), and checks that no tracked value and no
//      exception object outlived the run, and that no lifetime error (double destruction, use
//      after destruction) happened;
//   4. destroys the scheduler and checks that every stacklet came back exactly once.

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/lifetime.hpp"
#include "common/steal_probe.hpp"
#include "magpie/magpie.hpp"

#include "common/watchdog.hpp"
#include "stress/program.hpp"

namespace magpie::stress {

enum class sched_kind { inline_, busy, lazy };

inline char const *name_of(sched_kind k) noexcept {
  switch (k) {
  case sched_kind::inline_:
    return "inline";
  case sched_kind::busy:
    return "busy";
  case sched_kind::lazy:
    return "lazy";
  }
  return "?";
}

struct batch_config {
  sched_kind kind = sched_kind::inline_;
  std::size_t workers = 1;
  std::uint64_t first_seed = 1;
  std::size_t max_programs = 100;
  std::size_t min_programs = 10;  ///< run at least this many even past the deadline
  double seconds = 1.0;           ///< stop starting programs after this long
  unsigned fault_per_million = 0; ///< stacklet allocation failure rate (0: none)
  std::uint64_t max_nodes = 4000; ///< skip programs that execute more nodes than this
  bool adapters = false;          ///< add via_adapter edges (program.hpp)
};

struct batch_result {
  std::size_t programs = 0; ///< programs run and checked
  std::size_t skipped = 0;  ///< seeds skipped as too large
  std::size_t threw = 0;    ///< programs whose outcome was an exception
  std::size_t injected = 0; ///< allocation failures injected
  std::size_t faulted = 0;  ///< programs that ended in an injected std::bad_alloc
  std::uint64_t tasks = 0;  ///< tasks (nodes) executed
  std::uint64_t leaves = 0;
  std::uint64_t resumes = 0;
  std::uint64_t guards = 0;   ///< own exceptions caught inside a scope with an array live
  std::uint64_t adapters = 0; ///< children reached through an adapter
  std::uint64_t refs = 0;     ///< children with reference parameters bound to parent locals
  std::uint64_t steals = 0;   ///< from pool.stats()
  bool steal_probe = false;   ///< P >= 2: the pool stole the probe's continuation (steal_probe.hpp)
  double seconds = 0;
  std::vector<std::string> failures; ///< one line each, with the seed to reproduce it
};

/// The shared watchdog (tests/common/watchdog.hpp): a hang fails loudly.
using watchdog = magpie::test::watchdog;

namespace detail {

/// One scheduler of a given kind.
struct any_scheduler {
  any_scheduler(sched_kind kind, std::size_t workers) {
    switch (kind) {
    case sched_kind::inline_:
      inline_sched = std::make_unique<magpie::inline_scheduler>();
      break;
    case sched_kind::busy:
      pool = std::make_unique<magpie::busy_pool>(workers);
      break;
    case sched_kind::lazy:
      pool = std::make_unique<magpie::lazy_pool>(workers);
      break;
    }
  }
  outcome run(program const &p) {
    return inline_sched ? stress::run(*inline_sched, nullptr, p)
                        : stress::run(*pool, pool.get(), p);
  }
  std::uint64_t steals() const {
    std::uint64_t n = 0;
    if (pool) {
      for (auto const &s : pool->stats()) {
        n += s.steals;
      }
    }
    return n;
  }

  std::unique_ptr<magpie::inline_scheduler> inline_sched;
  std::unique_ptr<magpie::pool> pool;
  std::size_t pool_programs = 0; ///< programs run before this scheduler was created
};

inline std::string where(batch_config const &c, std::uint64_t seed) {
  return std::string(name_of(c.kind)) + "/" + std::to_string(c.workers) + " seed " +
         std::to_string(seed) +
         (c.fault_per_million != 0 ? " (faults " + std::to_string(c.fault_per_million) + " ppm)"
                                   : "") +
         ": ";
}

} // namespace detail

inline batch_result run_batch(batch_config const &c) {
  using clock = std::chrono::steady_clock;
  batch_result r;
  auto const start = clock::now();
  auto const deadline =
      start + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(c.seconds));
  auto const stacklets_before = core::get_stack_stats().stacklets_live;
  long const errors_before = lifetime::errors();
  {
    lifetime::stacklet_ledger ledger;
    {
      auto sched = std::make_unique<detail::any_scheduler>(c.kind, c.workers);
      if (c.fault_per_million != 0) {
        ledger.fail_randomly(c.fault_per_million, 0, c.first_seed);
      }
      bool const with_resume = sched->pool != nullptr;
      for (std::uint64_t seed = c.first_seed; r.programs < c.max_programs; ++seed) {
        if (r.programs >= c.min_programs && clock::now() >= deadline) {
          break;
        }
        if (c.fault_per_million != 0 && r.programs != 0 && r.programs % 16 == 0 &&
            sched->pool_programs != r.programs) {
          // A warm stack rarely grows (its stacklets are cached): start over with cold ones so
          // that allocation failures keep coming. Faults are off while threads start and stop.
          ledger.disarm();
          r.steals += sched->steals();
          sched = std::make_unique<detail::any_scheduler>(c.kind, c.workers);
          sched->pool_programs = r.programs;
          ledger.fail_randomly(c.fault_per_million, 0, seed);
        }
        program p = make_program(seed, with_resume, c.adapters);
        if (c.fault_per_million != 0) {
          // An injected bad_alloc at a fork leaves the scope by an exception: the parent's locals
          // that ref_child's parameters refer to would die before the join (program.hpp).
          p.ref_pct = 0;
          if (!p.spine) {
            p.alloc_pct = std::max(p.alloc_pct, 40u);
            p.big_alloc_pct =
                std::max(p.big_alloc_pct, 15u); // grow stacks often: more allocations to fail
          }
        }
        expectation e;
        if (!evaluate(p, e, c.max_nodes)) {
          ++r.skipped;
          continue;
        }
        long const live_before = lifetime::live();
        std::size_t const injected_before = ledger.injected();
        outcome o = sched->run(p);
        bool const faults = ledger.injected() != injected_before;
        ++r.programs;
        r.tasks += o.nodes;
        r.leaves += o.leaves;
        r.resumes += o.resumes;
        r.guards += o.guards;
        r.adapters += o.adapters;
        r.refs += o.refs;
        r.threw += o.threw ? 1 : 0;
        r.faulted += o.threw_bad_alloc ? 1 : 0;
        if (std::string msg = check(e, o, faults); !msg.empty()) {
          r.failures.push_back(detail::where(c, seed) + msg);
        }
        if (lifetime::live() != live_before) {
          r.failures.push_back(
              detail::where(c, seed) + std::to_string(lifetime::live() - live_before) +
              " tracked values (arguments, return slots, frames) outlived the run");
        }
        if (tracked_error::live() != 0) {
          r.failures.push_back(detail::where(c, seed) + std::to_string(tracked_error::live()) +
                               " exception objects leaked");
        }
        if (lifetime::errors() != errors_before) {
          r.failures.push_back(detail::where(c, seed) + "lifetime error: " +
                               (lifetime::first_error() ? lifetime::first_error() : "?"));
        }
        if (r.failures.size() >= 5) {
          break;
        }
      }
      ledger.disarm();
      r.injected = ledger.injected();
      r.steals += sched->steals();
      if (sched->pool != nullptr && c.workers >= 2) { // the programs' steals depend on timing
        r.steal_probe = test::continuation_is_stolen(*sched->pool);
      }
      sched.reset(); // every stacklet must be back
    }
    if (ledger.live() != 0) {
      r.failures.push_back(detail::where(c, c.first_seed) + std::to_string(ledger.live()) +
                           " stacklets leaked after the scheduler was destroyed");
    }
    if (ledger.errors() != 0) {
      r.failures.push_back(detail::where(c, c.first_seed) + std::to_string(ledger.errors()) +
                           " stacklets freed twice or with a wrong size");
    }
  }
  if (core::get_stack_stats().stacklets_live != stacklets_before) {
    r.failures.push_back(detail::where(c, c.first_seed) +
                         "core::get_stack_stats().stacklets_live did not return to its baseline");
  }
  r.seconds = std::chrono::duration<double>(clock::now() - start).count();
  return r;
}

} // namespace magpie::stress
