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
// without reading. A blocking wait polls for 4 to 100 µs, adapted to the thread's recent waits
// (or until its deadline), before it sleeps: a result due that soon costs no system call on
// either side. Blocking reads on a worker of
// the future's own pool (outside a co_await) are refused with std::logic_error unless the result is
// ready (they would block the worker).
//
// Waiting with a deadline (Linux): inside a task `co_await f.await_for(d)` (or await_until(t))
// suspends until the result is ready or the time is up and returns std::future_status without
// reading; it never helps (below), since running the task here would ignore the deadline.
//
// Helping: a task that co_awaits the future of a task that has not started yet, on a worker of
// the same pool, runs it itself at once — as a called child, on its own worker and stack — and
// the pool's job, when it comes, finds it taken and only drops its reference. So awaiting a
// spawned task never waits for a queue (no priority inversion, no idle worker), and a
// one-worker pool whose tasks await each other's unstarted futures cannot deadlock. Likewise a
// plain thread's get() or wait() (not wait_for) on a pool that runs callers' roots
// (pool_options::callers_run_roots, the default) runs an unstarted task itself, as a guest of
// the pool, as sync_wait runs its root: the reader does not wait for a worker to wake up and
// take the job, and idle workers steal the task's continuations. A task that waits on something
// is finished by a worker, and the reader then waits for it.
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
#include "magpie/sync/detail/timed.hpp" // await_for / await_until (Linux)
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

#if defined(__linux__)
  /// The deadline's side of a task's timed wait (await_for), on the reactor's thread, having won
  /// the claim of `w`'s timeout node: takes `w` out of the word (true: nobody else will wake it),
  /// or finds the word `done` (false: the completer took `w` and wakes it, or the task's own
  /// enqueue found the result ready). A word still `pending` or `thread_waiting` means the task
  /// has armed its deadline and not yet queued: wait for its CAS (a few instructions away).
  bool withdraw(waiter &w) noexcept {
    auto const mine = reinterpret_cast<std::uintptr_t>(&w);
    for (unsigned spins = 0;;) {
      std::uintptr_t cur = m_word.load(std::memory_order_acquire); // acquire: as in ready()
      if (cur == done) {
        return false;
      }
      if (cur == mine) {
        // Fails only if the completer exchanged `done` in meanwhile (the word leaves `&w` no
        // other way). relaxed: the word goes back to pending, publishing nothing; the task's
        // fields were published to us by its CAS (acquired above) and its wake orders the rest.
        return m_word.compare_exchange_strong(cur, pending, std::memory_order_relaxed,
                                              std::memory_order_relaxed);
      }
      spin_pause(spins);
    }
  }
#endif

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

#if defined(__linux__)
/// `co_await f.await_for(d)` / `await_until(t)`: a task waits for the future's result until a
/// deadline, without reading it. The word (future_state) decides who wakes the task — the
/// completer's exchange or the deadline's side's withdraw, whichever takes `&waiter` out first —
/// and the timeout node's claim decides who may touch the node last: the task, woken by the
/// completer (or finding the result ready after arming), claims it and cancels the timer; if the
/// reactor claimed it first, the task waits until the reactor's side is done with the node
/// (m_deadline_done). No helping: running an unstarted task here would ignore the deadline.
/// Protocol: docs/protocols.md §9.1, "Timed waits"; model docs/models/future_wait.pml.
template <typename T>
struct future_timed_awaitable : wait_awaitable<future_timed_awaitable<T>>,
                                io::detail::timeout_node {
  future_state<T> *m_state; // the future, in the awaiting frame, keeps it
  timed_outcome m_outcome = timed_outcome::undecided;
  deadline_state m_when;
  std::atomic<bool> m_deadline_done{false}; // the reactor's last touch, when it did not wake us

  future_timed_awaitable(core::frame_base &frame, future_state<T> &s, timed_deadline dl) noexcept
      : m_state(&s), m_when(dl.m_when) {
    this->m_frame = &frame;
    m_deadline = dl.m_at;
  }

  /// Fast path (await_ready): the result is ready, or the deadline has already been reached.
  bool try_now() noexcept {
    if (m_state->ready()) {
      m_outcome = timed_outcome::passed;
      return true;
    }
    if (deadline_reached(m_deadline, m_when)) {
      m_outcome = timed_outcome::expired;
      return true;
    }
    return false;
  }

  /// Slow path (await_suspend, parked): arms the deadline, then queues in the word (false: the
  /// point of no return), or finds the result ready (true: the task never left, once the timer is
  /// ended) or cannot arm (true).
  bool try_or_enqueue(waiter &w) noexcept {
    m_expired = &on_deadline;
    m_outcome = timed_outcome::queued; // before the point of no return: await_resume may run
    if (!io::detail::arm_timer(*this)) {
      m_outcome = timed_outcome::out_of_memory;
      return true;
    }
    if (!m_state->try_enqueue(w)) {
      return false;
    }
    m_outcome = timed_outcome::passed;
    end_timer();
    return true;
  }

  std::future_status resume_value() {
    if (m_outcome != timed_outcome::queued) {
      return passed_unqueued(m_outcome) ? std::future_status::ready : std::future_status::timeout;
    }
    if (m_result == io::detail::wait_node::timed_out) {
      return std::future_status::timeout; // the deadline's side woke us: its last touch
    }
    end_timer(); // the completer woke us
    return std::future_status::ready;
  }

  /// The task's side, not woken by the deadline: claims the node and cancels the timer (which
  /// orders a reactor that popped it and lost), or, the reactor having claimed it, waits until
  /// its side (on_deadline) is done with the node.
  void end_timer() noexcept {
    if (claim()) {
      (void)io::detail::cancel_timer(*this);
      return;
    }
    // acquire: pairs with on_deadline's release; its reads of the node and word come before.
    for (unsigned spins = 0; !m_deadline_done.load(std::memory_order_acquire);) {
      spin_pause(spins);
    }
  }

  /// The reactor's side, on its thread, after it won the claim.
  static void on_deadline(io::detail::timeout_node &n) noexcept {
    auto &self = static_cast<future_timed_awaitable &>(n);
    waiter &w = self;
    if (self.m_state->withdraw(w)) {
      self.m_result = io::detail::wait_node::timed_out;
      w.wake(); // point of no return
      return;
    }
    // The completer wakes the task (or the task never left): it waits for this store, our last
    // touch. release: orders our reads of the node and the word before the frame may go.
    self.m_deadline_done.store(true, std::memory_order_release);
  }
};

/// What future::await_for / await_until return; co_await it in a magpie task.
template <typename T>
struct [[nodiscard("co_await it")]] future_timed_request {
  /// Marks the request as awaitable inside a magpie task.
  using magpie_awaitable = void;
  future_state<T> *m_state;
  timed_deadline m_deadline;
  /// Binds the request to the awaiting task (co_await does this) and returns the awaitable.
  future_timed_awaitable<T> magpie_bind(core::frame_base &self) && {
    io::detail::wait_home(self, "magpie::future::await_for/await_until");
    return future_timed_awaitable<T>(self, *m_state, m_deadline); // in place
  }
};
#endif // __linux__

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
    if (!m_state->ready()) {
      m_state->help_from_thread(); // an unstarted task runs here (see the top of this file)
    }
    m_state->wait_until(static_cast<std::chrono::steady_clock::time_point const *>(nullptr));
  }

  /// As wait(), for at most `d`: std::future_status::ready or timeout.
  template <typename Rep, typename Period>
  std::future_status wait_for(std::chrono::duration<Rep, Period> const &d) const {
    prepare_block();
    auto const deadline = std::chrono::steady_clock::now() + d;
    return m_state->wait_until(&deadline) ? std::future_status::ready : std::future_status::timeout;
  }

#if defined(__linux__)
  /// Inside a task: `std::future_status const s = co_await f.await_until(t);` waits for the
  /// task's result until `t`, suspending (the worker runs other work), and does not read it:
  /// std::future_status::ready if it is ready, timeout if `t` came first (then wait again, or
  /// leave the future to detach). A deadline already reached returns at once. Unlike
  /// `co_await f`, it does not run an unstarted task on this worker (that would ignore `t`).
  /// Any clock's time point is converted to io::clock; the task holds its pool while it waits.
  /// Throws std::future_error if empty (at the call), std::bad_alloc (at the co_await) if the
  /// reactor's timer heap cannot grow. Keep the future alive until the co_await returns. Linux
  /// (the reactor).
  template <typename Clock, typename Duration>
  detail::future_timed_request<T> await_until(std::chrono::time_point<Clock, Duration> t) const {
    require();
    return {m_state.get(), detail::deadline_until(t)};
  }

  /// `co_await f.await_for(d)`: await_until(now + d), reading the clock once; a zero or negative
  /// `d` does not wait. For a plain thread's wait, see wait_for.
  template <typename Rep, typename Period>
  detail::future_timed_request<T> await_for(std::chrono::duration<Rep, Period> d) const {
    require();
    return {m_state.get(), detail::deadline_for(d)};
  }
#endif

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
                             "block that worker: inside a task, co_await the future (or its "
                             "await_for / await_until) instead");
    }
  }

  detail::state_ref<state> m_state;
};

namespace detail {
/// Makes the future of a launched task.
template <typename U, typename Fn, typename... Args>
future<U> make_future(sched::pool &p, sched::priority prio, Fn &&fn, Args &&...args) {
  using state = future_state<U>;
  return future<U>(launch<state>(p, prio, nullptr, typename state::init{&p}, std::forward<Fn>(fn),
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
