// sync_latency — how long a task waits to start, and its reader to see it finish, in ns:
//   spawn→start  from the submitting thread's clock read before the call to the task's first
//                clock read (steady_clock, comparable across cores);
//   finish→get   from the task's last clock read to the return of the reader's get()/join()/
//                wait() (or of sync_wait) on the submitting thread.
// Magpie on a one-worker lazy_pool that is idle (its worker asleep) and on a one-worker
// busy_pool (its worker spinning), against std::thread, std::async(launch::async) and oneTBB
// task_group::run (an arena of main + 1 worker; its wait() may run the task itself). One worker
// so that the submitter and the worker each have a core of this 2-core machine. One more magpie
// row spawns from a task: on a two-worker busy_pool, one root task makes all its round trips —
// it spawns, then spins until the child has started (so that it does not run the child itself),
// and the other worker, idle and spinning, steals the child from the spawner's local deque;
// finish→get is there the awaiting task's `co_await` of the finished future. Another row has the
// submitting thread wait in an event's queue (event::wait_blocking) until the task sets it. The
// first row is the machine's floor for every cross-core row: one cache line moving from one core
// to the other (two plain threads bouncing an atomic), which a start on another core needs at
// least twice (the job's line and the queue's). Each row: the median and the 90th percentile of
// `--reps` (default 2000) round trips, each checked.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "magpie/core/detail/pause.hpp"
#include "magpie/magpie.hpp"

#if MAGPIE_BENCH_HAVE_TBB
#  include <tbb/global_control.h>
#  include <tbb/task_arena.h>
#  include <tbb/task_group.h>
#endif

namespace {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct stamps {
  std::int64_t start = 0;
  std::int64_t end = 0;
};

struct row {
  std::string name;
  std::vector<std::int64_t> to_start, to_get;
  int bad = 0;
};

std::int64_t pct(std::vector<std::int64_t> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

template <typename Once, typename Before>
row measure(std::string name, int reps, Once once, Before before) {
  row r{std::move(name), {}, {}, 0};
  for (int i = -reps / 10; i < reps; ++i) { // the first tenth warms up
    before();                               // untimed
    stamps s;
    std::int64_t const t0 = now_ns();
    int const v = once(s, i);
    std::int64_t const t2 = now_ns();
    r.bad += v != i ? 1 : 0;
    if (i >= 0) {
      r.to_start.push_back(s.start - t0);
      r.to_get.push_back(t2 - s.end);
    }
  }
  return r;
}

magpie::task<int> stamped(stamps *s, int v) {
  // release: the spawning task of the last row polls `start` (acquire) while this runs.
  std::atomic_ref<std::int64_t>(s->start).store(now_ns(), std::memory_order_release);
  s->end = now_ns();
  co_return v;
}

/// For the event row: stamps, leaves `v` in `*out`, then sets `*ev` (which publishes both).
magpie::task<void> stamped_set(stamps *s, int v, int *out, magpie::event *ev) {
  s->start = now_ns();
  s->end = now_ns();
  *out = v;
  ev->set();
  co_return;
}

int stamped_plain(stamps *s, int v) {
  s->start = now_ns();
  s->end = now_ns();
  return v;
}

row magpie_row(char const *name, magpie::pool &pool, int reps) {
  if (pool.policy() == magpie::idle_policy::lazy) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50)); // let the worker fall asleep
  }
  return measure(
      name, reps, [&](stamps &s, int i) { return magpie::spawn(pool, stamped, &s, i).get(); },
      [&] {
        if (pool.policy() == magpie::idle_policy::lazy) {
          // Idle again: a lazy worker yields for a while, then sleeps (~1 ms covers both).
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
      });
}

/// All the round trips of the task row, inside one root task of `pool` (the steady state of a
/// task that spawns, not the start of a sync_wait): each spawns, spins until the child has
/// started on the other worker (so that it does not run the child itself), then awaits it.
magpie::task<void> spawn_from_task(magpie::pool *pool, row *r, int reps) {
  for (int i = -reps / 10; i < reps; ++i) { // the first tenth warms up
    stamps s;
    std::atomic_ref<std::int64_t> started(s.start);
    std::int64_t const t0 = now_ns();
    auto f = magpie::spawn(*pool, stamped, &s, i);
    while (started.load(std::memory_order_acquire) == 0) {
      magpie::core::detail::cpu_pause();
    }
    int const v = co_await f;
    std::int64_t const t2 = now_ns();
    r->bad += v != i ? 1 : 0;
    if (i >= 0) {
      r->to_start.push_back(s.start - t0);
      r->to_get.push_back(t2 - s.end);
    }
  }
}

/// The floor under every cross-core row: two plain threads bounce one atomic between them; each
/// sample is 64 round trips, divided into one-way trips (a cache line moving from one core to the
/// other). Both columns get the same sample. The check: every trip saw the value it waited for.
row line_transfer_row(int reps) {
  constexpr int trips = 64;
  row r{"floor: one cache line, one way (2 threads)", {}, {}, 0};
  alignas(64) std::atomic<std::int64_t> ball{0};
  std::int64_t const total = static_cast<std::int64_t>(reps + reps / 10) * trips * 2;
  // Waits for `want` with the library's spin (pauses, then yields), so that a run confined to one
  // core still ends (its figure is then a context switch, not a line transfer).
  auto await = [&ball](std::int64_t want) {
    for (unsigned spins = 0; ball.load(std::memory_order_acquire) != want;) {
      magpie::core::detail::spin_pause(spins);
    }
  };
  std::thread other([&] {
    for (std::int64_t v = 1; v < total; v += 2) { // odd values are ours to answer
      await(v);
      ball.store(v + 1, std::memory_order_release);
    }
  });
  std::int64_t v = 0;
  for (int i = -reps / 10; i < reps; ++i) { // the first tenth warms up
    std::int64_t const t0 = now_ns();
    for (int k = 0; k < trips; ++k) {
      ball.store(v + 1, std::memory_order_release);
      await(v + 2);
      v += 2;
    }
    std::int64_t const one_way = (now_ns() - t0) / (2 * trips);
    if (i >= 0) {
      r.to_start.push_back(one_way);
      r.to_get.push_back(one_way);
    }
  }
  other.join();
  r.bad += v == total ? 0 : 1;
  return r;
}

row task_row(char const *name, magpie::pool &pool, int reps) {
  row r{name, {}, {}, 0};
  magpie::sync_wait(pool, spawn_from_task, &pool, &r, reps);
  return r;
}

} // namespace

int main(int argc, char **argv) {
  int reps = 2000;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--reps") {
      reps = std::atoi(argv[i + 1]);
    }
  }
  std::vector<row> rows;
  rows.push_back(line_transfer_row(reps));
  {
    magpie::lazy_pool lazy(1);
    rows.push_back(magpie_row("magpie::spawn, idle lazy_pool(1)", lazy, reps));
  }
  {
    magpie::busy_pool busy(1);
    rows.push_back(magpie_row("magpie::spawn, busy_pool(1)", busy, reps));
    rows.push_back(measure(
        "magpie::sync_wait, busy_pool(1)", reps,
        [&](stamps &s, int i) { return magpie::sync_wait(busy, stamped, &s, i); }, [] {}));
  }
  {
    // A plain thread blocked in a primitive's queue (event::wait_blocking), released by the task
    // it spawned: finish->get is the task's last stamp before set() to wait_blocking's return.
    // The future is kept and dropped outside the timed part.
    magpie::busy_pool busy(1);
    magpie::event ev(magpie::event::reset::automatic);
    magpie::future<void> spawned; // empty (not valid()) between round trips
    rows.push_back(measure(
        "magpie::event::wait_blocking, busy_pool(1)", reps,
        [&](stamps &s, int i) {
          int out = -1;
          spawned = magpie::spawn(busy, stamped_set, &s, i, &out, &ev);
          ev.wait_blocking();
          return out;
        },
        [&] {
          if (spawned.valid()) {
            std::exchange(spawned, {}).get();
          }
        }));
    if (spawned.valid()) {
      spawned.get();
    }
  }
  {
    magpie::busy_pool busy(2);
    rows.push_back(task_row("magpie::spawn in a task, busy_pool(2)", busy, reps));
  }
  rows.push_back(measure(
      "std::thread", reps,
      [](stamps &s, int i) {
        int v = -1;
        std::thread t([&] { v = stamped_plain(&s, i); });
        t.join();
        return v;
      },
      [] {}));
  rows.push_back(measure(
      "std::async(launch::async)", reps,
      [](stamps &s, int i) { return std::async(std::launch::async, stamped_plain, &s, i).get(); },
      [] {}));
#if MAGPIE_BENCH_HAVE_TBB
  {
    tbb::global_control threads(tbb::global_control::max_allowed_parallelism, 2);
    tbb::task_arena arena(2);
    rows.push_back(arena.execute([&] {
      return measure(
          "tbb::task_group::run (arena of 2)", reps,
          [](stamps &s, int i) {
            int v = -1;
            tbb::task_group g;
            g.run([&] { v = stamped_plain(&s, i); });
            g.wait();
            return v;
          },
          [] {});
    }));
  }
#endif
  int bad = 0;
  std::printf("%-44s %14s %14s %14s %14s\n", "latency, ns (median / p90)", "spawn->start", "p90",
              "finish->get", "p90");
  for (auto const &r : rows) {
    std::printf("%-44s %14lld %14lld %14lld %14lld%s\n", r.name.c_str(),
                static_cast<long long>(pct(r.to_start, 0.5)),
                static_cast<long long>(pct(r.to_start, 0.9)),
                static_cast<long long>(pct(r.to_get, 0.5)),
                static_cast<long long>(pct(r.to_get, 0.9)), r.bad != 0 ? "  WRONG ANSWERS" : "");
    bad += r.bad;
  }
  std::printf("(%d round trips per row after %d warm-up; answers %s)\n", reps, reps / 10,
              bad == 0 ? "checked: all correct" : "WRONG");
  return bad == 0 ? 0 : 1;
}
