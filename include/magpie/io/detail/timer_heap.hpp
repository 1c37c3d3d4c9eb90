#pragma once
// magpie/io/detail/timer_heap.hpp — what a pending timer is, and the heap that orders them.
//
// A task that sleeps (or waits on a descriptor with a deadline) owns one `wait_node`, inside its
// awaitable in the task's frame: 48 bytes. The reactor keeps pointers to pending nodes in one of
// several `timer_heap`s (shards, one per thread in turn, each behind its own spin lock, so that
// arming never takes a lock shared by the whole process): 8 bytes per pending timer, plus the
// vector's spare capacity. Protocol: docs/protocols.md §10.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <thread>
#include <vector>

#include "magpie/core/context.hpp"
#include "magpie/core/detail/pause.hpp"
#include "magpie/core/ext.hpp"

namespace magpie::io::detail {

/// Nanoseconds on std::chrono::steady_clock (CLOCK_MONOTONIC on Linux).
using nanos = std::int64_t;
inline constexpr nanos no_deadline = std::numeric_limits<nanos>::max();

/// One waiting task as the reactor sees it: the job that resubmits it, its deadline and its place
/// in a timer heap. Lives in the waiting task's frame; pending from arming until the party that
/// claims it (the timer, the descriptor, a cancel) wakes it.
struct wait_node : core::job {
  enum kind_t : std::uint8_t { sleep_kind, fd_kind, timeout_kind };
  enum result_t : std::uint8_t { pending, ready, timed_out, cancelled, out_of_memory, failed };
  static constexpr std::uint32_t not_queued = std::numeric_limits<std::uint32_t>::max();

  core::ext::task_handle m_task;      ///< the parked task
  nanos m_deadline = no_deadline;     ///< when the timer fires
  std::uint32_t m_index = not_queued; ///< position in its shard's heap (under the shard's lock)
  std::uint8_t m_shard = 0;           ///< the shard it was armed in
  kind_t m_kind = sleep_kind;
  result_t m_result = pending;        ///< what the co_await reports
  std::atomic<bool> m_claimed{false}; ///< fd and timed waits with a deadline: who wakes the task

  static void run(core::job *j, core::context &worker) noexcept {
    core::ext::resume(static_cast<wait_node *>(j)->m_task, worker);
  }
  /// Resubmits the task to its pool. Point of no return: the node may be gone after this.
  void wake() noexcept { m_task.home()->resubmit(this, core::ext::any_worker); }
};
static_assert(sizeof(wait_node) <= 48, "a pending timer's node should stay within 48 bytes");

/// A deadline raced against another waker — a synchronisation primitive's release, for the timed
/// waits of sync/ (`event::wait_for`). Exactly one party wakes the task: whoever first sets
/// m_claimed. The primitive claims it under its own lock; the reactor claims it under its shard's
/// lock while it pops the node, and, if it wins, calls `m_expired` on its own thread after
/// leaving that lock (m_result is still `pending`). `m_expired` must take the waiter out of the
/// primitive (whose loser left it there), set m_result to `timed_out` and wake the task; it may
/// take the primitive's lock but must not block otherwise. A primitive that wins the claim must
/// cancel_timer() the node before the task's frame is gone (the shard lock orders the reactor's
/// last touch of a node it popped and lost before that). Protocol: docs/protocols.md §9.8.
struct timeout_node : wait_node {
  void (*m_expired)(timeout_node &) noexcept = nullptr; ///< the reactor's side, if it wins

  timeout_node() noexcept { m_kind = timeout_kind; }

  /// The primitive's side: true if it claimed the wait (the timer will not wake it).
  bool claim() noexcept {
    // acq_rel: as the reactor's claim (src/io/reactor.cpp): the loser touches the node no more
    // outside the lock that the winner takes before waking.
    return !m_claimed.exchange(true, std::memory_order_acq_rel);
  }
};

/// A test-and-test-and-set lock for the few instructions of a heap update. Critical sections are
/// O(log n) pointer moves; a waiter that spins long (its holder was preempted) yields the core.
class spin_lock {
public:
  void lock() noexcept {
    // acquire: pairs with unlock's release; the previous holder's heap writes are ours.
    while (m_locked.exchange(true, std::memory_order_acquire)) {
      for (unsigned spins = 0; m_locked.load(std::memory_order_relaxed);) { // no edge
        core::detail::spin_pause(spins);
      }
    }
  }
  void unlock() noexcept { m_locked.store(false, std::memory_order_release); } // release: see lock
private:
  std::atomic<bool> m_locked{false};
};

/// A binary min-heap of wait nodes by deadline; each node records its index, so that a pending
/// node is removed in O(log n). Not thread-safe: guarded by its shard's spin lock.
class timer_heap {
public:
  bool empty() const noexcept { return m_heap.empty(); }
  std::size_t size() const noexcept { return m_heap.size(); }
  /// The earliest deadline, or no_deadline.
  nanos earliest() const noexcept { return m_heap.empty() ? no_deadline : m_heap[0]->m_deadline; }
  wait_node *top() const noexcept { return m_heap[0]; }

  /// Makes room for one more node (may throw std::bad_alloc); push() then cannot fail.
  void reserve_one() {
    if (m_heap.size() == m_heap.capacity()) {
      m_heap.reserve(m_heap.empty() ? 64 : 2 * m_heap.size());
    }
  }

  /// Precondition: reserve_one() since the last push.
  void push(wait_node *n) noexcept {
    m_heap.push_back(n); // cannot reallocate: reserved
    up(m_heap.size() - 1, n);
  }

  /// Removes `n`, which must be in this heap.
  void erase(wait_node *n) noexcept {
    std::size_t const i = n->m_index;
    n->m_index = wait_node::not_queued;
    wait_node *last = m_heap.back();
    m_heap.pop_back();
    if (last == n) {
      return;
    }
    if (i > 0 && last->m_deadline < m_heap[(i - 1) / 2]->m_deadline) {
      up(i, last);
    } else {
      down(i, last);
    }
  }

  /// Removes and returns the earliest node. Precondition: not empty.
  wait_node *pop() noexcept {
    wait_node *n = m_heap[0];
    erase(n);
    return n;
  }

private:
  void place(std::size_t i, wait_node *n) noexcept {
    m_heap[i] = n;
    n->m_index = static_cast<std::uint32_t>(i);
  }
  void up(std::size_t i, wait_node *n) noexcept {
    while (i > 0) {
      std::size_t const parent = (i - 1) / 2;
      if (m_heap[parent]->m_deadline <= n->m_deadline) {
        break;
      }
      place(i, m_heap[parent]);
      i = parent;
    }
    place(i, n);
  }
  void down(std::size_t i, wait_node *n) noexcept {
    std::size_t const size = m_heap.size();
    for (;;) {
      std::size_t child = 2 * i + 1;
      if (child >= size) {
        break;
      }
      if (child + 1 < size && m_heap[child + 1]->m_deadline < m_heap[child]->m_deadline) {
        ++child;
      }
      if (n->m_deadline <= m_heap[child]->m_deadline) {
        break;
      }
      place(i, m_heap[child]);
      i = child;
    }
    place(i, n);
  }

  std::vector<wait_node *> m_heap;
};

/// Starts the process-wide reactor if it has not started (throws std::system_error if the
/// operating system refuses it). Called before any wait begins. Defined in src/io/.
void start_reactor();

/// Arms `n` (its m_deadline set) in the calling thread's shard and makes sure the reactor wakes
/// by its deadline. Returns false, arming nothing, if memory ran out. Defined in src/io/.
bool arm_timer(wait_node &n) noexcept;
/// Removes `n` from its shard if it is still pending there: true if it was (it will not fire).
bool cancel_timer(wait_node &n) noexcept;

} // namespace magpie::io::detail
