#pragma once
// magpie/sync/future.hpp — spawn a task from anywhere and read its result later.
//
//   magpie::future<long> f = magpie::spawn(pool, fib, 30);  // any thread or task
//   long v = co_await f;                                    // in a task: suspends, never blocks
//   long w = g.get();                                       // on a plain thread: blocks
//
// spawn(pool, [priority,] fn, args...) decay-copies fn and args into the future's state (as
// std::thread does; std::ref(x) passes x by reference, which must then outlive the task) and
// starts fn(args...) as a root task on `pool`: it counts as in flight there until it completes,
// so the pool's destructor waits for it. spawn into a pool whose destructor has begun throws
// magpie::pool_closed (except from a task of that pool, while the pool still drains).
//
// Reading: a future has one reader and is read once. `co_await f` (inside a task) and
// `f.get()` (outside) return the value or rethrow the task's exception and leave `f` empty;
// reading an empty future throws std::future_error (no_state). `wait()` / `wait_for(d)` block
// without reading. A blocking wait polls for up to 4 µs (or until its deadline) before it
// sleeps: a result due that soon costs no system call on either side. Blocking reads on a worker of
// the future's own pool (outside a co_await) are refused with std::logic_error unless the result is
// ready (they would block the worker).
//
// Helping: a task that co_awaits the future of a task that has not started yet, on a worker of
// the same pool, runs it itself at once — as a called child, on its own worker and stack — and
// the pool's job, when it comes, finds it taken and only drops its reference. So awaiting a
// spawned task never waits for a queue (no priority inversion, no idle worker), and a
// one-worker pool whose tasks await each other's unstarted futures cannot deadlock.
//
// Destroyed unread, a future detaches: the task still runs (the pool's destructor waits for it);
// its value is destroyed with the state; its exception, if any, goes to the unobserved-exception
// handler (by default one line on stderr with what(); see set_unobserved_exception_handler).
//
// Futures are move-only; there is no shared_future: a value read by several tasks is better
// passed to them (by reference, from the task that reads the future) than read concurrently,
// and every read through a shared state would need a lock or a copy. Spawned tasks return
// values: task<T&> does not exist in magpie, so neither does future<T&> (return a pointer).
// Protocol: docs/protocols.md §9.1.

#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstdint>
#include <future>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "magpie/core/config.hpp"
#include "magpie/core/context.hpp"
#include "magpie/core/detail/thread_wait.hpp"
#include "magpie/core/frame.hpp"
#include "magpie/sched/pool.hpp"
#include "magpie/sched/sync_wait.hpp"
#include "magpie/sync/detail/spawned.hpp"
#include "magpie/sync/detail/waiter.hpp"

namespace magpie::sync {

template <typename T>
class future;

namespace detail {

template <typename U, typename Fn, typename... Args>
future<U> make_future(sched::pool &p, sched::priority prio, Fn &&fn, Args &&...args);

/// A future's state: the result, and the one reader's wait. `m_word` is `pending`, `done`,
/// `thread_waiting` (a plain thread sleeps on a shared slot: core::detail::wait_for_done) or the
/// address of a waiting task's waiter.
template <typename T>
struct future_state : spawned {
  static constexpr bool keeps_value = true;
  static constexpr std::uintptr_t pending = core::detail::word_pending;
  static constexpr std::uintptr_t done = core::detail::word_done;
  static constexpr std::uintptr_t thread_waiting = core::detail::word_thread_waiting;

  struct init {
    sched::pool *pool;
  };
  explicit future_state(init const &i) noexcept : spawned(*i.pool, 2) {} // the job's and ours

  T *target() noexcept
    requires(!std::is_void_v<T>)
  {
    return m_value.target();
  }

  bool ready() const noexcept {
    return m_word.load(std::memory_order_acquire) == done; // acquire: pairs with finished()
  }

  /// Under nothing: the one reader takes the result once it is ready.
  T take() {
    if (has_exception()) {
      std::rethrow_exception(take_exception());
    }
    return m_value.take();
  }

  /// Blocks the calling thread until ready, or until `deadline` (then false): polls briefly,
  /// then sleeps on a shared slot (core::detail::wait_for_done). The one reader only: the word
  /// is `pending` or `done` here (a task reader would have been the one reader).
  template <typename Clock, typename Duration>
  bool wait_until(std::chrono::time_point<Clock, Duration> const *deadline) {
    return core::detail::wait_for_done(m_word, this, deadline);
  }

  /// Under no lock: enqueue a waiting task unless the result is ready (then true).
  bool try_enqueue(waiter &w) noexcept {
    std::uintptr_t cur = m_word.load(std::memory_order_acquire); // acquire: as in ready()
    while (cur != done) {
      // release: publishes the waiter's fields to finished(), which acquires the word.
      if (m_word.compare_exchange_weak(cur, reinterpret_cast<std::uintptr_t>(&w),
                                       std::memory_order_acq_rel, std::memory_order_acquire)) {
        return false; // point of no return: finished() may wake the task from now on
      }
    }
    return true;
  }

protected:
  void finished() noexcept override {
    // acq_rel: release publishes the result (value or exception) to the reader's acquire of the
    // word; acquire makes a waiting task's waiter (published by its CAS) visible to us.
    std::uintptr_t const w = m_word.exchange(done, std::memory_order_acq_rel);
    if (w == thread_waiting) {
      core::detail::notify_thread(this); // the state lives on (our reference): only the slot
    } else if (w != pending) {
      reinterpret_cast<waiter *>(w)->wake(); // point of no return for that waiter
    }
  }

private:
  sched::detail::value_slot<T> m_value; // the same slot as sync_wait's
  std::atomic<std::uintptr_t> m_word{pending};
};

/// `co_await future`, bound to the awaiting task: helps, or waits via the waiter skeleton.
template <typename T>
struct future_awaitable : wait_awaitable<future_awaitable<T>> {
  using base = wait_awaitable<future_awaitable<T>>;
  state_ref<future_state<T>> m_state;
  bool m_helped = false;

  bool try_now() noexcept { return m_state->ready(); }
  bool try_or_enqueue(waiter &w) noexcept { return m_state->try_enqueue(w); }

  MAGPIE_CORO_SUSPEND_NOINLINE std::coroutine_handle<> await_suspend(std::coroutine_handle<> self) {
    future_state<T> &s = *m_state;
    // Help only on a worker of the task's own pool: it must run where it was sent.
    if (core::ext::worker_of(*this->m_frame).home() == s.m_pool && s.claim_for_help()) {
      m_helped = true;
      s.withdraw_job();
      std::coroutine_handle<> child = s.call_from(*this->m_frame);
      return child ? child : self; // null: creating it threw, await_resume completes it
    }
    return base::await_suspend(self);
  }

  T resume_value() {
    future_state<T> &s = *m_state;
    if (m_helped) {
      // The task ran as our called child: its exception, if any, landed in our frame (which has
      // no other, outside a fork–join scope). Complete the state as the pool's job would have.
      core::frame_base &self = *this->m_frame;
      if (self.has_exception()) {
        s.store_exception(self.take_exception());
      }
      s.complete_as_reader(); // we are the reader: m_word stays pending (nobody reads it)
      s.drop_stale_jobs();    // ours, if it is the newest by now, and the claimed ones below it
    }
    return s.take();
  }
};

} // namespace detail

/// The result of a task started with spawn(): read it once, with `co_await` in a task or get()
/// on a plain thread. Move-only; see the top of this file for the whole contract.
template <typename T>
class [[nodiscard("a discarded future detaches its task; keep it to read the result")]] future {
  using state = detail::future_state<T>;

public:
  using magpie_awaitable = void; ///< `co_await f` inside a magpie task
  /// The type of the spawned task's result.
  using value_type = T;

  /// An empty future (valid() is false).
  future() noexcept = default;
  /// Takes over `other`'s task; `other` becomes empty.
  future(future &&) noexcept = default;
  /// Detaches the task this future holds, if any (as the destructor does), then takes over
  /// `other`'s.
  future &operator=(future &&) noexcept = default;
  /// Detaches: see the top of this file. Never blocks.
  ~future() = default;

  /// True if the future has a result to read (it was not read, moved from or default-made).
  bool valid() const noexcept { return static_cast<bool>(m_state); }

  /// True if the task has completed (its result can be read without waiting). Precondition: valid.
  bool is_ready() const {
    require();
    return m_state->ready();
  }

  /// Blocks the calling thread until the task has completed. Throws std::future_error if empty,
  /// std::logic_error on a worker of the task's pool while the task is not done.
  void wait() const {
    prepare_block();
    m_state->wait_until(static_cast<std::chrono::steady_clock::time_point const *>(nullptr));
  }

  /// As wait(), for at most `d`: std::future_status::ready or timeout.
  template <typename Rep, typename Period>
  std::future_status wait_for(std::chrono::duration<Rep, Period> const &d) const {
    prepare_block();
    auto const deadline = std::chrono::steady_clock::now() + d;
    return m_state->wait_until(&deadline) ? std::future_status::ready : std::future_status::timeout;
  }

  /// Blocks until the task has completed, then returns its value or rethrows its exception; the
  /// future becomes empty. Errors as for wait().
  T get() {
    wait();
    detail::state_ref<state> s = std::move(m_state);
    return s->take();
  }

  /// Inside a task: `co_await f` (or `co_await std::move(f)`). See the top of this file.
  detail::future_awaitable<T> magpie_bind(core::frame_base &self) {
    require();
    detail::future_awaitable<T> a;
    a.m_state = std::move(m_state);
    detail::bind_waiter(a, self);
    return a;
  }

  /// Outside a magpie task, a future cannot be co_awaited.
  template <typename Self = future>
  void operator co_await() const {
    static_assert(sizeof(Self) == 0, "magpie::future can only be co_awaited inside a magpie::task "
                                     "coroutine; on a plain thread call f.get()");
  }

private:
  template <typename U, typename Fn, typename... Args>
  friend future<U> detail::make_future(sched::pool &, sched::priority, Fn &&, Args &&...);

  explicit future(state *s) noexcept : m_state(s) {}

  void require() const {
    if (!m_state) {
      throw std::future_error(std::future_errc::no_state);
    }
  }

  void prepare_block() const {
    require();
    if (!m_state->ready() && m_state->m_pool->is_worker_thread()) {
      throw std::logic_error("magpie::future::get/wait on a worker of the task's own pool would "
                             "block that worker: inside a task, co_await the future instead");
    }
  }

  detail::state_ref<state> m_state;
};

namespace detail {
/// Makes the future of a launched task.
template <typename U, typename Fn, typename... Args>
future<U> make_future(sched::pool &p, sched::priority prio, Fn &&fn, Args &&...args) {
  using state = future_state<U>;
  return future<U>(launch<state>(p, prio, typename state::init{&p}, std::forward<Fn>(fn),
                                 std::forward<Args>(args)...));
}
} // namespace detail

/// Starts `fn(args...)` (an async function; fn and args decay-copied, std::ref for references)
/// as a root task on `pool` at priority `prio`, from any thread or task, and returns its future.
/// Throws pool_closed (see the top of this file), std::bad_alloc, or what a copy throws; then
/// nothing was started. Costs one heap allocation and one queue push.
template <typename Fn, typename... Args>
auto spawn(sched::pool &pool, sched::priority prio, Fn &&fn, Args &&...args) {
  static_assert(detail::check_spawnable<Fn, Args...>());
  using T = detail::spawn_result_t<Fn, Args...>;
  return detail::make_future<T>(pool, prio, std::forward<Fn>(fn), std::forward<Args>(args)...);
}

/// As spawn(pool, priority::normal, fn, args...).
template <typename Fn, typename... Args>
auto spawn(sched::pool &pool, Fn &&fn, Args &&...args) {
  return spawn(pool, sched::priority::normal, std::forward<Fn>(fn), std::forward<Args>(args)...);
}

} // namespace magpie::sync
