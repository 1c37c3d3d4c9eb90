// The blocking forms (the ones for plain threads: wait_blocking, lock_blocking, send_blocking,
// get() …) inside a task: each throws std::logic_error naming the primitive and the task form to
// use instead, and leaves the primitive as it was. On a one-worker pool a blocking form that ran
// would block the only worker, and the pool would hang; on more workers it would still tie one up.
//
// Each form is called while it would have to wait, and a plain thread stands by to release the
// primitive after a while (`rescue`): a form that is not refused then returns instead of hanging,
// and the test fails on the missing exception. When the form is refused, nothing waits for that.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include <gtest/gtest.h>

#include "common/test_support.hpp"
#include "sync/sync_support.hpp"

namespace {

using namespace magpie::test;
using namespace std::chrono_literals;
using magpie::task;
using clock_type = std::chrono::steady_clock;

/// Runs `release` on a plain thread after `patience` unless dismissed first (by the destructor).
class rescue {
public:
  explicit rescue(std::function<void()> release, std::chrono::milliseconds patience = 2s)
      : m_release(std::move(release)), m_thread([this, patience] { watch(patience); }) {}
  rescue(rescue const &) = delete;
  rescue &operator=(rescue const &) = delete;
  ~rescue() {
    {
      std::lock_guard lock(m_mutex);
      m_done = true;
    }
    m_cv.notify_one();
    m_thread.join();
  }

private:
  void watch(std::chrono::milliseconds patience) {
    std::unique_lock lock(m_mutex);
    if (!m_cv.wait_for(lock, patience, [&] { return m_done; })) {
      lock.unlock();
      m_release(); // the form was not refused: let it return
    }
  }

  std::function<void()> m_release;
  std::mutex m_mutex;
  std::condition_variable m_cv;
  bool m_done = false;
  std::thread m_thread; // last: started once the members it reads exist
};

/// Inside a task: calls `*form` and returns the message of the std::logic_error it threw, or ""
/// if it returned.
template <typename Form>
task<std::string> refusal_of(Form *form) {
  try {
    (*form)();
  } catch (std::logic_error const &e) {
    co_return e.what();
  }
  co_return "";
}

/// Expects `form`, called inside a task on `s`, to be refused with a message that names `name`
/// and says what to co_await instead. `release` lets a form that was not refused return.
template <typename Form>
void expect_refused(any_scheduler &s, std::string const &name, Form form,
                    std::function<void()> release) {
  std::string what;
  {
    rescue r(std::move(release));
    what = s.run(refusal_of<Form>, &form);
  }
  EXPECT_NE(what, "") << name << " was not refused inside a task";
  EXPECT_NE(what.find(name), std::string::npos) << what;
  EXPECT_NE(what.find("co_await"), std::string::npos) << what;
}

using blocking_refusal_test = scheduler_test;

TEST_P(blocking_refusal_test, event) {
  magpie::event ev;
  auto const set = [&] { ev.set(); };
  expect_refused(
      m_sched, "magpie::event::wait_blocking", [&] { ev.wait_blocking(); }, set);
#if defined(__linux__)
  expect_refused(
      m_sched, "magpie::event::wait_blocking_for", [&] { (void)ev.wait_blocking_for(60s); }, set);
  expect_refused(
      m_sched, "magpie::event::wait_blocking_for/_until",
      [&] { (void)ev.wait_blocking_until(clock_type::now() + 60s); }, set);
#endif
  EXPECT_EQ(ev.waiting(), 0U);
  EXPECT_FALSE(ev.is_set());
  // Refused even when it would pass at once: the misuse shows on every run, not only on the
  // ones where it would hang.
  ev.set();
  expect_refused(
      m_sched, "magpie::event::wait_blocking", [&] { ev.wait_blocking(); }, [] {});
  magpie::event automatic(magpie::event::reset::automatic, true);
  expect_refused(
      m_sched, "magpie::event::wait_blocking", [&] { automatic.wait_blocking(); }, [] {});
  EXPECT_TRUE(automatic.try_wait()) << "a refused wait consumed the auto-reset flag";
}

TEST_P(blocking_refusal_test, latch) {
  magpie::latch l(2);
  auto const open = [&] { l.count_down(2); };
  expect_refused(
      m_sched, "magpie::latch::wait_blocking", [&] { l.wait_blocking(); }, open);
  expect_refused(
      m_sched, "magpie::latch::arrive_and_wait_blocking", [&] { l.arrive_and_wait_blocking(); },
      [&] { l.count_down(); }); // it arrived (one of two): the other arrival
#if defined(__linux__)
  expect_refused(
      m_sched, "magpie::latch::wait_blocking_for", [&] { (void)l.wait_blocking_for(60s); }, open);
  expect_refused(
      m_sched, "magpie::latch::wait_blocking_for/_until",
      [&] { (void)l.wait_blocking_until(clock_type::now() + 60s); }, open);
#endif
  EXPECT_EQ(l.waiting(), 0U);
  l.count_down(); // a refused arrive_and_wait_blocking did not count down: one more is needed
  EXPECT_FALSE(l.try_wait());
  l.count_down();
  EXPECT_TRUE(l.try_wait());
  expect_refused(
      m_sched, "magpie::latch::wait_blocking", [&] { l.wait_blocking(); }, [] {});
}

TEST_P(blocking_refusal_test, barrier) {
  magpie::barrier b(2);
  expect_refused(
      m_sched, "magpie::barrier::arrive_and_wait_blocking", [&] { b.arrive_and_wait_blocking(); },
      [&] { b.arrive_and_drop(); });
  EXPECT_EQ(b.waiting(), 0U);
  // It did not arrive: a phase still needs both participants.
  bool completed = false;
  {
    side_thread other([&] {
      b.arrive_and_wait_blocking();
      completed = true;
    });
    ASSERT_TRUE(wait_until([&] { return b.waiting() == 1; }));
    b.arrive_and_wait_blocking();
  }
  EXPECT_TRUE(completed);
}

TEST_P(blocking_refusal_test, channel_receive) {
  magpie::channel<int> ch(1);
  auto const close = [&] { ch.close(); };
  expect_refused(
      m_sched, "magpie::channel::receive_blocking", [&] { (void)ch.receive_blocking(); }, close);
#if defined(__linux__)
  expect_refused(
      m_sched, "magpie::channel::receive_blocking_for", [&] { (void)ch.receive_blocking_for(60s); },
      close);
  expect_refused(
      m_sched, "magpie::channel::receive_blocking_for/_until",
      [&] { (void)ch.receive_blocking_until(clock_type::now() + 60s); }, close);
#endif
  EXPECT_EQ(ch.waiting_receivers(), 0U);
  EXPECT_FALSE(ch.is_closed());
  // With a value ready it is refused too, and the value stays.
  ASSERT_EQ(ch.try_send(5), magpie::send_status::sent);
  expect_refused(
      m_sched, "magpie::channel::receive_blocking", [&] { (void)ch.receive_blocking(); }, [] {});
  EXPECT_EQ(ch.try_receive(), std::optional<int>(5));
}

TEST_P(blocking_refusal_test, channel_send) {
  magpie::channel<int> ch(1);
  ASSERT_EQ(ch.try_send(1), magpie::send_status::sent); // full: a send would wait
  auto const drain = [&] { (void)ch.try_receive(); };
  expect_refused(
      m_sched, "magpie::channel::send_blocking", [&] { (void)ch.send_blocking(2); }, drain);
#if defined(__linux__)
  int const copied = 3;
  expect_refused(
      m_sched, "magpie::channel::send_blocking_for", [&] { (void)ch.send_blocking_for(3, 60s); },
      drain);
  expect_refused(
      m_sched, "magpie::channel::send_blocking_for",
      [&] { (void)ch.send_blocking_for(copied, 60s); }, drain);
  expect_refused(
      m_sched, "magpie::channel::send_blocking_for/_until",
      [&] { (void)ch.send_blocking_until(4, clock_type::now() + 60s); }, drain);
  expect_refused(
      m_sched, "magpie::channel::send_blocking_for/_until",
      [&] { (void)ch.send_blocking_until(copied, clock_type::now() + 60s); }, drain);
#endif
  EXPECT_EQ(ch.waiting_senders(), 0U);
  EXPECT_EQ(ch.try_receive(), std::optional<int>(1)); // nothing refused was sent
  EXPECT_EQ(ch.try_receive(), std::nullopt);
}

task<int> seven_once_set(magpie::event *ev) {
  co_await ev->wait();
  co_return 7;
}

task<int> read_blocking(magpie::future<int> *f) { co_return f->get(); }

TEST_P(blocking_refusal_test, future_of_the_tasks_own_pool) {
  spawn_target target(m_sched);
  magpie::event ev;
  magpie::future<int> f = magpie::spawn(*target.m_pool, seven_once_set, &ev);
  if (m_sched.pool() == nullptr) {
    // A future of another pool: get() inside a task blocks the task's thread while that pool
    // runs the task (documented, and it cannot wait for itself).
    ev.set();
    EXPECT_EQ(m_sched.run(read_blocking, &f), 7);
    return;
  }
  auto const set = [&] { ev.set(); };
  expect_refused(
      m_sched, "magpie::future::get/wait", [&] { (void)f.get(); }, set);
  expect_refused(
      m_sched, "magpie::future::get/wait", [&] { f.wait(); }, set);
  expect_refused(
      m_sched, "magpie::future::get/wait", [&] { (void)f.wait_for(60s); }, set);
  ASSERT_TRUE(f.valid()) << "a refused get() read the future";
  ev.set();
  EXPECT_EQ(f.get(), 7); // on this plain thread it blocks, as it should
}

#if defined(__linux__)
TEST_P(blocking_refusal_test, counter_and_task_group_timed_waits) {
  spawn_target target(m_sched);
  magpie::counter c(1);
  magpie::task_group g(*target.m_pool);
  auto const zero = [&] { c.count_down(); };
  char const *const name = "magpie::counter / task_group::wait_blocking_for/_until";
  expect_refused(
      m_sched, name, [&] { (void)c.wait_blocking_for(60s); }, zero);
  expect_refused(
      m_sched, name, [&] { (void)c.wait_blocking_until(clock_type::now() + 60s); }, zero);
  expect_refused(
      m_sched, name, [&] { (void)g.wait_blocking_for(60s); }, [] {});
  expect_refused(
      m_sched, name, [&] { (void)g.wait_blocking_until(clock_type::now() + 60s); }, [] {});
  EXPECT_EQ(c.value(), 1U);
}
#endif

TEST_P(blocking_refusal_test, mutex) {
  magpie::mutex m;
  m.lock_blocking(); // held by this thread: a lock would wait
  auto const unlock = [&] { m.unlock(); };
  expect_refused(
      m_sched, "magpie::mutex::lock_blocking", [&] { m.lock_blocking(); }, unlock);
  expect_refused(
      m_sched, "magpie::mutex::lock_blocking", [&] { (void)m.scoped_lock_blocking(); }, unlock);
#if defined(__linux__)
  expect_refused(
      m_sched, "magpie::mutex::try_lock_blocking_for", [&] { (void)m.try_lock_blocking_for(60s); },
      unlock);
  expect_refused(
      m_sched, "magpie::mutex::try_lock_blocking_for/_until",
      [&] { (void)m.try_lock_blocking_until(clock_type::now() + 60s); }, unlock);
#endif
  EXPECT_EQ(m.waiting(), 0U);
  EXPECT_TRUE(m.is_locked());
  m.unlock();
}

TEST_P(blocking_refusal_test, semaphore) {
  magpie::semaphore s(0);
  auto const release = [&] { s.release(); };
  expect_refused(
      m_sched, "magpie::semaphore::acquire_blocking", [&] { s.acquire_blocking(); }, release);
#if defined(__linux__)
  expect_refused(
      m_sched, "magpie::semaphore::try_acquire_blocking_for",
      [&] { (void)s.try_acquire_blocking_for(60s); }, release);
  expect_refused(
      m_sched, "magpie::semaphore::try_acquire_blocking_for/_until",
      [&] { (void)s.try_acquire_blocking_until(clock_type::now() + 60s); }, release);
#endif
  EXPECT_EQ(s.waiting(), 0U);
  EXPECT_FALSE(s.try_acquire());
}

TEST_P(blocking_refusal_test, shared_mutex) {
  magpie::shared_mutex m;
  m.lock_blocking(); // held exclusively by this thread: both sides would wait
  auto const unlock = [&] { m.unlock(); };
  expect_refused(
      m_sched, "magpie::shared_mutex", [&] { m.lock_blocking(); }, unlock);
  expect_refused(
      m_sched, "magpie::shared_mutex", [&] { m.lock_shared_blocking(); }, unlock);
#if defined(__linux__)
  char const *const timed = "magpie::shared_mutex::try_lock_blocking_for/_until";
  expect_refused(
      m_sched, timed, [&] { (void)m.try_lock_blocking_for(60s); }, unlock);
  expect_refused(
      m_sched, timed, [&] { (void)m.try_lock_blocking_until(clock_type::now() + 60s); }, unlock);
  expect_refused(
      m_sched, timed, [&] { (void)m.try_lock_shared_blocking_for(60s); }, unlock);
  expect_refused(
      m_sched, timed, [&] { (void)m.try_lock_shared_blocking_until(clock_type::now() + 60s); },
      unlock);
#endif
  m.unlock();
  EXPECT_TRUE(m.try_lock());
  m.unlock();
}

enum class cv_form { wait, wait_pred, wait_for, wait_until, wait_for_pred, wait_until_pred };

/// Inside a task holding `m`: calls the blocking form `form` of `cv`; returns the message of the
/// std::logic_error it threw, or "" if it returned.
task<std::string> cv_refusal(magpie::mutex *m, magpie::condition_variable *cv, cv_form form) {
  auto g = co_await m->scoped_lock();
  auto const never = [] { return false; };
  try {
    switch (form) {
    case cv_form::wait:
      cv->wait_blocking(g);
      break;
    case cv_form::wait_pred:
      cv->wait_blocking(g, never);
      break;
#if defined(__linux__)
    case cv_form::wait_for:
      (void)cv->wait_blocking_for(g, 60s);
      break;
    case cv_form::wait_until:
      (void)cv->wait_blocking_until(g, clock_type::now() + 60s);
      break;
    case cv_form::wait_for_pred:
      (void)cv->wait_blocking_for(g, 60s, never);
      break;
    case cv_form::wait_until_pred:
      (void)cv->wait_blocking_until(g, clock_type::now() + 60s, never);
      break;
#endif
    default:
      break;
    }
  } catch (std::logic_error const &e) {
    co_return e.what();
  }
  co_return "";
}

TEST_P(blocking_refusal_test, condition_variable) {
  magpie::mutex m;
  magpie::condition_variable cv;
  for (cv_form form : {
         cv_form::wait, cv_form::wait_pred,
#if defined(__linux__)
             cv_form::wait_for, cv_form::wait_until, cv_form::wait_for_pred,
             cv_form::wait_until_pred
#endif
       }) {
    std::string what;
    {
      rescue r([&] { cv.notify_all(); }, 2s);
      what = m_sched.run(cv_refusal, &m, &cv, form);
    }
    int const f = static_cast<int>(form);
    EXPECT_NE(what.find("magpie::condition_variable"), std::string::npos) << f << ": " << what;
    EXPECT_NE(what.find("co_await"), std::string::npos) << f << ": " << what;
  }
  EXPECT_FALSE(m.is_locked()); // each task's guard let go of the mutex
}

task<int> zero() { co_return 0; }

TEST_P(blocking_refusal_test, sync_wait_on_the_tasks_own_scheduler) {
  expect_refused(
      m_sched, "magpie::sync_wait", [&] { (void)m_sched.run(zero); }, [] {});
}

// Not refused: sync_wait on another scheduler from inside a task blocks this worker while the
// other scheduler runs the root; it cannot wait for itself.
TEST_P(blocking_refusal_test, sync_wait_on_another_scheduler_runs) {
  magpie::lazy_pool other(1);
  auto body = [](magpie::lazy_pool *p) -> task<int> { co_return magpie::sync_wait(*p, zero) + 1; };
  EXPECT_EQ(m_sched.run(body, &other), 1);
}

INSTANTIATE_TEST_SUITE_P(every_scheduler, blocking_refusal_test,
                         ::testing::ValuesIn(all_schedulers()), sched_name{});

// Plain threads (not workers, even while pools run tasks) are not refused: a thread started by a
// task is a plain thread.
TEST(blocking_refusal, a_thread_started_inside_a_task_may_block) {
  watchdog dog(current_test_name());
  magpie::lazy_pool pool(1);
  magpie::event ev;
  magpie::channel<int> ch(1);
  auto body = [](magpie::event *e, magpie::channel<int> *c) -> task<int> {
    int got = 0;
    std::thread t([&] {
      e->wait_blocking();
      got = c->receive_blocking().value_or(-1);
    });
    e->set();
    (void)c->try_send(9);
    t.join(); // brief: both waits pass at once, or as soon as set / try_send land
    co_return got;
  };
  EXPECT_EQ(magpie::sync_wait(pool, body, &ev, &ch), 9);
}

} // namespace
