#pragma once
// tests/common/steal_probe.hpp — proof that a pool with two or more workers steals.
//
// Whether a given small program is stolen from depends on timing: on a loaded two-core machine a
// run may finish before any thief is scheduled. The probe makes a steal certain instead: its
// child waits until the parent's continuation has run, which (the child occupying its worker)
// only a thief can make happen. A busy pool's idle workers keep stealing; a lazy pool keeps a
// thief awake while any worker runs tasks (docs/protocols.md §6). So with P >= 2 the wait ends;
// a pool that never steals leaves the child waiting until a deadline, and the probe reports
// failure rather than hanging.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "magpie/magpie.hpp"

#include "common/watchdog.hpp"

namespace magpie::test {

namespace detail {

struct steal_probe_state {
  std::atomic<bool> continued{false};
  std::chrono::steady_clock::time_point deadline;
};

inline magpie::task<long> steal_probe_child(steal_probe_state *s) {
  // acquire: pairs with the continuation's release store (not needed for the flag's value, but
  // orders the continuation's writes for anyone who reads them after us).
  while (!s->continued.load(std::memory_order_acquire)) {
    if (std::chrono::steady_clock::now() > s->deadline) {
      co_return 0; // nobody stole the continuation: the caller's assertion fails
    }
    std::this_thread::yield();
  }
  co_return 1;
}

inline magpie::task<long> steal_probe_parent(steal_probe_state *s) {
  long stolen = 0;
  co_await magpie::fork(&stolen, steal_probe_child, s);
  s->continued.store(true, std::memory_order_release); // only a thief runs this while the child
  co_await magpie::join();                             // still waits
  co_return stolen;
}

} // namespace detail

/// Runs the probe on `pool` (at least two workers): true if a thief took the continuation within
/// `limit`. Counts exactly one more steal in pool.stats() when it returns true.
inline bool
continuation_is_stolen(magpie::pool &pool,
                       std::chrono::seconds limit = std::chrono::seconds(sanitized ? 40 : 20)) {
  detail::steal_probe_state s;
  s.deadline = std::chrono::steady_clock::now() + limit;
  return magpie::sync_wait(pool, detail::steal_probe_parent, &s) == 1;
}

/// The steals `pool` counted so far, over all its workers.
inline std::uint64_t total_steals(magpie::pool const &pool) {
  std::uint64_t n = 0;
  for (auto const &s : pool.stats()) {
    n += s.steals;
  }
  return n;
}

} // namespace magpie::test
