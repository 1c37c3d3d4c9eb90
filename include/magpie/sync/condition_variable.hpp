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

#include <coroutine>
#include <cstddef>
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
    m_lock.lock();
    detail::waiter *w = m_waiters.take_all();
    m_lock.unlock();
    move_to_mutex(w, std::make_exception_ptr(abandoned_wait()));
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

  /// Moves the oldest waiter to its mutex (it wakes holding the mutex). Any thread or task.
  void notify_one() noexcept {
    m_lock.lock();
    detail::waiter *w = m_waiters.pop();
    if (w != nullptr) {
      w->m_next_waiter = nullptr;
    }
    m_lock.unlock();
    move_to_mutex(w, nullptr);
  }

  /// Moves every waiter to its mutex, oldest first (they wake one at a time, each holding the
  /// mutex). Any thread or task.
  void notify_all() noexcept {
    m_lock.lock();
    detail::waiter *w = m_waiters.take_all();
    m_lock.unlock();
    move_to_mutex(w, nullptr);
  }

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

  /// Tasks and threads waiting now, not yet notified (a snapshot, for diagnostics and tests).
  std::size_t waiting() noexcept {
    m_lock.lock();
    std::size_t const n = m_waiters.size();
    m_lock.unlock();
    return n;
  }

private:
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

  /// The awaitable of wait(g, pred): the call of wait_loop, then a rethrow of its exception.
  template <typename Call>
  struct pred_awaitable {
    Call m_call;
    std::exception_ptr *m_error;
    bool await_ready() { return m_call.await_ready(); }
    decltype(auto) await_suspend(std::coroutine_handle<> h) { return m_call.await_suspend(h); }
    void await_resume() {
      m_call.await_resume();
      if (*m_error != nullptr) {
        std::rethrow_exception(std::exchange(*m_error, nullptr));
      }
    }
  };

  template <typename Pred>
  struct [[nodiscard("co_await it")]] pred_request {
    using magpie_awaitable = void;
    condition_variable *m_cv;
    unique_guard<sync::mutex> *m_guard; // the caller's guard, in its frame
    Pred m_pred;
    std::exception_ptr m_error; // lives to the end of the co_await's full-expression

    auto magpie_bind(core::frame_base &self) && {
      MAGPIE_CHECK(m_guard->owns_lock(), "magpie::condition_variable::wait: no lock owned");
      if (core::ext::in_fork_join_scope(self)) { // the loop's own frame would not see the scope
        throw std::logic_error("magpie::condition_variable::wait inside a fork-join scope: "
                               "co_await magpie::join() first");
      }
      auto call = core::call(&wait_loop<Pred>, m_cv, m_guard, std::move(m_pred), &m_error)
                      .magpie_bind(self);
      return pred_awaitable<decltype(call)>{call, &m_error};
    }
  };

  /// Queues `w` (a task's awaitable or a blocking thread) for `m`, the mutex it will unlock next.
  void enqueue(detail::waiter &w, sync::mutex &m) noexcept {
    m_lock.lock();
    MAGPIE_CHECK(m_waiters.empty() || m_waiters.front()->m_slot == &m,
                 "magpie::condition_variable: concurrent waits with different mutexes");
    w.m_slot = &m; // which mutex to move it to when notified
    m_waiters.push(&w);
    m_lock.unlock(); // release: the queued waiter → the notifier that pops it (acquire)
  }

  /// Gives each waiter of the chain `w` (already unlinked from our queue) to its mutex: queued
  /// there, or, if the mutex is free, handed it and woken. `e`, if set, is what their wait throws.
  static void move_to_mutex(detail::waiter *w, std::exception_ptr const &e) noexcept {
    while (w != nullptr) {
      detail::waiter *next = w->m_next_waiter; // read first: w may be woken and gone below
      auto *m = static_cast<sync::mutex *>(w->m_slot);
      w->m_slot = nullptr;
      w->m_error = e; // thrown by its wait once it holds the mutex again (see detail::hand_to)
      if (m->m_permits.take_or_enqueue(*w)) {
        detail::hand_to(w); // the mutex was free: w holds it now. Point of no return for w.
      }
      w = next;
    }
  }

  detail::lock_word m_lock; // guards m_waiters (its value bits are unused)
  detail::waiter_queue m_waiters;
};

} // namespace magpie::sync
