#pragma once
// magpie/core/config.hpp — build switches and the library's assertion macro.
//
// MAGPIE_DEBUG (default: on unless NDEBUG) enables the runtime checks that catch misuse, such as
// returning from a task with children that were forked but never joined.

#include <cstdio>
#include <cstdlib>

#if !defined(MAGPIE_DEBUG)
#  if defined(NDEBUG)
#    define MAGPIE_DEBUG 0
#  else
#    define MAGPIE_DEBUG 1
#  endif
#endif

// MAGPIE_UNDER_ASAN / MAGPIE_UNDER_TSAN: 1 in a build with AddressSanitizer / ThreadSanitizer
// (GCC defines __SANITIZE_*__, Clang answers __has_feature), else 0. The one place that asks.
#if defined(__SANITIZE_ADDRESS__)
#  define MAGPIE_UNDER_ASAN 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define MAGPIE_UNDER_ASAN 1
#  endif
#endif
#if !defined(MAGPIE_UNDER_ASAN)
#  define MAGPIE_UNDER_ASAN 0
#endif
#if defined(__SANITIZE_THREAD__)
#  define MAGPIE_UNDER_TSAN 1
#elif defined(__has_feature)
#  if __has_feature(thread_sanitizer)
#    define MAGPIE_UNDER_TSAN 1
#  endif
#endif
#if !defined(MAGPIE_UNDER_TSAN)
#  define MAGPIE_UNDER_TSAN 0
#endif

#if defined(__GNUC__) || defined(__clang__)
#  define MAGPIE_NOINLINE __attribute__((noinline))
#  define MAGPIE_FORCEINLINE inline __attribute__((always_inline))
#else
#  define MAGPIE_NOINLINE
#  define MAGPIE_FORCEINLINE inline
#endif

/// On a function that returns a thread_local (or its address) and may be called from coroutine
/// code: out of line under Clang, which (<= 16) may cache a thread_local's address across a
/// suspension, so that a task resumed on another thread would use the first thread's variable.
/// The function must also pass the address through core::detail::opaque_address() (as
/// core::this_context() does with the value), so that calls are not merged. Nothing under GCC,
/// which lowers coroutines before optimising.
#if defined(__clang__)
#  define MAGPIE_CLANG_OPAQUE_TLS MAGPIE_NOINLINE
#else
#  define MAGPIE_CLANG_OPAQUE_TLS
#endif

// Clang before 19 inlines await_suspend into the coroutine before splitting it, and may then
// keep, spill or sink accesses to the coroutine frame past a call inside await_suspend that lets
// another thread resume the coroutine (LLVM issues 56301, 65054, 72006; fixed in Clang 19 by
// llvm.coro.await.suspend). magpie's fork, join and resume_on awaiters pass their point of no
// return in the middle of await_suspend. docs/clang-coroutine-frames.md shows from Clang 16's
// code that it keeps every frame access before that point (-O0 to -O3, and with everything
// inlined). MAGPIE_OUTLINE_SUSPEND=1 keeps those await_suspend bodies out of line all the same:
// an opaque call, past whose point of no return nothing can be moved from the outside.
#if !defined(MAGPIE_OUTLINE_SUSPEND)
#  define MAGPIE_OUTLINE_SUSPEND 0
#endif
#if MAGPIE_OUTLINE_SUSPEND
#  define MAGPIE_CORO_SUSPEND_NOINLINE MAGPIE_NOINLINE
#else
#  define MAGPIE_CORO_SUSPEND_NOINLINE
#endif

// MAGPIE_OBSERVE (default 1) compiles in the hooks through which counters and traces see what a
// worker does (core/observer.hpp) at its rare events: roots, steals, resumptions, suspended
// joins, parked tasks, the end of a strand, sleep and wake-up. Each is one relaxed load and a
// predictable branch while nobody observes; fib's instruction count per task is unchanged
// (measured: docs/guide, "Counters and timelines"). With 0 the hooks compile to nothing; the
// counters of rare events (steals, sleeps, suspended joins ...) stay.
#if !defined(MAGPIE_OBSERVE)
#  define MAGPIE_OBSERVE 1
#endif

// MAGPIE_OBSERVE_TASKS (default 0; CMake option of the same name) adds hooks at every fork, call,
// join and task end: forks, calls and tasks are counted and traced as spans, and work/span
// analysis (trace/work_span.hpp) follows the task tree. They cost the unstolen fork path ~19
// instructions per task even while nobody observes (fib: +11 % with GCC 12, +15 % with Clang 16),
// hence opt-in. A whole program must be built with one value (it changes inline
// functions): set it through CMake, which makes it a public definition of magpie::magpie.
#if !defined(MAGPIE_OBSERVE_TASKS)
#  define MAGPIE_OBSERVE_TASKS 0
#endif

// GCC turns symmetric transfer (one coroutine resuming the next from await_suspend) into a tail
// call only when it optimises sibling calls (-O2, or -O1 -foptimize-sibling-calls). Without it,
// every fork, call and return grows the OS stack and long computations overflow it.
#if defined(__GNUC__) && !defined(__clang__) && !defined(__OPTIMIZE__) &&                          \
    !defined(MAGPIE_NO_O0_WARNING)
#  pragma message("magpie: GCC without optimisation cannot tail-call symmetric transfer; deep or " \
                  "long task graphs will overflow the OS stack. Build with -O2 (or -O1 "           \
                  "-foptimize-sibling-calls); define MAGPIE_NO_O0_WARNING to silence this.")
#endif

namespace magpie::core::detail {

[[noreturn]] inline void assertion_failed(char const *expr, char const *message, char const *file,
                                          int line) noexcept {
  std::fprintf(stderr, "magpie: assertion `%s` failed at %s:%d\n  %s\n", expr, file, line, message);
  std::fflush(stderr);
  std::abort();
}

/// `p`, through an empty asm under Clang (a MAGPIE_CLANG_OPAQUE_TLS function's return): not pure,
/// so the compiler cannot merge two calls of that function. `p` itself under GCC.
template <typename T>
inline T *opaque_address(T *p) noexcept {
#if defined(__clang__)
  asm volatile("" : "+r"(p));
#endif
  return p;
}

} // namespace magpie::core::detail

#if MAGPIE_DEBUG
/// Checks a precondition that the type system cannot; `message` says what the user should do.
#  define MAGPIE_ASSERT(expr, message)                                                             \
    ((expr) ? static_cast<void>(0)                                                                 \
            : ::magpie::core::detail::assertion_failed(#expr, message, __FILE__, __LINE__))
#else
#  define MAGPIE_ASSERT(expr, message) static_cast<void>(0)
#endif

/// Whether a fork/call request destroyed without having been co_awaited stops the program (the
/// child would silently never run). On with Clang, where the check costs no instruction on the
/// fork path, and with GCC when MAGPIE_DEBUG is on; off in GCC release builds, where it costs 5
/// instructions and 16 bytes of frame per fork (GCC keeps the request's flag in the coroutine
/// frame across the suspension). Define it to 1 or 0 to choose.
#ifndef MAGPIE_CHECK_AWAITED
#  if defined(__clang__) || MAGPIE_DEBUG
#    define MAGPIE_CHECK_AWAITED 1
#  else
#    define MAGPIE_CHECK_AWAITED 0
#  endif
#endif

namespace magpie::core::detail {
/// 64 bytes of padding: the members before it and after it lie on different cache lines whatever
/// the object's alignment. Used instead of alignas(64), which would raise the alignment of every
/// class holding the member above what a task's frame guarantees (alignof(std::max_align_t)):
/// magpie's public types may be locals of a task, or of a function a compiler inlines into one.
struct line_gap {
  unsigned char bytes[64];
};
} // namespace magpie::core::detail

/// Always-on check for conditions that would otherwise corrupt memory or hang.
#define MAGPIE_CHECK(expr, message)                                                                \
  ((expr) ? static_cast<void>(0)                                                                   \
          : ::magpie::core::detail::assertion_failed(#expr, message, __FILE__, __LINE__))
