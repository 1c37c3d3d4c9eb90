// The revocable hand-off of magpie::mutex, magpie::semaphore and magpie::shared_mutex's writers
// (docs/protocols.md §9.4, §9.5, §9.6).
// A take that finds the primitive's permit handed to a task whose resumption has not started yet
// takes it instead (the heir queues again, at the head), at most fairness_bound times per wait.
//
// The stage, on a two-worker pool: the root U holds the permit on worker A; W queues for it on
// worker B; then a blocker occupies B until released, so W's resumption (queued on A by U's
// release) cannot start while U runs. What each test would catch: a convoy (W served at once:
// strict hand-off), unbounded unfairness (W served late or never), a revocation racing the
// heir's start (two owners: the order log breaks), an heir that resumes owning a destroyed
// primitive or whose job touches it (ASan, or a crash), and a lost or doubled executor hold (the
// pool's destructor hangs, or stops on its own check). A plain thread handed the lock is never
// revocable (a task that takes again at once queues behind it). The semaphore's own tests: with two
// permits handed at once, only the first waiter is the heir; the second keeps its permit. The
// shared_mutex's own: a reader's lock revokes a writer heir (bounded alike); a reader handed
// its share is not revocable.

#include <atomic>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_support.hpp"
#include "sync/lock_support.hpp"

namespace {

using namespace magpie::test;
using magpie::task;

auto take(magpie::mutex &m) { return m.lock(); }
auto take(magpie::semaphore &s) { return s.acquire(); }
auto take(magpie::shared_mutex &m) { return m.lock(); }
void give(magpie::mutex &m) { m.unlock(); }
void give(magpie::semaphore &s) { s.release(); }
void give(magpie::shared_mutex &m) { m.unlock(); }
void take_blocking(magpie::mutex &m) { m.lock_blocking(); }
void take_blocking(magpie::semaphore &s) { s.acquire_blocking(); }
void take_blocking(magpie::shared_mutex &m) { m.lock_blocking(); }
std::size_t waiting(magpie::mutex &m) { return m.waiting(); }
std::size_t waiting(magpie::semaphore &s) { return s.waiting(); }
std::size_t waiting(magpie::shared_mutex &m) { return m.waiting(); }

template <typename Prim>
std::unique_ptr<Prim> make_prim(std::size_t permits) {
  if constexpr (std::is_same_v<Prim, magpie::semaphore>) {
    return std::make_unique<magpie::semaphore>(permits);
  } else {
    static_cast<void>(permits);
    return std::make_unique<Prim>();
  }
}

template <typename Prim>
struct stage {
  explicit stage(std::size_t permits = 1) : m(make_prim<Prim>(permits)) {}
  std::unique_ptr<Prim> m;
  std::atomic<int> blocker_running{0};
  std::atomic<int> release_blocker{0};
  bool give_back = true;   // whether a waiter releases what it took (set before it starts)
  std::vector<char> order; // guarded by m (for a semaphore: appended by one holder at a time)
};

/// A waiter: takes, logs `name`, gives back. -1 if the primitive was destroyed first.
template <typename Prim>
task<int> take_and_log(stage<Prim> *s, char name) {
  try {
    co_await take(*s->m);
  } catch (magpie::abandoned_wait const &) {
    co_return -1; // the primitive was destroyed first: touch nothing of it
  }
  s->order.push_back(name);
  if (s->give_back) {
    give(*s->m);
  }
  co_return 1;
}

template <typename Prim>
task<void> occupy_worker(stage<Prim> *s) {
  s->blocker_running.store(1);
  if (!wait_for(s->release_blocker)) {
    throw std::runtime_error("the blocker was never released");
  }
  co_return;
}

/// Spawns a waiter named `name` and returns once `queued` tasks wait (it runs on worker B).
template <typename Prim>
magpie::future<int> queue_waiter(magpie::pool *p, stage<Prim> *s, char name, std::size_t queued) {
  auto w = magpie::spawn(*p, take_and_log<Prim>, s, name);
  if (!wait_count([s] { return waiting(*s->m); }, queued)) {
    throw std::runtime_error("a waiter never queued");
  }
  return w;
}

/// Occupies worker B until release_blocker is set.
template <typename Prim>
magpie::future<void> block_other_worker(magpie::pool *p, stage<Prim> *s) {
  auto x = magpie::spawn(*p, occupy_worker<Prim>, s);
  if (!wait_for(s->blocker_running)) {
    throw std::runtime_error("the blocker never started");
  }
  return x;
}

/// The stage needs the root on worker A: its caller hands it over rather than running it.
std::unique_ptr<magpie::pool> two_worker_pool(sched_kind k) {
  if (k == sched_kind::busy) {
    return std::make_unique<magpie::busy_pool>(handoff_options(2));
  }
  return std::make_unique<magpie::lazy_pool>(handoff_options(2));
}

enum class stage_end {
  retake_loop,
  destroy_with_heir,
  destroy_with_revoked_heir,
  destroy_with_exhausted_heir
};

/// The stage with one permit (a mutex, or a semaphore of count 1).
template <typename Prim>
task<int> one_permit_scene(magpie::pool *p, stage<Prim> *s, stage_end how, int rounds) {
  co_await take(*s->m);
  auto w = queue_waiter(p, s, 'W', 1);
  auto x = block_other_worker(p, s);
  switch (how) {
  case stage_end::retake_loop:
    for (int i = 0; i < rounds; ++i) {
      give(*s->m);          // hands it to W, whose resumption waits behind us on A
      co_await take(*s->m); // revokes that, until the bound: then queues, and A runs W
      s->order.push_back('U');
    }
    give(*s->m);
    break;
  case stage_end::destroy_with_heir:
    give(*s->m);  // W is the heir; its resumption has not started
    s->m.reset(); // so W never holds it: its take throws abandoned_wait
    break;
  case stage_end::destroy_with_revoked_heir:
    give(*s->m);
    co_await take(*s->m); // revoked: W is queued again, its resumption still in flight
    s->m.reset();         // held by us (fine); W's take throws abandoned_wait
    break;
  case stage_end::destroy_with_exhausted_heir:
    for (std::size_t i = 0; i < Prim::fairness_bound; ++i) {
      give(*s->m);
      co_await take(*s->m); // revokes W's hand-off: its revocations are used up after the loop
    }
    give(*s->m);  // W is handed the permit for good; its resumption has not started
    s->m.reset(); // so W never holds it: its take throws abandoned_wait
    break;
  }
  s->release_blocker.store(1);
  int const r = co_await w;
  co_await x;
  co_return r;
}

/// U holds the primitive; a plain thread T queues for it; U gives it (T is handed it for good:
/// threads are never revocable) and takes it again at once, which must wait for T.
template <typename Prim>
task<void> thread_handoff_scene(stage<Prim> *s, std::thread *t) {
  co_await take(*s->m);
  *t = std::thread([s] {
    take_blocking(*s->m);
    s->order.push_back('T');
    give(*s->m);
  });
  if (!wait_count([s] { return waiting(*s->m); }, 1)) {
    give(*s->m); // let T finish (it is joined), whatever it is doing
    throw std::runtime_error("the thread never queued");
  }
  give(*s->m);          // T holds it now, for good
  co_await take(*s->m); // so this queues behind T instead of taking it back
  s->order.push_back('U');
  give(*s->m);
}

/// Joins a thread on every path out of a scope.
struct joiner {
  std::thread t;
  joiner() = default;
  joiner(joiner const &) = delete;
  joiner &operator=(joiner const &) = delete;
  ~joiner() {
    if (t.joinable()) {
      t.join();
    }
  }
};

enum class prim_kind { mutex, semaphore, shared_mutex };

char const *prim_name(prim_kind k) {
  switch (k) {
  case prim_kind::mutex:
    return "mutex_";
  case prim_kind::semaphore:
    return "semaphore_";
  case prim_kind::shared_mutex:
    break;
  }
  return "shared_mutex_";
}

struct handoff_param {
  prim_kind prim;
  sched_kind sched;
};

class handoff_test : public ::testing::TestWithParam<handoff_param> {
protected:
  /// Runs one_permit_scene on a fresh pool (destroyed before this returns: every hold ended);
  /// returns W's result and the order log.
  template <typename Prim>
  std::pair<int, std::string> one_permit(stage_end how, int rounds) const {
    stage<Prim> s;
    int r = 0;
    {
      auto p = two_worker_pool(GetParam().sched);
      r = magpie::sync_wait(*p, one_permit_scene<Prim>, p.get(), &s, how, rounds);
    }
    if (s.m != nullptr) {
      EXPECT_EQ(waiting(*s.m), 0U);
    }
    return {r, std::string(s.order.begin(), s.order.end())};
  }

  /// Runs thread_handoff_scene on a fresh pool; returns the order log.
  template <typename Prim>
  std::string thread_handoff() const {
    stage<Prim> s;
    {
      joiner j;
      auto p = two_worker_pool(GetParam().sched);
      magpie::sync_wait(*p, thread_handoff_scene<Prim>, &s, &j.t);
    }
    return {s.order.begin(), s.order.end()};
  }

  std::string thread_handoff() const {
    switch (GetParam().prim) {
    case prim_kind::mutex:
      return thread_handoff<magpie::mutex>();
    case prim_kind::semaphore:
      return thread_handoff<magpie::semaphore>();
    case prim_kind::shared_mutex:
      break;
    }
    return thread_handoff<magpie::shared_mutex>();
  }

  std::pair<int, std::string> one_permit(stage_end how, int rounds = 0) const {
    switch (GetParam().prim) {
    case prim_kind::mutex:
      return one_permit<magpie::mutex>(how, rounds);
    case prim_kind::semaphore:
      return one_permit<magpie::semaphore>(how, rounds);
    case prim_kind::shared_mutex:
      break;
    }
    return one_permit<magpie::shared_mutex>(how, rounds);
  }
};

TEST_P(handoff_test, a_retake_revokes_an_unstarted_handoff_at_most_fairness_bound_times) {
  static_assert(magpie::mutex::fairness_bound == magpie::semaphore::fairness_bound);
  static_assert(magpie::mutex::fairness_bound == magpie::shared_mutex::fairness_bound);
  int const rounds = static_cast<int>(magpie::mutex::fairness_bound) + 5;
  auto [r, order] = one_permit(stage_end::retake_loop, rounds);
  EXPECT_EQ(r, 1);
  std::string expected(static_cast<std::size_t>(rounds + 1), 'U');
  expected[magpie::mutex::fairness_bound] = 'W'; // exactly the bound's sections went first
  EXPECT_EQ(order, expected);
}

TEST_P(handoff_test, a_plain_thread_handed_the_lock_is_not_revoked) {
  EXPECT_EQ(thread_handoff(), "TU");
}

TEST_P(handoff_test, destroyed_with_an_unstarted_heir_fails_its_wait) {
  auto [r, order] = one_permit(stage_end::destroy_with_heir);
  EXPECT_EQ(r, -1);
  EXPECT_TRUE(order.empty());
}

TEST_P(handoff_test, destroyed_with_a_revoked_heir_queued_fails_its_wait) {
  auto [r, order] = one_permit(stage_end::destroy_with_revoked_heir);
  EXPECT_EQ(r, -1);
  EXPECT_TRUE(order.empty());
}

TEST_P(handoff_test, destroyed_with_an_unstarted_heir_past_the_bound_fails_its_wait) {
  auto [r, order] = one_permit(stage_end::destroy_with_exhausted_heir);
  EXPECT_EQ(r, -1);
  EXPECT_TRUE(order.empty());
}

INSTANTIATE_TEST_SUITE_P(two_workers, handoff_test,
                         ::testing::Values(handoff_param{prim_kind::mutex, sched_kind::busy},
                                           handoff_param{prim_kind::mutex, sched_kind::lazy},
                                           handoff_param{prim_kind::semaphore, sched_kind::busy},
                                           handoff_param{prim_kind::semaphore, sched_kind::lazy},
                                           handoff_param{prim_kind::shared_mutex, sched_kind::busy},
                                           handoff_param{prim_kind::shared_mutex,
                                                         sched_kind::lazy}),
                         [](auto const &info) {
                           return std::string(prim_name(info.param.prim)) +
                                  (info.param.sched == sched_kind::busy ? "busy" : "lazy");
                         });

// ---- A semaphore handing two permits at once (release(2) with two tasks queued): the first is
// the heir, the second is handed its permit for good (one heir at a time: the destructor must
// know every waiter whose resumption will touch the semaphore).

enum class two_end { retake, destroy };

task<int> two_permit_scene(magpie::pool *p, stage<magpie::semaphore> *s, two_end how) {
  auto w1 = queue_waiter(p, s, '1', 1);
  auto w2 = queue_waiter(p, s, '2', 2);
  auto x = block_other_worker(p, s);
  int r = 0;
  if (how == two_end::retake) {
    s->m->release(2);         // 1 is the heir, 2 holds its permit for good; neither runs yet
    co_await s->m->acquire(); // no permit free: revokes 1's (not 2's)
    if (s->m->waiting() != 1) {
      throw std::runtime_error("the revoked heir is not queued again");
    }
    s->release_blocker.store(1);
    r = co_await w2; // 2 ran on its own permit, and its release handed that permit to 1
    r = 10 * r + co_await w1;
    s->m->release(); // ours (1's revoked permit)
  } else {
    s->give_back = false; // 2 keeps the permit of a destroyed semaphore: it touches nothing
    s->m->release(2);     // 1 is the heir, 2 holds its permit for good; neither runs yet
    s->m.reset();         // 1's take throws abandoned_wait; 2's take succeeds
    s->release_blocker.store(1);
    r = co_await w2;
    r = 10 * r + co_await w1;
  }
  co_await x;
  co_return r;
}

class semaphore_handoff_test : public ::testing::TestWithParam<sched_kind> {
protected:
  std::pair<int, std::string> run(two_end how) const {
    stage<magpie::semaphore> s(0);
    int r = 0;
    {
      auto p = two_worker_pool(GetParam());
      r = magpie::sync_wait(*p, two_permit_scene, p.get(), &s, how);
    }
    if (s.m != nullptr) {
      EXPECT_EQ(s.m->count(), 2U); // every permit came back
      EXPECT_EQ(s.m->waiting(), 0U);
    }
    return {r, std::string(s.order.begin(), s.order.end())};
  }
};

TEST_P(semaphore_handoff_test, only_the_first_of_two_waiters_handed_at_once_is_revocable) {
  auto [r, order] = run(two_end::retake);
  EXPECT_EQ(r, 11);
  EXPECT_EQ(order, "21"); // 2 ran on its own permit; 1 only on the permit 2 gave back
}

TEST_P(semaphore_handoff_test, destroyed_with_two_unstarted_handoffs_fails_only_the_heir) {
  auto [r, order] = run(two_end::destroy);
  EXPECT_EQ(r, 10 - 1); // 2 took its permit (1); 1's take threw abandoned_wait (-1)
  EXPECT_EQ(order, "2");
}

INSTANTIATE_TEST_SUITE_P(two_workers, semaphore_handoff_test,
                         ::testing::Values(sched_kind::busy, sched_kind::lazy),
                         [](auto const &info) {
                           return std::string(info.param == sched_kind::busy ? "busy" : "lazy");
                         });

// ---- A shared_mutex: a reader's lock revokes a writer heir as a writer's does (bounded alike,
// and the heir's exclusivity kept: the order log is appended by U under its share, and by W
// only once it holds the lock alone); a reader is handed its share for good (a writer's lock
// that finds only a reader handed the lock queues behind it).

enum class shared_end { reader_retakes, writer_after_reader };

/// A reader: takes its share, logs `name`, gives it back.
task<int> read_and_log(stage<magpie::shared_mutex> *s, char name) {
  co_await s->m->lock_shared();
  s->order.push_back(name);
  s->m->unlock_shared();
  co_return 1;
}

task<int> shared_scene(magpie::pool *p, stage<magpie::shared_mutex> *s, shared_end how,
                       int rounds) {
  co_await s->m->lock();
  magpie::future<int> w;
  if (how == shared_end::reader_retakes) {
    w = queue_waiter(p, s, 'W', 1); // a writer
  } else {
    w = magpie::spawn(*p, read_and_log, s, 'R');
    if (!wait_count([s] { return s->m->waiting(); }, 1)) {
      throw std::runtime_error("the reader never queued");
    }
  }
  auto x = block_other_worker(p, s);
  if (how == shared_end::reader_retakes) {
    s->m->unlock(); // hands the lock to W, whose resumption waits behind us
    for (int i = 0; i < rounds; ++i) {
      co_await s->m->lock_shared(); // revokes that, until the bound: then queues, and A runs W
      s->order.push_back('U');
      s->m->unlock_shared(); // hands the lock back to W (the heir again)
    }
  } else {
    s->m->unlock();        // hands R its share, for good
    co_await s->m->lock(); // cannot revoke a reader: queues, A runs R, whose unlock hands us it
    s->order.push_back('U');
    s->m->unlock();
  }
  s->release_blocker.store(1);
  int const r = co_await w;
  co_await x;
  co_return r;
}

class shared_handoff_test : public ::testing::TestWithParam<sched_kind> {
protected:
  std::pair<int, std::string> run(shared_end how, int rounds = 0) const {
    stage<magpie::shared_mutex> s;
    int r = 0;
    {
      auto p = two_worker_pool(GetParam());
      r = magpie::sync_wait(*p, shared_scene, p.get(), &s, how, rounds);
    }
    EXPECT_EQ(s.m->waiting(), 0U);
    EXPECT_TRUE(s.m->try_lock()); // free again: every share and the writer's lock came back
    s.m->unlock();
    return {r, std::string(s.order.begin(), s.order.end())};
  }
};

TEST_P(shared_handoff_test, a_readers_lock_revokes_a_writer_heir_at_most_fairness_bound_times) {
  int const rounds = static_cast<int>(magpie::shared_mutex::fairness_bound) + 5;
  auto [r, order] = run(shared_end::reader_retakes, rounds);
  EXPECT_EQ(r, 1);
  std::string expected(static_cast<std::size_t>(rounds), 'U');
  expected.insert(magpie::shared_mutex::fairness_bound, 1, 'W'); // W between U's sections
  EXPECT_EQ(order, expected);
}

TEST_P(shared_handoff_test, a_reader_handed_its_share_is_not_revoked) {
  auto [r, order] = run(shared_end::writer_after_reader);
  EXPECT_EQ(r, 1);
  EXPECT_EQ(order, "RU");
}

INSTANTIATE_TEST_SUITE_P(two_workers, shared_handoff_test,
                         ::testing::Values(sched_kind::busy, sched_kind::lazy),
                         [](auto const &info) {
                           return std::string(info.param == sched_kind::busy ? "busy" : "lazy");
                         });

} // namespace
