#pragma once
// magpie/sync/task_group.hpp — a dynamic set of spawned tasks that one wait gathers.
//
//   magpie::task_group g(pool);             // or `magpie::task_group g;` inside a task: its pool
//   g.spawn(fn, args...);                   // any number of times, from any thread or task,
//                                           // children included (they may spawn into g too)
//   co_await g.wait();                      // in a task: suspends until every child finished
//   g.wait();                               // on a plain thread: blocks until then
//   bool const done = co_await g.wait_for(20ms);  // Linux: false if 20 ms passed first
//   g.wait_blocking_for(20ms);                     // the same from a plain thread
//
// Children are spawned as by magpie::spawn (fn and args decay-copied, std::ref for references;
// root tasks of the group's pool at the group's priority or the one given), their values are
// discarded. Exceptions: the first one a child throws is kept and rethrown by the next wait()
// (which clears it); each later one is counted (dropped_exceptions()) and destroyed. A group may
// be reused after a wait. A timed wait that runs out of time returns false and rethrows nothing:
// the children go on, and the exception stays for a later wait.
//
// Destruction with unfinished children: on a plain thread the destructor waits for them
// (blocking, as std::jthread joins). Inside a task that would block a worker — and on a
// one-worker pool deadlock — so it is diagnosed instead: the program stops with a message
// (always on); `co_await g.wait()` before the group goes out of scope, also on error paths. An
// exception still held by a destroyed group (no wait rethrew it) goes to the unobserved-exception
// handler. Tasks waiting on a group while it is destroyed get magpie::abandoned_wait.
// Protocol: docs/protocols.md §9.3.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "magpie/core/config.hpp"
#include "magpie/core/context.hpp"
#include "magpie/core/scope.hpp"
#include "magpie/sched/pool.hpp"
#include "magpie/sync/counter.hpp"
#include "magpie/sync/detail/spawned.hpp"
#include "magpie/sync/detail/timed.hpp" // wait_for / wait_until (Linux)

namespace magpie::sync {

namespace detail {
/// Its address names the calling thread (task_group's caller slot).
inline thread_local char const this_thread_tag = 0;
} // namespace detail

#if defined(__linux__)
namespace detail {
/// `co_await g.wait_until(t)`: the counter's timed wait, then (if it passed) the group's
/// after_wait, which rethrows the first exception.
struct group_timed_awaitable : timed_wait_awaitable<counter> {
  task_group *m_group;
  group_timed_awaitable(core::frame_base &frame, task_group &g, timed_deadline dl) noexcept;
  bool await_resume();
};

/// What task_group::wait_for / wait_until return; co_await it in a magpie task.
struct [[nodiscard("co_await it")]] group_timed_request {
  /// Marks the request as awaitable inside a magpie task.
  using magpie_awaitable = void;
  task_group *m_group;
  timed_deadline m_deadline;
  /// Binds the request to the awaiting task (co_await does this) and returns the awaitable.
  group_timed_awaitable magpie_bind(core::frame_base &self) && {
    io::detail::wait_home(self, "magpie: a timed wait");      // checks; starts the reactor
    return group_timed_awaitable(self, *m_group, m_deadline); // in place
  }
};
} // namespace detail
#endif

/// A set of spawned tasks waited for together. Thread-safe: spawn, wait and the accessors may be
/// called from any thread or task at once. Not copyable or movable (children refer to it).
class task_group {
public:
  /// Inside a task: a group on the task's own pool (magpie::pool::current()). Throws
  /// std::logic_error elsewhere (a plain thread, the inline scheduler): name the pool then.
  explicit task_group(sched::priority prio = sched::priority::normal)
      : m_pool(current_pool()), m_priority(prio) {}
  /// A group whose children run on `pool` at priority `prio` by default.
  explicit task_group(sched::pool &pool, sched::priority prio = sched::priority::normal) noexcept
      : m_pool(&pool), m_priority(prio) {}
  /// A group on `pool` whose children, and every task they start, are inside a cancellation
  /// scope (core/scope.hpp) that stops when `token` is asked to stop or request_stop() is called:
  /// they see it with `co_await magpie::this_task::stop_requested()`, and the algorithms they run
  /// skip iterations not yet started. Children spawned after the stop still run (and see it).
  task_group(sched::pool &pool, core::stop_token token,
             sched::priority prio = sched::priority::normal) noexcept
      : m_pool(&pool), m_priority(prio), m_scope(std::move(token)) {}
  /// Inside a task: as task_group(pool, token, prio) on the task's own pool.
  explicit task_group(core::stop_token token, sched::priority prio = sched::priority::normal)
      : m_pool(current_pool()), m_priority(prio), m_scope(std::move(token)) {}
  task_group(task_group const &) = delete;
  task_group &operator=(task_group const &) = delete;
  /// See the top of this file.
  ~task_group() {
    if (m_count.value() != 0) {
      MAGPIE_CHECK(core::this_context() == nullptr,
                   "a magpie::task_group was destroyed inside a task with unfinished children: "
                   "`co_await g.wait();` before it goes out of scope (also on error paths)");
      help_hosted();
      m_count.block();
    }
    if (m_host != nullptr) { // no unfinished child: every root the slot hosted has been taken
      sched::detail::pool_access::close_host(*m_pool, *m_host);
    }
    if (m_first != nullptr) {
      detail::report_unobserved(std::move(m_first));
    }
  }

  /// Starts `fn(args...)` as a child at the group's priority. Throws as magpie::spawn does
  /// (then nothing was started).
  ///
  /// From a plain thread, at normal priority, the group keeps one of the pool's caller slots
  /// (pool_options::callers_run_roots) for that thread from its first spawn until its wait()
  /// returns (or the group is destroyed): the children go onto the slot's own deque, lock-free,
  /// where idle workers take the oldest, and wait() runs those still there on the calling thread
  /// (the newest first) before it blocks for the rest. It runs nothing but the group's own
  /// children. Other threads, tasks, other priorities, and a thread that finds every slot taken
  /// hand each child to a worker's queue instead. A pool's destructor waits for such a group's
  /// wait (docs/protocols.md §5.4).
  template <typename Fn, typename... Args>
  void spawn(Fn &&fn, Args &&...args) {
    detail::spawn_counted(*m_pool, m_priority, host_for(m_priority), m_count, this, &m_scope,
                          std::forward<Fn>(fn), std::forward<Args>(args)...);
  }
  /// As spawn(fn, args...), at priority `prio`.
  template <typename Fn, typename... Args>
  void spawn(sched::priority prio, Fn &&fn, Args &&...args) {
    detail::spawn_counted(*m_pool, prio, host_for(prio), m_count, this, &m_scope,
                          std::forward<Fn>(fn), std::forward<Args>(args)...);
  }

  /// Inside a task: `co_await g.wait()` suspends until no child is unfinished, then rethrows
  /// the first exception a child threw since the last wait (if any). On a plain thread:
  /// `g.wait()` blocks, then does the same. Inside a task the result must be co_awaited.
  detail::zero_request<task_group> wait() {
    if (core::this_context() == nullptr) {
      help_hosted();
      m_count.block();
      close_hosted();
      after_wait();
      return detail::zero_request<task_group>(nullptr);
    }
    return detail::zero_request<task_group>(this);
  }

#if defined(__linux__)
  /// Inside a task: `co_await g.wait_until(t)` is `co_await g.wait()` giving up at `t` — true if
  /// every child finished in time (then the first exception, if any, is rethrown as by wait()),
  /// false if `t` came first (nothing rethrown: the children go on, the exception is kept for a
  /// later wait). A deadline already reached returns at once (true only if none is unfinished).
  /// Also throws what counter::wait_until throws. With GCC 12.2 bind the result to a variable
  /// (docs/guarantees.md, L3b). Plain threads: wait_blocking_until.
  template <typename Clock, typename Duration>
  detail::group_timed_request wait_until(std::chrono::time_point<Clock, Duration> t) {
    return {this, detail::deadline_until(t)};
  }

  /// `co_await g.wait_for(d)`: wait_until(now + d), reading the clock once; a zero or negative
  /// `d` does not wait.
  template <typename Rep, typename Period>
  detail::group_timed_request wait_for(std::chrono::duration<Rep, Period> d) {
    return {this, detail::deadline_for(d)};
  }

  /// For plain threads: as wait() on a plain thread, giving up at `t` — true (after rethrowing
  /// the first exception, if any) if every child finished in time, false if `t` came first.
  /// Throws std::logic_error on a thread that runs a magpie task (co_await wait_until there).
  template <typename Clock, typename Duration>
  bool wait_blocking_until(std::chrono::time_point<Clock, Duration> t) {
    return blocking_wait_until(detail::deadline_until(t));
  }

  /// wait_blocking_until(now + d); a zero or negative `d` does not wait.
  template <typename Rep, typename Period>
  bool wait_blocking_for(std::chrono::duration<Rep, Period> d) {
    return blocking_wait_until(detail::deadline_for(d));
  }
#endif

  /// Children spawned and not yet finished (a snapshot).
  std::size_t unfinished() const noexcept { return m_count.value(); }

  /// Exceptions thrown by children and dropped because another was already held (a snapshot;
  /// cumulative over the group's life).
  std::size_t dropped_exceptions() const noexcept {
    return m_dropped.load(std::memory_order_relaxed); // a statistic: no edge
  }

  /// Stops the group's cancellation scope: its children (running, and spawned later) see
  /// `co_await magpie::this_task::stop_requested()` true. Any thread; idempotent. A group made
  /// without a token can be stopped too.
  void request_stop() noexcept { m_scope.request_stop(); }

  /// Whether the group's scope has been stopped (its token, or request_stop()).
  [[nodiscard]] bool stop_requested() const noexcept { return m_scope.stop_requested(); }

  /// The pool the children run on.
  sched::pool &pool() const noexcept { return *m_pool; }

private:
  template <typename>
  friend struct detail::zero_awaitable;
  friend struct detail::counted_state;
#if defined(__linux__)
  friend struct detail::group_timed_awaitable;

  bool blocking_wait_until(detail::timed_deadline dl) {
    if (!m_count.block_until(dl)) { // refused on a worker (a timed wait never helps)
      return false;
    }
    close_hosted();
    after_wait();
    return true;
  }
#endif

  static sched::pool *current_pool() {
    sched::pool *p = sched::pool::current();
    if (p == nullptr) {
      throw std::logic_error("magpie::task_group: no pool given, and the calling thread is not a "
                             "worker of a pool: write task_group g(pool)");
    }
    return p;
  }

  counter &zero_count() noexcept { return m_count; }

  /// The guest slot a child spawned at `prio` goes to (see spawn), or null: its worker's queue.
  sched::detail::worker *host_for(sched::priority prio) {
    if (prio != sched::priority::normal || core::this_context() != nullptr) {
      return nullptr;
    }
    void const *const me = &detail::this_thread_tag;
    void const *holder = m_host_thread.load(std::memory_order_relaxed);
    // acquire: the previous holder's writes (m_host, the slot's) happened before its release
    if (holder == nullptr &&
        !m_host_thread.compare_exchange_strong(holder, me, std::memory_order_acquire,
                                               std::memory_order_relaxed)) {
      return nullptr; // another thread became the holder first
    }
    if (holder != nullptr && holder != me) {
      return nullptr;
    }
    if (m_host == nullptr) { // null again if every slot is taken: the next spawn tries again
      m_host = sched::detail::pool_access::open_host(*m_pool); // may throw pool_closed
    }
    return m_host;
  }

  /// On the holding thread: runs the children still on the slot's deque (pool::help_host).
  void help_hosted() noexcept {
    if (m_host_thread.load(std::memory_order_relaxed) == &detail::this_thread_tag &&
        m_host != nullptr) {
      sched::detail::pool_access::help_host(*m_pool, *m_host);
    }
  }

  /// On the holding thread, once no child is unfinished: gives the slot back (pool::close_host)
  /// and lets another thread hold the group's next one.
  void close_hosted() noexcept {
    if (m_host_thread.load(std::memory_order_relaxed) != &detail::this_thread_tag) {
      return;
    }
    if (m_host != nullptr) {
      sched::detail::pool_access::close_host(*m_pool, *std::exchange(m_host, nullptr));
    }
    m_host_thread.store(nullptr, std::memory_order_release); // release: see host_for
  }

  /// A child's exception; called before the child counts down.
  void record(std::exception_ptr e) noexcept {
    std::lock_guard lock(m_error_mutex);
    if (m_first == nullptr) {
      m_first = std::move(e);
    } else {
      m_dropped.fetch_add(1, std::memory_order_relaxed); // a statistic: no edge
    }
  }

  void after_wait() {
    std::exception_ptr e;
    {
      std::lock_guard lock(m_error_mutex);
      e = std::exchange(m_first, nullptr);
    }
    if (e != nullptr) {
      std::rethrow_exception(std::move(e));
    }
  }

  sched::pool *m_pool;
  sched::priority m_priority;
  std::mutex m_error_mutex;
  std::exception_ptr m_first; // guarded by m_error_mutex
  std::atomic<std::size_t> m_dropped{0};
  core::stop_scope m_scope; // outlives the children: m_count is destroyed (waited for) first
  // The thread whose spawns go to a caller slot of the pool (its this_thread_tag), or null, and
  // that slot (pool::open_host), or null: written by that thread only (and read by the destructor).
  std::atomic<void const *> m_host_thread{nullptr};
  sched::detail::worker *m_host = nullptr;
  counter m_count; // last: destroyed first, after which no child touches the group
};

namespace detail {
#if defined(__linux__)
inline group_timed_awaitable::group_timed_awaitable(core::frame_base &frame, task_group &g,
                                                    timed_deadline dl) noexcept
    : timed_wait_awaitable<counter>(frame, g.m_count, dl.m_at, dl.m_when), m_group(&g) {}

inline bool group_timed_awaitable::await_resume() {
  bool const passed = timed_wait_awaitable<counter>::await_resume();
  if (passed) {
    m_group->after_wait();
  }
  return passed;
}
#endif

inline void counted_state::finished() noexcept {
  if (has_exception()) {
    if (m_group != nullptr) {
      m_group->record(take_exception());
    } else {
      report_unobserved(take_exception());
    }
  }
  m_count->count_down(); // point of no return: the counter (and group) may be gone after this
}
} // namespace detail

} // namespace magpie::sync
