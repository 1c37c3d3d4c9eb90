// magpie/src/fence.cpp — membarrier-based heavy fence (see core/detail/fence.hpp).

#include "magpie/core/detail/fence.hpp"

#if MAGPIE_ASYMMETRIC_FENCES
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

// Set during static initialisation, before any deque can be shared between threads.
bool const asymmetric_fences_enabled = register_membarrier();

void heavy_fence() noexcept {
  if (asymmetric_fences_enabled) {
    syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
  } else {
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
}

} // namespace magpie::core::detail
#endif
