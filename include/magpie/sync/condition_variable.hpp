#pragma once
// magpie/sync/condition_variable.hpp — a condition variable for tasks holding a magpie::mutex.
//
//   auto g = co_await m.scoped_lock();
//   co_await cv.wait(g, [&] { return !queue.empty(); });  // unlocks m while suspended
//   ...                                                    // m is held again here
//   // elsewhere, any task or thread:  { change the state under m }  cv.notify_one();
//
// Policy: wait morphing with direct hand-off. A notify does not wake a waiter to let it compete
// for the mutex: it moves the waiter from the condition variable's queue to the mutex's queue
// (or, if the mutex is free, gives it the mutex at once and wakes it). A notified task therefore
// wakes up once, holding the mutex, when its turn in the mutex's FIFO comes; notify_all moves
// every waiter across in FIFO order and they then run one after another, never as a herd.
// Protocol and proof sketch: docs/protocols.md §9.7.
//
// Timed waits (Linux): `co_await cv.wait_for(g, d)` / `wait_until(g, t)` return std::cv_status,
// with a predicate a bool, as std::condition_variable's do; the mutex is held again either way.
// The deadline races the notifiers for the waiter (one claim, timed.hpp); whichever wins moves it
// to the mutex, so a wait that times out also wakes holding the mutex, in the mutex's FIFO.
// Protocol: docs/protocols.md §9.8, "Timed waits: the condition variable".

#include <chrono>
#include <condition_variable> // std::cv_status
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "magpie/core/config.hpp"
#include "magpie/core/ext.hpp"
#include "magpie/core/fork.hpp"
#include "magpie/core/frame.hpp"
#include "magpie/core/task.hpp"
#include "magpie/sync/detail/blocking.hpp"
#include "magpie/sync/detail/lock_word.hpp"
#include "magpie/sync/detail/permits.hpp"
#include "magpie/sync/detail/timed.hpp" // wait_for / wait_until (Linux)
#include "magpie/sync/detail/waiter.hpp"
#include "magpie/sync/guard.hpp"
#include "magpie/sync/mutex.hpp"

namespace magpie::sync {

/// A condition variable for tasks (and blocking plain threads) that hold a magpie::mutex (see the
/// top of this file). All waits that overlap in time must use the same mutex (checked, always).
/// notify_one / notify_all may be called from any task or thread, with or without the mutex
/// held; as with std::condition_variable, a waiter can only be sure not to miss a change if the
/// notifier made the change under the mutex. Waits may not wake spuriously, but write them as
/// predicate loops all the same (the predicate may be false again by the time the waiter runs).
///
/// Destroying a condition variable while tasks or threads wait on it moves them to their mutex
/// with magpie::abandoned_wait: each re-acquires the mutex (as every wait ends) and its wait then
/// throws. The mutex must therefore outlive the condition variable's waiters.
///
/// Cost: a wait is one suspension (one park, one resubmission when it has the mutex again); a
/// notify with nobody waiting is a short internal spin lock; notify_one moves one waiter with
/// two short locks and wakes at most one task.
class condition_variable {
public:
  /// A condition variable with nobody waiting.
  condition_variable() noexcept = default;
  condition_variable(condition_variable const &) = delete;
  condition_variable &operator=(condition_variable const &) = delete;
  /// Moves every waiter to its mutex with magpie::abandoned_wait (see the class comment).
  ~condition_variable() {
    take_and_move(~std::size_t{0}, std::make_exception_ptr(abandoned_wait()));
#if defined(__linux__)
    detail::wait_out_expiring(m_lock, m_waiters); // waiters whose deadline claimed them
#endif
  }

  /// The awaitable of wait(m): queue on the condition variable, then unlock m. Internal.
  struct wait_awaitable : detail::wait_awaitable<wait_awaitable> {
    /// The condition variable waited on.
    condition_variable *m_cv = nullptr;
    /// The mutex that the waiter holds: unlocked while it waits, locked again before the wait
    /// returns.
    sync::mutex *m_mutex = nullptr;
    /// Fast path, from await_ready: succeeds without suspending when it can
    /// (sync/detail/waiter.hpp).
    bool try_now() const noexcept { return false; } // a wait always waits for a notify
    /// Slow path, under the lock: succeeds now (true), or queues `w` to be resumed later (false).
    bool try_or_enqueue(detail::waiter &w) noexcept {
      sync::mutex *m = m_mutex; // a local: after enqueue, this awaitable may be gone
      m_cv->enqueue(w, *m);
      // Point of no return: a notifier may already have moved w to the mutex; the unlock below
      // may hand the mutex to w, which then runs elsewhere. Touch only `m`, which the caller's
      // lock keeps alive until w holds it again.
      m->unlock();
      return false;
    }
  };

  /// What wait(m) returns; co_await it in a magpie task.
  struct [[nodiscard("co_await it")]] wait_request {
    /// Marks the request as awaitable inside a magpie task.
    using magpie_awaitable = void;
    /// The condition variable waited on.
    condition_variable *m_cv;
    /// The mutex that the waiter holds: unlocked while it waits, locked again before the wait
    /// returns.
    sync::mutex *m_mutex;
    /// Binds the request to the awaiting task (co_await does this) and returns the awaitable.
    wait_awaitable magpie_bind(core::frame_base &self) && {
      MAGPIE_CHECK(m_mutex != nullptr, "magpie::condition_variable::wait: the guard owns no lock");
      wait_awaitable a;
      a.m_cv = m_cv;
      a.m_mutex = m_mutex;
      detail::bind_waiter(a, self);
      return a;
    }
  };

  /// `co_await cv.wait(g)`: atomically unlocks g's mutex and suspends the task until notified;
  /// returns with the mutex held again (g still owns it). Precondition: g owns a lock (checked).
  /// Throws magpie::abandoned_wait — with the mutex held again — if the condition variable is
  /// destroyed first; std::logic_error (nothing released) inside an unjoined fork–join scope.
  wait_request wait(unique_guard<sync::mutex> &g) noexcept { return {this, g.mutex()}; }

  /// `co_await cv.wait(m)`: as wait(g), for a mutex the task holds through lock().
  wait_request wait(sync::mutex &m) noexcept { return {this, &m}; }

  /// `co_await cv.wait(g, pred)`: `while (!pred()) co_await cv.wait(g);` — pred is called with
  /// the mutex held; an exception from it propagates (the mutex stays held). The loop runs as a
  /// called child task (it costs one small frame on the task's stack).
  template <typename Pred>
    requires std::is_invocable_r_v<bool, Pred &>
  auto wait(unique_guard<sync::mutex> &g, Pred pred) {
    return pred_request<std::decay_t<Pred>>{this, &g, std::move(pred), nullptr};
  }

  /// Moves the oldest waiter to its mutex (it wakes holding the mutex). Any thread or task. A
  /// timed waiter whose deadline has already claimed it is passed over (it is timing out).
  void notify_one() noexcept { take_and_move(1, nullptr); }

  /// Moves every waiter to its mutex, oldest first (they wake one at a time, each holding the
  /// mutex). Any thread or task.
  void notify_all() noexcept { take_and_move(~std::size_t{0}, nullptr); }

  /// For plain threads holding `g` (through mutex::lock_blocking or scoped_lock_blocking): as
  /// wait(g), blocking the thread. Throws std::logic_error on a thread that runs a magpie task.
  void wait_blocking(unique_guard<sync::mutex> &g) {
    MAGPIE_CHECK(g.owns_lock(), "magpie::condition_variable::wait_blocking: no lock owned");
    detail::refuse_on_worker("magpie::condition_variable::wait_blocking inside a task would "
                             "block its worker: co_await cv.wait(g) instead");
    detail::blocking_waiter w;
    enqueue(w, *g.mutex());
    g.mutex()->unlock();
    w.block(); // returns holding the mutex again (or throws abandoned_wait, holding it)
  }

  /// As wait_blocking(g), until pred() holds.
  template <typename Pred>
  void wait_blocking(unique_guard<sync::mutex> &g, Pred pred) {
    while (!pred()) {
      wait_blocking(g);
    }
  }

#if defined(__linux__)
  /// `auto const s = co_await cv.wait_until(g, t)`: as wait(g), giving up at `t` — returns
  /// std::cv_status::no_timeout if notified, std::cv_status::timeout if `t` came first. Either
  /// way the mutex is held again when it returns (a wait that times out queues for the mutex like
  /// a notified one, and waits for its turn). A deadline already reached returns timeout at once,
  /// without unlocking. Any clock's time point is converted to io::clock. While it waits the task
  /// holds its pool (the pool's destructor waits for the deadline). Throws what wait(g) throws,
  /// and std::bad_alloc (the mutex held, nothing waited) if the reactor's timer heap cannot grow.
  /// With GCC 12.2 bind the result to a variable (docs/guarantees.md, L3b).
  template <typename Clock, typename Duration>
  auto wait_until(unique_guard<sync::mutex> &g, std::chrono::time_point<Clock, Duration> t) {
    return timed_request_for(g, detail::deadline_until(t));
  }

  /// `co_await cv.wait_for(g, d)`: wait_until(g, now + d), reading the clock once; a zero or
  /// negative `d` returns timeout at once.
  template <typename Rep, typename Period>
  auto wait_for(unique_guard<sync::mutex> &g, std::chrono::duration<Rep, Period> d) {
    return timed_request_for(g, detail::deadline_for(d));
  }

  /// `bool const ok = co_await cv.wait_until(g, t, pred)`: `while (!pred())` waits until `t`;
  /// returns pred() as last evaluated — true if it held, false if `t` came first and it still
  /// does not (as std::condition_variable::wait_until with a predicate). pred is called with the
  /// mutex held; an exception from it propagates (the mutex stays held). Runs as a called child
  /// task, as wait(g, pred).
  template <typename Clock, typename Duration, typename Pred>
    requires std::is_invocable_r_v<bool, Pred &>
  auto wait_until(unique_guard<sync::mutex> &g, std::chrono::time_point<Clock, Duration> t,
                  Pred pred) {
    return timed_pred_request_for<std::decay_t<Pred>>(g, detail::deadline_until(t),
                                                      std::move(pred));
  }

  /// `co_await cv.wait_for(g, d, pred)`: wait_until(g, now + d, pred), reading the clock once.
  template <typename Rep, typename Period, typename Pred>
    requires std::is_invocable_r_v<bool, Pred &>
  auto wait_for(unique_guard<sync::mutex> &g, std::chrono::duration<Rep, Period> d, Pred pred) {
    return timed_pred_request_for<std::decay_t<Pred>>(g, detail::deadline_for(d), std::move(pred));
  }

  /// For plain threads holding `g`: as wait_until(g, t), blocking the thread (the thread keeps its
  /// own time; no reactor). Throws std::logic_error on a thread that runs a magpie task.
  template <typename Clock, typename Duration>
  std::cv_status wait_blocking_until(unique_guard<sync::mutex> &g,
                                     std::chrono::time_point<Clock, Duration> t) {
    return wait_blocking_timed(g, detail::deadline_until(t));
  }

  /// wait_blocking_until(g, now + d); a zero or negative `d` returns timeout at once.
  template <typename Rep, typename Period>
  std::cv_status wait_blocking_for(unique_guard<sync::mutex> &g,
                                   std::chrono::duration<Rep, Period> d) {
    return wait_blocking_timed(g, detail::deadline_for(d));
  }

  /// As wait_blocking_until(g, t) until pred() holds: returns pred() as last evaluated.
  template <typename Clock, typename Duration, typename Pred>
  bool wait_blocking_until(unique_guard<sync::mutex> &g, std::chrono::time_point<Clock, Duration> t,
                           Pred pred) {
    return wait_blocking_pred(g, detail::deadline_until(t).m_at, pred);
  }

  /// As wait_blocking_for(g, d) until pred() holds: returns pred() as last evaluated.
  template <typename Rep, typename Period, typename Pred>
  bool wait_blocking_for(unique_guard<sync::mutex> &g, std::chrono::duration<Rep, Period> d,
                         Pred pred) {
    return wait_blocking_pred(g, detail::deadline_for(d).m_at, pred);
  }
#endif

  /// Tasks and threads waiting now, not yet notified (a snapshot, for diagnostics and tests).
  std::size_t waiting() noexcept {
    m_lock.lock();
    std::size_t const n = m_waiters.size();
    m_lock.unlock();
    return n;
  }

private:
  /// A deadline: io::clock's time since its epoch in nanoseconds (io::detail::nanos).
  using io_nanos = std::int64_t;

  /// The loop of wait(g, pred), run as a called child. It catches what its waits and `pred` throw
  /// into `*error` (a called child's exception would otherwise reach the caller only at its next
  /// join), for the caller's co_await to rethrow.
  template <typename Pred>
  static core::task<void> wait_loop(condition_variable *cv, unique_guard<sync::mutex> *g, Pred pred,
                                    std::exception_ptr *error) {
    try {
      while (!pred()) {
        co_await cv->wait(*g);
      }
    } catch (...) {
      *error = std::current_exception();
    }
  }

#if defined(__linux__)
  /// The loop of wait_until(g, t, pred), until `deadline`: as wait_loop, writing pred()'s last
  /// value to `*result`. `fresh`: the deadline was just computed as now + d, d > 0 (wait_for), so
  /// the first wait need not read the clock again (a deadline that passed meanwhile fires as soon
  /// as it is armed: the same timeout).
  template <typename Pred>
  static core::task<void> timed_wait_loop(condition_variable *cv, unique_guard<sync::mutex> *g,
                                          Pred pred, io_nanos deadline, bool fresh,
                                          std::exception_ptr *error, bool *result) {
    try {
      while (!pred()) {
        auto const when = std::exchange(fresh, false) ? detail::deadline_state::future
                                                      : detail::deadline_state::unknown;
        std::cv_status const s = co_await timed_request{cv, g->mutex(), deadline, when};
        if (s == std::cv_status::timeout) {
          *result = pred();
          co_return;
        }
      }
      *result = true;
    } catch (...) {
      *error = std::current_exception();
    }
  }
#endif

  /// The awaitable of wait(g, pred): the call of wait_loop, then a rethrow of its exception; a
  /// timed loop's co_await returns pred()'s last value.
  template <typename Call, bool Timed>
  struct pred_awaitable {
    Call m_call;
    std::exception_ptr *m_error;
    bool *m_result;
    bool await_ready() { return m_call.await_ready(); }
    decltype(auto) await_suspend(std::coroutine_handle<> h) { return m_call.await_suspend(h); }
    auto await_resume() {
      m_call.await_resume();
      if (*m_error != nullptr) {
        std::rethrow_exception(std::exchange(*m_error, nullptr));
      }
      if constexpr (Timed) {
        return *m_result;
      }
    }
  };

  /// What wait(g, pred) returns.
  template <typename Pred>
  struct [[nodiscard("co_await it")]] pred_request {
    using magpie_awaitable = void;
    condition_variable *m_cv;
    unique_guard<sync::mutex> *m_guard; // the caller's guard, in its frame
    Pred m_pred;
    std::exception_ptr m_error; // lives to the end of the co_await's full-expression

    auto magpie_bind(core::frame_base &self) && {
      check_pred_wait(*m_guard, self);
      auto call = core::call(&wait_loop<Pred>, m_cv, m_guard, std::move(m_pred), &m_error)
                      .magpie_bind(self);
      return pred_awaitable<decltype(call), false>{call, &m_error, nullptr};
    }
  };

  /// The checks of a wait with a predicate, before its loop starts (a called child's frame would
  /// not see the caller's fork-join scope).
  static void check_pred_wait(unique_guard<sync::mutex> const &g, core::frame_base &self) {
    MAGPIE_CHECK(g.owns_lock(), "magpie::condition_variable::wait: no lock owned");
    if (core::ext::in_fork_join_scope(self)) {
      throw std::logic_error("magpie::condition_variable::wait inside a fork-join scope: "
                             "co_await magpie::join() first");
    }
  }

#if defined(__linux__)
  /// What wait_for(g, d, pred) / wait_until(g, t, pred) return.
  template <typename Pred>
  struct [[nodiscard("co_await it")]] timed_pred_request {
    using magpie_awaitable = void;
    condition_variable *m_cv;
    unique_guard<sync::mutex> *m_guard; // the caller's guard, in its frame
    Pred m_pred;
    io_nanos m_deadline;                  // when to give up (io::clock, ns since its epoch)
    bool m_fresh;                         // m_deadline is now + d, d > 0 (see timed_wait_loop)
    std::exception_ptr m_error = nullptr; // these two live to the end of the co_await's
    bool m_result = true;                 // full-expression

    auto magpie_bind(core::frame_base &self) && {
      check_pred_wait(*m_guard, self);
      auto call = core::call(&timed_wait_loop<Pred>, m_cv, m_guard, std::move(m_pred), m_deadline,
                             m_fresh, &m_error, &m_result)
                      .magpie_bind(self);
      return pred_awaitable<decltype(call), true>{call, &m_error, &m_result};
    }
  };
#endif

  /// Queues `w` (a task's awaitable or a blocking thread) for `m`, the mutex it will unlock next.
  void enqueue(detail::waiter &w, sync::mutex &m) noexcept {
    m_lock.lock();
    adopt(m);
    m_waiters.push(&w);
    m_lock.unlock(); // release: the queued waiter → the notifier that takes it (acquire)
  }

  /// Under m_lock: `m` is the mutex of the waits from now on (checked: all waits that overlap in
  /// time use one mutex; a timed waiter still leaving, its deadline having claimed it, counts).
  void adopt(sync::mutex &m) noexcept {
    MAGPIE_CHECK(m_waiters.empty() || m_mutex == &m,
                 "magpie::condition_variable: concurrent waits with different mutexes");
    m_mutex = &m;
  }

  /// Takes up to `limit` waiters, the oldest first (timed ones only if it claims them), and moves
  /// them to the mutex of their waits; `e`, if set, is what their waits throw.
  void take_and_move(std::size_t limit, std::exception_ptr const &e) noexcept {
    m_lock.lock();
    detail::waiter *w = m_waiters.take(limit);
    sync::mutex *m = m_mutex;
    m_lock.unlock();
    move_to_mutex(w, m, e);
  }

  /// Gives each waiter of the chain `w` (already unlinked from our queue) to `m`, the mutex of
  /// their waits: queued there, or, if the mutex is free, handed it and woken. `e`, if set, is
  /// what their wait throws.
  static void move_to_mutex(detail::waiter *w, sync::mutex *m,
                            std::exception_ptr const &e) noexcept {
    while (w != nullptr) {
      detail::waiter *next = w->m_next_waiter; // read first: w may be woken and gone below
      // A timed waiter's claim is spent: in the mutex's queue it waits untimed (a stale claim
      // node there would be skipped as expired; the heir machinery reuses m_slot).
      w->m_slot = nullptr;
      w->m_has_deadline = false;
      w->m_error = e; // thrown by its wait once it holds the mutex again (see detail::hand_to)
      if (m->m_permits.take_or_enqueue(*w)) {
        detail::hand_to(w); // the mutex was free: w holds it now. Point of no return for w.
      }
      w = next;
    }
  }

#if defined(__linux__)
  /// The awaitable of a task's timed wait: a waiter in our queue and a deadline in the reactor,
  /// whichever claims the waiter first moves it to the mutex (timed.hpp; docs/protocols.md §9.8,
  /// "Timed waits: the condition variable").
  struct timed_awaitable : detail::wait_awaitable<timed_awaitable>, io::detail::timeout_node {
    condition_variable *m_cv;
    sync::mutex *m_mutex;
    detail::deadline_state m_when;
    detail::timed_outcome m_outcome = detail::timed_outcome::undecided;

    timed_awaitable(core::frame_base &frame, condition_variable &cv, sync::mutex &m,
                    io_nanos deadline, detail::deadline_state when) noexcept
        : m_cv(&cv), m_mutex(&m), m_when(when) {
      this->m_frame = &frame;
      m_deadline = deadline;
    }

    /// Fast path (await_ready): only a deadline already reached, which returns timeout at once.
    bool try_now() noexcept {
      if (detail::deadline_reached(m_deadline, m_when)) {
        m_outcome = detail::timed_outcome::expired;
        return true;
      }
      return false;
    }

    /// Slow path (await_suspend, parked): queues and arms the deadline, then unlocks the mutex
    /// (false: the point of no return), or cannot arm it (true: the task never left).
    bool try_or_enqueue(detail::waiter &w) noexcept {
      sync::mutex *m = m_mutex; // a local: after enqueue, this awaitable may be gone
      io::detail::timeout_node *const node = this;
      w.m_slot = node; // its claim node (push_timed marks the waiter timed)
      m_expired = &on_deadline;
      m_outcome = detail::timed_outcome::queued; // before the point of no return
      if (!m_cv->enqueue_timed(w, *m, node)) {
        m_outcome = detail::timed_outcome::out_of_memory; // nothing queued, m still held
        return true;
      }
      // Point of no return, as in wait(g): touch only `m`.
      m->unlock();
      return false;
    }

    std::cv_status await_resume() {
      if (m_outcome != detail::timed_outcome::queued) {
        // A deadline already reached (a cv wait has no fast pass): never waited.
        return detail::passed_unqueued(m_outcome) ? std::cv_status::no_timeout
                                                  : std::cv_status::timeout;
      }
      // Either way the mutex is held again (the deadline's side moved us to it, too).
      return detail::ended_by_primitive(*this, *this) ? std::cv_status::no_timeout
                                                      : std::cv_status::timeout;
    }

    /// The reactor's side, on its thread, after it won the claim: takes the waiter out of the
    /// condition variable, then moves it to the mutex like a notify (it wakes holding the mutex).
    static void on_deadline(io::detail::timeout_node &n) noexcept {
      auto &self = static_cast<timed_awaitable &>(n);
      self.m_result = io::detail::wait_node::timed_out; // before the wake (point of no return)
      detail::waiter &w = self;
      sync::mutex *const m = self.m_mutex;
      self.m_cv->take_out_expired(w); // the last touch of the condition variable
      move_to_mutex(&w, m, nullptr);  // point of no return
    }
  };

  /// What wait_for(g, d) / wait_until(g, t) return; co_await it in a magpie task.
  struct [[nodiscard("co_await it")]] timed_request {
    using magpie_awaitable = void;
    condition_variable *m_cv;
    sync::mutex *m_mutex; // the guard's: null if it owns no lock (checked when bound)
    io_nanos m_deadline;
    detail::deadline_state m_when;
    timed_awaitable magpie_bind(core::frame_base &self) && {
      MAGPIE_CHECK(m_mutex != nullptr, "magpie::condition_variable::wait_for/wait_until: the guard "
                                       "owns no lock");
      io::detail::wait_home(self, "magpie::condition_variable::wait_for/wait_until");
      return timed_awaitable(self, *m_cv, *m_mutex, m_deadline, m_when); // in place
    }
  };

  /// The request of wait_for(g, d) / wait_until(g, t).
  timed_request timed_request_for(unique_guard<sync::mutex> &g, detail::timed_deadline dl) {
    return {this, g.mutex(), dl.m_at, dl.m_when};
  }

  /// The request of wait_for(g, d, pred) / wait_until(g, t, pred): its first wait need not read
  /// the clock again if wait_for(d) just computed a deadline in the future.
  template <typename Pred>
  timed_pred_request<Pred> timed_pred_request_for(unique_guard<sync::mutex> &g,
                                                  detail::timed_deadline dl, Pred pred) {
    return timed_pred_request<Pred>{this, &g, std::move(pred), dl.m_at,
                                    dl.m_when == detail::deadline_state::future};
  }

  /// Queues the timed waiter `w` for `m` and arms its deadline (`arm`; null for a plain thread):
  /// false, queuing nothing, if the timer heap could not grow.
  bool enqueue_timed(detail::waiter &w, sync::mutex &m, io::detail::timeout_node *arm) noexcept {
    m_lock.lock();
    adopt(m);
    bool const queued = m_waiters.push_timed(w, arm);
    m_lock.unlock(); // release: as enqueue
    return queued;
  }

  /// The deadline's side, having won the claim: takes `w` out (every other party left it).
  void take_out_expired(detail::waiter &w) noexcept {
    m_lock.lock();
    m_waiters.remove_expired(w);
    m_lock.unlock(); // the last touch of *this: the destructor may go on (wait_out_expiring)
    w.m_next_waiter = nullptr;
  }

  /// The plain-thread timed wait (wait_blocking_for / _until).
  std::cv_status wait_blocking_timed(unique_guard<sync::mutex> &g, detail::timed_deadline dl) {
    MAGPIE_CHECK(g.owns_lock(),
                 "magpie::condition_variable::wait_blocking_for/_until: no lock owned");
    detail::refuse_on_worker("magpie::condition_variable::wait_blocking_for/_until inside a task "
                             "would block its worker: co_await cv.wait_for(g, d) instead");
    if (detail::deadline_reached(dl.m_at, dl.m_when)) {
      return std::cv_status::timeout;
    }
    sync::mutex &m = *g.mutex();
    detail::timed_blocking_waiter w;
    (void)enqueue_timed(w, m, nullptr); // no timer to arm: cannot fail
    m.unlock();
    if (!detail::block_until(w, dl.m_at)) {
      take_out_expired(w);
      m.lock_blocking(); // as a notified waiter, it returns holding the mutex
      return std::cv_status::timeout;
    }
    w.rethrow_if_failed(); // the mutex is held again, as for every wait
    return std::cv_status::no_timeout;
  }

  /// The plain-thread timed wait with a predicate.
  template <typename Pred>
  bool wait_blocking_pred(unique_guard<sync::mutex> &g, io_nanos deadline, Pred &pred) {
    while (!pred()) {
      if (wait_blocking_timed(g, {deadline, detail::deadline_state::unknown}) ==
          std::cv_status::timeout) {
        return pred();
      }
    }
    return true;
  }
#endif

  detail::lock_word m_lock; // guards m_waiters and m_mutex (its value bits are unused)
#if defined(__linux__)
  detail::timed_queue m_waiters;
#else
  detail::waiter_queue m_waiters;
#endif
  sync::mutex *m_mutex = nullptr; // the mutex of the current waits (adopt)
};

} // namespace magpie::sync
