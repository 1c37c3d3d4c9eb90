// Which store–load barrier the deque uses in this build. With -DMAGPIE_ASYMMETRIC_FENCES=ON (the
// release-clang-fences preset) the deque stress tests exercise the membarrier variant only if the
// kernel accepted the registration; otherwise both sides fall back to seq_cst fences. This test
// makes that fallback visible as a skip instead of letting the preset test the wrong variant.

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

} // namespace
