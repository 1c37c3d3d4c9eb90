#pragma once
// magpie/sync/counter.hpp — a count that tasks and threads wait to see reach zero, and tasks
// spawned against it (carb.tasking's Counter).
//
//   magpie::counter c;
//   for (int i = 0; i < n; ++i) magpie::spawn(pool, c, work, i);  // c.add(1) each; -1 when done
//   co_await c.wait();        // in a task: suspends until the count is zero
//   c.wait();                 // on a plain thread: blocks until then
//   bool const zero = co_await c.wait_for(20ms);  // Linux: false if 20 ms passed first
//   c.wait_blocking_for(20ms);                     // the same from a plain thread
//
// A counter collects no results and no exceptions: an exception escaping a task spawned against
// it goes to the unobserved-exception handler (set_unobserved_exception_handler); use a
// task_group to get the first one rethrown. add()/count_down() may also be called by hand (a
// countdown latch that can be re-armed). Waiters are released whenever the count reaches zero;
// a count_down below zero is a misuse, checked always. Destroying a counter fails the tasks
// still waiting on it with magpie::abandoned_wait; a plain thread must not be waiting then.
// Protocol: docs/protocols.md §9.3 (timed waits: §9.8).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <utility>

#include "magpie/core/config.hpp"
#include "magpie/core/context.hpp"
#include "magpie/core/ext.hpp"
#include "magpie/core/frame.hpp"
#include "magpie/sched/pool.hpp"
#include "magpie/sync/detail/blocking.hpp"
#include "magpie/sync/detail/spawned.hpp"
#include "magpie/sync/detail/timed.hpp" // wait_for / wait_until (Linux)
#include "magpie/sync/detail/waiter.hpp"
#include "magpie/sync/suspend.hpp"

namespace magpie::sync {

class counter;
class task_group;

namespace detail {

/// `co_await x.wait()` for a counter or a task group: waits for the count to reach zero, then
/// `Owner::after_wait()` (a group rethrows its first exception).
template <typename Owner>
struct zero_awaitable : wait_awaitable<zero_awaitable<Owner>> {
  Owner *m_owner = nullptr;
  bool try_now() noexcept;
  bool try_or_enqueue(waiter &w);
  void resume_value() { m_owner->after_wait(); }
};

/// What x.wait() returns: inside a task, co_await it (it must be); on a plain thread, wait()
/// has already waited and the request is empty.
template <typename Owner>
class zero_request {
public:
  using magpie_awaitable = void;

  explicit zero_request(Owner *o) noexcept : m_owner(o) {}
  zero_request(zero_request &&o) noexcept : m_owner(std::exchange(o.m_owner, nullptr)) {}
  zero_request &operator=(zero_request &&) = delete;
  ~zero_request() {
    MAGPIE_CHECK(m_owner == nullptr, "magpie: wait() on a counter or task_group inside a task "
                                     "returns a request that must be co_awaited: write "
                                     "`co_await x.wait();`");
  }

  zero_awaitable<Owner> magpie_bind(core::frame_base &self) && {
    zero_awaitable<Owner> a;
    a.m_owner = std::exchange(m_owner, nullptr);
    bind_waiter(a, self);
    return a;
  }

private:
  Owner *m_owner;
};

/// The state of a task spawned against a counter (and maybe a group): only the job owns it.
struct counted_state : spawned {
  static constexpr bool keeps_value = false;
  struct init {
    sched::pool *pool;
    counter *count;
    task_group *group;             ///< where an exception goes, or null (the unobserved handler)
    core::stop_scope const *scope; ///< the cancellation scope of the task (the group's), or null
  };
  explicit counted_state(init const &i) noexcept
      : spawned(*i.pool, 1), m_count(i.count), m_group(i.group) {
    core::ext::set_scope(*this, i.scope); // before the job is submitted
  }

protected:
  void finished() noexcept override; // below, once counter and task_group are complete

private:
  counter *m_count;
  task_group *m_group;
};

} // namespace detail

/// A count that tasks (`co_await c.wait()`) and threads (`c.wait()`) wait to see reach zero.
/// Thread-safe: any thread may add, count down and wait at once. Not copyable or movable.
class counter
#if defined(__linux__)
    : public detail::timed_waits<counter> // wait_for, wait_until, wait_blocking_for/_until: Linux
#endif
{
public:
  /// Starts at `initial`.
  explicit counter(std::size_t initial = 0) noexcept : m_count(initial) {}
  counter(counter const &) = delete;
  counter &operator=(counter const &) = delete;
  /// Fails the tasks still waiting with magpie::abandoned_wait. Waits for a count_down that is
  /// releasing waiters to finish doing so. No plain thread may be waiting.
  /// A timed wait whose deadline passed meanwhile may return false instead (whichever came
  /// first); the destructor waits until the reactor is done with those.
  ~counter() {
    detail::waiter *all = nullptr;
#if defined(__linux__)
    bool expiring = false;
#endif
    {
      std::lock_guard lock(m_mutex); // a count_down at zero holds it: wait until it has left
      all = m_waiters.take_all();    // timed waiters: those this side claims
#if defined(__linux__)
      expiring = m_waiters.timed() != 0; // those whose deadline claimed them
#endif
    }
    if (all != nullptr) {
      detail::wake_all(all, std::make_exception_ptr(abandoned_wait()));
    }
#if defined(__linux__)
    if (expiring) {
      detail::wait_out_expiring(m_mutex, m_waiters); // their deadline's side touches us till then
    }
#endif
  }

  /// Adds `n` to the count. Any thread. Adding to a zero count re-arms it (later waiters wait).
  void add(std::size_t n = 1) noexcept {
    // relaxed: the count_downs that follow order themselves after it through the RMW chain.
    m_count.fetch_add(n, std::memory_order_relaxed);
  }

  /// Subtracts `n`; at zero releases every waiter. Any thread. What the caller did before
  /// happens-before the return of each wait that sees zero. Going below zero aborts (always on).
  void count_down(std::size_t n = 1) noexcept {
    std::size_t c = m_count.load(std::memory_order_relaxed);
    while (c > n) {
      // release: publishes the caller's writes to whoever sees zero (the RMW chain carries it).
      if (m_count.compare_exchange_weak(c, c - n, std::memory_order_release,
                                        std::memory_order_relaxed)) {
        return;
      }
    }
    // Possibly the last: reach zero only under the lock, so that a waiter who sees zero (and may
    // destroy us) finds us done with every field once it gets the lock (see the destructor).
    detail::waiter *all = nullptr;
    {
      std::lock_guard lock(m_mutex);
      // acq_rel: acquire collects every earlier count_down's writes (their release sequences);
      // release hands them on to the waiters' acquire loads.
      std::size_t const before = m_count.fetch_sub(n, std::memory_order_acq_rel);
      MAGPIE_CHECK(before >= n, "magpie::counter::count_down below zero: more count_downs than "
                                "adds (or spawns)");
      if (before != n) {
        return; // an add() came in between: not zero after all
      }
      ++m_zeros;
      all = m_waiters.take_all(); // timed waiters: those this side claims (timed.hpp)
      m_cv.notify_all();          // under the lock: a blocked thread cannot miss it
    }
    detail::wake_all(all); // touches only the waiters (in their frames), not us
  }

  /// The current count (a snapshot).
  std::size_t value() const noexcept {
    return m_count.load(std::memory_order_acquire); // acquire: a zero seen here is as in wait()
  }

  /// How many tasks wait for zero now (a snapshot, for diagnostics and tests).
  std::size_t waiting() noexcept {
    std::lock_guard lock(m_mutex);
    return m_waiters.size();
  }

  /// Inside a task: `co_await c.wait()` suspends until the count is zero (not at all if it is).
  /// On a plain thread: `c.wait()` blocks until then. Inside a task the result must be
  /// co_awaited (checked at run time).
  detail::zero_request<counter> wait() {
    if (core::this_context() == nullptr) {
      block();
      return detail::zero_request<counter>(nullptr);
    }
    return detail::zero_request<counter>(this);
  }

  // On Linux, from timed_waits: `co_await c.wait_until(t)` / `wait_for(d)` (a task: as
  // `co_await c.wait()` giving up at `t` — true if the count was zero in time, false if `t` came
  // first; throws magpie::abandoned_wait if the counter is destroyed first), and
  // wait_blocking_until / wait_blocking_for (a plain thread: as c.wait() there, giving up at `t`).

private:
  template <typename>
  friend struct detail::zero_awaitable;
  friend class task_group;

  void block() {
    std::unique_lock lock(m_mutex);
    std::uint64_t const zeros = m_zeros;
    m_cv.wait(lock, [&] { return zero_since(zeros); });
  }

  /// Under m_mutex: whether the count is zero, or reached zero since m_zeros was `zeros`. The
  /// count reaches zero only under this mutex, so a zero that comes and goes while a thread
  /// sleeps still bumps m_zeros.
  bool zero_since(std::uint64_t zeros) const noexcept {
    return m_zeros != zeros || m_count.load(std::memory_order_relaxed) == 0;
  }

#if defined(__linux__)
  friend struct detail::timed_access;

  static constexpr char const *timed_blocking_on_worker =
      "magpie::counter / task_group::wait_blocking_for/_until inside a task would block its "
      "worker: co_await x.wait_for(d) instead";

  /// The plain-thread timed waits (the counter's, through timed_access::block_until, and the
  /// group's): block() until the deadline `dl`, true if the count was zero (or reached it) in
  /// time. Refused on a worker.
  bool block_until(detail::timed_deadline dl) {
    detail::refuse_on_worker(timed_blocking_on_worker);
    std::unique_lock lock(m_mutex);
    std::uint64_t const zeros = m_zeros;
    if (zero_since(zeros) || detail::deadline_reached(dl.m_at, dl.m_when)) {
      return zero_since(zeros);
    }
    return m_cv.wait_until(lock, io::detail::from_nanos(dl.m_at),
                           [&] { return zero_since(zeros); });
  }

  // Timed waits of tasks (detail/timed.hpp).
  bool try_pass() const noexcept { return is_zero(); }

  /// Passes now (the count is zero), or queues `w` and arms its deadline, under the mutex (as
  /// enqueue_unless_zero).
  detail::timed_outcome pass_or_enqueue_timed(detail::waiter &w,
                                              io::detail::timeout_node *arm) noexcept {
    std::lock_guard lock(m_mutex);
    if (m_count.load(std::memory_order_acquire) == 0) { // acquire: as in value()
      return detail::timed_outcome::passed;
    }
    // queued: the point of no return
    return detail::queued_or_out_of_memory(m_waiters.push_timed(w, arm));
  }

  /// The deadline's side, after it claimed `w`: takes it out of the queue. Its last touch of
  /// the counter (the destructor waits for it).
  void take_out_expired(detail::waiter &w) noexcept {
    std::lock_guard lock(m_mutex);
    m_waiters.remove_expired(w);
  }
#endif

  counter &zero_count() noexcept { return *this; }
  bool is_zero() const noexcept { return value() == 0; }

  bool enqueue_unless_zero(detail::waiter &w) {
    std::lock_guard lock(m_mutex);
    if (m_count.load(std::memory_order_acquire) == 0) { // acquire: as in value()
      return true;
    }
    m_waiters.push(&w); // point of no return once the lock is released
    return false;
  }

  void after_wait() const noexcept {}

  std::atomic<std::size_t> m_count;
  std::mutex m_mutex;
  std::condition_variable m_cv;
#if defined(__linux__)
  detail::timed_queue m_waiters; // guarded by m_mutex; tasks only (threads wait on m_cv)
#else
  detail::waiter_queue m_waiters; // guarded by m_mutex; tasks only (threads wait on m_cv)
#endif
  std::uint64_t m_zeros = 0; // times the count reached zero (guarded by m_mutex)
};

namespace detail {
template <typename Owner>
bool zero_awaitable<Owner>::try_now() noexcept {
  return m_owner->zero_count().is_zero();
}
template <typename Owner>
bool zero_awaitable<Owner>::try_or_enqueue(waiter &w) {
  return m_owner->zero_count().enqueue_unless_zero(w);
}

/// spawn against a counter (and a group, for its exceptions); on `host`, a guest slot the
/// calling thread holds, if not null (see launch).
template <typename Fn, typename... Args>
void spawn_counted(sched::pool &p, sched::priority prio, sched::detail::worker *host, counter &c,
                   task_group *g, core::stop_scope const *scope, Fn &&fn, Args &&...args) {
  static_assert(check_spawnable<Fn, Args...>());
  c.add(1); // before the task can finish
  try {
    launch<counted_state>(p, prio, host, counted_state::init{&p, &c, g, scope},
                          std::forward<Fn>(fn), std::forward<Args>(args)...);
  } catch (...) {
    c.count_down(1);
    throw;
  }
}
} // namespace detail

/// Starts `fn(args...)` as in spawn(pool, prio, fn, args...), counted by `c`: `c.add(1)` now,
/// `c.count_down()` when the task has completed (after its arguments were destroyed). Its value
/// is discarded; its exception goes to the unobserved-exception handler. `c` must outlive the
/// task. Throws as spawn does (then `c` is unchanged).
template <typename Fn, typename... Args>
void spawn(sched::pool &pool, sched::priority prio, counter &c, Fn &&fn, Args &&...args) {
  detail::spawn_counted(pool, prio, nullptr, c, nullptr, nullptr, std::forward<Fn>(fn),
                        std::forward<Args>(args)...);
}

/// As spawn(pool, priority::normal, c, fn, args...).
template <typename Fn, typename... Args>
void spawn(sched::pool &pool, counter &c, Fn &&fn, Args &&...args) {
  detail::spawn_counted(pool, sched::priority::normal, nullptr, c, nullptr, nullptr,
                        std::forward<Fn>(fn), std::forward<Args>(args)...);
}

} // namespace magpie::sync
