#pragma once
// magpie/src/pool/worker.hpp — a pool's worker (its context, its queues, its counters) and the
// small helpers that every part of the pool inlines: the calling thread's worker, the
// one-writer counters, the end-of-strand check.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "magpie/core/config.hpp"
#include "magpie/core/context.hpp"
#include "magpie/core/detail/fence.hpp"
#include "magpie/sched/pool.hpp"
#include "rng.hpp"
#include "run_queue.hpp"

namespace magpie::sched::detail {

/// Values of worker::sleep_word.
inline constexpr std::uint32_t sleep_awake = 0;
inline constexpr std::uint32_t sleep_asleep = 1;
inline constexpr std::uint32_t sleep_notified = 2;

// A worker is its context: pool::calling_worker() turns this_context() into its worker with a
// static_cast, no lookup (it runs several times per spawn and per suspension).
struct worker : core::context {
  worker(pool *owner, std::size_t index) : core::context(owner, index, owner), random(index + 1) {}

  job_queue targeted; // jobs for this worker only (resume_on, resumes aimed at this worker)
  run_queue queued;   // resumed tasks, then roots by priority: this worker and idle thieves
  // Normal-priority roots spawned by this worker's own tasks: the owner pops the newest (depth
  // first, as a forked child), thieves steal the oldest (docs/protocols.md §9.2).
  core::deque<job *> local{64};
  // Tasks resumed by this worker's own tasks (pool::resubmit to any worker): pushed at the
  // bottom by the owner, taken from the top — oldest first — by the owner and thieves alike
  // (docs/protocols.md §9.2). Before the queues above: resumed tasks go before new roots.
  core::deque<job *> resumed{64};
  std::atomic<bool> idle{false}; // a hint for choosing where to submit roots
  // The sleep word (lazy pools; docs/protocols.md §6): `sleep_awake`, `sleep_asleep` (stored by
  // the worker before it registers as a sleeper; it waits on the word while it holds this value)
  // or `sleep_notified` (a waker's CAS from asleep; the waker then notifies the word).
  std::atomic<std::uint32_t> sleep_word{sleep_awake};
  // Roots spawned by this worker's tasks, and roots (from anywhere) finished on this worker: each
  // written only by this worker (no RMW, no shared line); pool::roots_done() compares the sums.
  alignas(64) std::atomic<std::uint64_t> roots_spawned{0};
  std::atomic<std::uint64_t> roots_finished{0};
  // Likewise the holds (tasks about to park) taken and ended on this worker (pool::hold/unhold).
  std::atomic<std::uint64_t> holds{0};
  std::atomic<std::uint64_t> unholds{0};
  std::atomic<bool> taken{false}; // a guest slot: a caller runs its root on it (run_root_here)
  // A guest slot: an empty chain a worker gave back (pool::keep_chain), for the slot's next root
  // when its own chain left with a task. Written by workers, taken by the slot's holder.
  std::atomic<core::stacklet *> returned_chain{nullptr};
  unsigned failures = 0; // consecutive rounds without work (owner only)
  // When the current run of failed rounds began yielding (owner only; pool::idle).
  std::chrono::steady_clock::time_point yielding_since{};
  bool active = false; // counted in pool::m_active (lazy pools; owner only)
  rng random;
  std::thread thread;

  ~worker() {
    if (core::stacklet *chain = returned_chain.load(std::memory_order_acquire); chain != nullptr) {
      core::stacklet::destroy_empty_chain(chain);
    }
  }
  worker(worker const &) = delete;
  worker &operator=(worker const &) = delete;
};

/// After a job or a stolen continuation returns, the worker's strand has ended: every frame left
/// its stack and every continuation its deque (I1 in docs/protocols.md). Always on: once per
/// strand, not per task.
inline void check_strand_ended(core::context &ctx) noexcept {
  MAGPIE_CHECK(ctx.stack().empty() && ctx.tasks().empty(),
               "a worker's strand ended with frames or continuations left behind: an awaitable "
               "suspended a task without handing its stack on (see the stack protocol in "
               "docs/protocols.md), or a magpie bug: please report it");
}

/// Adds one to a counter that only the calling thread writes (or only the holder of the mutex
/// that guards it): a plain store, no read-modify-write.
inline void bump_own(std::atomic<std::uint64_t> &count, std::memory_order order) noexcept {
  count.store(count.load(std::memory_order_relaxed) + 1, order);
}

/// bump_own as the first half of a store–load handshake with the destructor (the caller loads
/// m_closing next; protocols §9.1): release (the counts' readers acquire) where the destructor's
/// membarrier orders the store before that load, seq_cst where it cannot.
inline void bump_own_then_load(std::atomic<std::uint64_t> &count) noexcept {
  core::detail::handshake_store(count, count.load(std::memory_order_relaxed) + 1,
                                std::memory_order_release);
}

} // namespace magpie::sched::detail

namespace magpie::sched {

// Inlined into its callers: hold, resubmit, unhold, submit_root, finish_root and run_stale_local
// each ask it once per spawn or suspension.
MAGPIE_FORCEINLINE detail::worker *pool::calling_worker() const noexcept {
  core::context *const c = core::this_context();
  // Every context whose owner is this pool is one of its workers.
  return c != nullptr && c->owner() == this ? static_cast<detail::worker *>(c) : nullptr;
}

inline bool pool::is_guest(detail::worker const &w) const noexcept {
  return w.index() >= m_workers.size();
}

} // namespace magpie::sched
