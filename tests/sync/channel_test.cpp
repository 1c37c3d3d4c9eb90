// magpie::channel: producers and consumers (tasks and plain threads) on every scheduler and
// capacity (0 = rendezvous, 1, 4, 64), every value received exactly once with the sum checked;
// tracked values moved, never copied, nothing leaked; move-only values; close() while tasks wait
// (receivers get nullopt, senders false); destruction while tasks wait (abandoned_wait, buffered
// values destroyed); try_send/try_receive; FIFO order; misuse. The lock-free ring from plain
// threads: capacities 1, 2, 3, 5, 64 with per-producer order checked, close() racing sends (no
// value stranded), and a capacity-1 ping-pong between a task and a thread (lost wake-ups).
// channel_sender: copies count, moves hand over, the last one closes the channel — with
// receivers waiting (no lost wake-up), with a sender that throws, and racing a receiver.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_support.hpp"
#include "sync/sync_support.hpp"

namespace {

using namespace magpie::test;
using magpie::channel;
using magpie::latch;
using magpie::send_status;
using magpie::task;

struct traffic {
  channel<long> *ch;
  latch *producers_done;
  int producers;
  int per_producer;
  std::vector<std::atomic<int>> *seen; // receptions per value
};

// Children 0 … producers−1 send; the next one closes the channel once they are done; the rest
// receive until the channel is closed and drained. Returns the sum of what a child received.
task<long> traffic_child(int i, traffic *t) {
  if (i < t->producers) {
    for (int k = 0; k < t->per_producer; ++k) {
      bool const sent = co_await t->ch->send(static_cast<long>(i) * t->per_producer + k);
      if (!sent) {
        co_return -1'000'000; // closed early: must not happen
      }
    }
    t->producers_done->count_down();
    co_return 0;
  }
  if (i == t->producers) {
    co_await t->producers_done->wait();
    t->ch->close();
    co_return 0;
  }
  long sum = 0;
  while (std::optional<long> v = co_await t->ch->receive()) {
    (*t->seen)[static_cast<std::size_t>(*v)].fetch_add(1);
    sum += *v;
  }
  co_return sum;
}

class channel_test
    : public ::testing::TestWithParam<std::tuple<magpie::test::sched_param, std::size_t>> {
protected:
  channel_test() : m_dog(current_test_name()), m_sched(std::get<0>(GetParam())) {}
  std::size_t capacity() const { return std::get<1>(GetParam()); }
  watchdog m_dog;
  any_scheduler m_sched;
};

TEST_P(channel_test, producers_and_consumers_every_value_once) {
  int const producers = 3;
  int const consumers = 3;
  int const per = scaled(3000, 300);
  channel<long> ch(capacity());
  latch done(producers);
  int const total = producers * per;
  std::vector<std::atomic<int>> seen(static_cast<std::size_t>(total));
  traffic t{&ch, &done, producers, per, &seen};
  long const expect = static_cast<long>(total) * (total - 1) / 2;
  EXPECT_EQ(m_sched.run(fork_n<decltype(&traffic_child), traffic *>, producers + 1 + consumers,
                        &traffic_child, &t),
            expect);
  for (auto &s : seen) {
    ASSERT_EQ(s.load(), 1);
  }
  EXPECT_TRUE(ch.is_closed());
  EXPECT_EQ(ch.size(), 0u);
}

// Plain threads produce (blocking sends), tasks consume; then tasks produce, threads consume.
task<long> consume_all(int, channel<long> *ch) {
  long sum = 0;
  while (std::optional<long> v = co_await ch->receive()) {
    sum += *v;
  }
  co_return sum;
}

task<long> produce_range(int i, channel<long> *ch, int per) {
  for (int k = 0; k < per; ++k) {
    if (!co_await ch->send(static_cast<long>(i) * per + k)) {
      co_return 1;
    }
  }
  co_return 0;
}

TEST_P(channel_test, plain_threads_and_tasks) {
  int const per = scaled(2000, 200);
  int const threads = 2;
  long const n = static_cast<long>(threads) * per;
  {
    channel<long> ch(capacity());
    std::vector<std::thread> ts;
    std::atomic<int> finished{0};
    for (int t = 0; t < threads; ++t) {
      ts.emplace_back([&, t] {
        for (int k = 0; k < per; ++k) {
          ASSERT_TRUE(ch.send_blocking(static_cast<long>(t) * per + k));
        }
        if (finished.fetch_add(1) + 1 == threads) {
          ch.close();
        }
      });
    }
    EXPECT_EQ(m_sched.run(fork_n<decltype(&consume_all), channel<long> *>, 3, &consume_all, &ch),
              n * (n - 1) / 2);
    for (auto &t : ts) {
      t.join();
    }
  }
  {
    channel<long> ch(capacity());
    std::atomic<long> sum{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) {
      ts.emplace_back([&] {
        while (std::optional<long> v = ch.receive_blocking()) {
          sum.fetch_add(*v);
        }
      });
    }
    EXPECT_EQ(m_sched.run(fork_n<decltype(&produce_range), channel<long> *, int>, threads,
                          &produce_range, &ch, per),
              0);
    ch.close();
    for (auto &t : ts) {
      t.join();
    }
    EXPECT_EQ(sum.load(), n * (n - 1) / 2);
  }
}

task<long> tracked_producer(int i, channel<tracked> *ch, int per) {
  for (int k = 0; k < per; ++k) {
    tracked v(static_cast<long>(i) * per + k);
    if (!co_await ch->send(std::move(v))) {
      co_return -1;
    }
  }
  co_return 0;
}

task<long> tracked_consumer(int, channel<tracked> *ch, int count) {
  long sum = 0;
  for (int k = 0; k < count; ++k) {
    std::optional<tracked> v = co_await ch->receive();
    if (!v || !v->alive()) {
      co_return -1'000'000;
    }
    sum += v->value();
  }
  co_return sum;
}

task<long> tracked_traffic(channel<tracked> *ch, int per) {
  long a = 0;
  long b = 0;
  co_await magpie::fork(&a, fork_n<decltype(&tracked_producer), channel<tracked> *, int>, 2,
                        &tracked_producer, ch, per);
  co_await magpie::call(&b, fork_n<decltype(&tracked_consumer), channel<tracked> *, int>, 2,
                        &tracked_consumer, ch, per);
  co_await magpie::join();
  co_return a + b;
}

TEST_P(channel_test, tracked_values_are_moved_never_copied_and_not_leaked) {
  tracked_counters().reset();
  int const per = scaled(1000, 100);
  {
    channel<tracked> ch(capacity());
    long const n = 2L * per;
    EXPECT_EQ(m_sched.run(tracked_traffic, &ch, per), n * (n - 1) / 2);
    if (capacity() > 0) { // leave some values in the channel: its destructor destroys them
      for (int k = 0; k < static_cast<int>(capacity()); ++k) {
        tracked v(k);
        ASSERT_EQ(ch.try_send(std::move(v)), send_status::sent);
      }
      tracked extra(99);
      EXPECT_EQ(ch.try_send(std::move(extra)), send_status::full);
      EXPECT_TRUE(extra.alive()); // not moved from when not sent
      EXPECT_EQ(extra.value(), 99);
    }
  }
  EXPECT_EQ(tracked_counters().copies.load(), 0);
  EXPECT_EQ(tracked_counters().errors.load(), 0);
  EXPECT_EQ(tracked_counters().live(), 0);
}

task<long> unique_sender(int i, channel<std::unique_ptr<int>> *ch) {
  co_return co_await ch->send(std::make_unique<int>(i)) ? 0 : 1;
}

task<long> unique_receiver(int, channel<std::unique_ptr<int>> *ch) {
  std::optional<std::unique_ptr<int>> p = co_await ch->receive();
  co_return p &&*p ? **p : -1'000;
}

task<long> unique_traffic(channel<std::unique_ptr<int>> *ch, int n) {
  long a = 0;
  long b = 0;
  co_await magpie::fork(&a, fork_n<decltype(&unique_receiver), channel<std::unique_ptr<int>> *>, n,
                        &unique_receiver, ch);
  co_await magpie::call(&b, fork_n<decltype(&unique_sender), channel<std::unique_ptr<int>> *>, n,
                        &unique_sender, ch);
  co_await magpie::join();
  co_return a + b;
}

TEST_P(channel_test, move_only_values) {
  channel<std::unique_ptr<int>> ch(capacity());
  int const n = 50;
  EXPECT_EQ(m_sched.run(unique_traffic, &ch, n), static_cast<long>(n) * (n - 1) / 2);
}

// close() while tasks wait: receivers on an empty channel get nullopt; senders on a full one get
// false and their values are destroyed unsent.
task<long> receive_expect_none(int, channel<tracked> *ch) {
  std::optional<tracked> v = co_await ch->receive();
  co_return v ? 0 : 1;
}

task<long> send_expect_refused(int i, channel<tracked> *ch) {
  co_return co_await ch->send(tracked(i)) ? 0 : 1;
}

TEST_P(channel_test, close_releases_waiting_receivers_and_senders) {
  tracked_counters().reset();
  int const n = 6;
  {
    channel<tracked> ch(capacity());
    side_thread closer([&] {
      ASSERT_TRUE(
          wait_until([&] { return ch.waiting_receivers() == static_cast<std::size_t>(n); }));
      ch.close();
    });
    EXPECT_EQ(m_sched.run(fork_n<decltype(&receive_expect_none), channel<tracked> *>, n,
                          &receive_expect_none, &ch),
              n);
  }
  {
    channel<tracked> ch(capacity());
    for (std::size_t k = 0; k < capacity(); ++k) {
      ASSERT_EQ(ch.try_send(tracked(static_cast<long>(k))), send_status::sent);
    }
    side_thread closer([&] {
      ASSERT_TRUE(wait_until([&] { return ch.waiting_senders() == static_cast<std::size_t>(n); }));
      ch.close();
    });
    EXPECT_EQ(m_sched.run(fork_n<decltype(&send_expect_refused), channel<tracked> *>, n,
                          &send_expect_refused, &ch),
              n);
    // What was buffered before close() is still received, then nullopt.
    for (std::size_t k = 0; k < capacity(); ++k) {
      std::optional<tracked> v = ch.try_receive();
      ASSERT_TRUE(v.has_value());
      EXPECT_EQ(v->value(), static_cast<long>(k));
    }
    EXPECT_FALSE(ch.try_receive().has_value());
    EXPECT_FALSE(ch.receive_blocking().has_value());
    tracked late(1);
    EXPECT_EQ(ch.try_send(std::move(late)), send_status::closed);
    EXPECT_TRUE(late.alive());
    EXPECT_FALSE(ch.send_blocking(tracked(2)));
  }
  EXPECT_EQ(tracked_counters().live(), 0);
  EXPECT_EQ(tracked_counters().errors.load(), 0);
}

task<long> receive_abandoned(int, channel<tracked> *ch) {
  try {
    co_await ch->receive();
  } catch (magpie::abandoned_wait const &) {
    co_return 1;
  }
  co_return 0;
}

task<long> send_abandoned(int i, channel<tracked> *ch) {
  try {
    co_await ch->send(tracked(i));
  } catch (magpie::abandoned_wait const &) {
    co_return 1;
  }
  co_return 0;
}

TEST_P(channel_test, destroyed_while_tasks_wait) {
  tracked_counters().reset();
  int const n = 4;
  {
    auto ch = std::make_unique<channel<tracked>>(capacity());
    side_thread destroyer([&] {
      ASSERT_TRUE(
          wait_until([&] { return ch->waiting_receivers() == static_cast<std::size_t>(n); }));
      ch.reset();
    });
    EXPECT_EQ(m_sched.run(fork_n<decltype(&receive_abandoned), channel<tracked> *>, n,
                          &receive_abandoned, ch.get()),
              n);
  }
  {
    auto ch = std::make_unique<channel<tracked>>(capacity());
    for (std::size_t k = 0; k < capacity(); ++k) {
      ASSERT_EQ(ch->try_send(tracked(1)), send_status::sent);
    }
    side_thread destroyer([&] {
      ASSERT_TRUE(wait_until([&] { return ch->waiting_senders() == static_cast<std::size_t>(n); }));
      ch.reset(); // also destroys the buffered values
    });
    EXPECT_EQ(m_sched.run(fork_n<decltype(&send_abandoned), channel<tracked> *>, n, &send_abandoned,
                          ch.get()),
              n);
  }
  EXPECT_EQ(tracked_counters().live(), 0);
  EXPECT_EQ(tracked_counters().errors.load(), 0);
}

task<int> receive_in_scope(channel<long> *ch) {
  int x = 0;
  co_await magpie::fork(
      &x, [](int v) -> task<int> { co_return v; }, 5);
  bool threw = false;
  try {
    co_await ch->receive();
  } catch (std::logic_error const &) {
    threw = true;
  }
  co_await magpie::join();
  co_return threw ? x : -1;
}

TEST_P(channel_test, misuse_waiting_inside_a_fork_join_scope) {
  channel<long> ch(capacity());
  if (capacity() > 0) {
    ASSERT_TRUE(ch.send_blocking(1)); // the receive would not even need to wait
  }
  EXPECT_EQ(m_sched.run(receive_in_scope, &ch), 5);
}

TEST(channel_plain, fifo_and_try_operations) {
  channel<int> ch(3);
  EXPECT_EQ(ch.capacity(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(ch.try_send(i), send_status::sent);
  }
  EXPECT_EQ(ch.try_send(3), send_status::full);
  EXPECT_EQ(ch.size(), 3u);
  std::thread late([&] { EXPECT_TRUE(ch.send_blocking(3)); }); // waits for room
  for (int i = 0; i < 4; ++i) {
    std::optional<int> v = ch.receive_blocking();
    ASSERT_TRUE(v.has_value());
    EXPECT_EQ(*v, i); // FIFO, the waiting sender's value last
  }
  late.join();
  EXPECT_FALSE(ch.try_receive().has_value());
  EXPECT_FALSE(ch.is_closed());

  channel<int> rendezvous(0);
  EXPECT_EQ(rendezvous.try_send(1), send_status::full); // no receiver waits
  std::thread receiver([&] { EXPECT_EQ(rendezvous.receive_blocking(), std::optional<int>(7)); });
  EXPECT_TRUE(rendezvous.send_blocking(7)); // returns once the receiver has it
  receiver.join();
}

// ---------------------------------------------------------------------------------------------
// The lock-free ring (capacity > 0; docs/protocols.md §9.11), from plain threads: capacities 1
// (the cell is reused at every position), non-powers of two (the % path) and a power of two.

// Producers alternate try_send (retrying while full) and send_blocking; consumers alternate
// try_receive (retrying while empty) and receive_blocking. Every value arrives once, and each
// consumer sees each producer's values in increasing order (the ring is FIFO).
TEST(channel_ring, threads_every_value_once_in_order_per_producer) {
  watchdog dog(current_test_name());
  for (std::size_t cap :
       {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{5}, std::size_t{64}}) {
    int const producers = 3;
    int const consumers = 3;
    int const per = scaled(20000, 2000);
    channel<long> ch(cap);
    std::vector<std::atomic<int>> seen(static_cast<std::size_t>(producers * per));
    std::atomic<int> producing{producers};
    std::atomic<bool> out_of_order{false};
    std::vector<std::thread> ts;
    for (int p = 0; p < producers; ++p) {
      ts.emplace_back([&, p] {
        for (int k = 0; k < per; ++k) {
          long const v = static_cast<long>(p) * per + k;
          if (k % 2 == 0) {
            send_status st;
            while ((st = ch.try_send(long{v})) == send_status::full) {
              std::this_thread::yield();
            }
            EXPECT_EQ(st, send_status::sent);
          } else {
            EXPECT_TRUE(ch.send_blocking(v));
          }
        }
        if (producing.fetch_sub(1) == 1) {
          ch.close();
        }
      });
    }
    for (int c = 0; c < consumers; ++c) {
      ts.emplace_back([&, c] {
        std::vector<long> last(static_cast<std::size_t>(producers), -1);
        for (int k = 0;; ++k) {
          std::optional<long> v;
          if ((k + c) % 2 == 0) {
            v = ch.try_receive();
            if (!v) {
              if (ch.is_closed()) {
                v = ch.try_receive(); // closed: empty now means empty for good
                if (!v) {
                  break;
                }
              } else {
                std::this_thread::yield();
                continue;
              }
            }
          } else if (!(v = ch.receive_blocking())) {
            break;
          }
          seen[static_cast<std::size_t>(*v)].fetch_add(1);
          std::size_t const from = static_cast<std::size_t>(*v / per);
          if (*v <= last[from]) {
            out_of_order = true;
          }
          last[from] = *v;
        }
      });
    }
    for (auto &t : ts) {
      t.join();
    }
    for (auto &n : seen) {
      ASSERT_EQ(n.load(), 1) << "capacity " << cap;
    }
    EXPECT_FALSE(out_of_order.load()) << "capacity " << cap;
    EXPECT_EQ(ch.size(), 0u);
  }
}

// close() races with sends: every send that reported success is received (none stranded in the
// ring after the receivers saw "closed and drained"), none that reported failure is.
TEST(channel_ring, close_racing_sends_strands_nothing) {
  watchdog dog(current_test_name());
  int const rounds = scaled(300, 30);
  for (int round = 0; round < rounds; ++round) {
    std::size_t const cap = 1 + static_cast<std::size_t>(round % 4);
    channel<long> ch(cap);
    std::atomic<long> sent_sum{0};
    std::atomic<long> received_sum{0};
    std::vector<std::thread> ts;
    for (int p = 0; p < 2; ++p) {
      ts.emplace_back([&, p] {
        for (long v = 1;; ++v) {
          long const value = v * 2 + p;
          if (!ch.send_blocking(value)) {
            break;
          }
          sent_sum += value;
        }
      });
    }
    for (int c = 0; c < 2; ++c) {
      ts.emplace_back([&] {
        while (std::optional<long> v = ch.receive_blocking()) {
          received_sum += *v;
        }
      });
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50 + 37 * (round % 7)));
    ch.close();
    for (auto &t : ts) {
      t.join();
    }
    EXPECT_EQ(received_sum.load(), sent_sum.load()) << "round " << round;
    EXPECT_EQ(ch.size(), 0u);
  }
}

// A value at a time through two capacity-1 channels between a task and a plain thread: each side
// waits on almost every operation (the registration's Dekker against the other side's push/pop).
task<long> echo_task(channel<long> *in, channel<long> *out) {
  long n = 0;
  while (std::optional<long> v = co_await in->receive()) {
    if (!co_await out->send(*v + 1)) {
      co_return -1;
    }
    ++n;
  }
  out->close();
  co_return n;
}

TEST(channel_ring, ping_pong_with_a_thread_loses_no_wake_up) {
  watchdog dog(current_test_name());
  long const rounds = scaled(20000, 2000);
  for (std::size_t workers : {std::size_t{1}, std::size_t{2}}) {
    magpie::lazy_pool pool(workers);
    channel<long> to_task(1);
    channel<long> to_thread(1);
    long got = 0;
    std::thread t([&] {
      long v = 0;
      for (long i = 0; i < rounds; ++i) {
        ASSERT_TRUE(to_task.send_blocking(v));
        std::optional<long> r = to_thread.receive_blocking();
        ASSERT_TRUE(r.has_value());
        v = *r;
      }
      to_task.close();
      got = v;
    });
    EXPECT_EQ(magpie::sync_wait(pool, echo_task, &to_task, &to_thread), rounds);
    t.join();
    EXPECT_EQ(got, rounds);
  }
}

// A plain thread's blocking wait polls its one-shot word for 4 to 100 µs before it sleeps
// (sync/detail/blocking.hpp, protocols §9.1): a task that sends or receives before, around and
// after that moment, on an unbuffered channel (the value goes through the waiter's slot, which
// the word's release/acquire publishes) and on a ring of one. A waker that touched the waiter
// after its exchange of `done` would touch a returned thread's stack (ASan, TSan); a lost wake-up
// leaves the thread asleep (the watchdog); a slot read before it is published is a wrong value.
task<long> spin_then_send(channel<long> *ch, std::uint64_t iters, long v) {
  (void)spin_work(iters);
  co_return (co_await ch->send(v)) ? 1 : 0;
}

task<long> spin_then_receive(channel<long> *ch, std::uint64_t iters) {
  (void)spin_work(iters);
  std::optional<long> r = co_await ch->receive();
  co_return r.value_or(-1);
}

TEST(channel_plain, a_thread_released_while_it_polls_or_sleeps) {
  watchdog dog(current_test_name());
  int const iterations = scaled(600, 120);
  std::uint64_t const lengths[] = {0, 100, 500, 1000, 2000, 4000, 20000};
  for (std::size_t capacity : {std::size_t{0}, std::size_t{1}}) {
    magpie::busy_pool pool(1);
    channel<long> ch(capacity);
    long wrong = 0;
    for (int i = 0; i < iterations; ++i) {
      std::uint64_t const len = lengths[static_cast<std::size_t>(i) % std::size(lengths)];
      long const v = 1000L * i + 7;
      auto sent = magpie::spawn(pool, spin_then_send, &ch, len, v);
      std::optional<long> r = ch.receive_blocking();
      wrong += (r != v) ? 1 : 0;
      wrong += (sent.get() != 1) ? 1 : 0;
      auto received = magpie::spawn(pool, spin_then_receive, &ch, len);
      wrong += ch.send_blocking(v + 1) ? 0 : 1;
      wrong += (received.get() != v + 1) ? 1 : 0;
    }
    EXPECT_EQ(wrong, 0) << "capacity " << capacity;
  }
}

// Spinning before waiting (channel.hpp, "Before waiting"): a task on a one-worker pool never
// spins (nothing else could fill or drain the ring meanwhile), and a spin that ends in a wait
// anyway halves its side's budget, down to the floor and no further. Each receive (send) here
// waits for certain: the thread sends (receives) only once the task is queued, so a spin can
// never pay, and a one-worker task that spun would have halved the budget.
task<long> receive_n(channel<long> *ch, int n) {
  long sum = 0;
  for (int i = 0; i < n; ++i) {
    std::optional<long> v = co_await ch->receive();
    sum += v.value_or(-1000);
  }
  co_return sum;
}

task<long> send_n(channel<long> *ch, int n) {
  long sent = 0;
  for (int i = 0; i < n; ++i) {
    sent += (co_await ch->send(long{i})) ? 1 : 0;
  }
  co_return sent;
}

long receive_n_blocking(channel<long> *ch, int n) {
  long sum = 0;
  for (int i = 0; i < n; ++i) {
    sum += ch->receive_blocking().value_or(-1000);
  }
  return sum;
}

// Sends 0 … n−1 to `ch`, each once `queued()` holds (a waiter is in the channel's queue).
template <typename Queued>
bool feed_when_queued(channel<long> &ch, int n, Queued queued) {
  for (int i = 0; i < n; ++i) {
    if (!wait_until(queued) || ch.try_send(long{i}) != send_status::sent) {
      return false;
    }
  }
  return true;
}

TEST(channel_spin, one_worker_tasks_do_not_spin_and_fruitless_spins_back_off) {
  watchdog dog(current_test_name());
  using chan = channel<long>;
  int const n = 6; // 128 → 64 → 32 → 16 → 8 (the floor) after four fruitless spins, then stays
  long const sum = n * (n - 1) / 2;
  for (std::size_t workers : {std::size_t{1}, std::size_t{2}}) {
    magpie::busy_pool pool(workers);
    channel<long> ch(4);
    auto got = magpie::spawn(pool, receive_n, &ch, n);
    EXPECT_TRUE(feed_when_queued(ch, n, [&] { return ch.waiting_receivers() == 1; }));
    EXPECT_EQ(got.get(), sum);
    EXPECT_EQ(ch.spin_budgets().receive, workers == 1 ? chan::spin_ceiling : chan::spin_floor)
        << workers << " worker(s)";
    EXPECT_EQ(ch.spin_budgets().send, chan::spin_ceiling) << "no send ever found the ring full";

    channel<long> one(1); // send side: the ring is full after the first value
    auto sent = magpie::spawn(pool, send_n, &one, n + 1);
    long drained = 0;
    for (int i = 0; i < n; ++i) { // receive each value once the next send is queued
      ASSERT_TRUE(wait_until([&] { return one.waiting_senders() == 1; }));
      drained += one.try_receive().value_or(-1000);
    }
    drained += one.receive_blocking().value_or(-1000); // the last one did not have to wait
    EXPECT_EQ(sent.get(), n + 1);
    EXPECT_EQ(drained, sum + n);
    EXPECT_EQ(one.spin_budgets().send, workers == 1 ? chan::spin_ceiling : chan::spin_floor)
        << workers << " worker(s)";
  }
  // Plain threads always spin first (a kernel sleep costs more): fruitless spins back off too.
  channel<long> ch(4);
  bool fed = false;
  {
    side_thread feeder(
        [&] { fed = feed_when_queued(ch, n, [&] { return ch.waiting_receivers() == 1; }); });
    EXPECT_EQ(receive_n_blocking(&ch, n), sum);
  }
  EXPECT_TRUE(fed);
  EXPECT_EQ(ch.spin_budgets().receive, chan::spin_floor);
}

// ----- channel_sender: the channel closes when its last sender goes -----

TEST(channel_sender_plain, copies_count_moves_hand_over_and_the_last_one_closes) {
  channel<int> ch(4);
  std::optional<magpie::channel_sender<int>> a(std::in_place, ch);
  magpie::channel_sender<int> b(*a);           // copy: a second sender
  magpie::channel_sender<int> c(std::move(b)); // move: still two
  EXPECT_FALSE(static_cast<bool>(b));
  b.reset(); // an empty handle: nothing
  magpie::channel_sender<int> d(ch);
  d = c; // d leaves (not the last: a and c remain), then joins as a copy of c
  auto &same = d;
  d = same; // self-assignment keeps the count
  EXPECT_EQ(ch.try_send(1), send_status::sent);
  a.reset();
  c.reset();
  EXPECT_FALSE(ch.is_closed());
  EXPECT_EQ(d.get().try_send(2), send_status::sent);
  d.reset(); // the last one
  EXPECT_TRUE(ch.is_closed());
  EXPECT_EQ(ch.try_receive(), std::optional<int>(1)); // buffered values are still received
  EXPECT_EQ(ch.try_receive(), std::optional<int>(2));
  EXPECT_FALSE(ch.receive_blocking().has_value());
  magpie::channel_sender<int> late(ch); // from a closed channel: counts, but sends fail
  EXPECT_FALSE(late.send_blocking(3));
}

task<long> receive_sum(int, channel<long> *ch) {
  long sum = 0;
  while (std::optional<long> v = co_await ch->receive()) {
    sum += *v;
  }
  co_return sum;
}

// Sends i*per … i*per+per−1 through its own sender handle, which dies with the task's frame;
// throws after sending if `fail`.
task<long> send_through(int i, magpie::channel_sender<long> tx, int per, bool fail) {
  for (int k = 0; k < per; ++k) {
    if (!co_await tx.send(static_cast<long>(i) * per + k)) {
      co_return -1'000'000; // closed early: must not happen
    }
  }
  if (fail) {
    throw std::runtime_error("sender failed");
  }
  co_return 0;
}

// Forks `receivers` receivers, then `senders` senders each with a copy of one handle that this
// task drops before its join: the channel closes when the last sender ends, which releases the
// receivers. Returns what they received, or −1 if the join did not rethrow a sender's exception
// as `fail_last` asks.
task<long> fan_in(channel<long> *ch, int senders, int receivers, int per, bool fail_last) {
  std::vector<long> got(static_cast<std::size_t>(senders + receivers));
  for (int r = 0; r < receivers; ++r) {
    co_await magpie::fork(&got[static_cast<std::size_t>(r)], receive_sum, r, ch);
  }
  {
    magpie::channel_sender<long> tx(*ch);
    for (int p = 0; p < senders; ++p) {
      co_await magpie::fork(&got[static_cast<std::size_t>(receivers + p)], send_through, p, tx, per,
                            fail_last && p == senders - 1);
    }
  } // only the senders' copies remain
  bool threw = false;
  try {
    co_await magpie::join();
  } catch (std::runtime_error const &) {
    threw = true;
  }
  if (threw != fail_last) {
    co_return -1;
  }
  long sum = 0;
  for (long v : got) {
    sum += v;
  }
  co_return sum;
}

TEST_P(channel_test, the_last_sender_to_end_closes_the_channel_for_waiting_receivers) {
  int const senders = 4;
  int const per = scaled(500, 50);
  long const total = static_cast<long>(senders) * per;
  for (bool fail : {false, true}) { // a sender that throws closes its share as well
    channel<long> ch(capacity());
    EXPECT_EQ(m_sched.run(fan_in, &ch, senders, 3, per, fail), total * (total - 1) / 2);
    EXPECT_TRUE(ch.is_closed());
    EXPECT_EQ(ch.size(), 0u);
  }
}

task<long> receive_nothing(int, channel<long> *ch) {
  std::optional<long> v = co_await ch->receive();
  co_return v.has_value() ? 0 : 1;
}

TEST_P(channel_test, a_sender_going_while_receivers_wait_releases_them_all) {
  int const n = 5;
  channel<long> ch(capacity());
  std::optional<magpie::channel_sender<long>> first(std::in_place, ch);
  magpie::channel_sender<long> second(*first);
  side_thread leaver([&] {
    ASSERT_TRUE(wait_until([&] { return ch.waiting_receivers() == static_cast<std::size_t>(n); }));
    first.reset(); // not the last: the receivers keep waiting
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    EXPECT_EQ(ch.waiting_receivers(), static_cast<std::size_t>(n));
    second.reset(); // the last: no wake-up may be lost
  });
  EXPECT_EQ(
      m_sched.run(fork_n<decltype(&receive_nothing), channel<long> *>, n, &receive_nothing, &ch),
      n);
}

TEST_P(channel_test, the_last_two_senders_racing_a_receiver_lose_no_value) {
  int const rounds = scaled(200, 40);
  for (int round = 0; round < rounds; ++round) {
    channel<long> ch(capacity());
    std::optional<magpie::channel_sender<long>> a(std::in_place, ch);
    std::optional<magpie::channel_sender<long>> b(std::in_place, ch);
    std::atomic<int> refused{0};
    {
      // Each thread sends one value and leaves at once; either may be the last. With capacity 0
      // a send completes only when the receiver takes it.
      side_thread one([&] {
        refused += a->send_blocking(1) ? 0 : 1;
        a.reset();
      });
      side_thread two([&] {
        refused += b->send_blocking(2) ? 0 : 1;
        b.reset();
      });
      ASSERT_EQ(m_sched.run(receive_sum, 0, &ch), 3) << "round " << round;
    }
    EXPECT_EQ(refused.load(), 0);
    EXPECT_TRUE(ch.is_closed());
  }
}

// Every primitive a task may keep as a local is aligned no more than a task's frame is
// (stacklet::alignment, 16): an over-aligned one would be under-aligned there under GCC,
// undefined behaviour that UBSan reports.
static_assert(magpie::core::stacklet::alignment <= alignof(std::max_align_t));
template <typename... Ts>
constexpr bool fit_a_frame = ((alignof(Ts) <= magpie::core::stacklet::alignment) && ...);
static_assert(
    fit_a_frame<channel<long>, channel<tracked>, magpie::mutex, magpie::shared_mutex,
                magpie::semaphore, magpie::condition_variable, magpie::event, latch,
                magpie::barrier<>, magpie::counter, magpie::task_group, magpie::future<long>>);

task<long> channel_in_the_frame(std::size_t capacity) {
  channel<long> ch(capacity); // a local: lives in this task's frame
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(&ch) % alignof(channel<long>), 0u);
  if (capacity != 0) {
    EXPECT_TRUE(co_await ch.send(41));
    auto v = co_await ch.receive();
    co_return v.value_or(0) + 1;
  }
  co_return 42;
}

TEST(channel, a_task_local_channel_is_aligned_and_works) {
  magpie::lazy_pool pool(1);
  for (std::size_t capacity : {std::size_t{0}, std::size_t{1}, std::size_t{64}}) {
    EXPECT_EQ(magpie::sync_wait(pool, channel_in_the_frame, capacity), 42);
  }
}

std::string channel_param_name(
    ::testing::TestParamInfo<std::tuple<magpie::test::sched_param, std::size_t>> const &info) {
  return to_string(std::get<0>(info.param)) + "_cap" + std::to_string(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(every_scheduler, channel_test,
                         ::testing::Combine(::testing::ValuesIn(all_schedulers()),
                                            ::testing::Values(std::size_t{0}, std::size_t{1},
                                                              std::size_t{4}, std::size_t{64})),
                         channel_param_name);

} // namespace
