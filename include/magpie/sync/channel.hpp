#pragma once
// magpie/sync/channel.hpp — a bounded multi-producer multi-consumer channel that tasks use
// without blocking their worker and plain threads use by blocking.
//
//   magpie::channel<job> jobs(64);
//   co_await jobs.send(job{...});                    // suspends while the channel is full
//   while (std::optional<job> j = co_await jobs.receive()) { ... }   // nullopt: closed, drained
//   jobs.close();                                    // any thread: no more sends
//   auto [j, status] = co_await jobs.receive_for(20ms);  // Linux: or give up after a while
//
// Protocol and proof sketch: docs/protocols.md §9.11 ("channel").
//
// This file is a map of the channel: the public members here; what they share (the ring, the
// lock, the waiting queues) in detail/channel_state.hpp; the two modes — buffered
// (capacity > 0: the lock-free ring of detail/channel_ring.hpp, the adaptive spin of
// detail/channel_spin.hpp, the pump) in detail/channel_buffered.hpp, rendezvous (capacity 0,
// all under the lock) in detail/channel_rendezvous.hpp — chosen in one place, in_mode(); the
// waiters and their deadlines in detail/channel_waiters.hpp and detail/channel_timed.hpp.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>

#include "magpie/core/config.hpp"
#include "magpie/core/frame.hpp"
#include "magpie/sync/channel_status.hpp"
#include "magpie/sync/detail/blocking.hpp"
#include "magpie/sync/detail/channel_buffered.hpp"
#include "magpie/sync/detail/channel_rendezvous.hpp"
#include "magpie/sync/detail/channel_spin.hpp"
#include "magpie/sync/detail/channel_state.hpp"
#include "magpie/sync/detail/channel_waiters.hpp"
#include "magpie/sync/detail/waiter.hpp"
#include "magpie/sync/suspend.hpp"
#if defined(__linux__)
#  include <chrono>

#  include "magpie/sync/detail/channel_timed.hpp"
#endif

namespace magpie::sync {

template <typename T>
class channel_sender;

/// A bounded FIFO channel of `T` for any number of producers and consumers, tasks or threads.
///
/// `capacity` values can be buffered; with capacity 0 the channel is a rendezvous: a send
/// completes only when a receiver takes the value. A send on a full channel waits; a receive on
/// an empty one waits. Values are delivered in the order their sends completed; waiting senders
/// and waiting receivers are each served oldest first (tasks and threads in one FIFO), and a
/// value goes straight from a sender to a waiting receiver (or from a waiting sender into the
/// buffer) without a wake-up round trip. Each value sent is received exactly once, moved (never
/// copied) from sender to receiver.
///
/// close() ends sending: later and waiting sends report failure, and receives drain what is
/// buffered, then return std::nullopt. With several senders, give each a channel_sender: the
/// channel closes when the last of them is destroyed (sync/channel_sender.hpp). Every member may be
/// called concurrently from any thread or task. Destroying a channel while tasks or threads wait on
/// it releases them with magpie::abandoned_wait; buffered values are destroyed with it.
///
/// Cost: with `capacity` > 0 a send or receive that does not wait takes no lock — a lock-free
/// ring with a sequence number per slot (one compare-and-swap on the ring's tail or head, a move,
/// a release store, and a fence to look for waiters); the lock is taken only to wait, to hand
/// values to waiting tasks and threads, and to close. A send or receive that does not find
/// others waiting may overtake one that waits (a waiting operation is served as soon as the
/// channel allows, oldest waiter first). Rendezvous channels (capacity 0) work under the lock.
/// One that waits adds one suspension.
///
/// Before waiting, a send that finds the ring full (or a receive that finds it empty) spins for a
/// short while — up to 128 CPU pauses (about 1.2 µs where a pause takes 10 ns) — retrying
/// whenever the ring looks ready: with a producer and a consumer running on two workers, the
/// other side usually frees a cell (or publishes a value) within that time, and a suspension and
/// wake-up per value would cost more than the value itself. Tasks spin only on a pool of two or
/// more workers (on one, nothing else could make progress meanwhile); plain threads always do.
/// Each side's spin budget adapts: it halves (to 8 pauses at least) after a spin that ended
/// waiting anyway, and doubles back after one that paid, so a channel whose other side is not
/// running spends little time spinning (see spin_budgets()).
///
/// On Linux every send and receive can wait with a deadline: send_for / send_until and
/// receive_for / receive_until for tasks, and the `_blocking_` forms for plain threads; a value
/// handed over as a deadline passes is delivered, never lost (docs/protocols.md §9.11, "Timed
/// sends and receives").
///
/// `T` must be nothrow move-constructible (values are moved in and out of the ring, and under
/// the channel's lock).
template <typename T>
class channel {
  static_assert(std::is_nothrow_move_constructible_v<T>,
                "magpie::channel<T>: T must be nothrow move-constructible (values move in and out "
                "of the channel's ring and under its lock); wrap it, e.g. in std::unique_ptr");
  static_assert(std::is_object_v<T> && !std::is_const_v<T> && !std::is_array_v<T>,
                "magpie::channel<T>: T must be a non-const object type (not a reference or array)");

public:
  /// A channel that buffers up to `capacity` values (0: rendezvous). Allocates the ring once.
  explicit channel(std::size_t capacity) : m_state(capacity) {}
  channel(channel const &) = delete;
  channel &operator=(channel const &) = delete;

  /// Releases every waiting task and thread with magpie::abandoned_wait, then destroys the
  /// buffered values.
  ~channel() {
    detail::abandon_all(m_state.m_lock, m_state.m_receivers, m_state.m_senders);
    // The timed waiters' deadline sides; then m_state's ring destroys the buffered values.
    detail::wait_out_expiring(m_state.m_lock, m_state.m_receivers, m_state.m_senders);
  }

  /// How many values the channel buffers (0: rendezvous).
  std::size_t capacity() const noexcept { return m_state.m_ring.capacity(); }

  /// How many values are buffered now (a snapshot; values being sent or received count).
  std::size_t size() const noexcept { return m_state.m_ring.size(); }

  /// True once close() has been called (a snapshot for a concurrent close).
  bool is_closed() const noexcept { return m_state.m_ring.is_closed(); }

  /// How many tasks and threads wait to send, and to receive, now (snapshots, for diagnostics and
  /// tests).
  std::size_t waiting_senders() noexcept {
    return detail::locked_size(m_state.m_lock, m_state.m_senders);
  }
  /// How many tasks and threads wait to receive now (a snapshot, as waiting_senders()).
  std::size_t waiting_receivers() noexcept {
    return detail::locked_size(m_state.m_lock, m_state.m_receivers);
  }

  /// The spin budgets, in CPU pauses, of a send that finds the ring full and of a receive that
  /// finds it empty, before they wait (see the class comment): snapshots, for diagnostics and
  /// tests. Between spin_floor and spin_ceiling; a rendezvous channel does not spin.
  struct spin_budget {
    std::uint32_t send;    ///< pauses a send spins on a full ring
    std::uint32_t receive; ///< pauses a receive spins on an empty ring
  };
  /// See spin_budget.
  spin_budget spin_budgets() const noexcept {
    return {m_state.m_send_spin.budget(), m_state.m_receive_spin.budget()};
  }
  /// The most and the fewest pauses a send or receive spins before waiting.
  static constexpr std::uint32_t spin_ceiling = detail::adaptive_spin::ceiling;
  /// See spin_ceiling.
  static constexpr std::uint32_t spin_floor = detail::adaptive_spin::floor;

  /// Closes the channel: sends from now on fail, waiting senders are released with failure
  /// (their values are not sent), waiting receivers get std::nullopt; values already buffered
  /// can still be received. Idempotent. Any thread or task; never blocks (beyond the short lock).
  void close() noexcept {
    m_state.m_lock.lock();
    m_state.m_ring.close(); // sends fail from now on (the closed bit is in the ring's tail)
    detail::waiter *senders = m_state.m_senders.take_all();
    m_state.m_waiting_senders.store(0, std::memory_order_relaxed); // under the lock
    detail::waiter_queue done; // served: released after the unlock
    // Receivers get what is buffered, then std::nullopt.
    in_mode([&](auto mode) { mode.close_receivers_with_lock_held(done); });
    m_state.m_lock.unlock();
    detail::release_all(done.take_all());
    detail::release_all(senders); // their m_slot stays set: not sent
  }

  /// Sends `value` if that needs no waiting: moved from only if the result is `sent`.
  send_status try_send(T &&value) noexcept {
    return in_mode([&](auto mode) { return mode.try_send(value); });
  }
  /// As try_send(T&&), copying `value` only if it is sent.
  send_status try_send(T const &value)
    requires std::is_copy_constructible_v<T>
  {
    T copy(value);
    return try_send(std::move(copy));
  }

  /// Receives a value if one is ready; std::nullopt if the channel is empty (and, if it is also
  /// closed, it will stay so: see is_closed()).
  std::optional<T> try_receive() noexcept {
    std::optional<T> out;
    in_mode([&](auto mode) { return mode.try_receive(out); });
    return out;
  }

  /// The awaitable of send(). Internal.
  struct send_awaitable : detail::wait_awaitable<send_awaitable> {
    /// The channel waited on.
    channel *m_channel = nullptr;
    T *m_value = nullptr;  ///< in the request, which outlives the co_await
    bool m_waited = false; ///< queued: the result is in m_slot
    bool m_sent = false;   ///< the result when not queued

    /// Fast path, from await_ready: succeeds without suspending when it can
    /// (sync/detail/waiter.hpp).
    bool try_now() noexcept {
      send_status const status = m_channel->send_now(*m_value, this->m_frame);
      m_sent = status == send_status::sent;
      return status != send_status::full;
    }
    /// Slow path, under the lock: succeeds now (true), or queues `w` to be resumed later (false).
    bool try_or_enqueue(detail::waiter &w) noexcept {
      // Set before: once queued (the unlock), the task may be resumed elsewhere at any moment and
      // this awaitable must not be touched any more.
      m_waited = true;
      send_status const status = m_channel->send_slow(*m_value, w, nullptr);
      if (status == send_status::full) {
        return false; // point of no return
      }
      m_waited = false;
      m_sent = status == send_status::sent;
      return true;
    }
    /// True if the value was sent, false if the channel was closed first.
    bool resume_value() const noexcept { return m_waited ? this->m_slot == nullptr : m_sent; }
  };

  /// What send() returns; co_await it in a magpie task. Holds the value until it is sent.
  struct [[nodiscard("co_await it")]] send_request {
    /// Marks the request as awaitable inside a magpie task.
    using magpie_awaitable = void;
    /// The channel waited on.
    channel *m_channel;
    /// The value to send (moved into the channel, or to a receiver).
    T m_value;
    /// Binds the request to the awaiting task (co_await does this) and returns the awaitable.
    send_awaitable magpie_bind(core::frame_base &self) && {
      send_awaitable a;
      a.m_channel = m_channel;
      a.m_value = &m_value; // the request lives until the end of the co_await's full expression
      detail::bind_waiter(a, self);
      return a;
    }
  };

  /// `co_await ch.send(v)`: puts `v` in the channel, suspending the task while it is full (its
  /// worker runs other work). Returns true once sent; false if the channel is or gets closed
  /// first (the value is then destroyed with the request, never received). Throws
  /// magpie::abandoned_wait if the channel is destroyed first (not sent), std::logic_error inside
  /// an unjoined fork–join scope (not sent).
  send_request send(T value) noexcept { return {this, std::move(value)}; }

  /// The awaitable of receive(). Internal.
  struct receive_awaitable : detail::wait_awaitable<receive_awaitable> {
    /// The channel waited on.
    channel *m_target = nullptr;
    /// The value received, or empty once the channel is closed and drained.
    std::optional<T> m_result;

    /// Fast path, from await_ready: succeeds without suspending when it can
    /// (sync/detail/waiter.hpp).
    bool try_now() noexcept { return m_target->receive_now(m_result, this->m_frame); }
    /// Slow path, under the lock: succeeds now (true), or queues `w` to be resumed later (false).
    bool try_or_enqueue(detail::waiter &w) noexcept {
      return m_target->receive_slow(m_result, w, nullptr);
    }
    /// What the co_await returns.
    std::optional<T> resume_value() noexcept { return std::move(m_result); }
  };

  /// What receive() returns; co_await it in a magpie task.
  using receive_request = detail::task_request<receive_awaitable, channel>;

  /// `co_await ch.receive()`: the oldest value, suspending the task while the channel is empty;
  /// std::nullopt once the channel is closed and drained. Throws magpie::abandoned_wait if the
  /// channel is destroyed first, std::logic_error inside an unjoined fork–join scope.
  receive_request receive() noexcept { return {this}; }

  /// For plain threads (a task would block its worker): sends, blocking while the channel is
  /// full. True if sent, false if the channel is or gets closed first (`value` is then dropped).
  /// Throws magpie::abandoned_wait if the channel is destroyed first, std::logic_error (nothing
  /// sent, `value` dropped) on a thread that runs a magpie task.
  bool send_blocking(T value) {
    detail::refuse_on_worker("magpie::channel::send_blocking inside a task would block its "
                             "worker: co_await ch.send(std::move(v)) instead");
    detail::blocking_waiter w;
    send_status const status =
        in_mode([&](auto mode) { return mode.send_before_blocking(value, w); });
    if (status != send_status::full) {
      return status == send_status::sent;
    }
    w.block();
    return w.m_slot == nullptr;
  }

  /// For plain threads: receives, blocking while the channel is empty; std::nullopt once it is
  /// closed and drained. Throws magpie::abandoned_wait if the channel is destroyed first,
  /// std::logic_error (nothing received) on a thread that runs a magpie task.
  std::optional<T> receive_blocking() {
    detail::refuse_on_worker("magpie::channel::receive_blocking inside a task would block its "
                             "worker: co_await ch.receive() instead");
    std::optional<T> out;
    detail::blocking_waiter w;
    if (!in_mode([&](auto mode) { return mode.receive_before_blocking(out, w); })) {
      w.block();
    }
    return out;
  }

#if defined(__linux__)
  /// `co_await ch.send_for(std::move(v), d)`: as send(), giving up after `d`. Returns `sent`
  /// (`v` was moved from), `full` (the channel stayed full until the deadline; `v` was not
  /// touched: send it again, or keep it) or `closed` (`v` not touched). A zero or negative `d`
  /// does not wait: as try_send, except that it queues behind senders already waiting. A value
  /// handed over as the deadline passes counts as sent. The request refers to `v`: co_await it in
  /// the expression that makes it. While it waits the task holds its pool (the pool's destructor
  /// waits for the deadline). Throws magpie::abandoned_wait if the channel is destroyed first,
  /// std::logic_error inside an unjoined fork–join scope, std::bad_alloc if the reactor's timer
  /// heap cannot grow (none of them sends). With GCC 12.2 bind the result to a variable
  /// (docs/guarantees.md, L3b).
  template <typename Rep, typename Period>
  detail::timed_send_request<T> send_for(T &&value, std::chrono::duration<Rep, Period> d) {
    return {this, &value, std::nullopt, detail::deadline_for(d)};
  }
  /// As send_for(T&&, d), sending a copy of `value` (made at the call).
  template <typename Rep, typename Period>
  detail::timed_send_request<T> send_for(T const &value, std::chrono::duration<Rep, Period> d)
    requires std::is_copy_constructible_v<T>
  {
    return {this, nullptr, std::optional<T>(value), detail::deadline_for(d)};
  }
  /// `co_await ch.send_until(std::move(v), t)`: as send_for, giving up at `t` (any clock's time
  /// point, converted to io::clock).
  template <typename Clock, typename Duration>
  detail::timed_send_request<T> send_until(T &&value, std::chrono::time_point<Clock, Duration> t) {
    return {this, &value, std::nullopt, detail::deadline_until(t)};
  }
  /// As send_until(T&&, t), sending a copy of `value` (made at the call).
  template <typename Clock, typename Duration>
  detail::timed_send_request<T> send_until(T const &value,
                                           std::chrono::time_point<Clock, Duration> t)
    requires std::is_copy_constructible_v<T>
  {
    return {this, nullptr, std::optional<T>(value), detail::deadline_until(t)};
  }

  /// `auto [v, status] = co_await ch.receive_for(d)`: as receive(), giving up after `d`. Returns
  /// a receive_result: `received` with the value, `empty` (the channel stayed empty until the
  /// deadline) or `closed` (closed and drained). A zero or negative `d` does not wait. A value
  /// handed over as the deadline passes is received, never lost. Throws as send_for.
  template <typename Rep, typename Period>
  detail::timed_receive_request<T> receive_for(std::chrono::duration<Rep, Period> d) {
    return {this, detail::deadline_for(d)};
  }
  /// As receive_for, giving up at `t` (any clock's time point, converted to io::clock).
  template <typename Clock, typename Duration>
  detail::timed_receive_request<T> receive_until(std::chrono::time_point<Clock, Duration> t) {
    return {this, detail::deadline_until(t)};
  }

  /// For plain threads: send_blocking, giving up after `d`; returns as send_for (`value` is moved
  /// from only if sent). The thread keeps its own time (no reactor). Throws
  /// magpie::abandoned_wait if the channel is destroyed first, std::logic_error (nothing sent)
  /// on a thread that runs a magpie task; so do the other _blocking_for / _until forms.
  template <typename Rep, typename Period>
  send_status send_blocking_for(T &&value, std::chrono::duration<Rep, Period> d) {
    return detail::send_blocking_until(*this, value, detail::deadline_for(d));
  }
  /// As send_blocking_for(T&&, d), sending a copy of `value`.
  template <typename Rep, typename Period>
  send_status send_blocking_for(T const &value, std::chrono::duration<Rep, Period> d)
    requires std::is_copy_constructible_v<T>
  {
    T copy(value);
    return detail::send_blocking_until(*this, copy, detail::deadline_for(d));
  }
  /// For plain threads: send_blocking, giving up at `t`; as send_blocking_for.
  template <typename Clock, typename Duration>
  send_status send_blocking_until(T &&value, std::chrono::time_point<Clock, Duration> t) {
    return detail::send_blocking_until(*this, value, detail::deadline_until(t));
  }
  /// As send_blocking_until(T&&, t), sending a copy of `value`.
  template <typename Clock, typename Duration>
  send_status send_blocking_until(T const &value, std::chrono::time_point<Clock, Duration> t)
    requires std::is_copy_constructible_v<T>
  {
    T copy(value);
    return detail::send_blocking_until(*this, copy, detail::deadline_until(t));
  }
  /// For plain threads: receive_blocking, giving up after `d`; returns as receive_for.
  template <typename Rep, typename Period>
  receive_result<T> receive_blocking_for(std::chrono::duration<Rep, Period> d) {
    return detail::receive_blocking_until(*this, detail::deadline_for(d));
  }
  /// For plain threads: receive_blocking, giving up at `t`; returns as receive_for.
  template <typename Clock, typename Duration>
  receive_result<T> receive_blocking_until(std::chrono::time_point<Clock, Duration> t) {
    return detail::receive_blocking_until(*this, detail::deadline_until(t));
  }
#endif // __linux__

private:
  friend struct detail::channel_access;
  friend class channel_sender<T>;

  // ----- the one place that tells the two modes apart -----

  /// Runs `op` on this channel's mode: detail::channel_buffered (capacity > 0) or
  /// detail::channel_rendezvous (capacity 0), views of m_state with the same operations. The
  /// capacity is fixed at construction, so every call on a channel takes the same branch.
  template <typename Op>
  MAGPIE_FORCEINLINE decltype(auto) in_mode(Op op) noexcept {
    if (m_state.m_ring.capacity() != 0) {
      return op(detail::channel_buffered<T>(m_state));
    }
    return op(detail::channel_rendezvous<T>(m_state));
  }

  // ----- waits, timed or not (channel_timed.hpp and the awaitables above call these) -----

  /// The fast path of a send that may wait: sent, closed, or full. A task (`self`) spins first
  /// only where another worker could free room; a plain thread (null) always does. Forced
  /// inline: the untimed send's await_ready is this, and an out-of-line call is slower
  /// (`sync_bench --only channel1024`, bench/README.md, measures it).
  MAGPIE_FORCEINLINE send_status send_now(T &v, core::frame_base *self) noexcept {
    return in_mode([&](auto mode) { return mode.send_now(v, self); });
  }

  /// The fast path of a receive that may wait, as send_now: true if done (`out` filled, or
  /// closed and drained).
  MAGPIE_FORCEINLINE bool receive_now(std::optional<T> &out, core::frame_base *self) noexcept {
    return in_mode([&](auto mode) { return mode.receive_now(out, self); });
  }

  /// The slow path of a send that may wait, timed (`plan`) or not (null); takes the lock: sent or
  /// closed now, or `w` queued (`full`; not queued if plan->out_of_memory). Once `w` is queued it
  /// may be released at any moment: the caller touches it no more.
  MAGPIE_FORCEINLINE send_status send_slow(T &v, detail::waiter &w,
                                           detail::queue_plan *plan) noexcept {
    return in_mode([&](auto mode) { return mode.send_slow(v, w, plan); });
  }

  /// The slow path of a receive that may wait, as send_slow: true if done (`out` filled, or
  /// closed and drained), false if `w` was queued (or, with plan->out_of_memory, not).
  MAGPIE_FORCEINLINE bool receive_slow(std::optional<T> &out, detail::waiter &w,
                                       detail::queue_plan *plan) noexcept {
    return in_mode([&](auto mode) { return mode.receive_slow(out, w, plan); });
  }

  /// The slow path of a timed send (channel_access::send_or_enqueue_timed): the result is
  /// returned, not stored in the waiter, which may be gone once queued.
  std::pair<send_status, bool> send_or_enqueue_timed(T &v, detail::waiter &w,
                                                     detail::channel_deadline &d,
                                                     io::detail::timeout_node *arm) noexcept {
    detail::queue_plan plan{&d, arm};
    send_status const status = send_slow(v, w, &plan);
    return {status, plan.out_of_memory};
  }

  /// The slow path of a timed receive (channel_access::receive_or_enqueue_timed).
  std::pair<bool, bool> receive_or_enqueue_timed(std::optional<T> &out, detail::waiter &w,
                                                 detail::channel_deadline &d,
                                                 io::detail::timeout_node *arm) noexcept {
    detail::queue_plan plan{&d, arm};
    bool const done = receive_slow(out, w, &plan);
    return {done, plan.out_of_memory};
  }

  /// A timed send's deadline side, having won the claim: takes `w` out of the senders (still
  /// waiting, or expiring with what it was given) and says what the send came to.
  send_status expired_send(detail::waiter &w) noexcept {
    m_state.m_lock.lock();
    if (m_state.m_senders.remove_expired(w)) {
      in_mode([](auto mode) { mode.uncount_sender(); });
    }
    send_status const status = detail::data_of(w) == nullptr           ? send_status::sent
                               : m_state.m_ring.is_closed_under_lock() ? send_status::closed
                                                                       : send_status::full;
    m_state.m_lock.unlock(); // the last touch of *this: the destructor may go on
    return status;
  }

  /// A timed receive's deadline side, as expired_send (`out`: the waiter's value slot).
  receive_status expired_receive(detail::waiter &w, std::optional<T> const &out) noexcept {
    m_state.m_lock.lock();
    if (m_state.m_receivers.remove_expired(w)) {
      in_mode([](auto mode) { mode.uncount_receiver(); });
    }
    // Closed without a value: the close served us when nothing was left to give (close drains
    // the waiting receivers under this lock), so the channel is closed and drained.
    receive_status const status = out.has_value()                         ? receive_status::received
                                  : m_state.m_ring.is_closed_under_lock() ? receive_status::closed
                                                                          : receive_status::empty;
    m_state.m_lock.unlock(); // the last touch of *this, as expired_send
    return status;
  }

  detail::channel_state<T> m_state;
  /// The channel_senders alive: the one that takes it to zero closes the channel.
  std::atomic<std::size_t> m_senders_alive{0};
};

} // namespace magpie::sync

#include "magpie/sync/channel_sender.hpp" // needs the complete channel
