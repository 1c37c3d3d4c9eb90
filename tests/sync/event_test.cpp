// magpie::event: manual- and auto-reset; set() from threads and tasks; FIFO hand-off of an
// auto-reset event; lost-wake-up hunts (set racing wait in tight loops); a waiter that destroys
// the event as soon as its wait returns; destruction while tasks and threads wait; waiting inside
// a fork-join scope; plain-thread waits; and "no worker blocks while any task waits".

#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_support.hpp"
#include "sync/sync_support.hpp"

namespace {

using namespace magpie::test;
using magpie::event;
using magpie::task;

using event_test = scheduler_test;

task<long> wait_then_count(int, event *ev, std::atomic<int> *passed) {
  co_await ev->wait();
  passed->fetch_add(1);
  co_return 1;
}

TEST_P(event_test, manual_set_releases_every_waiter) {
  event ev;
  std::atomic<int> passed{0};
  int const n = scaled(200, 40);
  side_thread setter([&] {
    ASSERT_TRUE(wait_until([&] { return ev.waiting() > 0; }));
    ev.set();
  });
  EXPECT_EQ(m_sched.run(fork_n<decltype(&wait_then_count), event *, std::atomic<int> *>, n,
                        &wait_then_count, &ev, &passed),
            n);
  EXPECT_EQ(passed.load(), n);
  EXPECT_TRUE(ev.is_set());
  EXPECT_TRUE(ev.try_wait()); // manual: stays set
  ev.reset();
  EXPECT_FALSE(ev.is_set());
  EXPECT_FALSE(ev.try_wait());
}

TEST_P(event_test, auto_reset_releases_one_waiter_per_set) {
  event ev(event::reset::automatic);
  std::atomic<int> passed{0};
  int const n = scaled(100, 20);
  side_thread setter([&] {
    for (int i = 0; i < n; ++i) {
      ev.set();
      ASSERT_TRUE(wait_until([&] { return passed.load() == i + 1; }));
      EXPECT_EQ(passed.load(), i + 1) << "one set() released more than one waiter";
    }
  });
  EXPECT_EQ(m_sched.run(fork_n<decltype(&wait_then_count), event *, std::atomic<int> *>, n,
                        &wait_then_count, &ev, &passed),
            n);
  EXPECT_FALSE(ev.is_set());
}

struct order_log {
  std::vector<std::atomic<int>> slots;
  std::atomic<int> next{0};
  explicit order_log(int n) : slots(static_cast<std::size_t>(n)) {}
  std::size_t size() const { return static_cast<std::size_t>(next.load()); }
};

task<long> record_order(int i, event *ev, order_log *order) {
  co_await ev->wait();
  order->slots[static_cast<std::size_t>(order->next.load())].store(i);
  order->next.fetch_add(1); // auto-reset: one waiter at a time (the next set() comes after us)
  co_return 0;
}

TEST_P(event_test, auto_reset_hands_off_in_fifo_order) {
  if (!m_sched.serial()) {
    GTEST_SKIP() << "queue order equals fork order only when one worker starts the children";
  }
  event ev(event::reset::automatic);
  int const n = 16;
  order_log order(n);
  side_thread setter([&] {
    ASSERT_TRUE(wait_until([&] { return ev.waiting() == static_cast<std::size_t>(n); }));
    for (int i = 0; i < n; ++i) {
      std::size_t const before = ev.waiting();
      ev.set();
      ASSERT_TRUE(wait_until([&] { return order.size() == static_cast<std::size_t>(i + 1); }));
      EXPECT_EQ(before - 1, ev.waiting());
    }
  });
  m_sched.run(fork_n<decltype(&record_order), event *, order_log *>, n, &record_order, &ev, &order);
  ASSERT_EQ(order.size(), static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(order.slots[static_cast<std::size_t>(i)].load(), i);
  }
}

// Ping-pong between a task and a plain thread through two auto-reset events: set() races wait()
// in a tight loop; a lost wake-up hangs (the watchdog fails the test).
task<int> ping(event *a, event *b, int rounds) {
  for (int i = 0; i < rounds; ++i) {
    co_await a->wait();
    b->set();
  }
  co_return rounds;
}

TEST_P(event_test, lost_wake_up_hunt_task_and_thread) {
  event a(event::reset::automatic);
  event b(event::reset::automatic);
  int const rounds = scaled(20000, 2000);
  side_thread pong([&] {
    for (int i = 0; i < rounds; ++i) {
      a.set();
      b.wait_blocking();
    }
  });
  EXPECT_EQ(m_sched.run(ping, &a, &b, rounds), rounds);
}

task<long> ping_child(int i, event *a, event *b, int rounds) {
  event *mine = i == 0 ? a : b;
  event *other = i == 0 ? b : a;
  for (int r = 0; r < rounds; ++r) {
    if (i == 0) {
      co_await mine->wait();
      other->set();
    } else {
      other->set();
      co_await mine->wait();
    }
  }
  co_return rounds;
}

TEST_P(event_test, lost_wake_up_hunt_task_and_task) {
  event a(event::reset::automatic);
  event b(event::reset::automatic);
  int const rounds = scaled(20000, 2000);
  EXPECT_EQ(m_sched.run(fork_n<decltype(&ping_child), event *, event *, int>, 2, &ping_child, &a,
                        &b, rounds),
            2L * rounds);
}

// An auto-reset turnstile: two tasks and a plain thread wait on one event in loops, and a setter
// sets it only once the previous set has let somebody through, so no set coalesces and every set
// must release exactly one wait. The waiters meet the event in every state of its word (nobody,
// the flag, one waiter in the word, a queue) while the set races them. A lost wake-up hangs
// (the watchdog); a set that released two shows as a count past the sets.
task<long> turnstile_waiter(int, event *ev, std::atomic<long> *passed, long rounds) {
  for (long r = 0; r < rounds; ++r) {
    co_await ev->wait();
    passed->fetch_add(1);
  }
  co_return rounds;
}

TEST_P(event_test, auto_reset_turnstile_releases_one_wait_per_set) {
  event ev(event::reset::automatic);
  std::atomic<long> passed{0};
  std::atomic<long> over{0};
  long const rounds = scaled(3000, 300);
  int const tasks = 2;
  long const total = rounds * (tasks + 1);
  std::thread thread_waiter([&] {
    for (long r = 0; r < rounds; ++r) {
      ev.wait_blocking();
      passed.fetch_add(1);
    }
  });
  std::thread setter([&] {
    for (long k = 0; k < total; ++k) {
      ev.set();
      if (!wait_until([&] { return passed.load() >= k + 1; })) {
        return; // lost: the waiters hang and the watchdog reports it
      }
      over += passed.load() > k + 1 ? 1 : 0;
    }
  });
  EXPECT_EQ(m_sched.run(fork_n<decltype(&turnstile_waiter), event *, std::atomic<long> *, long>,
                        tasks, &turnstile_waiter, &ev, &passed, rounds),
            tasks * rounds);
  thread_waiter.join();
  setter.join();
  EXPECT_EQ(passed.load(), total);
  EXPECT_EQ(over.load(), 0);
  EXPECT_FALSE(ev.is_set());
}

// Manual-reset: set/reset cycles racing waiters; every waiter of a round must pass.
task<long> round_waiter(int, event *go, std::atomic<int> *arrived) {
  co_await go->wait();
  arrived->fetch_add(1);
  co_return 1;
}

task<long> manual_rounds(event *go, std::atomic<int> *arrived, int rounds, int width) {
  long total = 0;
  for (int r = 0; r < rounds; ++r) {
    long r_total = 0;
    co_await magpie::call(&r_total, fork_n<decltype(&round_waiter), event *, std::atomic<int> *>,
                          width, &round_waiter, go, arrived);
    total += r_total;
  }
  co_return total;
}

TEST_P(event_test, manual_reset_rounds_with_racing_set) {
  std::atomic<int> arrived{0};
  int const rounds = scaled(1000, 100);
  int const width = 4;
  event go;
  std::atomic<bool> stop{false};
  side_thread setter([&] {
    while (!stop.load()) {
      go.set();   // releases everyone queued; a waiter released here passes even though
      go.reset(); // reset() follows at once; later arrivals wait for the next set()
      std::this_thread::yield();
    }
    go.set();
  });
  long total = 0;
  {
    struct stopper {
      std::atomic<bool> &s;
      event &e;
      ~stopper() { s = true; }
    } st{stop, go};
    total = m_sched.run(manual_rounds, &go, &arrived, rounds, width);
  }
  EXPECT_EQ(total, static_cast<long>(rounds) * width);
}

// A waiter may destroy the event as soon as its wait returns, even while set() is still running
// on another thread (ASan and TSan check that set() touches nothing after letting it pass).
task<int> wait_and_free(event *ev) {
  co_await ev->wait();
  delete ev;
  co_return 1;
}

TEST_P(event_test, waiter_destroys_the_event_while_set_returns) {
  int const rounds = scaled(2000, 200);
  for (int r = 0; r < rounds; ++r) {
    auto *ev = new event(r % 2 == 0 ? event::reset::manual : event::reset::automatic);
    std::thread setter([ev] { ev->set(); });
    EXPECT_EQ(m_sched.run(wait_and_free, ev), 1);
    setter.join();
  }
}

task<int> expect_abandoned(event *ev) {
  try {
    co_await ev->wait();
  } catch (magpie::abandoned_wait const &) {
    co_return 1;
  }
  co_return 0;
}

task<long> expect_abandoned_child(int, event *ev) {
  int r = 0;
  co_await magpie::call(&r, expect_abandoned, ev);
  co_return r;
}

/// A plain thread's wait on an event that is destroyed under it: sets *abandoned if it threw
/// magpie::abandoned_wait.
void wait_expecting_abandon(event *ev, std::atomic<int> *abandoned) {
  try {
    ev->wait_blocking();
  } catch (magpie::abandoned_wait const &) {
    *abandoned = 1;
  }
}

TEST_P(event_test, destroyed_while_tasks_and_threads_wait) {
  auto ev = std::make_unique<event>();
  int const n = 8;
  std::atomic<int> thread_abandoned{0};
  std::thread waiter(wait_expecting_abandon, ev.get(), &thread_abandoned);
  side_thread destroyer([&] {
    ASSERT_TRUE(wait_until([&] { return ev->waiting() == static_cast<std::size_t>(n + 1); }));
    ev.reset();
  });
  EXPECT_EQ(m_sched.run(fork_n<decltype(&expect_abandoned_child), event *>, n,
                        &expect_abandoned_child, ev.get()),
            n);
  waiter.join();
  EXPECT_EQ(thread_abandoned.load(), 1);
}

// A lone waiter sits in the event's word (one CAS), not in its queue: destroying the event then
// must still find it (a task, then a plain thread), and waiting() counts it.
TEST_P(event_test, destroyed_with_one_lone_waiter) {
  {
    auto ev = std::make_unique<event>(event::reset::automatic);
    side_thread destroyer([&] {
      ASSERT_TRUE(wait_until([&] { return ev->waiting() == 1; }));
      EXPECT_FALSE(ev->is_set());
      ev.reset();
    });
    EXPECT_EQ(m_sched.run(expect_abandoned, ev.get()), 1);
  }
  {
    auto ev = std::make_unique<event>();
    std::atomic<int> thread_abandoned{0};
    std::thread waiter(wait_expecting_abandon, ev.get(), &thread_abandoned);
    ASSERT_TRUE(wait_until([&] { return ev->waiting() == 1; }));
    ev.reset();
    waiter.join();
    EXPECT_EQ(thread_abandoned.load(), 1);
  }
}

// The word's states in turn, on an auto-reset event: nobody (a set publishes the flag, the next
// wait consumes it); one waiter in the word (a set takes it, the flag stays clear); a second
// waiter moves the first into the queue (FIFO kept); a set pops one and leaves one queued; a
// third waiter joins the queue, not the word; and so on. Plain threads wait here so that the
// test controls the order; every wait must end with the right thread, and no set is lost.
TEST(event_plain, lone_waiter_and_queue_take_turns_in_fifo_order) {
  int const rounds = scaled(300, 60);
  event ev(event::reset::automatic);
  for (int r = 0; r < rounds; ++r) {
    ev.set(); // nobody waits: the flag
    EXPECT_TRUE(ev.is_set());
    EXPECT_TRUE(ev.try_wait());
    EXPECT_FALSE(ev.is_set());
    std::vector<int> order;
    std::mutex order_mutex;
    std::vector<std::thread> ts;
    int const k = 1 + r % 4; // 1: the word only; 2..4: the queue
    for (int i = 0; i < k; ++i) {
      ts.emplace_back([&, i] {
        ev.wait_blocking();
        std::lock_guard lock(order_mutex);
        order.push_back(i);
      });
      ASSERT_TRUE(wait_until([&] { return ev.waiting() == static_cast<std::size_t>(i + 1); }));
    }
    for (int i = 0; i < k; ++i) {
      ev.set();
      ASSERT_TRUE(wait_until([&] {
        std::lock_guard lock(order_mutex);
        return order.size() == static_cast<std::size_t>(i + 1);
      }));
      EXPECT_FALSE(ev.is_set()) << "a set that released a waiter also left the flag";
      EXPECT_EQ(ev.waiting(), static_cast<std::size_t>(k - i - 1));
    }
    for (auto &t : ts) {
      t.join();
    }
    for (int i = 0; i < k; ++i) {
      EXPECT_EQ(order[static_cast<std::size_t>(i)], i);
    }
  }
}

task<int> wait_inside_scope(event *ev) {
  int x = 0;
  co_await magpie::fork(
      &x, [](int v) -> task<int> { co_return v; }, 3);
  bool threw = false;
  try {
    co_await ev->wait();
  } catch (std::logic_error const &) {
    threw = true;
  }
  co_await magpie::join();
  co_return threw ? x + 100 : x;
}

TEST_P(event_test, waiting_inside_a_fork_join_scope_throws) {
  event ev(event::reset::manual, /*initially_set=*/true);
  EXPECT_EQ(m_sched.run(wait_inside_scope, &ev), 103);
}

task<int> set_from_task(event *ev) {
  ev->set();
  co_return 1;
}

TEST_P(event_test, thread_waits_for_a_task) {
  event ev;
  std::thread waiter([&] { ev.wait_blocking(); });
  EXPECT_EQ(m_sched.run(set_from_task, &ev), 1);
  waiter.join();
  EXPECT_TRUE(ev.is_set());
}

TEST(event_plain, threads_only) {
  event ev(event::reset::automatic, /*initially_set=*/true);
  EXPECT_TRUE(ev.try_wait());
  EXPECT_FALSE(ev.try_wait());
  int const n = 4;
  std::atomic<int> passed{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < n; ++i) {
    ts.emplace_back([&] {
      ev.wait_blocking();
      passed.fetch_add(1);
    });
  }
  for (int i = 0; i < n; ++i) {
    ev.set(); // releases one waiting thread, or is consumed by the next to arrive

    ASSERT_TRUE(wait_until([&] { return passed.load() == i + 1; }));
  }
  for (auto &t : ts) {
    t.join();
  }
  EXPECT_EQ(passed.load(), n);
}

// "No worker blocks while any task waits": with one worker, child i waits on event i and then sets
// event i+1; the last child sets event 0. Every child but the last waits before anything is set,
// so this completes only if a waiting task leaves its worker free to start the next child.
task<long> chain_link(int i, std::vector<std::unique_ptr<event>> *evs) {
  auto const n = static_cast<int>(evs->size());
  if (i == n) {
    (*evs)[0]->set();
    co_return 0;
  }
  co_await (*evs)[static_cast<std::size_t>(i)]->wait();
  if (i + 1 < n) {
    (*evs)[static_cast<std::size_t>(i + 1)]->set();
  }
  co_return 1;
}

TEST_P(event_test, no_worker_blocks_while_tasks_wait) {
  int const n = scaled(1000, 200);
  std::vector<std::unique_ptr<event>> evs;
  for (int i = 0; i < n; ++i) {
    evs.push_back(std::make_unique<event>());
  }
  EXPECT_EQ(m_sched.run(fork_n<decltype(&chain_link), std::vector<std::unique_ptr<event>> *>, n + 1,
                        &chain_link, &evs),
            n);
}

INSTANTIATE_TEST_SUITE_P(every_scheduler, event_test, ::testing::ValuesIn(all_schedulers()),
                         sched_name{});

} // namespace
