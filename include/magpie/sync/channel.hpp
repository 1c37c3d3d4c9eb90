#pragma once
// magpie/sync/channel.hpp — a bounded multi-producer multi-consumer channel that tasks use
// without blocking their worker and plain threads use by blocking.
//
//   magpie::channel<job> jobs(64);
//   co_await jobs.send(job{...});                    // suspends while the channel is full
//   while (std::optional<job> j = co_await jobs.receive()) { ... }   // nullopt: closed, drained
//   jobs.close();                                    // any thread: no more sends
//
// Protocol and proof sketch: docs/protocols.md §9.11 ("channel").

#include <cstddef>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>

#include "magpie/core/frame.hpp"
#include "magpie/sync/detail/blocking.hpp"
#include "magpie/sync/detail/lock_word.hpp"
#include "magpie/sync/detail/waiter.hpp"
#include "magpie/sync/suspend.hpp"

namespace magpie::sync {

/// The outcome of channel::try_send.
enum class send_status : unsigned char {
  sent,   ///< the value is in the channel (or with a receiver); it was moved from
  full,   ///< the channel is full (no receiver waits); the value was not touched
  closed, ///< the channel is closed; the value was not touched
};

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
/// buffered, then return std::nullopt. Every member may be called concurrently from any thread
/// or task. Destroying a channel while tasks or threads wait on it releases them with
/// magpie::abandoned_wait; buffered values are destroyed with it. Cost: a send or receive that
/// does not wait is one short lock and a move; one that waits adds one suspension.
///
/// `T` must be nothrow move-constructible (values are moved under the channel's lock).
template <typename T>
class channel {
  static_assert(std::is_nothrow_move_constructible_v<T>,
                "magpie::channel<T>: T must be nothrow move-constructible (values move under the "
                "channel's lock); wrap it, e.g. in std::unique_ptr");
  static_assert(std::is_object_v<T> && !std::is_const_v<T> && !std::is_array_v<T>,
                "magpie::channel<T>: T must be a non-const object type (not a reference or array)");

public:
  /// A channel that buffers up to `capacity` values (0: rendezvous). Allocates the buffer once.
  explicit channel(std::size_t capacity)
      : m_capacity(capacity),
        m_buffer(capacity == 0 ? nullptr : std::allocator<slot>().allocate(capacity)) {}
  channel(channel const &) = delete;
  channel &operator=(channel const &) = delete;

  /// Releases every waiting task and thread with magpie::abandoned_wait, then destroys the
  /// buffered values.
  ~channel() {
    detail::abandon_all(m_lock, m_receivers, m_senders);
    while (m_count > 0) {
      pop_front();
    }
    if (m_buffer != nullptr) {
      std::allocator<slot>().deallocate(m_buffer, m_capacity);
    }
  }

  /// How many values the channel buffers (0: rendezvous).
  std::size_t capacity() const noexcept { return m_capacity; }

  /// How many values are buffered now (a snapshot).
  std::size_t size() noexcept {
    m_lock.lock();
    std::size_t n = m_count;
    m_lock.unlock();
    return n;
  }

  /// True once close() has been called (a snapshot for a concurrent close).
  bool is_closed() noexcept {
    m_lock.lock();
    bool c = m_closed;
    m_lock.unlock();
    return c;
  }

  /// How many tasks and threads wait to send, and to receive, now (snapshots, for diagnostics and
  /// tests).
  std::size_t waiting_senders() noexcept { return detail::locked_size(m_lock, m_senders); }
  /// How many tasks and threads wait to receive now (a snapshot, as waiting_senders()).
  std::size_t waiting_receivers() noexcept { return detail::locked_size(m_lock, m_receivers); }

  /// Closes the channel: sends from now on fail, waiting senders are released with failure
  /// (their values are not sent), waiting receivers get std::nullopt; values already buffered
  /// can still be received. Idempotent. Any thread or task; never blocks (beyond the short lock).
  void close() noexcept {
    m_lock.lock();
    m_closed = true;
    detail::waiter *receivers = m_receivers.take_all();
    detail::waiter *senders = m_senders.take_all();
    m_lock.unlock();
    detail::release_all(receivers); // their slots stay empty: std::nullopt
    detail::release_all(senders);   // their m_slot stays set: not sent
  }

  /// Sends `value` if that needs no waiting: moved from only if the result is `sent`.
  send_status try_send(T &&value) noexcept {
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
    bool try_now() noexcept { return decide(m_channel->send_locked(*m_value)); }
    /// Slow path, under the lock: succeeds now (true), or queues `w` to be resumed later (false).
    bool try_or_enqueue(detail::waiter &w) noexcept {
      // Set before: once queued (send_locked's unlock), the task may be resumed elsewhere at any
      // moment and this awaitable must not be touched any more.
      m_waited = true;
      auto [status, wake] = m_channel->send_locked(*m_value, &w);
      if (status == send_status::full) {
        return false; // point of no return
      }
      m_waited = false;
      return decide({status, wake});
    }
    /// True if the value was sent, false if the channel was closed first.
    bool resume_value() const noexcept { return m_waited ? this->m_slot == nullptr : m_sent; }

  private:
    bool decide(std::pair<send_status, detail::waiter *> r) noexcept {
      release_if(r.second);
      m_sent = r.first == send_status::sent;
      return r.first != send_status::full;
    }
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
      return detail::bind_waiter(std::move(a), self);
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
    bool try_now() noexcept { return decide(m_channel->receive_locked(m_result)); }
    /// Slow path, under the lock: succeeds now (true), or queues `w` to be resumed later (false).
    bool try_or_enqueue(detail::waiter &w) noexcept {
      return decide(m_channel->receive_locked(m_result, &w));
    }
    /// What the co_await returns.
    std::optional<T> resume_value() noexcept { return std::move(m_result); }

  private:
    static bool decide(std::pair<bool, detail::waiter *> r) noexcept {
      release_if(r.second);
      return r.first;
    }
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
      return detail::bind_waiter(std::move(a), self);
    }
  };

  /// `co_await ch.receive()`: the oldest value, suspending the task while the channel is empty;
  /// std::nullopt once the channel is closed and drained. Throws magpie::abandoned_wait if the
  /// channel is destroyed first, std::logic_error inside an unjoined fork–join scope.
  receive_request receive() noexcept { return {this}; }

  /// For plain threads (a task would block its worker): sends, blocking while the channel is
  /// full. True if sent, false if the channel is or gets closed first (`value` is then dropped).
  /// Throws magpie::abandoned_wait if the channel is destroyed first.
  bool send_blocking(T value) {
    detail::blocking_waiter w;
    auto [status, wake] = send_locked(value, &w);
    release_if(wake);
    if (status != send_status::full) {
      return status == send_status::sent;
    }
    w.block();
    return w.m_slot == nullptr;
  }

  /// For plain threads: receives, blocking while the channel is empty; std::nullopt once it is
  /// closed and drained. Throws magpie::abandoned_wait if the channel is destroyed first.
  std::optional<T> receive_blocking() {
    std::optional<T> out;
    detail::blocking_waiter w;
    auto [done, wake] = receive_locked(out, &w);
    release_if(wake);
    if (!done) {
      w.block();
    }
    return out;
  }

private:
  struct slot {
    alignas(T) unsigned char bytes[sizeof(T)];
  };

  static void release_if(detail::waiter *w) noexcept {
    if (w != nullptr) {
      detail::release(w); // after the unlock; touches only the waiter
    }
  }

  T *at(std::size_t i) noexcept { return std::launder(reinterpret_cast<T *>(m_buffer[i].bytes)); }

  void push_back(T &&v) noexcept {
    std::size_t tail = m_head + m_count;
    if (tail >= m_capacity) {
      tail -= m_capacity;
    }
    ::new (static_cast<void *>(m_buffer[tail].bytes)) T(std::move(v));
    ++m_count;
  }

  T pop_front() noexcept {
    T *p = at(m_head);
    T v(std::move(*p));
    p->~T();
    m_head = m_head + 1 == m_capacity ? 0 : m_head + 1;
    --m_count;
    return v;
  }

  // A send of `v` under the lock. If a receiver waits, `v` goes into its slot; else into the
  // buffer if there is room; else, if `w` is given, `w` is queued with m_slot = &v (result
  // `full`). Returns the status and a waiter to release after the unlock.
  std::pair<send_status, detail::waiter *> send_locked(T &v, detail::waiter *w = nullptr) noexcept {
    m_lock.lock();
    if (m_closed) {
      m_lock.unlock();
      return {send_status::closed, nullptr};
    }
    // Receivers wait only while the buffer is empty (a value finds a waiting receiver first).
    if (detail::waiter *r = m_receivers.pop()) {
      static_cast<std::optional<T> *>(r->m_slot)->emplace(std::move(v));
      m_lock.unlock();
      return {send_status::sent, r};
    }
    if (m_count < m_capacity) {
      push_back(std::move(v));
      m_lock.unlock();
      return {send_status::sent, nullptr};
    }
    if (w != nullptr) {
      w->m_slot = &v;
      m_senders.push(w);
    }
    m_lock.unlock();
    return {send_status::full, nullptr};
  }

  // A receive into `out` under the lock: the oldest buffered value (then the oldest waiting
  // sender's value moves into the freed room), or a waiting sender's value (rendezvous), or
  // nothing. If nothing and not closed, queues `w` (if given) with m_slot = &out. Returns whether
  // the receive is complete (`out` empty: closed and drained) and a waiter to release.
  std::pair<bool, detail::waiter *> receive_locked(std::optional<T> &out,
                                                   detail::waiter *w = nullptr) noexcept {
    m_lock.lock();
    detail::waiter *s = nullptr;
    if (m_count > 0) {
      out.emplace(pop_front());
      if ((s = m_senders.pop()) != nullptr) {
        push_back(std::move(*static_cast<T *>(s->m_slot)));
        s->m_slot = nullptr; // sent
      }
    } else if ((s = m_senders.pop()) != nullptr) { // capacity 0: take it from the sender
      out.emplace(std::move(*static_cast<T *>(s->m_slot)));
      s->m_slot = nullptr; // sent
    } else if (!m_closed) {
      if (w != nullptr) {
        w->m_slot = &out;
        m_receivers.push(w);
      }
      m_lock.unlock();
      return {false, nullptr};
    }
    m_lock.unlock();
    return {true, s};
  }

  std::size_t const m_capacity;
  slot *const m_buffer;
  detail::lock_word m_lock;
  // Guarded by the lock:
  std::size_t m_head = 0;  ///< index of the oldest buffered value
  std::size_t m_count = 0; ///< buffered values
  bool m_closed = false;
  detail::waiter_queue m_senders;   ///< waiting senders (m_slot: their T, null once sent)
  detail::waiter_queue m_receivers; ///< waiting receivers (m_slot: their std::optional<T>)
};

} // namespace magpie::sync
