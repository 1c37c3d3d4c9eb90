#pragma once
// magpie/src/pool/root_ring.hpp — a growable ring of queued roots (one per priority level of a
// run_queue, run_queue.hpp).

#include <cstddef>
#include <vector>

#include "magpie/sched/job.hpp"

namespace magpie::sched::detail {

/// A growable ring of queued roots: FIFO, with withdrawal of a recent entry (a tombstone).
class root_ring {
public:
  /// Starts with room for 64 roots, allocated with the pool (so that a warm pool submits roots
  /// without allocating: tests/core/zero_alloc_test.cpp).
  root_ring() : m_slots(64) {}

  bool empty() const noexcept { return m_live == 0; }

  /// May throw std::bad_alloc (growing); then nothing changed.
  void push(job *j) {
    if (m_tail - m_head == m_slots.size()) {
      grow();
    }
    m_slots[m_tail++ & (m_slots.size() - 1)] = j;
    ++m_live;
  }

  /// The oldest live entry (tombstones are skipped). Precondition: !empty().
  job *pop() noexcept {
    for (;;) {
      job *j = m_slots[m_head++ & (m_slots.size() - 1)];
      if (j != nullptr) {
        --m_live;
        return j;
      }
    }
  }

  /// Removes `j` if it is among the newest `window` entries.
  bool withdraw(job *j, std::size_t window) noexcept {
    std::size_t const mask = m_slots.size() - 1;
    for (std::size_t k = m_tail; k > m_head && m_tail - k < window;) {
      --k;
      if (m_slots[k & mask] == j) {
        m_slots[k & mask] = nullptr;
        --m_live;
        while (m_tail > m_head && m_slots[(m_tail - 1) & mask] == nullptr) {
          --m_tail; // trailing tombstones go at once: the ring does not fill with them
        }
        return true;
      }
    }
    return false;
  }

private:
  void grow() {
    std::size_t const n = 2 * m_slots.size();
    std::vector<job *> bigger(n);
    for (std::size_t k = m_head; k != m_tail; ++k) {
      bigger[k - m_head] = m_slots[k & (m_slots.size() - 1)];
    }
    m_tail -= m_head;
    m_head = 0;
    m_slots.swap(bigger);
  }

  std::vector<job *> m_slots; // size: a power of two
  std::size_t m_head = 0;     // oldest entry (monotonic; masked on access)
  std::size_t m_tail = 0;     // one past the newest
  std::size_t m_live = 0;     // entries that are not tombstones
};

} // namespace magpie::sched::detail
