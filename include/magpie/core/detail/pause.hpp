#pragma once
// magpie/core/detail/pause.hpp — spin-wait hints, one place for every spin in the library (the
// workers' idle loop, the lock words of the waiting primitives, the channel ring, the timer
// heaps' spin lock).

#include <thread>

namespace magpie::core::detail {

/// One CPU spin-wait hint (x86 `pause`, AArch64 `yield`); nothing on other targets.
inline void cpu_pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

/// One step of a short spin on another thread's progress: a CPU pause for the first 64 steps,
/// then a yield (the thread waited for was probably preempted). `spins` counts the steps.
inline void spin_pause(unsigned &spins) noexcept {
  if (spins < 64) {
    cpu_pause();
    ++spins;
  } else {
    std::this_thread::yield();
  }
}

} // namespace magpie::core::detail
