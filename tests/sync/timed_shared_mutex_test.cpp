// magpie::shared_mutex's timed locks (try_lock_for / try_lock_until, try_lock_shared_for /
// try_lock_shared_until, and the plain-thread *_blocking_* forms; Linux), on every scheduler: a
// deadline that passes returns false, never early, and leaves the lock as it was; an unlock
// before it hands the lock over (true) and cancels the timer; a past deadline does not suspend;
// readers queued behind a writer that gives up are let in at once while readers hold the lock
// (bites a take-out that does not grant again); a waiter whose turn comes first gets the lock;
// the hunt (readers and writers, tasks and threads, timed and untimed locks with deadlines around
// a section's length: writers alone, readers never beside a writer, no timeout early, every
// section counted); the lock destroyed as deadlines expire, on either side (each wait ends once:
// false or abandoned_wait; ASan sees no use after free); misuse; the reactor's heaps empty after
// every test.

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

#include "common/test_support.hpp"
#include "magpie/io.hpp"
#include "sync/sync_support.hpp"
#include "sync/timed_support.hpp"

namespace {
/// The shared side of a shared_mutex, as a primitive of its own for timed_support's tests.
struct shared_side {
  magpie::shared_mutex m;
  std::size_t waiting() { return m.waiting(); }
};
} // namespace

// A closed shared_mutex is held exclusively: both sides' timed locks wait.
template <>
struct magpie::test::timed_ops<magpie::shared_mutex> {
  static std::unique_ptr<magpie::shared_mutex> make_closed() {
    auto m = std::make_unique<magpie::shared_mutex>();
    m->lock_blocking();
    return m;
  }
  static auto take(magpie::shared_mutex &m, std::chrono::microseconds d) {
    return m.try_lock_for(d);
  }
  static bool take_blocking(magpie::shared_mutex &m, std::chrono::microseconds d) {
    return m.try_lock_blocking_for(d);
  }
};
template <>
struct magpie::test::timed_ops<shared_side> {
  static std::unique_ptr<shared_side> make_closed() {
    auto s = std::make_unique<shared_side>();
    s->m.lock_blocking();
    return s;
  }
  static auto take(shared_side &s, std::chrono::microseconds d) {
    return s.m.try_lock_shared_for(d);
  }
  static bool take_blocking(shared_side &s, std::chrono::microseconds d) {
    return s.m.try_lock_shared_blocking_for(d);
  }
};

namespace {

using namespace magpie::test;
using namespace std::chrono_literals;
using magpie::shared_mutex;
using magpie::task;
using magpie::io::clock;

class shared_mutex_timed_test : public scheduler_test {
protected:
  ~shared_mutex_timed_test() override {
    EXPECT_EQ(pending_timers(), 0u) << "a deadline left armed";
  }
};

TEST_P(shared_mutex_timed_test, a_held_lock_times_out_never_early_and_stays_as_it_was) {
  shared_mutex m;
  m.lock_blocking(); // a writer holds it (ownership is not tied to a thread)
  auto body = [](shared_mutex *mx) -> task<int> {
    auto const start = clock::now();
    bool const w = co_await mx->try_lock_for(5ms);
    bool const on_time = clock::now() - start >= 5ms;
    auto const start2 = clock::now();
    bool const r = co_await mx->try_lock_shared_until(std::chrono::system_clock::now() + 3ms);
    bool const on_time2 = clock::now() - start2 >= 2ms; // system_clock → io::clock: not exact
    co_return !w && !r && on_time && on_time2 ? 1 : 0;
  };
  EXPECT_EQ(m_sched.run(body, &m), 1);
  EXPECT_FALSE(m.try_lock_shared()) << "the writer's hold was lost";
  EXPECT_EQ(m.waiting(), 0u);
  m.unlock();
  // Readers hold it: a shared timed lock passes at once, an exclusive one times out.
  ASSERT_TRUE(m.try_lock_shared());
  auto readers = [](shared_mutex *mx) -> task<int> {
    bool const r = co_await mx->try_lock_shared_for(60s);
    bool const w = co_await mx->try_lock_for(2ms);
    if (r) {
      mx->unlock_shared();
    }
    co_return r && !w ? 1 : 0;
  };
  EXPECT_EQ(m_sched.run(readers, &m), 1);
  m.unlock_shared();
  ASSERT_TRUE(m.try_lock()) << "left held";
  m.unlock();
}

TEST_P(shared_mutex_timed_test, an_unlock_before_the_deadline_hands_the_lock_over) {
  shared_mutex m;
  m.lock_blocking();
  side_thread unlocker([&] {
    ASSERT_TRUE(wait_until([&] { return m.waiting() == 2; }));
    m.unlock();
  });
  auto body = [](shared_mutex *mx) -> task<int> {
    int r[2] = {};
    co_await magpie::fork(
        &r[0],
        [](shared_mutex *x) -> task<int> {
          bool const locked = co_await x->try_lock_for(std::chrono::hours::max()); // saturates
          if (locked) {
            x->unlock();
          }
          co_return locked ? 1 : 0;
        },
        mx);
    co_await magpie::call(
        &r[1],
        [](shared_mutex *x) -> task<int> {
          bool const locked = co_await x->try_lock_shared_for(60s);
          if (locked) {
            x->unlock_shared();
          }
          co_return locked ? 1 : 0;
        },
        mx);
    co_await magpie::join();
    co_return r[0] + r[1];
  };
  EXPECT_EQ(m_sched.run(body, &m), 2);
  EXPECT_TRUE(m.try_lock());
  m.unlock();
  // The fixture checks that both deadlines were cancelled.
}

TEST_P(shared_mutex_timed_test, a_past_deadline_does_not_suspend) {
  shared_mutex m;
  auto body = [](shared_mutex *mx) -> task<int> {
    auto const start = clock::now();
    int score = 0;
    bool const free_w = co_await mx->try_lock_for(0s); // free: taken at once
    score += free_w ? 1 : 0;
    bool const held_r = co_await mx->try_lock_shared_for(-5ms);
    bool const held_w = co_await mx->try_lock_until(clock::now() - 1h);
    score += !held_r && !held_w ? 2 : 0;
    mx->unlock();
    bool const r = co_await mx->try_lock_shared_until(std::chrono::system_clock::now() - 1s);
    score += r ? 4 : 0;
    mx->unlock_shared();
    score += clock::now() - start < 1s ? 8 : 0;
    co_return score;
  };
  EXPECT_EQ(m_sched.run(body, &m), 15);
}

/// A reader that locks (untimed) and counts itself in, then leaves at once.
task<long> reader_in(int, shared_mutex *m, std::atomic<int> *in) {
  co_await m->lock_shared();
  in->fetch_add(1);
  m->unlock_shared();
  co_return 1;
}

TEST_P(shared_mutex_timed_test, readers_behind_a_writer_that_gives_up_are_let_in_at_once) {
  // A reader (this thread) holds the lock; a timed writer queues, and readers queue behind it (a
  // writer waiting keeps later readers out). When the writer's deadline passes, the readers
  // behind it must be let in beside the holder, not left waiting for it to leave.
  shared_mutex m;
  ASSERT_TRUE(m.try_lock_shared());
  std::atomic<int> in{0};
  std::atomic<int> writer_result{-1};
  int const readers = 3;
  {
    side_thread writer([&] {
      bool const locked = m.try_lock_blocking_for(20ms);
      writer_result = locked ? 1 : 0;
      if (locked) {
        m.unlock();
      }
    });
    side_thread holder([&] {
      // Until the readers are in (at most 10 s), then leave.
      EXPECT_TRUE(wait_until([&] { return in.load() == readers; }))
          << "readers were not let in when the writer ahead of them gave up";
      m.unlock_shared();
    });
    ASSERT_TRUE(wait_until([&] { return m.waiting() == 1; })); // the writer is queued
    EXPECT_EQ(m_sched.run(fork_n<decltype(&reader_in), shared_mutex *, std::atomic<int> *>, readers,
                          &reader_in, &m, &in),
              readers);
  }
  EXPECT_EQ(writer_result.load(), 0);
  EXPECT_TRUE(m.try_lock());
  m.unlock();
}

TEST_P(shared_mutex_timed_test, a_waiter_whose_turn_comes_first_gets_the_lock) {
  // Writer, reader, writer queued with long deadlines behind a holder: each gets its turn, in
  // order (a timed waiter keeps its place in the FIFO).
  shared_mutex m;
  m.lock_blocking();
  std::atomic<int> order{0};
  auto waiter = [](int i, shared_mutex *mx, std::atomic<int> *seq) -> task<long> {
    bool const exclusive = i != 1;
    bool const locked =
        exclusive ? co_await mx->try_lock_for(60s) : co_await mx->try_lock_shared_for(60s);
    long const turn = seq->fetch_add(1);
    if (locked) {
      if (exclusive) {
        mx->unlock();
      } else {
        mx->unlock_shared();
      }
    }
    co_return locked &&turn == i ? 1 : 0;
  };
  side_thread unlocker([&] {
    ASSERT_TRUE(wait_until([&] { return m.waiting() == 3; }));
    m.unlock();
  });
  // Children queue in fork order only on a serial scheduler; elsewhere they may race to queue.
  if (m_sched.serial()) {
    EXPECT_EQ(m_sched.run(fork_n<decltype(+waiter), shared_mutex *, std::atomic<int> *>, 3, +waiter,
                          &m, &order),
              3);
  } else {
    auto any_order = [](int i, shared_mutex *mx, std::atomic<int> *seq) -> task<long> {
      bool const locked =
          i != 1 ? co_await mx->try_lock_for(60s) : co_await mx->try_lock_shared_for(60s);
      seq->fetch_add(1);
      if (locked) {
        if (i != 1) {
          mx->unlock();
        } else {
          mx->unlock_shared();
        }
      }
      co_return locked ? 1 : 0;
    };
    EXPECT_EQ(m_sched.run(fork_n<decltype(+any_order), shared_mutex *, std::atomic<int> *>, 3,
                          +any_order, &m, &order),
              3);
  }
}

// ----- the hunt -----

/// [[gnu::noinline]]: burns a few µs inside a section (not optimised away in a coroutine).
[[gnu::noinline]] void section_work(int i) {
  std::uint64_t const n = 200 + static_cast<std::uint64_t>(i % 7) * 100;
  (void)spin_work(n);
}

struct hunt_state {
  shared_mutex m;
  std::atomic<int> readers_in{0};
  std::atomic<int> writers_in{0};
  std::atomic<int> bad{0};   // a writer beside anyone, a reader beside a writer
  std::atomic<int> early{0}; // a timeout before its deadline
  std::atomic<long> sections{0};
  std::atomic<int> timeouts{0};
};

/// Enters one section as a reader or a writer, checking who else is in.
void enter(hunt_state *h, bool exclusive, int i) {
  if (exclusive) {
    if (h->writers_in.fetch_add(1) != 0 || h->readers_in.load() != 0) {
      h->bad.fetch_add(1);
    }
    section_work(i);
    h->writers_in.fetch_sub(1);
  } else {
    h->readers_in.fetch_add(1);
    if (h->writers_in.load() != 0) {
      h->bad.fetch_add(1);
    }
    section_work(i);
    h->readers_in.fetch_sub(1);
  }
  h->sections.fetch_add(1);
}

task<long> hunt_task(int i, hunt_state *h, int rounds) {
  for (int k = 0; k < rounds; ++k) {
    bool const exclusive = (i + k) % 3 == 0;
    bool const timed = (i * 5 + k) % 4 != 0;
    if (!timed) {
      if (exclusive) {
        co_await h->m.lock();
      } else {
        co_await h->m.lock_shared();
      }
    } else {
      auto const d = spread(i * 7919 + k, 0, 60);
      auto const start = clock::now();
      bool const locked =
          exclusive ? co_await h->m.try_lock_for(d) : co_await h->m.try_lock_shared_for(d);
      if (!locked) {
        if (clock::now() - start < d) {
          h->early.fetch_add(1);
        }
        h->timeouts.fetch_add(1);
        continue;
      }
    }
    enter(h, exclusive, i + k);
    if (exclusive) {
      h->m.unlock();
    } else {
      h->m.unlock_shared();
    }
  }
  co_return 1;
}

TEST_P(shared_mutex_timed_test, readers_and_writers_racing_deadlines_keep_the_lock_exclusive) {
  int const n = scaled(12, 4);
  int const rounds = scaled(150, 30);
  hunt_state h;
  {
    side_thread t0([&] {
      for (int k = 0; k < rounds; ++k) {
        bool const exclusive = k % 2 == 0;
        auto const d = spread(k, 0, 60);
        auto const start = clock::now();
        bool const locked =
            exclusive ? h.m.try_lock_blocking_for(d) : h.m.try_lock_shared_blocking_for(d);
        if (!locked) {
          if (clock::now() - start < d) {
            h.early.fetch_add(1);
          }
          continue;
        }
        enter(&h, exclusive, k);
        if (exclusive) {
          h.m.unlock();
        } else {
          h.m.unlock_shared();
        }
      }
    });
    EXPECT_EQ(
        m_sched.run(fork_n<decltype(&hunt_task), hunt_state *, int>, n, &hunt_task, &h, rounds), n);
  }
  EXPECT_EQ(h.bad.load(), 0) << "a writer beside another holder";
  EXPECT_EQ(h.early.load(), 0) << "a timed lock gave up before its deadline";
  EXPECT_GT(h.sections.load(), 0);
  EXPECT_EQ(h.m.waiting(), 0u);
  EXPECT_TRUE(h.m.try_lock()) << "left held";
  h.m.unlock();
  std::printf("[ info ] %ld sections, %d task timeouts\n", h.sections.load(), h.timeouts.load());
}

TEST_P(shared_mutex_timed_test, destroyed_as_exclusive_deadlines_expire_each_wait_ends_once) {
  destroyed_as_deadlines_expire<shared_mutex>(m_sched);
}

TEST_P(shared_mutex_timed_test, destroyed_as_shared_deadlines_expire_each_wait_ends_once) {
  destroyed_as_deadlines_expire<shared_side>(m_sched);
}

task<int> misuse(shared_mutex *m) {
  int refused = 0;
  try {
    (void)m->try_lock_blocking_for(1ms); // would block the worker
  } catch (std::logic_error const &) {
    ++refused;
  }
  try {
    (void)m->try_lock_shared_blocking_for(1ms);
  } catch (std::logic_error const &) {
    ++refused;
  }
  int x = 0;
  co_await magpie::fork(
      &x, [](int v) -> task<int> { co_return v; }, 4);
  try {
    (void)co_await m->try_lock_for(1s); // inside an unjoined fork–join scope
  } catch (std::logic_error const &) {
    ++refused;
  }
  co_await magpie::join();
  co_return refused + x;
}

TEST_P(shared_mutex_timed_test, misuse_is_refused) {
  shared_mutex m;
  EXPECT_EQ(m_sched.run(misuse, &m), 7);
  EXPECT_TRUE(m.try_lock()) << "a refused lock took it";
  m.unlock();
}

INSTANTIATE_TEST_SUITE_P(every_scheduler, shared_mutex_timed_test,
                         ::testing::ValuesIn(all_schedulers()), sched_name{});

} // namespace
