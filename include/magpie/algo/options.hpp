#pragma once
// magpie/algo/options.hpp — what every parallel algorithm accepts besides its data: a grain and a
// stop token; and magpie::stop_requested(), which running iterations poll.

#include "magpie/algo/detail/control.hpp"
#include "magpie/algo/stop_token.hpp"
#include <cstddef>

namespace magpie::algo {

/// Options of a parallel algorithm (all optional):
///
///   magpie::for_each(pool, v, fn, {.stop = source.get_token()});
///   magpie::for_each(pool, v, fn, {.grain = 64});
///
/// `grain`: 0 (the default) lets the algorithm pick its chunk size by measuring its first
/// iterations (docs/algorithms.md, "Adaptive splitting"); a positive value fixes the number of
/// iterations run between two checks for hungry thieves and stop requests, and the smallest range
/// a task splits off (reduce and the scans: the block size). `stop`: a stop request skips the
/// iterations that have not started yet; iterations already running finish (they may poll
/// magpie::stop_requested() to end early); the algorithm then returns normally — it does not
/// throw — with the effects of the iterations that ran. Results of a stopped reduce, scan, sort
/// or find are unspecified (partial); a stopped for_each/transform ran a subset of its iterations.
struct loop_options {
  std::size_t grain = 0; ///< iterations per chunk; 0 = adaptive
  stop_token stop = {};  ///< cancellation; default: never stopped (except by an enclosing loop)
};

/// True when the algorithm whose iteration is running on this thread has been asked to stop:
/// by its stop token, by an exception thrown by another of its iterations, by find_if / any_of /
/// all_of having found their answer, or by a stop of an enclosing cancellation scope (with_stop,
/// a task_group with a token, an enclosing algorithm). False outside the iterations of magpie's
/// algorithms. Inside a task (not an iteration), ask `co_await
/// magpie::this_task::stop_requested()`.
///
/// How it finds the algorithm: a thread-local pointer to its scope that a worker sets while it
/// runs a chunk of iterations and restores afterwards (iterations are plain, synchronous
/// callables, so the pointer is valid for exactly as long as the iteration runs on this thread).
/// Cost: a thread-local load and two loads per scope on the chain. Any thread may race with a stop
/// request: the answer is a snapshot, and once true it stays true.
inline bool stop_requested() noexcept {
  core::stop_scope const *s = core::detail::thread_scope();
  return s != nullptr && s->stop_requested();
}

} // namespace magpie::algo
