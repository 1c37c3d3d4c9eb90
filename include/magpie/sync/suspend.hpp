#pragma once
// magpie/sync/suspend.hpp — the suspension primitive every waiting feature is built on.
//
//   co_await magpie::suspend([&](magpie::resume_handle h) {
//     waiters.push(std::move(h));           // someone calls h.resume() later, from any thread
//   });
//
// `suspend(fn)` suspends the calling task away from its worker (the task keeps its stacklet
// chain; the worker goes on with other work on another chain) and then calls `fn` with the
// task's resume_handle. `h.resume()` — exactly once, from any thread, even before `fn` has
// returned — sends the task back to its pool (or to a chosen worker of it); the co_await then
// returns. Protocol and proof sketch: docs/protocols.md §8 ("Suspension").
//
// Misuse is diagnosed:
//   - resuming an empty handle (twice, or after a move) stops the program with a message
//     (always on: a second resumption would run a task twice);
//   - a handle destroyed without resume() resumes its task with magpie::abandoned_wait thrown
//     from the co_await (so a primitive destroyed with waiters releases them with an error);
//   - suspending inside a fork–join scope (forked children not yet joined) throws
//     std::logic_error from the co_await, before anything is suspended;
//   - suspending on a pool whose destructor has begun and that has no work left in flight throws
//     magpie::pool_closed.
// If `fn` throws, the exception is rethrown from the co_await once the task is resumed (the
// handle, if `fn` dropped it, resumes it at once with that exception).

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "magpie/core/config.hpp"
#include "magpie/core/context.hpp"
#include "magpie/core/ext.hpp"
#include "magpie/core/frame.hpp"

namespace magpie::sync {

/// Thrown from a co_await whose resume_handle was destroyed without being resumed: typically the
/// primitive the task waited on was destroyed while the task still waited.
class abandoned_wait : public std::logic_error {
public:
  abandoned_wait()
      : std::logic_error("magpie: a suspended task's resume_handle was destroyed without resume() "
                         "(was the primitive it waited on destroyed?)") {}
};

namespace detail {

/// The part of a suspension that a resume_handle refers to: the job that brings the task back.
/// Lives in the suspended task's frame (inside the awaitable).
struct suspension : core::job {
  enum phase : std::uint8_t {
    in_fn,         ///< `fn` is still running on the suspending worker
    fn_done,       ///< `fn` returned: a resumption must go through the executor
    resumed_early, ///< resumed while `fn` ran: the suspending worker takes the task back
  };

  core::ext::task_handle m_task;
  std::exception_ptr m_error; ///< thrown from the co_await (abandoned_wait, or the resumer's)
  std::size_t m_worker = core::ext::any_worker; ///< where the resumer asked the task to go
  std::atomic<phase> m_phase{in_fn};

  static void run(core::job *j, core::context &worker) noexcept {
    core::ext::resume(static_cast<suspension *>(j)->m_task, worker);
  }

  /// The one resumption (resume_handle guarantees at most one).
  void resume(std::size_t worker, std::exception_ptr error) noexcept {
    m_worker = worker;
    m_error = std::move(error);
    phase expected = in_fn;
    // acq_rel: release publishes m_worker/m_error to the suspender, which reads them after its
    // own CAS fails (acquire there); acquire pairs with the suspender's fn_done release (below).
    if (m_phase.load(std::memory_order_acquire) != fn_done &&
        m_phase.compare_exchange_strong(expected, resumed_early, std::memory_order_acq_rel,
                                        std::memory_order_acquire)) {
      return; // the suspending worker is still inside fn: it resumes the task when fn returns
    }
    // fn has returned (its CAS to fn_done happened-before our acquire): the task is parked.
    core::executor *home = m_task.home();
    home->resubmit(this, worker); // point of no return: the task may run (and end) from here on
  }
};

} // namespace detail

/// The right to resume one suspended task, exactly once. Move-only. Thread-safe in the sense that
/// any one thread may use it; it is not shared.
class resume_handle {
public:
  /// An empty handle.
  resume_handle() noexcept = default;
  /// Takes over `other`'s right to resume; `other` becomes empty.
  resume_handle(resume_handle &&other) noexcept
      : m_suspension(std::exchange(other.m_suspension, nullptr)) {}
  /// Resumes the task this handle still holds, if any, with abandoned_wait (as the destructor
  /// does), then takes over `other`'s right.
  resume_handle &operator=(resume_handle &&other) noexcept {
    if (this != &other) {
      abandon();
      m_suspension = std::exchange(other.m_suspension, nullptr);
    }
    return *this;
  }
  /// Resumes the task with magpie::abandoned_wait if it has not been resumed.
  ~resume_handle() { abandon(); }

  /// True until the handle has been used (or moved from).
  explicit operator bool() const noexcept { return m_suspension != nullptr; }

  /// Sends the task back to its pool, to a worker of the pool's choosing (an idle one if any).
  /// Any thread; never blocks. The handle becomes empty. Precondition (checked, always): the
  /// handle is not empty.
  void resume() noexcept { take()->resume(core::ext::any_worker, nullptr); }

  /// As resume(), onto worker `worker` of the task's pool. Throws std::out_of_range (and keeps
  /// the handle) if the pool has no such worker.
  void resume_on(std::size_t worker) {
    MAGPIE_CHECK(m_suspension != nullptr, "magpie::resume_handle used twice (or after a move)");
    if (worker >= m_suspension->m_task.home()->workers()) {
      throw std::out_of_range("magpie::resume_handle::resume_on: no such worker in the pool");
    }
    take()->resume(worker, nullptr);
  }

  /// Resumes the task so that its co_await throws `error` (which must not be null).
  void resume_with(std::exception_ptr error) noexcept {
    MAGPIE_CHECK(error != nullptr, "magpie::resume_handle::resume_with: null exception_ptr");
    take()->resume(core::ext::any_worker, std::move(error));
  }

private:
  template <typename Fn>
  friend struct suspend_awaitable;

  explicit resume_handle(detail::suspension *s) noexcept : m_suspension(s) {}

  detail::suspension *take() noexcept {
    MAGPIE_CHECK(m_suspension != nullptr, "magpie::resume_handle used twice (or after a move)");
    return std::exchange(m_suspension, nullptr);
  }

  void abandon() noexcept {
    if (m_suspension != nullptr) {
      resume_with(std::make_exception_ptr(abandoned_wait()));
    }
  }

  detail::suspension *m_suspension = nullptr;
};

/// The awaitable of suspend(fn), bound to its task. Lives in the task's frame.
template <typename Fn>
struct suspend_awaitable : detail::suspension {
  Fn m_fn;                       ///< the callable that receives the resume_handle
  core::frame_base *m_frame;     ///< the suspending task
  std::exception_ptr m_fn_error; ///< what fn threw

  /// Counts the task as held by its scheduler (last: if that throws, nothing is held).
  suspend_awaitable(Fn &&fn, core::frame_base *frame, core::executor *home)
      : m_fn(std::move(fn)), m_frame(frame) {
    home->hold(); // may throw pool_closed
  }

  /// Always suspends.
  bool await_ready() const noexcept { return false; }

  MAGPIE_CORO_SUSPEND_NOINLINE std::coroutine_handle<>
  /// Parks the task, calls fn with its resume_handle, and continues the worker with other work.
  await_suspend(std::coroutine_handle<>) noexcept {
    core::context &worker = core::ext::worker_of(*m_frame);
    m_run = &detail::suspension::run;
    m_task = core::ext::park(*m_frame);
    try {
      Fn fn = std::move(m_fn);
      fn(resume_handle(this));
    } catch (...) {
      m_fn_error = std::current_exception();
    }
    phase expected = in_fn;
    // release: publishes m_fn_error (and everything fn did) to the resumer, which acquires the
    // phase before resubmitting. Point of no return when it succeeds: a resumer may now send the
    // task elsewhere; touch neither `this` nor the frame.
    if (m_phase.compare_exchange_strong(expected, fn_done, std::memory_order_acq_rel,
                                        std::memory_order_acquire)) {
      return core::ext::continue_after(worker);
    }
    // Resumed while fn ran (the CAS's acquire made m_worker/m_error visible): the task never left.
    if (m_worker == core::ext::any_worker || m_worker == worker.index()) {
      m_task.home()->unhold();
      return core::ext::resume_here(m_task, worker);
    }
    core::executor *home = m_task.home();
    home->resubmit(this, m_worker); // point of no return
    return core::ext::continue_after(worker);
  }

  /// Rethrows what fn threw, or the error the task was resumed with.
  void await_resume() {
    if (m_fn_error != nullptr) [[unlikely]] {
      std::rethrow_exception(std::move(m_fn_error));
    }
    if (m_error != nullptr) [[unlikely]] {
      std::rethrow_exception(std::move(m_error));
    }
  }
};

/// The request that suspend(fn) returns; bound to the awaiting task by co_await.
template <typename Fn>
struct [[nodiscard("co_await it")]] suspend_request {
  using magpie_awaitable = void; ///< marks this type as awaitable inside a magpie task
  Fn m_fn;                       ///< the callable that receives the resume_handle

  /// Binds to the awaiting task (throws std::logic_error inside a fork-join scope).
  suspend_awaitable<Fn> magpie_bind(core::frame_base &self) && {
    if (core::ext::in_fork_join_scope(self)) {
      throw std::logic_error("magpie::suspend (or a waiting primitive) inside a fork-join scope: "
                             "co_await magpie::join() first");
    }
    core::executor *home = core::ext::worker_of(self).home();
    if (home == nullptr) {
      throw std::logic_error("magpie::suspend: this worker's scheduler cannot resume tasks");
    }
    return suspend_awaitable<Fn>(std::move(m_fn), &self, home); // holds: see its constructor
  }
};

/// Suspends the calling task and calls `fn(resume_handle)` once it is safely suspended. See the
/// top of this file. `fn` is moved onto the suspending worker's own stack before it is called, so
/// it may outlive the task's frame; a resumption that arrives while `fn` runs takes effect when
/// `fn` returns (the task then continues on the same worker, without a queue round trip, unless
/// another worker was asked for).
template <typename Fn>
  requires std::is_invocable_v<std::decay_t<Fn> &, resume_handle>
suspend_request<std::decay_t<Fn>> suspend(Fn &&fn) {
  return {std::forward<Fn>(fn)};
}

} // namespace magpie::sync
