// magpie::channel's timed sends and receives (send_for / send_until, receive_for / receive_until,
// and the plain-thread forms; Linux), on every scheduler and capacity (0 = rendezvous, 1, 4): a
// deadline that passes reports full / empty, never early, and leaves a send's value untouched; a
// value before the deadline is delivered and the timer cancelled; a past deadline does not
// suspend; close ends timed waits with `closed`; the hunt (producers and consumers, tasks and
// threads, every operation timed with deadlines around the time a value takes, retried until the
// channel closes: every value received exactly once, no timeout early); deadlines of 1–3 µs on a
// channel nothing reaches (every wait must time out: a lost timeout leaves a task asleep); the
// channel destroyed as deadlines expire (each wait ends once, by its deadline or abandoned_wait;
// ASan sees no use after free); values moved, never copied, none leaked, the copying overload;
// misuse inside a fork–join scope; and the reactor's heaps empty after every test.

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_support.hpp"
#include "magpie/io.hpp"
#include "sync/sync_support.hpp"
#include "sync/timed_support.hpp"

namespace {

using namespace magpie::test;
using namespace std::chrono_literals;
using magpie::channel;
using magpie::latch;
using magpie::receive_status;
using magpie::send_status;
using magpie::task;
using magpie::io::clock;

using box = std::unique_ptr<long>; // a move-only value whose moved-from state shows (null)

class channel_timed_test
    : public ::testing::TestWithParam<std::tuple<magpie::test::sched_param, std::size_t>> {
protected:
  channel_timed_test() : m_dog(current_test_name()), m_sched(std::get<0>(GetParam())) {}
  ~channel_timed_test() override { EXPECT_EQ(pending_timers(), 0u) << "a deadline left armed"; }
  std::size_t capacity() const { return std::get<1>(GetParam()); }
  watchdog m_dog;
  any_scheduler m_sched;
};

/// Fills `ch` so that a send must wait (a rendezvous channel is always "full" without a receiver).
void fill(channel<box> &ch) {
  for (std::size_t k = 0; k < ch.capacity(); ++k) {
    ASSERT_EQ(ch.try_send(std::make_unique<long>(-1)), send_status::sent);
  }
}

TEST_P(channel_timed_test, a_receive_on_an_empty_channel_times_out_never_early) {
  channel<box> ch(capacity());
  auto body = [](channel<box> *c) -> task<int> {
    auto const start = clock::now();
    magpie::receive_result<box> r = co_await c->receive_for(5ms);
    bool const on_time = clock::now() - start >= 5ms;
    if (r.status != receive_status::empty || r.value.has_value() || r || !on_time) {
      co_return -1;
    }
    auto const start2 = clock::now();
    magpie::receive_result<box> r2 =
        co_await c->receive_until(std::chrono::system_clock::now() + 3ms); // another clock
    bool const on_time2 = clock::now() - start2 >= 2ms; // system_clock → io::clock: not exact
    co_return r2.status == receive_status::empty &&on_time2 ? 1 : -2;
  };
  EXPECT_EQ(m_sched.run(body, &ch), 1);
  EXPECT_EQ(ch.waiting_receivers(), 0u);
}

TEST_P(channel_timed_test, a_send_on_a_full_channel_times_out_and_keeps_its_value) {
  channel<box> ch(capacity());
  fill(ch);
  auto body = [](channel<box> *c) -> task<int> {
    box v = std::make_unique<long>(7);
    auto const start = clock::now();
    send_status const s = co_await c->send_for(std::move(v), 5ms);
    bool const on_time = clock::now() - start >= 5ms;
    if (s != send_status::full || !on_time || v == nullptr || *v != 7) {
      co_return -1; // timed out early, or the value was taken without being sent
    }
    send_status const s2 = co_await c->send_until(std::move(v), clock::now() + 2ms);
    co_return s2 == send_status::full &&v != nullptr ? 1 : -2;
  };
  EXPECT_EQ(m_sched.run(body, &ch), 1);
  EXPECT_EQ(ch.waiting_senders(), 0u);
  EXPECT_EQ(ch.size(), capacity()) << "a timed-out send left a value behind";
}

/// Sends `v` after about `d`, from a plain thread.
struct late_sender {
  late_sender(channel<box> &ch, std::chrono::microseconds d, long v)
      : m_thread([&ch, d, v] {
          std::this_thread::sleep_for(d);
          EXPECT_TRUE(ch.send_blocking(std::make_unique<long>(v)));
        }) {}
  side_thread m_thread;
};

TEST_P(channel_timed_test, a_value_before_the_deadline_is_received_and_the_timer_cancelled) {
  channel<box> ch(capacity());
  late_sender sender(ch, 2000us, 42);
  auto body = [](channel<box> *c) -> task<long> {
    auto const start = clock::now();
    magpie::receive_result<box> r = co_await c->receive_until(clock::now() + 60s);
    if (!r || r.status != receive_status::received || clock::now() - start > 30s) {
      co_return -1;
    }
    co_return **r.value;
  };
  EXPECT_EQ(m_sched.run(body, &ch), 42);
  // The fixture checks that the 60 s deadline is no longer armed.
}

TEST_P(channel_timed_test, room_before_the_deadline_sends_and_the_timer_is_cancelled) {
  channel<box> ch(capacity());
  fill(ch);
  std::atomic<long> got{0};
  {
    side_thread receiver([&] {
      std::this_thread::sleep_for(2ms);
      long sum = 0;
      for (std::size_t k = 0; k <= ch.capacity(); ++k) { // the fill, then the timed send's value
        std::optional<box> v = ch.receive_blocking();
        sum += v && *v ? **v : 1000;
      }
      got = sum;
    });
    auto body = [](channel<box> *c) -> task<int> {
      box v = std::make_unique<long>(9);
      send_status const s = co_await c->send_for(std::move(v), 60s);
      co_return s == send_status::sent &&v == nullptr ? 1 : -1; // moved from: sent
    };
    EXPECT_EQ(m_sched.run(body, &ch), 1);
  } // joins the receiver
  EXPECT_EQ(got.load(), 9 - static_cast<long>(capacity()));
}

TEST_P(channel_timed_test, a_past_deadline_does_not_suspend_and_a_ready_channel_wins) {
  channel<box> ch(capacity());
  auto body = [](channel<box> *c) -> task<int> {
    auto const start = clock::now();
    int score = 0;
    magpie::receive_result<box> a = co_await c->receive_for(0s);
    magpie::receive_result<box> b = co_await c->receive_until(clock::now() - 1h);
    score += a.status == receive_status::empty && b.status == receive_status::empty ? 1 : 0;
    if (c->capacity() > 0) { // a buffered value wins over a past deadline (as try_receive)
      box v = std::make_unique<long>(5);
      send_status const s = co_await c->send_for(std::move(v), -5ms);
      magpie::receive_result<box> r = co_await c->receive_for(-5ms);
      score += s == send_status::sent && r && **r.value == 5 ? 2 : 0;
    } else {
      score += 2;
    }
    while (c->try_send(std::make_unique<long>(0)) == send_status::sent) {
    } // full now (a rendezvous channel always is without receivers)
    box v = std::make_unique<long>(6);
    send_status const full =
        co_await c->send_until(std::move(v), std::chrono::system_clock::now() - 1s);
    score += full == send_status::full && v != nullptr ? 4 : 0;
    score += clock::now() - start < 1s ? 8 : 0;
    co_return score;
  };
  EXPECT_EQ(m_sched.run(body, &ch), 15);
}

TEST_P(channel_timed_test, close_ends_timed_waits_with_closed) {
  int const n = 3;
  {
    channel<box> ch(capacity());
    side_thread closer([&] {
      ASSERT_TRUE(
          wait_until([&] { return ch.waiting_receivers() == static_cast<std::size_t>(n); }));
      ch.close();
    });
    auto receiver = [](int, channel<box> *c) -> task<long> {
      magpie::receive_result<box> r = co_await c->receive_for(60s);
      co_return r.status == receive_status::closed && !r.value ? 1 : 0;
    };
    EXPECT_EQ(m_sched.run(fork_n<decltype(+receiver), channel<box> *>, n, +receiver, &ch), n);
  }
  {
    channel<box> ch(capacity());
    fill(ch);
    side_thread closer([&] {
      ASSERT_TRUE(wait_until([&] { return ch.waiting_senders() == static_cast<std::size_t>(n); }));
      ch.close();
    });
    auto sender = [](int i, channel<box> *c) -> task<long> {
      box v = std::make_unique<long>(i);
      send_status const s = co_await c->send_for(std::move(v), 60s);
      co_return s == send_status::closed &&v != nullptr &&*v == i ? 1 : 0;
    };
    EXPECT_EQ(m_sched.run(fork_n<decltype(+sender), channel<box> *>, n, +sender, &ch), n);
    // Closed and not drained: the fill is still there; then closed and drained.
    auto drain = [](channel<box> *c) -> task<long> {
      long got = 0;
      for (;;) {
        magpie::receive_result<box> r = co_await c->receive_for(60s);
        if (r.status != receive_status::received) {
          co_return r.status == receive_status::closed ? got : -1;
        }
        ++got;
      }
    };
    EXPECT_EQ(m_sched.run(drain, &ch), static_cast<long>(capacity()));
  }
}

// ----- the hunt: every operation timed, deadlines around the time a value takes -----

struct hunt {
  channel<long> *ch;
  latch *producers_done;
  int producers;
  int per_producer;
  std::vector<std::atomic<int>> *seen; // receptions per value
  std::atomic<int> *early;             // timeouts before their deadline
  std::atomic<int> *timeouts;
  std::atomic<int> *bad; // anything else that must not happen
  bool paced_producers;  // producers sleep between values (else consumers do): which side waits
};

/// The pause of the paced side before its k-th value: 0–300 µs, so that the other side's
/// deadlines (0–300 µs) and the values' arrivals meet.
std::chrono::microseconds pace(int i, int k) { return spread(i * 7 + k * 131, 0, 300); }

/// Sends values with timed sends, retrying each on `full` until it is sent.
task<long> hunt_producer(int i, hunt *h) {
  for (int k = 0; k < h->per_producer; ++k) {
    if (h->paced_producers) {
      co_await magpie::io::sleep_for(pace(i, k));
    }
    long const v = static_cast<long>(i) * h->per_producer + k;
    for (int attempt = 0;; ++attempt) {
      auto const d = spread(i * 7919 + k * 31 + attempt, 0, 300);
      auto const start = clock::now();
      send_status const s = co_await h->ch->send_for(v, d); // a copy (the move paths: box)
      if (s == send_status::sent) {
        break;
      }
      if (s != send_status::full) {
        h->bad->fetch_add(1); // closed while producing
        co_return 0;
      }
      if (clock::now() - start < d) {
        h->early->fetch_add(1);
      }
      h->timeouts->fetch_add(1);
    }
  }
  h->producers_done->count_down();
  co_return 0;
}

/// Receives with timed receives until the channel is closed and drained; the sum received.
task<long> hunt_consumer(int i, hunt *h) {
  long sum = 0;
  for (int k = 0;; ++k) {
    if (!h->paced_producers) {
      co_await magpie::io::sleep_for(pace(i, k));
    }
    auto const d = spread(i * 104729 + k, 0, 300);
    auto const start = clock::now();
    magpie::receive_result<long> r = co_await h->ch->receive_for(d);
    if (r.status == receive_status::closed) {
      co_return sum;
    }
    if (r.status == receive_status::empty) {
      if (clock::now() - start < d) {
        h->early->fetch_add(1);
      }
      h->timeouts->fetch_add(1);
      continue;
    }
    if (!r.value) {
      h->bad->fetch_add(1);
      co_return sum;
    }
    (*h->seen)[static_cast<std::size_t>(*r.value)].fetch_add(1);
    sum += *r.value;
  }
}

/// Children: producers, one closer (once the producers and the threads are done), consumers.
task<long> hunt_child(int i, hunt *h, int closer) {
  long r = 0;
  if (i < h->producers) {
    co_await magpie::call(&r, hunt_producer, i, h);
  } else if (i == closer) {
    co_await h->producers_done->wait();
    h->ch->close();
  } else {
    co_await magpie::call(&r, hunt_consumer, i, h);
  }
  co_await magpie::join();
  co_return r;
}

TEST_P(channel_timed_test, sends_and_receives_racing_deadlines_lose_and_duplicate_nothing) {
  int const task_producers = 3;
  int const thread_producers = 1;
  int const per_producer = scaled(150, 30);
  int const consumers = 3;
  int const producers = task_producers + thread_producers;
  int const values = producers * per_producer;
  for (int round = 0; round < scaled(4, 2); ++round) {
    bool const paced_producers = round % 2 == 0;
    channel<long> ch(capacity());
    latch producers_done(producers);
    std::vector<std::atomic<int>> seen(static_cast<std::size_t>(values));
    std::atomic<int> early{0};
    std::atomic<int> timeouts{0};
    std::atomic<int> bad{0};
    hunt h{&ch,    &producers_done, task_producers, per_producer,   &seen,
           &early, &timeouts,       &bad,           paced_producers};
    std::atomic<long> thread_sum{0};
    long expected = 0;
    for (int v = 0; v < values; ++v) {
      expected += v;
    }
    long task_sum = 0;
    {
      // A plain thread producing with the blocking timed send (values after the tasks'), and one
      // consuming with the blocking timed receive.
      side_thread thread_producer([&] {
        for (int k = 0; k < per_producer; ++k) {
          if (paced_producers) {
            std::this_thread::sleep_for(pace(task_producers, k));
          }
          long const v = static_cast<long>(task_producers) * per_producer + k;
          for (int attempt = 0;; ++attempt) {
            auto const d = spread(k * 13 + attempt, 0, 300);
            auto const start = clock::now();
            send_status const s = ch.send_blocking_for(v, d);
            if (s == send_status::sent) {
              break;
            }
            if (s != send_status::full) {
              bad.fetch_add(1);
              return;
            }
            if (clock::now() - start < d) {
              early.fetch_add(1);
            }
          }
        }
        producers_done.count_down();
      });
      side_thread thread_consumer([&] {
        long sum = 0;
        for (int k = 0;; ++k) {
          if (!paced_producers) {
            std::this_thread::sleep_for(pace(99, k));
          }
          auto const d = spread(k * 17, 0, 300);
          auto const start = clock::now();
          magpie::receive_result<long> r = ch.receive_blocking_for(d);
          if (r.status == receive_status::closed) {
            break;
          }
          if (r.status == receive_status::empty) {
            if (clock::now() - start < d) {
              early.fetch_add(1);
            }
            continue;
          }
          seen[static_cast<std::size_t>(*r.value)].fetch_add(1);
          sum += *r.value;
        }
        thread_sum = sum;
      });
      int const children = task_producers + 1 + consumers;
      task_sum = m_sched.run(fork_n<decltype(&hunt_child), hunt *, int>, children, &hunt_child, &h,
                             task_producers);
    } // joins the threads
    EXPECT_EQ(task_sum + thread_sum.load(), expected);
    int lost = 0;
    int duplicated = 0;
    for (auto const &s : seen) {
      lost += s.load() == 0 ? 1 : 0;
      duplicated += s.load() > 1 ? 1 : 0;
    }
    EXPECT_EQ(lost, 0);
    EXPECT_EQ(duplicated, 0);
    EXPECT_EQ(early.load(), 0) << "a timed send or receive gave up before its deadline";
    EXPECT_EQ(bad.load(), 0);
    EXPECT_EQ(ch.waiting_senders() + ch.waiting_receivers(), 0u);
    if (round < 2) {
      std::printf("[ info ] round %d (%s paced): %d task timeouts\n", round,
                  paced_producers ? "producers" : "consumers", timeouts.load());
    }
  }
}

/// Waits `waits` times with deadlines of 1–3 µs on a channel nothing reaches; counts timeouts.
task<long> time_out_again_and_again(int i, channel<box> *ch, int waits, std::atomic<int> *done) {
  long timeouts = 0;
  for (int k = 0; k < waits; ++k) {
    auto const d = spread(i * waits + k, 1, 3);
    if (i % 2 == 0) {
      magpie::receive_result<box> r = co_await ch->receive_for(d);
      timeouts += r.status == receive_status::empty ? 1 : 0;
    } else {
      box v = std::make_unique<long>(i);
      send_status const s = co_await ch->send_for(std::move(v), d);
      timeouts += s == send_status::full && v != nullptr ? 1 : 0;
    }
  }
  done->fetch_add(1);
  co_return timeouts;
}

TEST_P(channel_timed_test, tiny_deadlines_on_a_channel_nothing_reaches_all_time_out) {
  // Receivers on an empty channel and senders on a full one; with a rendezvous channel the two
  // would meet, so there only receivers wait (odd children send into a channel that is full).
  channel<box> ch(capacity());
  channel<box> full(capacity());
  fill(full);
  int const n = scaled(16, 4);
  int const waits = scaled(200, 40);
  std::atomic<int> done{0};
  // A lost timeout leaves its task asleep: the watchdog then reports the hang.
  auto child = [](int i, channel<box> *receive_on, channel<box> *send_on, int w,
                  std::atomic<int> *d) -> task<long> {
    long r = 0;
    co_await magpie::call(&r, time_out_again_and_again, i, i % 2 == 0 ? receive_on : send_on, w, d);
    co_await magpie::join();
    co_return r;
  };
  long const timeouts =
      m_sched.run(fork_n<decltype(+child), channel<box> *, channel<box> *, int, std::atomic<int> *>,
                  n, +child, &ch, &full, waits, &done);
  EXPECT_EQ(timeouts, long{n} * waits);
  EXPECT_EQ(ch.waiting_receivers() + full.waiting_senders(), 0u);
}

/// A timed receive on a channel nothing sends to, destroyed as the deadlines expire: counts how
/// the wait ended.
task<long> receive_doomed(int i, channel<box> *ch, std::atomic<int> *abandoned,
                          std::atomic<int> *timed_out) {
  try {
    magpie::receive_result<box> r = co_await ch->receive_for(spread(i, 300, 1500));
    EXPECT_EQ(r.status, receive_status::empty);
    timed_out->fetch_add(1);
  } catch (magpie::abandoned_wait const &) {
    abandoned->fetch_add(1);
  }
  co_return 1;
}

TEST_P(channel_timed_test, destroyed_as_deadlines_expire_each_wait_ends_once) {
  int const n = scaled(24, 6);
  int total_abandoned = 0;
  for (int round = 0; round < scaled(20, 4); ++round) {
    auto ch = std::make_unique<channel<box>>(capacity());
    std::atomic<int> abandoned{0};
    std::atomic<int> timed_out{0};
    {
      auto thread_waits = [&](int i) {
        try {
          magpie::receive_result<box> r = ch->receive_blocking_for(spread(i, 300, 1500));
          EXPECT_EQ(r.status, receive_status::empty);
          timed_out.fetch_add(1);
        } catch (magpie::abandoned_wait const &) {
          abandoned.fetch_add(1);
        }
      };
      side_thread t0([&] { thread_waits(round); });
      side_thread t1([&] { thread_waits(round + 5); });
      side_thread destroyer([&] {
        // Only once every waiter is queued or done (read the done count first: see
        // timed_support.hpp's destroyed_as_deadlines_expire).
        ASSERT_TRUE(wait_until([&] {
          int const done = timed_out.load();
          return static_cast<int>(ch->waiting_receivers()) + done == n + 2;
        }));
        std::this_thread::sleep_for(spread(round, 0, 1200));
        ch.reset();
      });
      EXPECT_EQ(m_sched.run(fork_n<decltype(&receive_doomed), channel<box> *, std::atomic<int> *,
                                   std::atomic<int> *>,
                            n, &receive_doomed, ch.get(), &abandoned, &timed_out),
                n);
    }
    EXPECT_EQ(abandoned.load() + timed_out.load(), n + 2);
    total_abandoned += abandoned.load();
  }
  std::printf("[ info ] %d waits abandoned, the others timed out\n", total_abandoned);
}

TEST_P(channel_timed_test, values_are_moved_never_copied_and_none_is_leaked) {
  tracked_counters().reset();
  {
    channel<tracked> ch(capacity());
    side_thread receiver([&] {
      for (int k = 0; k < 20; ++k) {
        magpie::receive_result<tracked> r = ch.receive_blocking_for(10s);
        EXPECT_TRUE(r);
        EXPECT_EQ(r.value->value(), k);
      }
    });
    auto body = [](channel<tracked> *c) -> task<int> {
      int sent = 0;
      for (int k = 0; k < 20; ++k) {
        tracked v(k);
        send_status const s = co_await c->send_for(std::move(v), 10s);
        sent += s == send_status::sent ? 1 : 0;
      }
      co_return sent;
    };
    EXPECT_EQ(m_sched.run(body, &ch), 20);
  }
  EXPECT_EQ(tracked_counters().copies.load(), 0);
  {
    // The copying overload: the caller's value stays, whatever the outcome.
    channel<tracked> ch(capacity() + 1);
    auto body = [](channel<tracked> *c) -> task<int> {
      tracked const v(3);
      send_status const sent = co_await c->send_for(v, 1ms); // room for one more
      while (c->try_send(tracked(0)) == send_status::sent) {
      }
      send_status const full = co_await c->send_for(v, 1ms); // nobody receives
      co_return sent == send_status::sent &&full == send_status::full &&v.value() == 3 ? 1 : 0;
    };
    EXPECT_EQ(m_sched.run(body, &ch), 1);
    EXPECT_EQ(tracked_counters().copies.load(), 2) << "one copy per send_for(T const &), no more";
    magpie::receive_result<tracked> first = ch.receive_blocking_for(0s);
    ASSERT_TRUE(first);
    EXPECT_EQ(first.value->value(), 3);
  }
  EXPECT_EQ(tracked_counters().live(), 0);
  EXPECT_EQ(tracked_counters().errors.load(), 0);
}

task<int> timed_receive_in_scope(channel<long> *ch) {
  int x = 0;
  co_await magpie::fork(
      &x, [](int v) -> task<int> { co_return v; }, 5);
  int threw = 0;
  try {
    (void)co_await ch->receive_for(1s);
  } catch (std::logic_error const &) {
    threw += 1;
  }
  try {
    long const v = 1;
    (void)co_await ch->send_for(v, 1s);
  } catch (std::logic_error const &) {
    threw += 1;
  }
  co_await magpie::join();
  co_return threw == 2 ? x : -1;
}

TEST_P(channel_timed_test, misuse_waiting_inside_a_fork_join_scope) {
  channel<long> ch(capacity());
  EXPECT_EQ(m_sched.run(timed_receive_in_scope, &ch), 5);
  EXPECT_EQ(ch.size(), 0u) << "a refused send sent";
}

TEST(channel_timed_plain, threads_time_out_keep_their_value_and_receive_what_comes) {
  channel<box> ch(1);
  auto const start = clock::now();
  magpie::receive_result<box> r = ch.receive_blocking_for(3ms);
  EXPECT_EQ(r.status, receive_status::empty);
  EXPECT_GE(clock::now() - start, 3ms);
  ASSERT_EQ(ch.try_send(std::make_unique<long>(1)), send_status::sent);
  box v = std::make_unique<long>(2);
  auto const start2 = clock::now();
  EXPECT_EQ(ch.send_blocking_until(std::move(v), clock::now() + 3ms), send_status::full);
  EXPECT_GE(clock::now() - start2, 3ms);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(*v, 2);
  {
    side_thread taker([&] {
      std::this_thread::sleep_for(2ms);
      std::optional<box> got = ch.receive_blocking();
      EXPECT_TRUE(got && **got == 1);
    });
    EXPECT_EQ(ch.send_blocking_for(std::move(v), 60s), send_status::sent);
    EXPECT_EQ(v, nullptr);
  }
  magpie::receive_result<box> last = ch.receive_blocking_until(std::chrono::system_clock::now());
  ASSERT_TRUE(last);
  EXPECT_EQ(**last.value, 2);
  ch.close();
  EXPECT_EQ(ch.receive_blocking_for(60s).status, receive_status::closed);
  EXPECT_EQ(ch.send_blocking_for(std::make_unique<long>(3), 60s), send_status::closed);
}

std::string timed_channel_param_name(
    ::testing::TestParamInfo<std::tuple<magpie::test::sched_param, std::size_t>> const &info) {
  return to_string(std::get<0>(info.param)) + "_cap" + std::to_string(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(every_scheduler, channel_timed_test,
                         ::testing::Combine(::testing::ValuesIn(all_schedulers()),
                                            ::testing::Values(std::size_t{0}, std::size_t{1},
                                                              std::size_t{4})),
                         timed_channel_param_name);

} // namespace
