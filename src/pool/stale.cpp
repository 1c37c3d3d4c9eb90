// magpie/src/pool/stale.cpp — trimming from a worker's local deque the spawned jobs that their
// reader already ran itself (a deque cannot give up an item in the middle).

#include "magpie/sched/pool.hpp"

#include <algorithm>
#include <cstdint>

#include "worker.hpp"

namespace magpie::sched {

void pool::run_stale_local(job const *newest, bool (*stale)(job const *j) noexcept,
                           void (*drop)(job *j) noexcept) noexcept {
  detail::worker *const own = calling_worker();
  if (own == nullptr) {
    return; // the reader moved to another pool meanwhile (resume_on): its old worker drops them
  }
  core::deque<job *> &local = own->local;
  if (local.newest() != newest) {
    return; // not (yet) at the bottom: a later call, or the worker's loop, drops it
  }
  // A job is looked at only once it is ours (popped): a thief may take any item we have not
  // popped, run it and free what it points to. One that is not stale goes back where it was
  // (the bottom: the pops made room, so the push cannot need to grow the ring).
  constexpr std::int64_t batch = 16;
  for (;;) {
    auto const popped = local.pop();
    if (!popped.ok) {
      return; // empty, or a thief took the last one
    }
    if (!stale(popped.value)) {
      local.push_reserved(popped.value);
      return;
    }
    drop(popped.value); // what running a stale job would do
    // Then up to `batch` more at once, under one store–load barrier, if no thief can reach them
    // (the oldest item is left to the pops above: thieves race for it).
    std::int64_t const k = std::min<std::int64_t>(batch, local.size() - 1);
    job *taken[batch];
    if (k < 2 || !local.pop_newest(k, taken)) {
      continue;
    }
    std::int64_t i = 0;
    for (; i < k && stale(taken[i]); ++i) {
      drop(taken[i]);
    }
    if (i < k) {
      for (std::int64_t m = k - 1; m >= i; --m) { // oldest first: the order they had
        local.push_reserved(taken[m]);
      }
      return;
    }
  }
}

} // namespace magpie::sched
