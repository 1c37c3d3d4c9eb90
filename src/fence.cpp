// magpie/src/fence.cpp — membarrier-based heavy fence (see core/detail/fence.hpp).

#include "magpie/core/detail/fence.hpp"

#include <exception>

#if MAGPIE_ASYMMETRIC_FENCES || MAGPIE_PROCESS_BARRIER
#  include <linux/membarrier.h>
#  include <sys/syscall.h>
#  include <unistd.h>

namespace magpie::core::detail {

namespace {
bool register_membarrier() noexcept {
  // The command must be supported and registration must succeed before the first use.
  long const supported = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  if (supported < 0 || (supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) {
    return false;
  }
  return syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

/// A full barrier on every running thread of this process, once it has registered. The
/// registration belongs to the address space; a child of fork() inherits our flags (registered)
/// and, on the kernels seen here, the registration too — should a call still fail with EPERM
/// (an address space nobody registered), register it and try again. Were it to fail after
/// that, the frequent sides' plain stores would be unordered (an observer or a pool could be
/// freed under a worker, a deque item taken twice): stop instead.
void membarrier_or_stop() noexcept {
  if (syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0) {
    return;
  }
  if (register_membarrier() &&
      syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0) {
    return;
  }
  std::terminate();
}
} // namespace

#  if MAGPIE_PROCESS_BARRIER
std::atomic<bool> process_barrier_on{false};

bool process_barrier_ready() noexcept {
  static bool const ready = [] {
    bool const ok = register_membarrier(); // registering twice (with the deque's) is harmless
    // relaxed: the flag only chooses the workers' store; see fence.hpp for why any value is safe.
    process_barrier_on.store(ok, std::memory_order_relaxed);
    return ok;
  }();
  return ready;
}

void process_barrier() noexcept {
  if (process_barrier_ready()) {
    membarrier_or_stop();
  }
}
#  endif

#  if MAGPIE_ASYMMETRIC_FENCES
// Set during static initialisation, before any deque can be shared between threads.
bool const asymmetric_fences_enabled = register_membarrier();

void heavy_fence() noexcept {
  if (asymmetric_fences_enabled) {
    membarrier_or_stop();
  } else {
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
}
#  endif

} // namespace magpie::core::detail
#endif
