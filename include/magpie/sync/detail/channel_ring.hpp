#pragma once
// magpie/sync/detail/channel_ring.hpp — a channel's lock-free ring: a cell per buffered value
// with a turn number, the tail (which also carries the channel's closed bit) and the head.
//
// Sends and receives that do not wait use only this; the channel takes its lock to wait, to hand
// values to waiters and to close (detail/channel_buffered.hpp). A rendezvous channel has a ring
// without cells: it uses only the closed bit. Protocol and proof sketch: docs/protocols.md §9.11
// ("State", "Push", "Pop", "Close"); model docs/models/channel.pml.

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <utility>

#include "magpie/core/detail/pause.hpp"
#include "magpie/sync/channel_status.hpp"

namespace magpie::sync::detail {

using core::detail::line_gap;

/// The ring of a channel of `T` with `capacity` cells (0: none, only the closed bit). push and pop
/// may be called concurrently from any thread; close from one holding the channel's lock.
template <typename T>
class channel_ring {
public:
  /// A ring of `capacity` free cells. Allocates them once (none for capacity 0).
  explicit channel_ring(std::size_t capacity)
      : m_capacity(capacity), m_mask(std::has_single_bit(capacity) ? capacity - 1 : 0),
        m_cells(capacity == 0 ? nullptr : std::allocator<cell>().allocate(capacity)) {
    for (std::size_t i = 0; i < capacity; ++i) {
      ::new (static_cast<void *>(&m_cells[i])) cell{};        // cell i is free for position i
      m_cells[i].seq.store(2 * i, std::memory_order_relaxed); // before another thread sees us
    }
  }
  channel_ring(channel_ring const &) = delete;
  channel_ring &operator=(channel_ring const &) = delete;

  /// Destroys the values still in the ring. Precondition: nobody uses it any more.
  ~channel_ring() {
    if (m_cells == nullptr) {
      return;
    }
    // Nobody uses the ring any more: every claimed position is published.
    std::uint64_t const tail = m_tail.load(std::memory_order_acquire) >> 1; // acquire: as pop
    for (std::uint64_t pos = m_head.load(std::memory_order_acquire); pos != tail; ++pos) {
      value_at(pos)->~T();
    }
    for (std::size_t i = 0; i < m_capacity; ++i) {
      m_cells[i].~cell();
    }
    std::allocator<cell>().deallocate(m_cells, m_capacity);
  }

  /// How many values the ring holds at most (0: a rendezvous channel's).
  std::size_t capacity() const noexcept { return m_capacity; }

  /// How many values are in the ring now (a snapshot; values being sent or received count).
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
  /// is_closed() for a caller that holds the channel's lock, under which close() sets the bit.
  bool is_closed_under_lock() const noexcept {
    return (m_tail.load(std::memory_order_relaxed) & closed_bit) != 0; // relaxed: the lock orders
  }

  /// Sets the closed bit: every push from now on fails. Under the channel's lock.
  void close() noexcept {
    // seq_cst: a send's claim of a position (its CAS on the tail) is either before this, and its
    // value is received, or after it, and it fails: the closed bit lives in the tail itself.
    m_tail.fetch_or(closed_bit, std::memory_order_seq_cst);
  }

  /// A cheap look (relaxed loads, no writes): does the cell at the tail look free, or the ring
  /// closed? A hint for a spinning send; push() decides.
  bool room_hint() const noexcept {
    std::uint64_t const t = m_tail.load(std::memory_order_relaxed);
    std::uint64_t const pos = t >> 1;
    return (t & closed_bit) != 0 ||
           m_cells[cell_index(pos)].seq.load(std::memory_order_relaxed) == 2 * pos;
  }
  /// A cheap look: is a value published at the head? A hint for a spinning receive; pop()
  /// decides. (A close is left to the waiting path: a receive spins at most once more after it.)
  bool value_hint() const noexcept {
    std::uint64_t const h = m_head.load(std::memory_order_relaxed);
    return m_cells[cell_index(h)].seq.load(std::memory_order_relaxed) == 2 * h + 1;
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
      cell &c = cell_at(pos);
      // acquire: the receive that freed the cell (its move out) happens-before our move in.
      std::uint64_t const seq = c.seq.load(std::memory_order_acquire);
      if (seq == 2 * pos) {
        // seq_cst: with after_push's seq_cst load (channel_buffered.hpp), the Dekker against a
        // receiver's registration (its count, a fence, its own pop reading the tail): protocols
        // §9.11. The cell's seq carries the data. (On x86 a locked CAS is a full barrier anyway:
        // no extra fence.)
        if (m_tail.compare_exchange_weak(t, t + 2, std::memory_order_seq_cst,
                                         std::memory_order_relaxed)) {
          ::new (static_cast<void *>(c.bytes)) T(std::move(v));
          c.seq.store(2 * pos + 1, std::memory_order_release); // release: value → receive
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
        core::detail::spin_pause(spins); // a receive claimed it and is moving it out
      }
      t = m_tail.load(std::memory_order_relaxed); // another send took pos (or we wait)
    }
  }

  /// Moves the oldest value into `out` if there is one: true. Else false, with `closed` set if
  /// the ring is closed (it then stays empty). Lock-free but for the wait for a send that has
  /// claimed the oldest position and is moving its value in.
  bool pop(std::optional<T> &out, bool &closed) noexcept {
    std::uint64_t h = m_head.load(std::memory_order_relaxed); // the CAS validates it
    for (unsigned spins = 0;;) {
      cell &c = cell_at(h);
      // acquire: the send's move in happens-before our move out.
      std::uint64_t const seq = c.seq.load(std::memory_order_acquire);
      if (seq == 2 * h + 1) {
        // seq_cst: as push's, for after_pop against a sender's registration.
        if (m_head.compare_exchange_weak(h, h + 1, std::memory_order_seq_cst,
                                         std::memory_order_relaxed)) {
          T *p = std::launder(reinterpret_cast<T *>(c.bytes));
          out.emplace(std::move(*p));
          p->~T();
          // release: our move out → the send that reuses the cell.
          c.seq.store(2 * (h + m_capacity), std::memory_order_release);
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
        core::detail::spin_pause(spins); // a send claimed h and is moving its value in
      }
      h = m_head.load(std::memory_order_relaxed); // another receive took h (or we wait)
    }
  }

private:
  /// One cell of the ring. `seq` says whose turn it is at the cell: 2p (free for the send that
  /// claims position p), 2p + 1 (holds the value sent at position p), 2(p + capacity) (free
  /// again, for position p + capacity, once the receive at p has moved the value out). The
  /// doubling keeps "holds p" and "free for p + 1" apart when the capacity is 1.
  struct cell {
    std::atomic<std::uint64_t> seq{0};
    alignas(T) unsigned char bytes[sizeof(T)];
  };

  static constexpr std::uint64_t closed_bit = 1; ///< in m_tail, beside the position (<< 1)

  std::size_t cell_index(std::uint64_t pos) const noexcept {
    return m_mask != 0 ? pos & m_mask : pos % m_capacity;
  }
  cell &cell_at(std::uint64_t pos) noexcept { return m_cells[cell_index(pos)]; }
  T *value_at(std::uint64_t pos) noexcept {
    return std::launder(reinterpret_cast<T *>(cell_at(pos).bytes));
  }

  std::size_t const m_capacity;
  std::size_t const m_mask; ///< capacity − 1 if it is a power of two, else 0 (use %)
  cell *const m_cells;      ///< null for a rendezvous channel
  // The two ends live on lines of their own, kept apart by padding rather than alignas(64): a
  // channel is often a task's local, and a task's frame is aligned only as alignof(max_align_t).
  line_gap m_gap_tail;
  /// The next position a send claims, shifted left by one, | closed_bit once closed.
  std::atomic<std::uint64_t> m_tail{0};
  line_gap m_gap_head;
  /// The next position a receive claims.
  std::atomic<std::uint64_t> m_head{0};
};

} // namespace magpie::sync::detail
