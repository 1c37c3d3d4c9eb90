#pragma once
// magpie/sched/job.hpp — work that enters a worker from outside: roots and explicit resumptions.

#include <atomic>

#include "magpie/core/context.hpp"

namespace magpie::sched {

/// An intrusive unit of submitted work (core/context.hpp).
using job = core::job;

/// A multi-producer queue of jobs whose consumers take everything at once (so there is no ABA
/// problem: no node is ever popped alone by racing consumers). Jobs come out in FIFO order.
class job_queue {
public:
  /// Any thread.
  void push(job *j) noexcept {
    j->m_next = m_head.load(std::memory_order_relaxed); // a guess; the CAS below checks it
    // seq_cst (release part): publishes the job's contents to the consumer's exchange; seq_cst
    // also orders this push before the submitter's check for sleepers (see protocols.md,
    // "Sleep and wake-up").
    while (!m_head.compare_exchange_weak(j->m_next, j, std::memory_order_seq_cst,
                                         std::memory_order_relaxed)) {
    }
  }

  /// Any thread. Takes every queued job, oldest first, or null.
  job *take_all() noexcept {
    if (m_head.load(std::memory_order_relaxed) == nullptr) { // cheap look; the exchange syncs
      return nullptr;
    }
    // acquire: pairs with push's release, so the jobs' contents are visible.
    job *lifo = m_head.exchange(nullptr, std::memory_order_acquire);
    job *fifo = nullptr;
    while (lifo != nullptr) {
      job *next = lifo->m_next;
      lifo->m_next = fifo;
      fifo = lifo;
      lifo = next;
    }
    return fifo;
  }

  /// Any thread; seq_cst so that a worker about to sleep sees a push that a submitter made before
  /// it looked for sleepers.
  bool empty() const noexcept { return m_head.load(std::memory_order_seq_cst) == nullptr; }

private:
  std::atomic<job *> m_head{nullptr};
};

} // namespace magpie::sched
