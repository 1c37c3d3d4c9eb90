#pragma once
// magpie/core/detail/fence.hpp — asymmetric fences for the deque's owner/thief handshake.
//
// Chase–Lev needs a store–load barrier on both sides: the owner's pop (store bottom, then load
// top) and a thief's steal (load top, then load bottom). The owner pops once per forked task; a
// thief steals rarely. On Linux, membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) lets the rare side
// pay for both: the owner's barrier becomes a compiler barrier, and the thief's system call makes
// every running thread of the process execute a full barrier. See docs/protocols.md, §1.
//
// Under ThreadSanitizer (which does not model fences or membarrier), or when
// MAGPIE_ASYMMETRIC_FENCES is 0, the deque uses seq_cst operations instead.

#include <atomic>

#if !defined(MAGPIE_ASYMMETRIC_FENCES)
#  if defined(__SANITIZE_THREAD__)
#    define MAGPIE_ASYMMETRIC_FENCES 0
#  elif defined(__has_feature)
#    if __has_feature(thread_sanitizer)
#      define MAGPIE_ASYMMETRIC_FENCES 0
#    endif
#  endif
#endif
#if !defined(MAGPIE_ASYMMETRIC_FENCES)
#  if defined(__linux__)
#    define MAGPIE_ASYMMETRIC_FENCES 1
#  else
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

} // namespace magpie::core::detail
