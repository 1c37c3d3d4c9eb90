// Which store–load barrier the deque uses in this build. With -DMAGPIE_ASYMMETRIC_FENCES=ON (the
// release-clang-fences preset) the deque stress tests exercise the membarrier variant only if the
// kernel accepted the registration; otherwise both sides fall back to seq_cst fences. This test
// makes that fallback visible as a skip instead of letting the preset test the wrong variant; the
// same for the observer handshake's membarrier, which every Linux build uses when it can.

#include <cstdlib>

#include <gtest/gtest.h>

#include "magpie/core/deque.hpp"

namespace {

#if MAGPIE_ASYMMETRIC_FENCES
TEST(fences, asymmetric_fences_use_membarrier) {
  if (!magpie::core::detail::asymmetric_fences_enabled) {
    GTEST_SKIP() << "membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) is unavailable here: this build "
                    "tests the seq_cst fallback, not the asymmetric fences";
  }
}
#endif

#if MAGPIE_PROCESS_BARRIER
// The observer handshake (context::observed, protocols §13) relies on membarrier where the
// kernel has it; without it both sides use seq_cst. trace_observer.exchange_waits_for_workers_
// to_leave_the_previous_one tests the handshake itself: make the variant it tested visible.
TEST(fences, observer_handshake_uses_membarrier) {
  if (!magpie::core::detail::process_barrier_ready()) {
    EXPECT_FALSE(magpie::core::detail::process_barrier_on.load());
    GTEST_SKIP() << "membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) is unavailable here: observers "
                    "use the seq_cst handshake";
  }
  EXPECT_TRUE(magpie::core::detail::process_barrier_on.load());
  magpie::core::detail::process_barrier(); // registered: returns (it terminates on failure)
}

// A child of fork() (gtest's death tests fork, and so may users) inherits the flag that says
// "registered"; its barrier must work there too, not stop the program.
TEST(fences, the_process_barrier_works_in_a_forked_child) {
  if (!magpie::core::detail::process_barrier_ready()) {
    GTEST_SKIP() << "membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) is unavailable here";
  }
  EXPECT_EXIT(
      {
        magpie::core::detail::process_barrier();
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}
#endif

} // namespace
