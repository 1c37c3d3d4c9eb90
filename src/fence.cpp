// magpie/src/fence.cpp — membarrier-based heavy fence (see core/detail/fence.hpp).

#include "magpie/core/detail/fence.hpp"

#include <exception>

#if MAGPIE_ASYMMETRIC_FENCES || MAGPIE_OBSERVER_BARRIER
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
} // namespace

#  if MAGPIE_OBSERVER_BARRIER
std::atomic<bool> observer_barrier_on{false};

bool observer_barrier_ready() noexcept {
  static bool const ready = [] {
    bool const ok = register_membarrier(); // registering twice (with the deque's) is harmless
    // release: a worker that reads true relies on no earlier write; kept for clarity of order.
    observer_barrier_on.store(ok, std::memory_order_release);
    return ok;
  }();
  return ready;
}

void observer_barrier() noexcept {
  // Registered (observer_barrier_ready returned true), so this cannot fail: EPERM and EINVAL
  // come only from an unregistered process or an unknown command. Were it to fail, the workers'
  // relaxed stores would be unordered and an observer could be freed under a worker: stop.
  if (syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) {
    std::terminate();
  }
}
#  endif

#  if MAGPIE_ASYMMETRIC_FENCES
// Set during static initialisation, before any deque can be shared between threads.
bool const asymmetric_fences_enabled = register_membarrier();

void heavy_fence() noexcept {
  if (asymmetric_fences_enabled) {
    syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
  } else {
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
}
#  endif

} // namespace magpie::core::detail
#endif
