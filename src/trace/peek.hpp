#pragma once
// src/trace/peek.hpp — reads of memory that running workers write, without synchronising with
// them (trace::dump and the stall watchdog read a worker's stack as a debugger would; see
// magpie/trace/dump.hpp for what that guarantees). Kept out of ThreadSanitizer's view; every
// other access in the trace layer is instrumented.

#include <cstdint>

#if defined(__clang__) || defined(__GNUC__)
#  define MAGPIE_RACY_READER __attribute__((no_sanitize("thread"), noinline))
#else
#  define MAGPIE_RACY_READER
#endif

namespace magpie::trace::detail {

/// The word at `at` (aligned), read racily.
MAGPIE_RACY_READER inline std::uintptr_t peek(void const *at) noexcept {
  return *static_cast<std::uintptr_t const volatile *>(at);
}

/// The byte at `at`, read racily.
MAGPIE_RACY_READER inline std::uint8_t peek_byte(void const *at) noexcept {
  return *static_cast<std::uint8_t const volatile *>(at);
}

} // namespace magpie::trace::detail
