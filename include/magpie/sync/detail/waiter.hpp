#pragma once
// magpie/sync/detail/waiter.hpp — the building block of magpie's waiting primitives.
//
// A primitive (mutex, event, channel …) keeps a FIFO of `waiter`s under its own lock. A task that
// must wait co_awaits an awaitable derived from `wait_awaitable<Derived>`:
//
//   struct lock_awaitable : detail::wait_awaitable<lock_awaitable> {
//     mutex *m_target;
//     bool try_now() noexcept;                 // fast path, no suspension (any thread may race)
//     bool try_or_enqueue(detail::waiter &w);  // under the lock: take it now (true), or queue
//                                              // `w` to be woken later (false)
//     void resume_value();                     // what await_resume returns (optional)
//   };
//   using lock_request = detail::task_request<lock_awaitable, mutex>; // what m.lock() returns
//
// (a request that does more than bind the task writes its own: the latch's counts down, the
// cv's carries the mutex), and a releaser pops a waiter under the primitive's lock and calls
// `wake()` on it after unlocking (or under the lock: wake never blocks). The protocol
// (docs/protocols.md §8):
//   1. await_ready: `try_now()`; if it succeeds the task does not suspend at all.
//   2. await_suspend: `hold()` the scheduler (may throw pool_closed: then nothing has happened),
//      park the task (it takes its stacklet chain), then `try_or_enqueue(*this)`. If that takes
//      the resource after all, the task is taken back at once (`resume_here`, no queue trip);
//      otherwise the waiter is queued, and from the moment the primitive's lock is released a
//      releaser may wake it on another thread: await_suspend touches nothing of the frame after
//      `try_or_enqueue` returns false (point of no return) and returns `continue_after(worker)`.
//   3. wake(): the waiter's task is resubmitted to its pool (the executor it was parked on),
//      which ends the hold. A waiter is woken exactly once; `fail(e)` wakes it so that its
//      co_await throws `e` (a primitive destroyed with waiters fails them with abandoned_wait).

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <utility>

#include "magpie/core/config.hpp"
#include "magpie/core/context.hpp"
#include "magpie/core/ext.hpp"
#include "magpie/core/frame.hpp"
#include "magpie/sync/suspend.hpp" // abandoned_wait

namespace magpie::sync::detail {

/// One suspended task in a primitive's queue. Lives in the task's frame (inside its awaitable).
struct waiter : core::job {
  waiter *m_next_waiter = nullptr; ///< the primitive's FIFO link
  core::ext::task_handle m_task;   ///< the parked task
  std::exception_ptr m_error;      ///< thrown from the co_await if set by fail()
  void *m_slot = nullptr; ///< primitive-defined: e.g. where a channel puts the received value
  /// A mutex's, semaphore's or shared_mutex writer's revocable hand-off (heir_queue.hpp,
  /// heir_state): accessed atomically through heir_state_ref (a plain byte keeps the awaitable
  /// movable, which a request's magpie_bind needs).
  std::uint8_t m_heir_state = 0;
  std::uint8_t m_revocations = 0; ///< times this wait's hand-off was revoked (heir_queue.hpp)
  /// Set when the waiter is queued with a deadline: m_slot then points at the timeout node whose
  /// claim decides the wait (timed.hpp). Cleared when a revoked heir is requeued (heir_queue.hpp:
  /// its claim is spent and make_heir reused m_slot), so it then waits as an untimed waiter.
  bool m_has_deadline = false;
  /// Set for a shared_mutex's waiting writer (a reader's is clear): which side of the lock it
  /// waits for, whatever m_slot holds (its timeout node, or the heir machinery's queue).
  bool m_exclusive = false;

  /// Resubmits the task to its pool. Any thread; never blocks. Point of no return: from here on
  /// the task may run, and this waiter (in its frame) may be gone — touch nothing of it after.
  void wake() noexcept { m_task.home()->resubmit(this, core::ext::any_worker); }

  /// Wakes the task so that its co_await throws `e`.
  void fail(std::exception_ptr e) noexcept {
    m_error = std::move(e);
    wake();
  }

  static void run(core::job *j, core::context &worker) noexcept {
    core::ext::resume(static_cast<waiter *>(j)->m_task, worker);
  }

  /// For await_resume: rethrows what fail() stored.
  void rethrow_if_failed() {
    if (m_error != nullptr) [[unlikely]] {
      std::rethrow_exception(std::move(m_error));
    }
  }
};

static_assert(sizeof(waiter) <= 8 * sizeof(void *),
              "a waiter is eight words (parked tasks stay small)");

/// An intrusive FIFO of waiters. Not thread-safe: guarded by its primitive's lock.
class waiter_queue {
public:
  waiter_queue() noexcept = default;
  waiter_queue(waiter_queue const &) = delete;
  waiter_queue &operator=(waiter_queue const &) = delete;

  bool empty() const noexcept { return m_head == nullptr; }
  std::size_t size() const noexcept { return m_size; }

  void push(waiter *w) noexcept {
    w->m_next_waiter = nullptr;
    if (m_tail == nullptr) {
      m_head = w;
    } else {
      m_tail->m_next_waiter = w;
    }
    m_tail = w;
    ++m_size;
  }

  /// Queues `w` ahead of every other waiter (a revoked heir goes back to the head).
  void push_front(waiter *w) noexcept {
    w->m_next_waiter = m_head;
    m_head = w;
    if (m_tail == nullptr) {
      m_tail = w;
    }
    ++m_size;
  }

  /// The oldest waiter, still queued, or null.
  waiter *front() const noexcept { return m_head; }

  /// The oldest waiter, unlinked, or null.
  waiter *pop() noexcept {
    waiter *w = m_head;
    if (w != nullptr) {
      m_head = w->m_next_waiter;
      if (m_head == nullptr) {
        m_tail = nullptr;
      }
      --m_size;
    }
    return w;
  }

  /// Unlinks every waiter at once; returns the oldest (follow m_next_waiter; read it before
  /// waking each one, since a woken waiter may be gone).
  waiter *take_all() noexcept {
    waiter *w = m_head;
    m_head = m_tail = nullptr;
    m_size = 0;
    return w;
  }

  /// Unlinks up to `limit` waiters, the oldest first, as a list linked by m_next_waiter (as
  /// take_all; null if none is queued).
  waiter *take(std::size_t limit) noexcept {
    if (limit >= m_size) {
      return take_all();
    }
    if (limit == 1) {
      waiter *const w = pop();
      w->m_next_waiter = nullptr; // pop does not clear it
      return w;
    }
    return take_if([](waiter &) { return true; }, limit);
  }

  /// Unlinks `w` if it is queued: true if it was. O(its position in the queue).
  bool remove(waiter *w) noexcept {
    waiter *prev = nullptr;
    for (waiter *cur = m_head; cur != nullptr; prev = cur, cur = cur->m_next_waiter) {
      if (cur == w) {
        unlink_after(prev, cur);
        return true;
      }
    }
    return false;
  }

  /// What a scan (take_until) does with each waiter it reaches.
  enum class scan : std::uint8_t { take, skip, stop };

  /// Unlinks, oldest first, the waiters for which `decide(w)` says `take`, leaving those it says
  /// `skip` queued, until it says `stop` (that waiter and the rest are not looked at) or the
  /// queue ends; returns them as a list linked by m_next_waiter (as take_all). `decide` may have
  /// side effects (a claim).
  template <typename Decide>
  waiter *take_until(Decide decide) noexcept {
    waiter *first = nullptr;
    waiter *last = nullptr;
    waiter *prev = nullptr;
    for (waiter *cur = m_head; cur != nullptr;) {
      waiter *const next = cur->m_next_waiter;
      scan const what = decide(*cur);
      if (what == scan::stop) {
        break;
      }
      if (what == scan::take) {
        unlink_after(prev, cur);
        cur->m_next_waiter = nullptr;
        (last == nullptr ? first : last->m_next_waiter) = cur;
        last = cur;
      } else {
        prev = cur;
      }
      cur = next;
    }
    return first;
  }

  /// Unlinks the waiters for which `take(w)` is true, oldest first, stopping after `limit` of
  /// them; returns them as a list linked by m_next_waiter (as take_all). `take` is called on each
  /// waiter in order until the limit is reached, and may have side effects (a claim).
  template <typename Take>
  waiter *take_if(Take take, std::size_t limit) noexcept {
    waiter *first = nullptr;
    waiter *last = nullptr;
    waiter *prev = nullptr;
    for (waiter *cur = m_head; cur != nullptr && limit != 0;) {
      waiter *const next = cur->m_next_waiter;
      if (take(*cur)) {
        unlink_after(prev, cur);
        cur->m_next_waiter = nullptr;
        (last == nullptr ? first : last->m_next_waiter) = cur;
        last = cur;
        --limit;
      } else {
        prev = cur;
      }
      cur = next;
    }
    return first;
  }

private:
  /// Unlinks `cur`, whose predecessor is `prev` (null: `cur` is the head).
  void unlink_after(waiter *prev, waiter *cur) noexcept {
    (prev == nullptr ? m_head : prev->m_next_waiter) = cur->m_next_waiter;
    if (m_tail == cur) {
      m_tail = prev;
    }
    --m_size;
  }

  waiter *m_head = nullptr;
  waiter *m_tail = nullptr;
  std::size_t m_size = 0;
};

/// Wakes every waiter of the list returned by take_all(), failing each with `e` if not null.
inline void wake_all(waiter *w, std::exception_ptr e = nullptr) noexcept {
  while (w != nullptr) {
    waiter *next = w->m_next_waiter; // read first: the woken task may free w
    if (e != nullptr) {
      w->fail(e);
    } else {
      w->wake();
    }
    w = next;
  }
}

/// The awaitable skeleton described at the top of this file. `Derived` provides
/// `bool try_now()` and `bool try_or_enqueue(waiter &)`, and optionally `resume_value()`.
/// It must be co_awaited through a request whose magpie_bind sets `m_frame` (see bind_waiter).
template <typename Derived>
struct wait_awaitable : waiter {
  core::frame_base *m_frame = nullptr;

  bool await_ready() { return self().try_now(); }

  MAGPIE_CORO_SUSPEND_NOINLINE std::coroutine_handle<> await_suspend(std::coroutine_handle<>) {
    core::context &worker = core::ext::worker_of(*m_frame);
    core::executor *home = worker.home();
    MAGPIE_CHECK(home != nullptr, "magpie: a task waited on a worker whose scheduler cannot "
                                  "resume tasks (a hand-made core::context without an executor)");
    home->hold(); // may throw (pool_closed): the co_await throws, nothing is suspended
    m_run = &waiter::run;
    m_task = core::ext::park(*m_frame);
    if (self().try_or_enqueue(*this)) {
      home->unhold();
      return core::ext::resume_here(m_task, worker); // never left: continue at once
    }
    // Point of no return: queued, and a releaser may already have woken us elsewhere.
    return core::ext::continue_after(worker);
  }

  decltype(auto) await_resume() {
    rethrow_if_failed();
    if constexpr (requires(Derived &d) { d.resume_value(); }) {
      return self().resume_value();
    }
  }

private:
  Derived &self() noexcept { return static_cast<Derived &>(*this); }
};

/// Checks the task may wait here (outside a fork–join scope) and binds the awaitable to it; for
/// the magpie_bind of a primitive's request, which returns `a` by name: the awaitable is then
/// built in the coroutine frame itself (a copy made on the way through the stack cost the wait a
/// store-forwarding stall per field pair).
template <typename Awaitable>
void bind_waiter(Awaitable &a, core::frame_base &self) {
  if (core::ext::in_fork_join_scope(self)) {
    throw std::logic_error("magpie: a task waited (mutex, event, future, channel ...) inside a "
                           "fork-join scope: co_await magpie::join() first");
  }
  a.m_frame = &self;
}

/// What an untimed wait on `Target` returns (mutex::lock_request, semaphore::acquire_request,
/// event::wait_request ...): co_await it in a magpie task. `Awaitable` is a wait_awaitable whose
/// `m_target` is the primitive waited on.
template <typename Awaitable, typename Target>
struct [[nodiscard("co_await it")]] task_request {
  /// Marks the request as awaitable inside a magpie task.
  using magpie_awaitable = void;
  /// The primitive waited on.
  Target *m_target;
  /// Binds the request to the awaiting task (co_await does this) and returns the awaitable.
  Awaitable magpie_bind(core::frame_base &self) && {
    Awaitable a;
    a.m_target = m_target;
    bind_waiter(a, self);
    return a;
  }
};

} // namespace magpie::sync::detail
