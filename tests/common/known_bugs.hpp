#pragma once
// tests/common/known_bugs.hpp — the one switch for known-bug reproducers, in every test file.
//
// A reproducer asserts the correct behaviour, so it fails while the bug is open. An ordinary run
// skips it; CI runs each one as its own ctest, `known_bug.<name>`, with MAGPIE_TEST_KNOWN_BUGS=1
// (registered with magpie_add_known_bug in tests/CMakeLists.txt), and expects it to fail in the
// recorded way: a reproducer that passes (the bug was fixed, or the reproducer rotted) turns CI red
// and must move to the regular suite. docs/guarantees.md ("Known limitations") lists them.

#include <cstdlib>

#include <gtest/gtest.h>

namespace magpie::test {

/// True if MAGPIE_TEST_KNOWN_BUGS is set to a non-zero number.
inline bool known_bugs_enabled() {
  char const *v = std::getenv("MAGPIE_TEST_KNOWN_BUGS");
  return v != nullptr && std::atoi(v) != 0;
}

} // namespace magpie::test

/// Skips the current test unless MAGPIE_TEST_KNOWN_BUGS=1. `ctest_name` is the ctest that runs it
/// (expecting it to fail); `why` is the bug, in a phrase.
#define MAGPIE_SKIP_KNOWN_BUG(ctest_name, why)                                                     \
  do {                                                                                             \
    if (!::magpie::test::known_bugs_enabled()) {                                                   \
      GTEST_SKIP() << "known bug, run by ctest " ctest_name " (expected to fail): " << why;        \
    }                                                                                              \
  } while (false)
