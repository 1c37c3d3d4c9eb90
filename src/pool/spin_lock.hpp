#pragma once
// magpie/src/pool/spin_lock.hpp — taking a mutex whose holders never wait under it.

#include <mutex>

#include "magpie/core/detail/pause.hpp"

namespace magpie::sched::detail {

/// Locks `m`, spinning briefly before sleeping in the kernel. Its holders never wait under it
/// (a few dozen instructions), so a spin almost always wins; a waiter that slept would cost both
/// sides a futex call (about a microsecond each on a VM), which is most of a plain thread's spawn.
inline void lock_spinning(std::mutex &m) {
  for (unsigned i = 0; i < 64; ++i) {
    if (m.try_lock()) {
      return;
    }
    core::detail::cpu_pause();
  }
  m.lock();
}

} // namespace magpie::sched::detail
