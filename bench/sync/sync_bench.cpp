// bench/sync/sync_bench.cpp — costs of tasks that wait, with checked answers:
//
//   channel     ns per element through a magpie::channel<long>: 2 producer and 2 consumer tasks
//               on a 2-worker pool (both workers send and receive), sum of what was received
//               checked against the sum sent.
//   channel_timed  the same with every send a `send_for(std::move(v), 10s)` and every receive a
//               `receive_for(10s)` (Linux): a send or receive that waits arms a deadline, and the
//               pump that serves it claims it; a timeout fails the check.
//   event_rt    a suspend→resume round trip through auto-reset events on ONE worker: two tasks
//               ping-pong (each waits on its event, then sets the other's); one round trip = one
//               task suspended on wait() and resumed by the other's set(). Rounds counted and
//               checked.
//   event_timed_rt  the same ping-pong with `co_await wait_for(10s)` (Linux): every wait arms a
//               deadline in the reactor and the set() that releases it claims it, the resumed
//               task cancels it; a wait that times out fails the check.
//   cv_rt       the same ping-pong between two std::threads with a std::mutex and a
//               std::condition_variable (one hand-off = one round trip).
//   magpie_cv_rt  the same ping-pong between two tasks on ONE worker with a magpie::mutex and a
//               magpie::condition_variable (`co_await cv.wait(g, pred)`); turns counted and
//               checked.
//   magpie_cv_timed_rt  the same with `co_await cv.wait_for(g, 10s, pred)` (Linux): every wait
//               arms a deadline that the notify claims; a wait that times out fails the check.
//   future_rt   one task on ONE worker spawns a child and reads its future with `co_await f`,
//               one child at a time: the child has not started, so the reader runs it at once
//               (helping, no suspension). Values checked.
//   future_timed_rt  the same, but the reader first waits with `co_await f.await_for(10s)`
//               (Linux), which never helps: it arms a deadline and suspends, the worker runs the
//               child from its queue, the child's completion wakes the reader, which cancels
//               the timer and reads. A timeout fails the check.
//
// Prints one line per benchmark: name, median ns, min, max over --reps runs (default 7), and
// "check OK" (exit status 1 if any check fails). Usage: sync_bench [--reps N] [--quick]
// [--only channel|channel_timed|event|event_timed|cv|magpie_cv|magpie_cv_timed|future|
// future_timed] (one kind only, e.g. under perf)

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "magpie/magpie.hpp"

namespace {

using clock_type = std::chrono::steady_clock;
bool g_ok = true;

struct series {
  std::vector<double> ns;
  void report(char const *name, char const *unit) {
    std::sort(ns.begin(), ns.end());
    std::printf("%-10s median %8.1f %s   min %8.1f   max %8.1f   (%zu runs)   check %s\n", name,
                ns[ns.size() / 2], unit, ns.front(), ns.back(), ns.size(), g_ok ? "OK" : "FAIL");
    std::fflush(stdout);
  }
};

// ---------------------------------------------------------------------------------------------
// channel throughput

/// Sends [from, from + count): plainly, or (Timed) with a deadline that must not pass.
template <bool Timed>
magpie::task<long> producer(magpie::channel<long> *ch, long from, long count) {
  for (long v = from; v < from + count; ++v) {
#if defined(__linux__)
    if constexpr (Timed) {
      long value = v;
      magpie::send_status const s =
          co_await ch->send_for(std::move(value), std::chrono::seconds(10));
      if (s != magpie::send_status::sent) {
        co_return -1; // timed out, or closed early
      }
      continue;
    }
#endif
    bool const sent = co_await ch->send(v);
    if (!sent) {
      co_return -1;
    }
  }
  co_return 0;
}

template <bool Timed>
magpie::task<long> consumer(magpie::channel<long> *ch, magpie::latch *consumers_left) {
  long sum = 0;
#if defined(__linux__)
  if constexpr (Timed) {
    for (;;) {
      magpie::receive_result<long> r = co_await ch->receive_for(std::chrono::seconds(10));
      if (r.status != magpie::receive_status::received) {
        sum += r.status == magpie::receive_status::closed ? 0 : -1'000'000'000'000L; // timed out
        break;
      }
      sum += *r.value;
    }
    consumers_left->count_down();
    co_return sum;
  }
#endif
  while (std::optional<long> v = co_await ch->receive()) {
    sum += *v;
  }
  consumers_left->count_down();
  co_return sum;
}

magpie::task<long> closer(magpie::channel<long> *ch, magpie::latch *producers_done) {
  co_await producers_done->wait();
  ch->close();
  co_return 0;
}

template <bool Timed>
magpie::task<long> finish_producer(magpie::channel<long> *ch, long from, long count,
                                   magpie::latch *producers_done) {
  long r = 0;
  co_await magpie::call(&r, producer<Timed>, ch, from, count);
  producers_done->count_down();
  co_return r;
}

template <bool Timed>
magpie::task<long> channel_run(magpie::channel<long> *ch, long per_producer) {
  magpie::latch producers_done(2);
  magpie::latch consumers_left(2);
  long r[5] = {};
  co_await magpie::fork(&r[0], consumer<Timed>, ch, &consumers_left);
  co_await magpie::fork(&r[1], consumer<Timed>, ch, &consumers_left);
  co_await magpie::fork(&r[2], finish_producer<Timed>, ch, 0L, per_producer, &producers_done);
  co_await magpie::fork(&r[3], finish_producer<Timed>, ch, per_producer, per_producer,
                        &producers_done);
  co_await magpie::call(&r[4], closer, ch, &producers_done);
  co_await magpie::join();
  if (std::getenv("SYNC_BENCH_DEBUG") != nullptr) {
    std::printf("parts %ld %ld %ld %ld %ld\n", r[0], r[1], r[2], r[3], r[4]);
  }
  co_return r[0] + r[1] + r[2] + r[3] + r[4];
}

void bench_channel(int reps, long per_producer, std::size_t capacity, bool timed) {
  magpie::busy_pool pool(2);
  series s;
  long const n = 2 * per_producer;
  for (int rep = 0; rep <= reps; ++rep) { // rep 0: warm-up
    magpie::channel<long> ch(capacity);
    auto t0 = clock_type::now();
    long const sum = timed ? magpie::sync_wait(pool, channel_run<true>, &ch, per_producer)
                           : magpie::sync_wait(pool, channel_run<false>, &ch, per_producer);
    auto t1 = clock_type::now();
    if (sum != n * (n - 1) / 2) {
      std::printf("channel: wrong sum %ld (expected %ld)\n", sum, n * (n - 1) / 2);
      g_ok = false;
    }
    if (rep > 0) {
      s.ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() /
                     static_cast<double>(n));
    }
  }
  char name[32];
  std::snprintf(name, sizeof name, "%s%zu", timed ? "channel_timed" : "channel", capacity);
  s.report(name, "ns/element (2 producers + 2 consumers, 2 workers)");
}

// ---------------------------------------------------------------------------------------------
// suspend→resume round trip through events, one worker

/// Waits on `ev`: plainly (the event_rt row, as it always was), or with a deadline that must not
/// pass (Linux; a timeout counts as a round that did not pass).
template <bool Timed>
magpie::task<long> ping(magpie::event *mine, magpie::event *other, long rounds, bool first) {
  long n = 0;
  for (long i = 0; i < rounds; ++i) {
    if (first) {
      other->set();
    }
#if defined(__linux__)
    if constexpr (Timed) {
      bool const passed = co_await mine->wait_for(std::chrono::seconds(10));
      n += passed ? 1 : 0;
    } else
#endif
    {
      co_await mine->wait();
      ++n;
    }
    if (!first) {
      other->set();
    }
  }
  co_return n;
}

template <bool Timed>
magpie::task<long> ping_pong(long rounds) {
  magpie::event a(magpie::event::reset::automatic);
  magpie::event b(magpie::event::reset::automatic);
  long x = 0;
  long y = 0;
  co_await magpie::fork(&x, ping<Timed>, &b, &a, rounds, false);
  co_await magpie::call(&y, ping<Timed>, &a, &b, rounds, true);
  co_await magpie::join();
  co_return x + y;
}

/// Runs `game(pool, rounds)` (two players on one worker, `rounds` turns each; it returns the turns
/// taken, checked) reps + 1 times, the first a warm-up, and reports ns per turn.
template <typename Game>
void bench_two_players(char const *name, char const *unit, int reps, long rounds, Game game) {
  magpie::busy_pool pool(1);
  series s;
  for (int rep = 0; rep <= reps; ++rep) {
    auto t0 = clock_type::now();
    long const n = game(pool, rounds);
    auto t1 = clock_type::now();
    if (n != 2 * rounds) {
      std::printf("%s: %ld turns taken (expected %ld)\n", name, n, 2 * rounds);
      g_ok = false;
    }
    if (rep > 0) {
      s.ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() /
                     static_cast<double>(2 * rounds));
    }
  }
  s.report(name, unit);
}

void bench_event(int reps, long rounds, bool timed) {
  if (timed) {
    bench_two_players(
        "event_timed_rt", "ns per suspend->resume, wait_for (1 worker)", reps, rounds,
        [](auto &pool, long r) { return magpie::sync_wait(pool, ping_pong<true>, r); });
  } else {
    bench_two_players(
        "event_rt", "ns per suspend->resume (1 worker)", reps, rounds,
        [](auto &pool, long r) { return magpie::sync_wait(pool, ping_pong<false>, r); });
  }
}

void bench_cv(int reps, long rounds) {
  series s;
  for (int rep = 0; rep <= reps; ++rep) {
    std::mutex m;
    std::condition_variable cv;
    long turn = 0; // even: thread A's turn, odd: B's
    long done_a = 0;
    long done_b = 0;
    auto player = [&](long parity, long *done) {
      for (long i = 0; i < rounds; ++i) {
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return turn % 2 == parity; });
        ++turn;
        ++*done;
        cv.notify_one();
      }
    };
    auto t0 = clock_type::now();
    std::thread a(player, 0L, &done_a);
    std::thread b(player, 1L, &done_b);
    a.join();
    b.join();
    auto t1 = clock_type::now();
    if (done_a + done_b != 2 * rounds || turn != 2 * rounds) {
      std::printf("cv_rt: wrong count\n");
      g_ok = false;
    }
    if (rep > 0) {
      s.ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() /
                     static_cast<double>(2 * rounds));
    }
  }
  s.report("cv_rt", "ns per hand-off (std::thread + condition_variable)");
}

struct cv_game {
  magpie::mutex m;
  magpie::condition_variable cv;
  long turn = 0; // even: player 0's turn, odd: player 1's (guarded by m)
};

/// One player of the magpie cv ping-pong: waits for its parity, takes the turn, notifies.
template <bool Timed>
magpie::task<long> cv_player(cv_game *g, long parity, long rounds) {
  long done = 0;
  for (long i = 0; i < rounds; ++i) {
    auto lock = co_await g->m.scoped_lock();
    auto const mine = [g, parity] { return g->turn % 2 == parity; };
#if defined(__linux__)
    if constexpr (Timed) {
      bool const ok = co_await g->cv.wait_for(lock, std::chrono::seconds(10), mine);
      if (!ok) {
        co_return -1; // timed out: the check fails
      }
    } else
#endif
    {
      co_await g->cv.wait(lock, mine);
    }
    ++g->turn;
    ++done;
    g->cv.notify_one();
  }
  co_return done;
}

template <bool Timed>
magpie::task<long> cv_game_run(long rounds) {
  cv_game g;
  long a = 0;
  long b = 0;
  co_await magpie::fork(&a, cv_player<Timed>, &g, 1L, rounds);
  co_await magpie::call(&b, cv_player<Timed>, &g, 0L, rounds);
  co_await magpie::join();
  co_return a + b == 2 * rounds &&g.turn == 2 * rounds ? a + b : -1;
}

void bench_magpie_cv(int reps, long rounds, bool timed) {
  if (timed) {
    bench_two_players(
        "magpie_cv_timed_rt", "ns per hand-off, wait_for (2 tasks, 1 worker)", reps, rounds,
        [](auto &pool, long r) { return magpie::sync_wait(pool, cv_game_run<true>, r); });
  } else {
    bench_two_players(
        "magpie_cv_rt", "ns per hand-off (2 tasks, 1 worker)", reps, rounds,
        [](auto &pool, long r) { return magpie::sync_wait(pool, cv_game_run<false>, r); });
  }
}

// ---------------------------------------------------------------------------------------------
// spawn and read a future

magpie::task<long> echo(long v) { co_return v; }

/// One task spawns `2 * rounds` children on its own one-worker pool, one at a time, and reads
/// each future: `co_await f` runs the unstarted child at once (helping), while `await_for`
/// suspends the reader until the worker has run the child from its queue and it completes.
template <bool Timed>
magpie::task<long> spawn_and_read(magpie::pool *pool, long rounds) {
  long n = 0;
  for (long i = 0; i < 2 * rounds; ++i) {
    magpie::future<long> f = magpie::spawn(*pool, echo, i);
#if defined(__linux__)
    if constexpr (Timed) {
      std::future_status const st = co_await f.await_for(std::chrono::seconds(10));
      if (st != std::future_status::ready) {
        co_return -1; // timed out: the check fails
      }
    }
#endif
    long const v = co_await f;
    n += v == i ? 1 : 0;
  }
  co_return n;
}

void bench_future(int reps, long rounds, bool timed) {
  if (timed) {
    bench_two_players("future_timed_rt", "ns per spawn, await_for, read (1 worker)", reps, rounds,
                      [](magpie::pool &pool, long r) {
                        return magpie::sync_wait(pool, spawn_and_read<true>, &pool, r);
                      });
  } else {
    bench_two_players("future_rt", "ns per spawn and co_await, helped (1 worker)", reps, rounds,
                      [](magpie::pool &pool, long r) {
                        return magpie::sync_wait(pool, spawn_and_read<false>, &pool, r);
                      });
  }
}

} // namespace

int main(int argc, char **argv) {
  int reps = 7;
  bool quick = false;
  char const *only = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      only = argv[++i];
    } // other arguments (the runner's --benchmark_color) are ignored
  }
  long const scale = quick ? 10 : 1;
  auto const wanted = [&](char const *name) {
    return only == nullptr || std::strcmp(only, name) == 0;
  };
  if (wanted("channel")) {
    bench_channel(reps, 1'000'000 / scale, 1024, false);
    bench_channel(reps, 1'000'000 / scale, 64, false);
  }
#if defined(__linux__)
  if (wanted("channel_timed")) {
    bench_channel(reps, 1'000'000 / scale, 1024, true);
    bench_channel(reps, 1'000'000 / scale, 64, true);
  }
#endif
  if (wanted("event")) {
    bench_event(reps, 1'000'000 / scale, false);
  }
#if defined(__linux__)
  if (wanted("event_timed")) {
    bench_event(reps, 1'000'000 / scale, true);
  }
#endif
  if (wanted("cv")) {
    bench_cv(reps, 200'000 / scale);
  }
  if (wanted("magpie_cv")) {
    bench_magpie_cv(reps, 200'000 / scale, false);
  }
#if defined(__linux__)
  if (wanted("magpie_cv_timed")) {
    bench_magpie_cv(reps, 200'000 / scale, true);
  }
#endif
  if (wanted("future")) {
    bench_future(reps, 100'000 / scale, false);
  }
#if defined(__linux__)
  if (wanted("future_timed")) {
    bench_future(reps, 100'000 / scale, true);
  }
#endif
  std::printf(g_ok ? "all checks OK\n" : "ERROR OCCURRED: a check failed\n");
  return g_ok ? 0 : 1;
}
