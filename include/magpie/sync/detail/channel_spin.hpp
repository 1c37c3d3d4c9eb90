#pragma once
// magpie/sync/detail/channel_spin.hpp — the adaptive spin of a channel's send that finds the ring
// full (or receive that finds it empty) before it waits, and who may spin.
//
// A spin is a delay between two attempts of the ring's fast path: it decides nothing itself, so
// the channel's protocol is unchanged by it. docs/protocols.md §9.11, "Spinning before waiting".

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "magpie/core/detail/pause.hpp"
#include "magpie/core/ext.hpp"
#include "magpie/core/frame.hpp"

namespace magpie::sync::detail {

/// One side's spin budget, in CPU pauses: it halves (to `floor` at least) after a spin that ended
/// waiting anyway, and doubles back (to `ceiling` at most) after one that paid.
class adaptive_spin {
public:
  /// The most pauses a spin lasts.
  static constexpr std::uint32_t ceiling = 128;
  /// The fewest pauses a spin lasts.
  static constexpr std::uint32_t floor = 8;

  /// The budget now (a snapshot, for diagnostics and tests).
  std::uint32_t budget() const noexcept {
    return m_budget.load(std::memory_order_relaxed); // relaxed: a snapshot
  }

  /// Pauses up to the budget, running `attempt()` whenever `ready()` (a cheap look) says it may
  /// succeed; true once an attempt did. Then doubles the budget if the spin paid, halves it if
  /// not, storing only a change, so that a steady state writes nothing.
  template <typename Ready, typename Attempt>
  bool spin(Ready ready, Attempt attempt) noexcept {
    std::uint32_t const was = m_budget.load(std::memory_order_relaxed); // a tuning hint
    bool paid = false;
    for (std::uint32_t k = 0; k < was && !paid; ++k) {
      core::detail::cpu_pause();
      paid = ready() && attempt();
    }
    std::uint32_t const now = paid ? std::min(ceiling, 2 * was) : std::max(floor, was / 2);
    if (now != was) {
      m_budget.store(now, std::memory_order_relaxed); // a tuning hint: racing updates may be lost
    }
    return paid;
  }

  /// Whether a task on `self`'s worker should spin before waiting: only if another worker could
  /// make the progress it waits for meanwhile. (A plain thread always may.)
  static bool may_spin(core::frame_base &self) noexcept {
    core::executor const *home = core::ext::worker_of(self).home();
    return home != nullptr && home->workers() > 1;
  }

private:
  std::atomic<std::uint32_t> m_budget{ceiling};
};

} // namespace magpie::sync::detail
