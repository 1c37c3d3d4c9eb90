#pragma once
// magpie/sync/detail/timed.hpp — waits with a deadline in a primitive's waiter queue (Linux).
//
// A timed waiter is a `waiter` whose m_slot points at an `io::detail::timeout_node` beside it,
// queued in a `timed_queue` (timed_queue.hpp: the claim, the count of timed waiters, the
// destructor's wait_out_expiring — shared with the channel). For a task the deadline's side is
// the reactor, which calls the node's m_expired on its thread; for a plain thread, the thread
// itself once its own deadline has passed. A primitive's side that loses the claim leaves the
// waiter queued, untouched, and the deadline's side takes it out under the primitive's lock
// (`take_out_expired`) before the wait returns; a primitive's destructor waits until those are
// gone (`abandon_all_timed`). Protocol and proof sketch: docs/protocols.md §9.8, "Timed waits";
// model docs/models/timed_wait.pml.
//
// A primitive `P` with timed waits keeps a `timed_queue` and gives these (private; it befriends
// `timed_access`):
//   bool try_pass() noexcept;                        // fast path, no lock
//   bool try_pass(core::frame_base &) noexcept;      // optional: a task's fast path
//   timed_outcome pass_or_enqueue_timed(waiter &w, io::detail::timeout_node *arm) noexcept;
//       // under its lock: passes now, or timed_queue::push_timed(w, arm) (arm: null for a thread)
//   void take_out_expired(waiter &w) noexcept;       // under its lock: timed_queue::remove_expired

#if defined(__linux__)

#  include <chrono>
#  include <coroutine>
#  include <cstddef>
#  include <cstdint>
#  include <new>

#  include "magpie/core/config.hpp"
#  include "magpie/core/context.hpp"
#  include "magpie/core/detail/thread_wait.hpp"
#  include "magpie/core/ext.hpp"
#  include "magpie/core/frame.hpp"
#  include "magpie/io/timer.hpp"
#  include "magpie/sync/detail/blocking.hpp"
#  include "magpie/sync/detail/lock_word.hpp"
#  include "magpie/sync/detail/timed_queue.hpp"
#  include "magpie/sync/detail/waiter.hpp"

namespace magpie::sync::detail {

/// How a timed wait stands after its fast path or its enqueuing.
enum class timed_outcome : std::uint8_t { undecided, passed, expired, queued, out_of_memory };

/// What a timed request knows of its deadline: wait_for(d) read the clock already, so only a
/// wait_until deadline needs a clock read to tell whether it has passed.
enum class deadline_state : std::uint8_t { past, future, unknown };

/// Whether the deadline of a timed request has been reached before it waits (wait_for(d) knows
/// from d; a wait_until deadline needs a clock read).
inline bool deadline_reached(io::detail::nanos deadline, deadline_state when) noexcept {
  return when == deadline_state::past ||
         (when == deadline_state::unknown && deadline <= io::detail::now_nanos());
}

/// A timed wait's deadline (io::clock, ns since its epoch) and what is known of it.
struct timed_deadline {
  io::detail::nanos m_at;
  deadline_state m_when;
};

/// The deadline of a wait_until(t): converted (and saturated) as a sleep's.
template <typename Clock, typename Duration>
timed_deadline deadline_until(std::chrono::time_point<Clock, Duration> t) {
  return {io::sleep_until(t).m_deadline, deadline_state::unknown};
}

/// The deadline of a wait_for(d): one clock read; a zero or negative `d` is already reached.
template <typename Rep, typename Period>
timed_deadline deadline_for(std::chrono::duration<Rep, Period> d) {
  return {io::sleep_for(d).m_deadline,
          d <= d.zero() ? deadline_state::past : deadline_state::future};
}

/// abandon_all (blocking.hpp) for a timed queue: fails every waiter it claims with
/// abandoned_wait, then waits out the expiring ones.
inline void abandon_all_timed(lock_word &lock, timed_queue &q) noexcept {
  abandon_all(lock, q);
  wait_out_expiring(lock, q);
}

/// For the await_resume of a task's timed wait that did not queue (its fast path, or its enqueue,
/// decided it): true if it passed, false if its deadline had been reached; throws std::bad_alloc
/// if the deadline could not be armed.
inline bool passed_unqueued(timed_outcome o) {
  if (o == timed_outcome::out_of_memory) [[unlikely]] {
    throw std::bad_alloc();
  }
  return o == timed_outcome::passed;
}

/// For the await_resume of a task's timed wait that was queued: false if its deadline ended it
/// (the reactor woke it, done with the node); else the primitive's side claimed it (a release, a
/// notify, or its destructor): waits until the reactor is done with the node (it may have popped
/// it and lost the claim) before the frame can go, rethrows what the primitive failed the wait
/// with, and returns true.
inline bool ended_by_primitive(io::detail::timeout_node &node, waiter &w) {
  if (node.m_result == io::detail::wait_node::timed_out) {
    return false;
  }
  (void)io::detail::cancel_timer(node);
  w.rethrow_if_failed();
  return true;
}

template <typename P>
bool wait_blocking_until(P &p, timed_deadline dl);

/// The primitives' private members that timed waits use (each primitive befriends this).
struct timed_access {
  template <typename P>
  static bool try_pass(P &p) noexcept {
    return p.try_pass();
  }
  /// A task's fast path: P's task form if it has one (a lock may revoke an heir's hand-off).
  template <typename P>
  static bool try_pass(P &p, core::frame_base &self) noexcept {
    if constexpr (requires { p.try_pass(self); }) {
      return p.try_pass(self);
    } else {
      return p.try_pass();
    }
  }
  template <typename P>
  static timed_outcome enqueue(P &p, waiter &w, io::detail::timeout_node *arm) noexcept {
    return p.pass_or_enqueue_timed(w, arm);
  }
  template <typename P>
  static void take_out_expired(P &p, waiter &w) noexcept {
    p.take_out_expired(w);
  }
  /// A plain thread's timed wait on `p` (timed_blocking_until): P's own `block_until` if it has
  /// one (the counter: its threads wait on a condition variable), else a waiter in P's queue.
  template <typename P>
  static bool block_until(P &p, timed_deadline dl) {
    if constexpr (requires { p.block_until(dl); }) {
      return p.block_until(dl);
    } else {
      return wait_blocking_until(p, dl);
    }
  }
  /// For timed_waits<P>: the std::logic_error message of P's blocking timed waits on a thread
  /// that runs a magpie task.
  template <typename P>
  static constexpr char const *timed_blocking_on_worker() noexcept {
    return P::timed_blocking_on_worker;
  }
};

/// The awaitable of a task's timed wait on `P`: a waiter in P's queue and a deadline in the
/// reactor, one of which wakes the task. co_await returns true if P let the task pass. The
/// suspension is the skeleton of waiter.hpp (wait_awaitable: hold, park, enqueue, point of no
/// return); this adds the deadline.
template <typename P>
struct timed_wait_awaitable : wait_awaitable<timed_wait_awaitable<P>>, io::detail::timeout_node {
  P *m_primitive;
  timed_outcome m_outcome = timed_outcome::undecided;
  deadline_state m_when;

  timed_wait_awaitable(core::frame_base &frame, P &p, io::detail::nanos deadline,
                       deadline_state when) noexcept
      : m_primitive(&p), m_when(when) {
    this->m_frame = &frame;
    m_deadline = deadline;
  }

  /// Fast path (await_ready): passes now, or the deadline has already been reached.
  bool try_now() noexcept {
    if (timed_access::try_pass(*m_primitive, *this->m_frame)) {
      m_outcome = timed_outcome::passed;
      return true;
    }
    if (deadline_reached(m_deadline, m_when)) {
      m_outcome = timed_outcome::expired; // a deadline already reached does not suspend
      return true;
    }
    return false;
  }

  /// Slow path (await_suspend, parked): passes under P's lock or cannot arm the deadline (true:
  /// the task never left), or is queued and armed (false: the point of no return).
  bool try_or_enqueue(waiter &w) noexcept {
    io::detail::timeout_node *const node = this;
    w.m_slot = node; // its claim node (push_timed marks the waiter timed)
    m_expired = &on_deadline;
    m_outcome = timed_outcome::queued; // before the point of no return: await_resume may run
    timed_outcome const now = timed_access::enqueue(*m_primitive, w, node);
    if (now == timed_outcome::queued) {
      return false;
    }
    m_outcome = now;
    return true;
  }

  bool await_resume() {
    if (m_outcome != timed_outcome::queued) {
      return passed_unqueued(m_outcome);
    }
    return ended_by_primitive(*this, *this);
  }

  /// The reactor's side, on its thread, after it won the claim.
  static void on_deadline(io::detail::timeout_node &n) noexcept {
    auto &self = static_cast<timed_wait_awaitable &>(n);
    self.m_result = io::detail::wait_node::timed_out;
    waiter &w = self;
    timed_access::take_out_expired(*self.m_primitive, w); // the last touch of P
    w.wake();                                             // point of no return
  }
};

/// What a primitive's wait_for / wait_until return; co_await it in a magpie task.
template <typename P>
struct [[nodiscard("co_await it")]] timed_wait_request {
  /// Marks the request as awaitable inside a magpie task.
  using magpie_awaitable = void;
  P *m_primitive;
  io::detail::nanos m_deadline;
  deadline_state m_when;
  /// Binds the request to the awaiting task (co_await does this) and returns the awaitable.
  timed_wait_awaitable<P> magpie_bind(core::frame_base &self) && {
    io::detail::wait_home(self, "magpie: a timed wait"); // checks; starts the reactor
    return timed_wait_awaitable<P>(self, *m_primitive, m_deadline, m_when); // in place
  }
};

/// wait_until(t) on `p`: the deadline converted (and saturated) as a sleep's.
template <typename P, typename Clock, typename Duration>
timed_wait_request<P> wait_until_request(P &p, std::chrono::time_point<Clock, Duration> t) {
  timed_deadline const dl = deadline_until(t);
  return {&p, dl.m_at, dl.m_when};
}

/// wait_for(d) on `p`: one clock read; a zero or negative `d` does not wait.
template <typename P, typename Rep, typename Period>
timed_wait_request<P> wait_for_request(P &p, std::chrono::duration<Rep, Period> d) {
  timed_deadline const dl = deadline_for(d);
  return {&p, dl.m_at, dl.m_when};
}

/// A plain thread's timed waiter: on its stack; its own deadline is its timer.
struct timed_blocking_waiter : blocking_waiter, io::detail::timeout_node {
  timed_blocking_waiter() noexcept { m_slot = static_cast<io::detail::timeout_node *>(this); }
};

/// Blocks the thread until `w`, queued in a primitive, is released (true: the primitive's side
/// claimed it; its error, if any, is left for rethrow_if_failed) or its deadline passes and the
/// thread claims it (false: the primitive's side will not touch it; the caller takes it out).
/// `node` is the waiter's claim node (the primitive finds it through the waiter's m_slot).
inline bool block_until(blocking_waiter &w, io::detail::timeout_node &node,
                        io::detail::nanos deadline_nanos) {
  auto const deadline = io::detail::from_nanos(deadline_nanos);
  if (core::detail::wait_for_done(w.m_word, &w, &deadline)) {
    return true;
  }
  if (node.claim()) { // the deadline won: the primitive's side will not touch us
    return false;
  }
  // The primitive's side claimed us first: its release is on its way (one exchange of our word).
  core::detail::wait_for_done(w.m_word, &w);
  return true;
}

/// block_until for a waiter that is its own claim node.
inline bool block_until(timed_blocking_waiter &w, io::detail::nanos deadline_nanos) {
  return block_until(w, w, deadline_nanos);
}

/// A plain thread's timed wait on `p` in P's queue until `dl` (converted and saturated as a
/// task's): true if p let it pass, false if the deadline came first. Rethrows what p's side
/// failed the wait with.
template <typename P>
bool wait_blocking_until(P &p, timed_deadline dl) {
  if (timed_access::try_pass(p)) {
    return true;
  }
  if (deadline_reached(dl.m_at, dl.m_when)) {
    return false;
  }
  timed_blocking_waiter w;
  if (timed_access::enqueue(p, w, nullptr) == timed_outcome::passed) {
    return true;
  }
  if (!block_until(w, dl.m_at)) {
    timed_access::take_out_expired(p, w);
    return false;
  }
  w.rethrow_if_failed();
  return true;
}

/// The timed forms of a plain thread's wait on `p`, whatever the primitive names them: refuse
/// (std::logic_error(`on_worker`), which names the task form to use instead) on a thread that
/// runs a magpie task, else wait until `t` (timed_access::block_until) — true if p let the
/// thread pass, false if `t` came first. The task forms are wait_until_request and
/// wait_for_request; timed_waits<P> gives all four as members named wait_*, and a primitive
/// whose names differ (the mutex's try_lock_for, the semaphore's try_acquire_for, the
/// shared_mutex's sides) forwards to these four in one line each.
template <typename P, typename Clock, typename Duration>
bool timed_blocking_until(P &p, std::chrono::time_point<Clock, Duration> t, char const *on_worker) {
  refuse_on_worker(on_worker);
  return timed_access::block_until(p, deadline_until(t));
}

/// timed_blocking_until(p, now + d, on_worker); a zero or negative `d` does not wait.
template <typename P, typename Rep, typename Period>
bool timed_blocking_for(P &p, std::chrono::duration<Rep, Period> d, char const *on_worker) {
  refuse_on_worker(on_worker);
  return timed_access::block_until(p, deadline_for(d));
}

/// The queued outcome of a timed wait's enqueuing (`armed`: timed_queue::push_timed's result).
inline timed_outcome queued_or_out_of_memory(bool armed) noexcept {
  return armed ? timed_outcome::queued : timed_outcome::out_of_memory;
}

/// The timed waits of a primitive `P` (the event, the latch, the counter), as members: P derives
/// from this (and befriends timed_access). "Passes": what P's untimed wait() waits for. P also
/// gives `static constexpr char const *timed_blocking_on_worker`: the message with which its
/// blocking forms refuse to run on a thread that runs a magpie task; and, if its plain threads do
/// not wait in its queue, `bool block_until(timed_deadline)` (timed_access::block_until).
template <typename P>
class timed_waits {
public:
  /// `co_await p.wait_until(t)`: as wait(), giving up at `t` — true if the wait passed, false if
  /// `t` came first. A deadline already reached returns at once (true if the wait passes now).
  /// Any clock's time point is converted to io::clock. While it waits the task holds its pool
  /// (the pool's destructor waits for the deadline). Throws what wait() throws, and
  /// std::bad_alloc if the reactor's timer heap cannot grow. With GCC 12.2 bind the result to a
  /// variable (docs/guarantees.md, L3b).
  template <typename Clock, typename Duration>
  timed_wait_request<P> wait_until(std::chrono::time_point<Clock, Duration> t) {
    return wait_until_request(self(), t);
  }

  /// `co_await p.wait_for(d)`: wait_until(now + d), reading the clock once; a zero or negative
  /// `d` does not wait.
  template <typename Rep, typename Period>
  timed_wait_request<P> wait_for(std::chrono::duration<Rep, Period> d) {
    return wait_for_request(self(), d);
  }

  /// For plain threads: as wait_blocking(), giving up at `t` — true if the wait passed, false if
  /// `t` came first (a deadline already reached: true only if it passes now, without waiting).
  /// Throws what the primitive's blocking wait throws (magpie::abandoned_wait if the event or
  /// latch is destroyed first), std::logic_error on a thread that runs a magpie task (co_await
  /// wait_until there). The thread keeps its own time (no reactor).
  template <typename Clock, typename Duration>
  bool wait_blocking_until(std::chrono::time_point<Clock, Duration> t) {
    return timed_blocking_until(self(), t, timed_access::timed_blocking_on_worker<P>());
  }

  /// wait_blocking_until(now + d); a zero or negative `d` does not wait.
  template <typename Rep, typename Period>
  bool wait_blocking_for(std::chrono::duration<Rep, Period> d) {
    return timed_blocking_for(self(), d, timed_access::timed_blocking_on_worker<P>());
  }

private:
  P &self() noexcept { return static_cast<P &>(*this); }
};

} // namespace magpie::sync::detail

#endif // __linux__
