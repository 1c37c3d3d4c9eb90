#pragma once
// bench/sync/mutex_problem.hpp — magpie::mutex against std::mutex under contention, tasks >
// workers.
//
// `tasks` magpie tasks (leaves of a binary fork tree, so they spread over the workers) each run
// `sections / tasks` critical sections on one lock; a section increments a plain (non-atomic)
// counter after `work_in` units of spin work; between sections a task does `work_out` units.
// The answer is the counter, which must equal `sections` (a lost update would show). The size
// names say which lock: `magpie` (co_await m.scoped_lock(): a contended lock suspends the task
// and the worker runs another), `semaphore` (a magpie::semaphore of one permit, co_await
// s.acquire() / s.release(): the same protocol with a count), `shared` (a magpie::shared_mutex
// locked exclusively, co_await rw.scoped_lock()), `shared-read` (the same shared_mutex, each
// task's every fourth section exclusive and the others shared — a reader's increment is an
// atomic one, so readers still count), `shared-timed` (the shared_mutex locked exclusively with
// co_await rw.try_lock_for(10s), Linux: every wait arms a deadline that the hand-off claims; a
// lock that times out loses its section and fails the answer) or `std` (std::mutex: a contended
// lock blocks the worker thread).
// Time per critical section = median time / sections.

#include <cstdint>
#include <string>

#include "common/harness.hpp"

namespace mutex_problem {

inline constexpr char const *name = "mutex";

enum class lock_kind {
  magpie,
  magpie_timed,
  semaphore,
  shared,
  shared_timed,
  shared_read,
  std_mutex
};

struct size {
  char const *name;
  lock_kind kind;
  std::int64_t sections; ///< critical sections in all
  int tasks;             ///< tasks sharing the lock (> workers)
  int work_in;           ///< spin units inside a section
  int work_out;          ///< spin units between two sections of a task
};

inline constexpr size sizes[] = {
    {"magpie", lock_kind::magpie, 100'000, 50, 0, 0},
    {"std", lock_kind::std_mutex, 100'000, 50, 0, 0},
    {"semaphore", lock_kind::semaphore, 100'000, 50, 0, 0},
    {"shared", lock_kind::shared, 100'000, 50, 0, 0},
    {"shared-read", lock_kind::shared_read, 100'000, 50, 0, 0},
    {"shared-timed", lock_kind::shared_timed, 100'000, 50, 0, 0},
    {"magpie-timed", lock_kind::magpie_timed, 100'000, 50, 0, 0},
    {"magpie-spaced", lock_kind::magpie, 100'000, 50, 20, 200},
    {"magpie-timed-spaced", lock_kind::magpie_timed, 100'000, 50, 20, 200},
    {"semaphore-spaced", lock_kind::semaphore, 100'000, 50, 20, 200},
    {"shared-spaced", lock_kind::shared, 100'000, 50, 20, 200},
    {"shared-read-spaced", lock_kind::shared_read, 100'000, 50, 20, 200},
    {"shared-timed-spaced", lock_kind::shared_timed, 100'000, 50, 20, 200},
    {"std-spaced", lock_kind::std_mutex, 100'000, 50, 20, 200},
};

inline size const &find(std::string const &s) {
  for (auto const &z : sizes) {
    if (s == z.name) {
      return z;
    }
  }
  bench::unknown_size(name, s);
}

/// Sections per task (the total is rounded down to a multiple of `tasks`).
inline std::int64_t per_task(size const &z) { return z.sections / z.tasks; }

inline bench::verdict check(std::int64_t got, size const &z) {
  return bench::check_equal(got, per_task(z) * z.tasks);
}

/// Spin work the optimiser keeps (out of line, see tests/common/test_support.hpp's spin_work).
[[gnu::noinline]] inline std::uint64_t spin(int units) {
  std::uint64_t x = static_cast<std::uint64_t>(units);
  for (int i = 0; i < units; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    asm volatile("" : "+r"(x));
  }
  return x;
}

} // namespace mutex_problem
