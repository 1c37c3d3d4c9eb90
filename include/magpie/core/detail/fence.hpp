#pragma once
// magpie/core/detail/fence.hpp — asymmetric fences for the deque's owner/thief handshake.
//
// Chase–Lev needs a store–load barrier on both sides: the owner's pop (store bottom, then load
// top) and a thief's steal (load top, then load bottom). The owner pops once per forked task; a
// thief steals rarely. On Linux, membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) lets the rare side
// pay for both: the owner's barrier becomes a compiler barrier, and the thief's system call makes
// every running thread of the process execute a full barrier. See docs/protocols.md, §1.
//
// The trade-off: the owner saves a locked instruction per pop (~2 ns per fork on fib), but every
// steal that finds work pays a system call that interrupts the other cores — measured in a
// 2-vCPU KVM guest, a steal round trip of 3.1 µs instead of 0.9 µs. It pays off only for
// fork-heavy, steal-light work, so it is opt-in: configure with -DMAGPIE_ASYMMETRIC_FENCES=ON
// (Linux only). Under ThreadSanitizer, which models neither fences nor membarrier, it is always
// off, and the deque uses seq_cst operations on `bottom` and `top`.

#include <atomic>

#include "magpie/core/config.hpp"

#if !defined(MAGPIE_ASYMMETRIC_FENCES)
#  define MAGPIE_ASYMMETRIC_FENCES 0
#endif
#if MAGPIE_ASYMMETRIC_FENCES
#  if MAGPIE_UNDER_TSAN || !defined(__linux__)
#    undef MAGPIE_ASYMMETRIC_FENCES
#    define MAGPIE_ASYMMETRIC_FENCES 0
#  endif
#endif

namespace magpie::core::detail {

#if MAGPIE_ASYMMETRIC_FENCES
/// True once the process registered for private expedited membarrier (at static initialisation,
/// src/fence.cpp). If registration failed, both sides fall back to seq_cst fences.
extern bool const asymmetric_fences_enabled;

/// The frequent side: a compiler barrier when the heavy side can do the work.
inline void light_fence() noexcept {
  if (asymmetric_fences_enabled) [[likely]] {
    std::atomic_signal_fence(std::memory_order_seq_cst);
  } else {
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
}

/// The rare side: a full barrier on every running thread of the process.
void heavy_fence() noexcept;
#endif

// Two rare-against-frequent store–load handshakes use membarrier wherever they can, whatever
// MAGPIE_ASYMMETRIC_FENCES says, because their heavy side is rare by nature and nothing pays per
// steal: a worker reporting to its observer against the thread that installs or removes one
// (context::observed / exchange_observer, protocols §13), and a worker counting a hold, its end
// or a local root's finish against the pool's destructor (pool::hold, unhold, finish_root,
// ~pool; protocols §9.1). Not under ThreadSanitizer (it does not model membarrier: both sides
// then use seq_cst).
#if defined(__linux__) && !MAGPIE_UNDER_TSAN
#  define MAGPIE_PROCESS_BARRIER 1
#else
#  define MAGPIE_PROCESS_BARRIER 0
#endif

#if MAGPIE_PROCESS_BARRIER
/// True once process_barrier_ready() registered the process for private expedited membarrier;
/// never false again. The frequent side may read it relaxed: a stale false only costs it a
/// seq_cst store, which the heavy side's seq_cst store (or exchange) and load pair with anyway.
extern std::atomic<bool> process_barrier_on;

/// Registers the process once (callers wait for the first) and says whether membarrier is
/// usable. A pool's constructor calls it, so that its workers take the light path from the start.
bool process_barrier_ready() noexcept;

/// The heavy side, between its store and its load: a full barrier on every running thread of the
/// process (membarrier PRIVATE_EXPEDITED) once registered; nothing where membarrier is unusable,
/// since every frequent side then stores seq_cst (handshake_store).
void process_barrier() noexcept;
#endif

/// The frequent side's barrier between a store it has made (a deque push: several stores) and its
/// next load, in a store–load handshake whose heavy side calls process_barrier() between its own
/// store and load: a compiler barrier where membarrier orders them, a full fence elsewhere.
inline void handshake_barrier() noexcept {
#if MAGPIE_PROCESS_BARRIER
  // relaxed: a stale false only costs the full fence, which the heavy side pairs with anyway.
  if (process_barrier_on.load(std::memory_order_relaxed)) [[likely]] {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    return;
  }
#endif
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

/// The frequent side's store in a store–load handshake whose heavy side calls process_barrier()
/// between its own store and load (protocols §13): `order` and a compiler barrier that keeps the
/// store before the caller's next load, where membarrier orders them; seq_cst elsewhere.
template <typename T>
void handshake_store(std::atomic<T> &a, T value, std::memory_order order) noexcept {
#if MAGPIE_PROCESS_BARRIER
  // relaxed: a stale false only costs the seq_cst store, which the heavy side pairs with anyway.
  if (process_barrier_on.load(std::memory_order_relaxed)) [[likely]] {
    a.store(value, order);
    std::atomic_signal_fence(std::memory_order_seq_cst); // keeps the store before the next load
    return;
  }
#endif
  (void)order;
  a.store(value, std::memory_order_seq_cst);
}

} // namespace magpie::core::detail
