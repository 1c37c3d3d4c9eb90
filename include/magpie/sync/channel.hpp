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

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>

#include "magpie/core/config.hpp"
#include "magpie/core/detail/pause.hpp"
#include "magpie/core/ext.hpp"
#include "magpie/core/frame.hpp"
#include "magpie/sync/channel_status.hpp"
#include "magpie/sync/detail/blocking.hpp"
#include "magpie/sync/detail/channel_waiters.hpp"
#include "magpie/sync/detail/lock_word.hpp"
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
/// short while — up to 128 CPU pauses, about 1.2 µs on the machine it was tuned on — retrying
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
  explicit channel(std::size_t capacity)
      : m_capacity(capacity), m_mask(std::has_single_bit(capacity) ? capacity - 1 : 0),
        m_ring(capacity == 0 ? nullptr : std::allocator<slot>().allocate(capacity)) {
    for (std::size_t i = 0; i < capacity; ++i) {
      ::new (static_cast<void *>(&m_ring[i])) slot{};        // slot i is free for position i
      m_ring[i].seq.store(2 * i, std::memory_order_relaxed); // before another thread sees us
    }
  }
  channel(channel const &) = delete;
  channel &operator=(channel const &) = delete;

  /// Releases every waiting task and thread with magpie::abandoned_wait, then destroys the
  /// buffered values.
  ~channel() {
    detail::abandon_all(m_lock, m_receivers, m_senders);
    detail::wait_out_expiring(m_lock, m_receivers, m_senders); // timed waiters' deadline sides
    if (m_ring != nullptr) {
      // Nobody uses the channel any more: every claimed position is published.
      std::uint64_t const tail = m_tail.load(std::memory_order_acquire) >> 1; // acquire: as pop
      for (std::uint64_t pos = m_head.load(std::memory_order_acquire); pos != tail; ++pos) {
        value_at(pos)->~T();
      }
      for (std::size_t i = 0; i < m_capacity; ++i) {
        m_ring[i].~slot();
      }
      std::allocator<slot>().deallocate(m_ring, m_capacity);
    }
  }

  /// How many values the channel buffers (0: rendezvous).
  std::size_t capacity() const noexcept { return m_capacity; }

  /// How many values are buffered now (a snapshot; values being sent or received count).
  std::size_t size() const noexcept {
    // relaxed: a snapshot. Head first: the tail read after it is at least as new.
    std::uint64_t const head = m_head.load(std::memory_order_relaxed);
    std::uint64_t const tail = m_tail.load(std::memory_order_relaxed) >> 1;
    return static_cast<std::size_t>(std::min<std::uint64_t>(tail - head, m_capacity));
  }

  /// True once close() has been called (a snapshot for a concurrent close).
  bool is_closed() const noexcept {
    return (m_tail.load(std::memory_order_acquire) & closed_bit) != 0; // acquire: as pop
  }

  /// How many tasks and threads wait to send, and to receive, now (snapshots, for diagnostics and
  /// tests).
  std::size_t waiting_senders() noexcept { return detail::locked_size(m_lock, m_senders); }
  /// How many tasks and threads wait to receive now (a snapshot, as waiting_senders()).
  std::size_t waiting_receivers() noexcept { return detail::locked_size(m_lock, m_receivers); }

  /// The spin budgets, in CPU pauses, of a send that finds the ring full and of a receive that
  /// finds it empty, before they wait (see the class comment): snapshots, for diagnostics and
  /// tests. Between spin_floor and spin_ceiling; a rendezvous channel does not spin.
  struct spin_budget {
    std::uint32_t send;    ///< pauses a send spins on a full ring
    std::uint32_t receive; ///< pauses a receive spins on an empty ring
  };
  /// See spin_budget.
  spin_budget spin_budgets() const noexcept {
    return {m_send_spin.load(std::memory_order_relaxed), // relaxed: snapshots
            m_receive_spin.load(std::memory_order_relaxed)};
  }
  /// The most and the fewest pauses a send or receive spins before waiting.
  static constexpr std::uint32_t spin_ceiling = 128;
  /// See spin_ceiling.
  static constexpr std::uint32_t spin_floor = 8;

  /// Closes the channel: sends from now on fail, waiting senders are released with failure
  /// (their values are not sent), waiting receivers get std::nullopt; values already buffered
  /// can still be received. Idempotent. Any thread or task; never blocks (beyond the short lock).
  void close() noexcept {
    m_lock.lock();
    // seq_cst: a send's claim of a position (its CAS on the tail) is either before this, and its
    // value is received, or after it, and it fails: the closed bit lives in the tail itself.
    m_tail.fetch_or(closed_bit, std::memory_order_seq_cst);
    detail::waiter *senders = m_senders.take_all();
    m_waiting_senders.store(0, std::memory_order_relaxed); // under the lock (see m_waiting_*)
    detail::waiter_queue done;                             // served: released after the unlock
    if (m_ring != nullptr) {
      pump_locked(done); // receivers get what is buffered, then std::nullopt
    } else {
      push_if(done, m_receivers.take_all()); // their slots stay empty: std::nullopt
      m_waiting_receivers.store(0, std::memory_order_relaxed);
    }
    m_lock.unlock();
    detail::release_all(done.take_all());
    detail::release_all(senders); // their m_slot stays set: not sent
  }

  /// Sends `value` if that needs no waiting: moved from only if the result is `sent`.
  send_status try_send(T &&value) noexcept {
    if (m_ring != nullptr) {
      send_status const status = push(value);
      if (status == send_status::sent) {
        after_push();
      }
      return status;
    }
    auto [status, wake] = send_locked(value);
    release_if(wake);
    return status;
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
    if (m_ring != nullptr) {
      bool closed = false;
      if (pop(out, closed)) {
        after_pop();
      }
      return out;
    }
    auto [status, wake] = receive_locked(out);
    release_if(wake);
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
    channel *m_channel = nullptr;
    /// The value received, or empty once the channel is closed and drained.
    std::optional<T> m_result;

    /// Fast path, from await_ready: succeeds without suspending when it can
    /// (sync/detail/waiter.hpp).
    bool try_now() noexcept { return m_channel->receive_now(m_result, this->m_frame); }
    /// Slow path, under the lock: succeeds now (true), or queues `w` to be resumed later (false).
    bool try_or_enqueue(detail::waiter &w) noexcept {
      return m_channel->receive_slow(m_result, w, nullptr);
    }
    /// What the co_await returns.
    std::optional<T> resume_value() noexcept { return std::move(m_result); }
  };

  /// What receive() returns; co_await it in a magpie task.
  struct [[nodiscard("co_await it")]] receive_request {
    /// Marks the request as awaitable inside a magpie task.
    using magpie_awaitable = void;
    /// The channel waited on.
    channel *m_channel;
    /// Binds the request to the awaiting task (co_await does this) and returns the awaitable.
    receive_awaitable magpie_bind(core::frame_base &self) && {
      receive_awaitable a;
      a.m_channel = m_channel;
      detail::bind_waiter(a, self);
      return a;
    }
  };

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
    send_status status = send_status::full;
    if (m_ring != nullptr) {
      status = send_fast(value);
      if (status == send_status::full) {
        status = send_spinning(value); // a plain thread: waiting would cost a kernel sleep
      }
      if (status == send_status::full) {
        status = send_or_enqueue(value, w);
      }
    } else {
      auto [locked_status, wake] = send_locked(value, &w);
      release_if(wake);
      status = locked_status;
    }
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
    bool done = false;
    if (m_ring != nullptr) {
      done = receive_fast(out) || receive_spinning(out) || receive_or_enqueue(out, w);
    } else {
      auto [locked_done, wake] = receive_locked(out, &w);
      release_if(wake);
      done = locked_done;
    }
    if (!done) {
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

  /// How a slow path queues its waiter: untimed (no plan), or with its deadline part and, for a
  /// task, the timer to arm (channel_waiters.hpp).
  struct queue_plan {
    detail::channel_deadline *deadline;
    io::detail::timeout_node *arm; ///< null for a plain thread (it keeps its own time)
    bool out_of_memory = false;    ///< set if the timer could not be armed: nothing was queued
  };

  /// Queues `w` with value slot `data` on `q`, as `plan` says (null: untimed). False, queuing
  /// nothing, if its deadline could not be armed.
  static bool enqueue(detail::channel_queue &q, detail::waiter &w, void *data,
                      queue_plan *plan) noexcept {
    if (plan == nullptr) {
      w.m_slot = data;
      q.push(&w);
      return true;
    }
    if (q.push_timed(w, *plan->deadline, data, plan->arm)) {
      return true;
    }
    plan->out_of_memory = true;
    return false;
  }

  /// Adds to `done` a waiter (or list, linked by m_next_waiter) that a queue gave up to be
  /// released; null (its deadline claimed it) adds nothing.
  static void push_if(detail::waiter_queue &done, detail::waiter *w) noexcept {
    while (w != nullptr) {
      detail::waiter *const next = w->m_next_waiter; // push() overwrites it
      done.push(w);
      w = next;
    }
  }
  /// One cell of the ring. `seq` says whose turn it is at the cell: 2p (free for the send that
  /// claims position p), 2p + 1 (holds the value sent at position p), 2(p + capacity) (free
  /// again, for position p + capacity, once the receive at p has moved the value out). The
  /// doubling keeps "holds p" and "free for p + 1" apart when the capacity is 1.
  struct slot {
    std::atomic<std::uint64_t> seq{0};
    alignas(T) unsigned char bytes[sizeof(T)];
  };

  static constexpr std::uint64_t closed_bit = 1; ///< in m_tail, beside the position (<< 1)

  static void release_if(detail::waiter *w) noexcept {
    if (w != nullptr) {
      detail::release(w); // after the unlock; touches only the waiter
    }
  }

  std::size_t slot_index(std::uint64_t pos) const noexcept {
    return m_mask != 0 ? pos & m_mask : pos % m_capacity;
  }
  slot &slot_at(std::uint64_t pos) noexcept { return m_ring[slot_index(pos)]; }
  T *value_at(std::uint64_t pos) noexcept {
    return std::launder(reinterpret_cast<T *>(slot_at(pos).bytes));
  }

  // ----- the ring (capacity > 0): docs/protocols.md §9.11 -----

  /// Whether a task on `self`'s worker should spin before waiting: only if another worker could
  /// make the progress it waits for meanwhile.
  static bool may_spin(core::frame_base &self) noexcept {
    core::executor const *home = core::ext::worker_of(self).home();
    return home != nullptr && home->workers() > 1;
  }

  /// A cheap look (relaxed loads, no writes): does the cell at the tail look free, or the
  /// channel closed? A hint for send_spinning; push() decides.
  bool room_hint() const noexcept {
    std::uint64_t const t = m_tail.load(std::memory_order_relaxed);
    std::uint64_t const pos = t >> 1;
    return (t & closed_bit) != 0 ||
           m_ring[slot_index(pos)].seq.load(std::memory_order_relaxed) == 2 * pos;
  }
  /// A cheap look: is a value published at the head? A hint for receive_spinning; pop() decides.
  /// (A close is left to the waiting path: a receive spins at most once more after it.)
  bool value_hint() const noexcept {
    std::uint64_t const h = m_head.load(std::memory_order_relaxed);
    return m_ring[slot_index(h)].seq.load(std::memory_order_relaxed) == 2 * h + 1;
  }

  /// Called when a send found the ring full: spins on the send side's budget, retrying the fast
  /// path whenever the ring looks to have room. Returns the last attempt's status (`full` if none
  /// succeeded).
  send_status send_spinning(T &v) noexcept {
    send_status status = send_status::full;
    spin(
        m_send_spin, [this] { return room_hint(); },
        [&] {
          status = send_fast(v);
          return status != send_status::full;
        });
    return status;
  }

  /// Called when a receive found the ring empty: as send_spinning. True if done (a value, or
  /// closed and drained).
  bool receive_spinning(std::optional<T> &out) noexcept {
    return spin(
        m_receive_spin, [this] { return value_hint(); }, [&] { return receive_fast(out); });
  }

  /// The spin of send_spinning and receive_spinning: pauses up to `budget` times, running
  /// `attempt()` whenever `ready()` (a cheap look) says it may succeed; true once an attempt
  /// did. Then doubles the budget if the spin paid, halves it if not (within [spin_floor,
  /// spin_ceiling]), storing only a change, so that a steady state writes nothing.
  template <typename Ready, typename Attempt>
  static bool spin(std::atomic<std::uint32_t> &budget, Ready ready, Attempt attempt) noexcept {
    std::uint32_t const was = budget.load(std::memory_order_relaxed); // a tuning hint
    bool paid = false;
    for (std::uint32_t k = 0; k < was && !paid; ++k) {
      core::detail::cpu_pause();
      paid = ready() && attempt();
    }
    std::uint32_t const now =
        paid ? std::min(spin_ceiling, 2 * was) : std::max(spin_floor, was / 2);
    if (now != was) {
      budget.store(now, std::memory_order_relaxed); // a tuning hint: racing updates may be lost
    }
    return paid;
  }

  /// Moves `v` into the ring if it has room: `sent`; `full` if `capacity` values are in it
  /// (claimed and not yet claimed by a receive); `closed` once closed. Lock-free but for the
  /// wait for a receive that has claimed the needed cell and is moving its value out.
  send_status push(T &v) noexcept {
    std::uint64_t t = m_tail.load(std::memory_order_relaxed); // the CAS validates it
    for (unsigned spins = 0;;) {
      if ((t & closed_bit) != 0) {
        return send_status::closed;
      }
      std::uint64_t const pos = t >> 1;
      slot &cell = slot_at(pos);
      // acquire: the receive that freed the cell (its move out) happens-before our move in.
      std::uint64_t const seq = cell.seq.load(std::memory_order_acquire);
      if (seq == 2 * pos) {
        // seq_cst: with after_push's seq_cst load, the Dekker against a receiver's registration
        // (its count, a fence, its own pop reading the tail): protocols §9.11. The cell's seq
        // carries the data. (On x86 a locked CAS is a full barrier anyway: no extra fence.)
        if (m_tail.compare_exchange_weak(t, t + 2, std::memory_order_seq_cst,
                                         std::memory_order_relaxed)) {
          ::new (static_cast<void *>(cell.bytes)) T(std::move(v));
          cell.seq.store(2 * pos + 1, std::memory_order_release); // release: value → receive
          return send_status::sent;
        }
        continue; // t was reloaded
      }
      if (seq <
          2 * pos) { // the cell still holds (or is giving up) the value sent at pos - capacity
        // relaxed: positions below the head are claimed; a stale head only makes us wait.
        if (pos - m_head.load(std::memory_order_relaxed) >= m_capacity) {
          return send_status::full; // that value is not claimed: capacity values are in the ring
        }
        detail::spin_pause(spins); // a receive claimed it and is moving it out
      }
      t = m_tail.load(std::memory_order_relaxed); // another send took pos (or we wait)
    }
  }

  /// Moves the oldest value into `out` if there is one: true. Else false, with `closed` set if
  /// the channel is closed (it then stays empty). Lock-free but for the wait for a send that has
  /// claimed the oldest position and is moving its value in.
  bool pop(std::optional<T> &out, bool &closed) noexcept {
    std::uint64_t h = m_head.load(std::memory_order_relaxed); // the CAS validates it
    for (unsigned spins = 0;;) {
      slot &cell = slot_at(h);
      // acquire: the send's move in happens-before our move out.
      std::uint64_t const seq = cell.seq.load(std::memory_order_acquire);
      if (seq == 2 * h + 1) {
        // seq_cst: as push's, for after_pop against a sender's registration.
        if (m_head.compare_exchange_weak(h, h + 1, std::memory_order_seq_cst,
                                         std::memory_order_relaxed)) {
          T *p = std::launder(reinterpret_cast<T *>(cell.bytes));
          out.emplace(std::move(*p));
          p->~T();
          // release: our move out → the send that reuses the cell.
          cell.seq.store(2 * (h + m_capacity), std::memory_order_release);
          return true;
        }
        continue; // h was reloaded
      }
      if (seq < 2 * h + 1) { // nothing published at h yet
        // acquire: pairs with close's seq_cst fetch_or (is_closed() after a false sees it).
        std::uint64_t const t = m_tail.load(std::memory_order_acquire);
        if ((t >> 1) == h) {
          closed = (t & closed_bit) != 0;
          return false; // empty: every claimed position is claimed by a receive too
        }
        detail::spin_pause(spins); // a send claimed h and is moving its value in
      }
      h = m_head.load(std::memory_order_relaxed); // another receive took h (or we wait)
    }
  }

  /// After a value went into the ring outside the pump: serves waiting receivers, if any.
  void after_push() noexcept {
    // seq_cst, after push's seq_cst claim: Dekker with a receiver's registration (its count, a
    // fence, then its own pop): either its pop sees our claim, or we see its count (§9.11). The
    // seq_cst CAS and load suffice; the fence is kept because it measured faster (sync_bench
    // channel, 2 vCPUs: 289–345 instead of 388–416 ns per element at capacity 1024; the reason,
    // fewer transfers of the contended lines while it drains, is a guess, not measured).
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (m_waiting_receivers.load(std::memory_order_seq_cst) != 0) {
      pump();
    }
  }

  /// After a value left the ring outside the pump: serves waiting senders, if any.
  void after_pop() noexcept {
    std::atomic_thread_fence(std::memory_order_seq_cst);          // as after_push
    if (m_waiting_senders.load(std::memory_order_seq_cst) != 0) { // seq_cst: as after_push
      pump();
    }
  }

  void pump() noexcept {
    detail::waiter_queue done; // served: released after the unlock
    m_lock.lock();
    pump_locked(done);
    m_lock.unlock();
    detail::release_all(done.take_all());
  }

  /// Under the lock: moves values from the ring to waiting receivers and from waiting senders
  /// into the ring, oldest first, for as long as either is possible; once the channel is closed
  /// and empty, the remaining receivers get std::nullopt. The served waiters go to `done`.
  void pump_locked(detail::waiter_queue &done) noexcept {
    for (bool progress = true; progress;) {
      progress = false;
      while (detail::waiter *r = m_receivers.front()) {
        bool closed = false;
        if (!pop(*static_cast<std::optional<T> *>(detail::data_of(*r)), closed)) {
          if (closed) { // closed and drained: nothing more will come
            push_if(done, m_receivers.take_all());
            m_waiting_receivers.store(0, std::memory_order_relaxed); // under the lock
          }
          break;
        }
        push_if(done, m_receivers.pop()); // given first, then settled (channel_waiters.hpp)
        m_waiting_receivers.fetch_sub(1, std::memory_order_relaxed); // under the lock
        progress = true;
      }
      while (detail::waiter *w = m_senders.front()) {
        // Not `closed`: close() empties this queue under the lock, and nobody joins it after.
        void *&value = detail::data_of(*w);
        if (push(*static_cast<T *>(value)) != send_status::sent) {
          break;
        }
        value = nullptr; // sent
        push_if(done, m_senders.pop());
        m_waiting_senders.fetch_sub(1, std::memory_order_relaxed); // under the lock
        progress = true;
      }
    }
  }

  /// The fast path of a send that may wait: `full` also when others already wait to send (it
  /// then queues behind them).
  send_status send_fast(T &v) noexcept {
    if (m_waiting_senders.load(std::memory_order_relaxed) != 0) { // a hint: fairness only
      return send_status::full;
    }
    send_status const status = push(v);
    if (status == send_status::sent) {
      after_push();
    }
    return status;
  }

  /// The fast path of a receive that may wait: true if done (a value, or closed and drained).
  bool receive_fast(std::optional<T> &out) noexcept {
    if (m_waiting_receivers.load(std::memory_order_relaxed) != 0) { // a hint, as send_fast
      return false;
    }
    bool closed = false;
    if (pop(out, closed)) {
      after_pop();
      return true;
    }
    return closed;
  }

  /// The slow path of a send: sends now, or queues `w` (value slot &v, as `plan` says) and
  /// returns `full`; after that return `w` may be released at any moment. `full` with
  /// plan->out_of_memory set: not queued (its deadline could not be armed).
  send_status send_or_enqueue(T &v, detail::waiter &w, queue_plan *plan = nullptr) noexcept {
    detail::waiter_queue done; // served: released after the unlock
    m_lock.lock();
    send_status status = send_status::full;
    if ((m_tail.load(std::memory_order_relaxed) & closed_bit) != 0) { // set under this lock
      status = send_status::closed;
    } else {
      // relaxed + fence: the Dekker of after_pop (protocols §9.11).
      m_waiting_senders.fetch_add(1, std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_seq_cst);
      // Behind earlier waiters, wait our turn: whoever freed room for them pumps (FIFO).
      if (m_senders.empty() && push(v) == send_status::sent) {
        m_waiting_senders.fetch_sub(1, std::memory_order_relaxed);
        status = send_status::sent;
        if (m_waiting_receivers.load(std::memory_order_seq_cst) != 0) { // after_push's duty
          pump_locked(done);
        }
      } else if (!enqueue(m_senders, w, &v, plan)) {
        m_waiting_senders.fetch_sub(1, std::memory_order_relaxed); // not queued after all
      }
    }
    m_lock.unlock();
    detail::release_all(done.take_all());
    return status;
  }

  /// The slow path of a receive: true if done (`out` filled, or closed and drained), else queues
  /// `w` (value slot &out, as `plan` says) and returns false; after that return `w` may be
  /// released at any moment. False with plan->out_of_memory set: not queued.
  bool receive_or_enqueue(std::optional<T> &out, detail::waiter &w,
                          queue_plan *plan = nullptr) noexcept {
    detail::waiter_queue done; // served: released after the unlock
    m_lock.lock();
    bool finished = true;
    // relaxed + fence: the Dekker of after_push (protocols §9.11).
    m_waiting_receivers.fetch_add(1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    bool closed = false;
    if (!m_receivers.empty()) {
      // Behind earlier waiters (FIFO); they exist only while the channel is not closed and
      // drained (the pump releases them all then), so a value or close will reach us too.
      finished = false;
      if (!enqueue(m_receivers, w, &out, plan)) {
        m_waiting_receivers.fetch_sub(1, std::memory_order_relaxed); // not queued after all
      }
    } else if (pop(out, closed)) {
      m_waiting_receivers.fetch_sub(1, std::memory_order_relaxed);
      if (m_waiting_senders.load(std::memory_order_seq_cst) != 0) { // after_pop's duty
        pump_locked(done);
      }
    } else if (closed) {
      m_waiting_receivers.fetch_sub(1, std::memory_order_relaxed);
    } else {
      finished = false;
      if (!enqueue(m_receivers, w, &out, plan)) {
        m_waiting_receivers.fetch_sub(1, std::memory_order_relaxed); // not queued after all
      }
    }
    m_lock.unlock();
    detail::release_all(done.take_all());
    return finished;
  }

  // ----- waits that may end at a deadline (channel_timed.hpp, channel_waiters.hpp) -----

  /// The fast path of a send that may wait: sent, closed, or full. A task (`self`) spins first
  /// only where another worker could free room (may_spin); a plain thread (null) always does.
  /// Forced inline: the untimed send's await_ready is this, and a call here measured slower
  /// (sync_bench channel1024, bench/README.md).
  MAGPIE_FORCEINLINE send_status send_now(T &v, core::frame_base *self) noexcept {
    if (m_ring != nullptr) {
      send_status const status = send_fast(v);
      if (status == send_status::full && (self == nullptr || may_spin(*self))) {
        return send_spinning(v);
      }
      return status;
    }
    auto [status, wake] = send_locked(v);
    release_if(wake);
    return status;
  }

  /// The fast path of a receive that may wait, as send_now: true if done (`out` filled, or
  /// closed and drained).
  MAGPIE_FORCEINLINE bool receive_now(std::optional<T> &out, core::frame_base *self) noexcept {
    if (m_ring != nullptr) {
      return receive_fast(out) || ((self == nullptr || may_spin(*self)) && receive_spinning(out));
    }
    auto [done, wake] = receive_locked(out);
    release_if(wake);
    return done;
  }

  /// The slow path of a send that may wait, timed (`plan`) or not (null), on either kind of
  /// channel: sent or closed now, or `w` queued (`full`; not queued if plan->out_of_memory). Once
  /// `w` is queued it may be released at any moment: the caller touches it no more.
  MAGPIE_FORCEINLINE send_status send_slow(T &v, detail::waiter &w, queue_plan *plan) noexcept {
    if (m_ring != nullptr) {
      return send_or_enqueue(v, w, plan);
    }
    auto [status, wake] = send_locked(v, &w, plan);
    release_if(wake);
    return status;
  }

  /// The slow path of a receive that may wait, as send_slow: true if done (`out` filled, or
  /// closed and drained), false if `w` was queued (or, with plan->out_of_memory, not).
  MAGPIE_FORCEINLINE bool receive_slow(std::optional<T> &out, detail::waiter &w,
                                       queue_plan *plan) noexcept {
    if (m_ring != nullptr) {
      return receive_or_enqueue(out, w, plan);
    }
    auto [done, wake] = receive_locked(out, &w, plan);
    release_if(wake);
    return done;
  }

  /// The slow path of a timed send (channel_access::send_or_enqueue_timed): the result is
  /// returned, not stored in the waiter, which may be gone once queued.
  std::pair<send_status, bool> send_or_enqueue_timed(T &v, detail::waiter &w,
                                                     detail::channel_deadline &d,
                                                     io::detail::timeout_node *arm) noexcept {
    queue_plan plan{&d, arm};
    send_status const status = send_slow(v, w, &plan);
    return {status, plan.out_of_memory};
  }

  /// The slow path of a timed receive (channel_access::receive_or_enqueue_timed).
  std::pair<bool, bool> receive_or_enqueue_timed(std::optional<T> &out, detail::waiter &w,
                                                 detail::channel_deadline &d,
                                                 io::detail::timeout_node *arm) noexcept {
    queue_plan plan{&d, arm};
    bool const done = receive_slow(out, w, &plan);
    return {done, plan.out_of_memory};
  }

  /// A timed send's deadline side, having won the claim: takes `w` out of the senders (still
  /// waiting, or expiring with what it was given) and says what the send came to.
  send_status expired_send(detail::waiter &w) noexcept {
    m_lock.lock();
    if (m_senders.remove_expired(w) && m_ring != nullptr) {
      m_waiting_senders.fetch_sub(1, std::memory_order_relaxed); // under the lock
    }
    send_status const status =
        detail::data_of(w) == nullptr ? send_status::sent
        : (m_tail.load(std::memory_order_relaxed) & closed_bit) != 0 // set under this lock
            ? send_status::closed
            : send_status::full;
    m_lock.unlock(); // the last touch of *this: the destructor may go on (wait_out_expiring)
    return status;
  }

  /// A timed receive's deadline side, as expired_send (`out`: the waiter's value slot).
  receive_status expired_receive(detail::waiter &w, std::optional<T> const &out) noexcept {
    m_lock.lock();
    if (m_receivers.remove_expired(w) && m_ring != nullptr) {
      m_waiting_receivers.fetch_sub(1, std::memory_order_relaxed); // under the lock
    }
    // Closed without a value: the close served us when nothing was left to give (close drains
    // the waiting receivers under this lock), so the channel is closed and drained.
    receive_status const status = out.has_value() ? receive_status::received
                                  : (m_tail.load(std::memory_order_relaxed) & closed_bit) != 0
                                      ? receive_status::closed
                                      : receive_status::empty;
    m_lock.unlock(); // the last touch of *this, as expired_send
    return status;
  }

  // ----- rendezvous (capacity 0): everything under the lock -----

  // A send of `v` under the lock: into a waiting receiver's slot, or, if `w` is given, `w` is
  // queued with value slot &v as `plan` says (result `full`; not queued if plan->out_of_memory).
  // Returns the status and a waiter to release after the unlock.
  std::pair<send_status, detail::waiter *> send_locked(T &v, detail::waiter *w = nullptr,
                                                       queue_plan *plan = nullptr) noexcept {
    m_lock.lock();
    if ((m_tail.load(std::memory_order_relaxed) & closed_bit) != 0) { // set under this lock
      m_lock.unlock();
      return {send_status::closed, nullptr};
    }
    if (detail::waiter *r = m_receivers.front()) {
      static_cast<std::optional<T> *>(detail::data_of(*r))->emplace(std::move(v));
      r = m_receivers.pop(); // given first, then settled: null if its deadline claimed it
      m_lock.unlock();
      return {send_status::sent, r};
    }
    if (w != nullptr) {
      (void)enqueue(m_senders, *w, &v, plan);
    }
    m_lock.unlock();
    return {send_status::full, nullptr};
  }

  // A receive into `out` under the lock: a waiting sender's value, or nothing. If nothing and
  // not closed, queues `w` (if given) with value slot &out as `plan` says. Returns whether the
  // receive is complete (`out` empty: closed) and a waiter to release.
  std::pair<bool, detail::waiter *> receive_locked(std::optional<T> &out,
                                                   detail::waiter *w = nullptr,
                                                   queue_plan *plan = nullptr) noexcept {
    m_lock.lock();
    detail::waiter *s = m_senders.front();
    if (s != nullptr) {
      void *&value = detail::data_of(*s);
      out.emplace(std::move(*static_cast<T *>(value)));
      value = nullptr;     // sent
      s = m_senders.pop(); // given first, then settled: null if its deadline claimed it
    } else if ((m_tail.load(std::memory_order_relaxed) & closed_bit) == 0) {
      if (w != nullptr) {
        (void)enqueue(m_receivers, *w, &out, plan);
      }
      m_lock.unlock();
      return {false, nullptr};
    }
    m_lock.unlock();
    return {true, s};
  }

  friend class channel_sender<T>;

  std::size_t const m_capacity;
  std::size_t const m_mask; ///< capacity − 1 if it is a power of two, else 0 (use %)
  slot *const m_ring;       ///< null for a rendezvous channel
  /// The next position a send claims, shifted left by one, | closed_bit once closed.
  alignas(64) std::atomic<std::uint64_t> m_tail{0};
  /// The next position a receive claims.
  alignas(64) std::atomic<std::uint64_t> m_head{0};
  /// Waiters queued (or registering) on each side: written under the lock, read by the fast
  /// paths after their fence. Apart from the ring's two ends so that reading them is cheap.
  alignas(64) std::atomic<std::uint32_t> m_waiting_senders{0};
  std::atomic<std::uint32_t> m_waiting_receivers{0};
  /// The spin budgets (send_spinning, receive_spinning), on the same read-mostly line.
  std::atomic<std::uint32_t> m_send_spin{spin_ceiling};
  std::atomic<std::uint32_t> m_receive_spin{spin_ceiling}; ///< see m_send_spin
  detail::lock_word m_lock;
  // Guarded by the lock:
  detail::channel_queue m_senders;   ///< waiting senders (data_of: their T, null once sent)
  detail::channel_queue m_receivers; ///< waiting receivers (data_of: their std::optional<T>)
  /// The channel_senders alive: the one that takes it to zero closes the channel.
  std::atomic<std::size_t> m_senders_alive{0};
};

} // namespace magpie::sync

#include "magpie/sync/channel_sender.hpp" // needs the complete channel
