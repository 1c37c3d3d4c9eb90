#pragma once
// magpie/sync/detail/channel_timed.hpp — a channel's sends and receives with a deadline (Linux,
// where the reactor keeps deadlines): the awaitables of send_for / send_until and receive_for /
// receive_until, and the plain-thread forms.
//
// A timed wait is an ordinary channel wait (the fast path, then a waiter in the channel's queue)
// whose waiter also carries a deadline node. Who ends it: channel_waiters.hpp (the channel gives
// first, then settles by the node's claim). Protocol and proof sketch: docs/protocols.md §9.11,
// "Timed sends and receives"; model docs/models/channel_timed.pml.

#if defined(__linux__)

#  include <cstdint>
#  include <new>
#  include <optional>
#  include <utility>

#  include "magpie/core/frame.hpp"
#  include "magpie/io/timer.hpp"
#  include "magpie/sync/channel_status.hpp"
#  include "magpie/sync/detail/blocking.hpp"
#  include "magpie/sync/detail/channel_waiters.hpp"
#  include "magpie/sync/detail/timed.hpp"
#  include "magpie/sync/detail/waiter.hpp"

namespace magpie::sync {
template <typename T>
class channel;
} // namespace magpie::sync

namespace magpie::sync::detail {

/// The channel's private members that timed sends and receives use (channel befriends this).
struct channel_access {
  /// The fast path of a send that may wait (`self`: the sending task, null for a plain thread).
  template <typename T>
  static send_status send_now(channel<T> &c, T &v, core::frame_base *self) noexcept {
    return c.send_now(v, self);
  }
  /// The fast path of a receive that may wait: true if done (a value, or closed and drained).
  template <typename T>
  static bool receive_now(channel<T> &c, std::optional<T> &out, core::frame_base *self) noexcept {
    return c.receive_now(out, self);
  }
  /// The slow path of a timed send: {sent or closed, false} now, {full, false} queued, or
  /// {full, true} not queued (the deadline could not be armed).
  template <typename T>
  static std::pair<send_status, bool>
  send_or_enqueue_timed(channel<T> &c, T &v, waiter &w, channel_deadline &d,
                        io::detail::timeout_node *arm) noexcept {
    return c.send_or_enqueue_timed(v, w, d, arm);
  }
  /// The slow path of a timed receive: {true, false} done now, {false, false} queued, or
  /// {false, true} not queued (the deadline could not be armed).
  template <typename T>
  static std::pair<bool, bool> receive_or_enqueue_timed(channel<T> &c, std::optional<T> &out,
                                                        waiter &w, channel_deadline &d,
                                                        io::detail::timeout_node *arm) noexcept {
    return c.receive_or_enqueue_timed(out, w, d, arm);
  }
  /// The deadline's side of a send, having won the claim: takes `w` out; what the send came to.
  template <typename T>
  static send_status expired_send(channel<T> &c, waiter &w) noexcept {
    return c.expired_send(w);
  }
  /// The deadline's side of a receive, as expired_send.
  template <typename T>
  static receive_status expired_receive(channel<T> &c, waiter &w,
                                        std::optional<T> const &out) noexcept {
    return c.expired_receive(w, out);
  }
};

/// Where a task's timed send or receive stands.
enum class channel_wait_phase : std::uint8_t {
  decided,      ///< ended without waiting: the fast path, or the slow path under the lock
  queued,       ///< queued with its deadline armed: the channel or the deadline wakes it
  out_of_memory ///< the deadline could not be armed: never waited
};

/// The awaitable of a task's send_for / send_until: a waiter in the channel's senders and a
/// deadline in the reactor. co_await returns sent, full (the deadline came first; the value was
/// not touched) or closed.
template <typename T>
struct timed_send_awaitable : wait_awaitable<timed_send_awaitable<T>>, channel_deadline {
  channel<T> *m_channel;
  T *m_value; ///< moved from only if sent
  deadline_state m_when;
  channel_wait_phase m_phase = channel_wait_phase::decided;
  send_status m_status = send_status::full;

  timed_send_awaitable(core::frame_base &frame, channel<T> &c, T &v, timed_deadline dl) noexcept
      : m_channel(&c), m_value(&v), m_when(dl.m_when) {
    this->m_frame = &frame;
    m_deadline = dl.m_at;
  }

  /// Fast path (await_ready): sent or closed now, or the deadline already reached (full).
  bool try_now() noexcept {
    m_status = channel_access::send_now(*m_channel, *m_value, this->m_frame);
    return m_status != send_status::full || deadline_reached(m_deadline, m_when);
  }

  /// Slow path (await_suspend, parked): decided under the lock, or unable to arm (true: the task
  /// never left), or queued and armed (false: the point of no return).
  bool try_or_enqueue(waiter &w) noexcept {
    m_expired = &on_deadline;
    m_phase = channel_wait_phase::queued; // before the point of no return: await_resume may run
    auto const [status, out_of_memory] =
        channel_access::send_or_enqueue_timed(*m_channel, *m_value, w, *this, this);
    if (status == send_status::full && !out_of_memory) {
      return false; // point of no return
    }
    m_phase = out_of_memory ? channel_wait_phase::out_of_memory : channel_wait_phase::decided;
    m_status = status;
    return true;
  }

  send_status await_resume() {
    if (m_phase == channel_wait_phase::out_of_memory) [[unlikely]] {
      throw std::bad_alloc();
    }
    // Queued and released by the channel's side (not its deadline): cancel the timer (its
    // release may have raced the reactor's pop of the node, which the shard lock orders), rethrow
    // abandoned_wait, and read the outcome from our slot.
    waiter &w = *this;
    if (m_phase == channel_wait_phase::queued && ended_by_primitive(*this, w)) {
      m_status = data_of(w) == nullptr ? send_status::sent : send_status::closed;
    }
    return m_status;
  }

  /// The reactor's side, on its thread, after it won the claim.
  static void on_deadline(io::detail::timeout_node &n) noexcept {
    auto &self = static_cast<timed_send_awaitable &>(n);
    waiter &w = self;
    self.m_status = channel_access::expired_send(*self.m_channel, w); // last touch of the channel
    self.m_result = io::detail::wait_node::timed_out;
    w.wake(); // point of no return
  }
};

/// What send_for / send_until return; co_await it in a magpie task, in the expression that makes
/// it (it refers to the value passed to send_for(T&&)).
template <typename T>
struct [[nodiscard("co_await it")]] timed_send_request {
  /// Marks the request as awaitable inside a magpie task.
  using magpie_awaitable = void;
  channel<T> *m_channel;
  T *m_value;              ///< the caller's value (send_for(T&&)), or null: m_copy
  std::optional<T> m_copy; ///< send_for(T const&): the copy to send
  timed_deadline m_deadline;

  /// Binds the request to the awaiting task (co_await does this) and returns the awaitable.
  timed_send_awaitable<T> magpie_bind(core::frame_base &self) && {
    io::detail::wait_home(self, "magpie::channel::send_for/send_until"); // checks; the reactor
    T &v = m_value != nullptr ? *m_value : *m_copy;
    return timed_send_awaitable<T>(self, *m_channel, v, m_deadline); // in place
  }
};

/// The awaitable of a task's receive_for / receive_until, as timed_send_awaitable.
template <typename T>
struct timed_receive_awaitable : wait_awaitable<timed_receive_awaitable<T>>, channel_deadline {
  channel<T> *m_channel;
  std::optional<T> m_value;
  deadline_state m_when;
  channel_wait_phase m_phase = channel_wait_phase::decided;
  receive_status m_status = receive_status::empty;

  timed_receive_awaitable(core::frame_base &frame, channel<T> &c, timed_deadline dl) noexcept
      : m_channel(&c), m_when(dl.m_when) {
    this->m_frame = &frame;
    m_deadline = dl.m_at;
  }

  /// Fast path (await_ready): a value or closed now, or the deadline already reached (empty).
  bool try_now() noexcept {
    if (channel_access::receive_now(*m_channel, m_value, this->m_frame)) {
      m_status = m_value.has_value() ? receive_status::received : receive_status::closed;
      return true;
    }
    return deadline_reached(m_deadline, m_when); // empty
  }

  /// Slow path (await_suspend, parked), as timed_send_awaitable's.
  bool try_or_enqueue(waiter &w) noexcept {
    m_expired = &on_deadline;
    m_phase = channel_wait_phase::queued; // before the point of no return: await_resume may run
    auto const [done, out_of_memory] =
        channel_access::receive_or_enqueue_timed(*m_channel, m_value, w, *this, this);
    if (!done && !out_of_memory) {
      return false; // point of no return
    }
    m_phase = out_of_memory ? channel_wait_phase::out_of_memory : channel_wait_phase::decided;
    m_status = m_value.has_value() ? receive_status::received : receive_status::closed;
    return true;
  }

  receive_result<T> await_resume() {
    if (m_phase == channel_wait_phase::out_of_memory) [[unlikely]] {
      throw std::bad_alloc();
    }
    if (m_phase == channel_wait_phase::queued && ended_by_primitive(*this, *this)) {
      m_status = m_value.has_value() ? receive_status::received : receive_status::closed;
    }
    return {std::move(m_value), m_status};
  }

  /// The reactor's side, on its thread, after it won the claim.
  static void on_deadline(io::detail::timeout_node &n) noexcept {
    auto &self = static_cast<timed_receive_awaitable &>(n);
    waiter &w = self;
    self.m_status = channel_access::expired_receive(*self.m_channel, w, self.m_value);
    self.m_result = io::detail::wait_node::timed_out;
    w.wake(); // point of no return
  }
};

/// What receive_for / receive_until return; co_await it in a magpie task.
template <typename T>
struct [[nodiscard("co_await it")]] timed_receive_request {
  /// Marks the request as awaitable inside a magpie task.
  using magpie_awaitable = void;
  channel<T> *m_channel;
  timed_deadline m_deadline;

  /// Binds the request to the awaiting task (co_await does this) and returns the awaitable.
  timed_receive_awaitable<T> magpie_bind(core::frame_base &self) && {
    io::detail::wait_home(self, "magpie::channel::receive_for/receive_until");
    return timed_receive_awaitable<T>(self, *m_channel, m_deadline); // in place
  }
};

/// A plain thread's timed channel waiter: on its stack; its own deadline is its timer.
struct channel_thread_waiter : blocking_waiter, channel_deadline {};

/// A plain thread's send of `v` until the deadline `dl`: sent, full (the deadline came first;
/// `v` untouched) or closed. Throws magpie::abandoned_wait if the channel is destroyed first,
/// std::logic_error (`v` untouched) on a thread that runs a magpie task.
template <typename T>
send_status send_blocking_until(channel<T> &c, T &v, timed_deadline dl) {
  refuse_on_worker("magpie::channel::send_blocking_for/_until inside a task would block its "
                   "worker: co_await ch.send_for(std::move(v), d) instead");
  send_status const now = channel_access::send_now(c, v, nullptr);
  if (now != send_status::full || deadline_reached(dl.m_at, dl.m_when)) {
    return now;
  }
  channel_thread_waiter w;
  waiter &queued = w;
  // Nothing to arm (a thread keeps its own time): the slow path cannot run out of memory.
  send_status const status = channel_access::send_or_enqueue_timed(c, v, queued, w, nullptr).first;
  if (status != send_status::full) {
    return status;
  }
  if (!block_until(w, w, dl.m_at)) { // our deadline claimed the wait
    return channel_access::expired_send(c, queued);
  }
  w.rethrow_if_failed();
  return data_of(queued) == nullptr ? send_status::sent : send_status::closed;
}

/// A plain thread's receive until the deadline `dl`, as send_blocking_until.
template <typename T>
receive_result<T> receive_blocking_until(channel<T> &c, timed_deadline dl) {
  refuse_on_worker("magpie::channel::receive_blocking_for/_until inside a task would block its "
                   "worker: co_await ch.receive_for(d) instead");
  receive_result<T> r{std::nullopt, receive_status::empty};
  if (channel_access::receive_now(c, r.value, nullptr)) {
    r.status = r.value.has_value() ? receive_status::received : receive_status::closed;
    return r;
  }
  if (deadline_reached(dl.m_at, dl.m_when)) {
    return r;
  }
  channel_thread_waiter w;
  waiter &queued = w;
  if (channel_access::receive_or_enqueue_timed(c, r.value, queued, w, nullptr).first) {
    r.status = r.value.has_value() ? receive_status::received : receive_status::closed;
    return r;
  }
  if (!block_until(w, w, dl.m_at)) {
    r.status = channel_access::expired_receive(c, queued, r.value);
    return r;
  }
  w.rethrow_if_failed();
  r.status = r.value.has_value() ? receive_status::received : receive_status::closed;
  return r;
}

} // namespace magpie::sync::detail

#endif // __linux__
