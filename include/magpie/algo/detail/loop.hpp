#pragma once
// magpie/algo/detail/loop.hpp — the engine under every parallel algorithm: lazy binary splitting
// of an index range [lo, hi) over magpie tasks (docs/algorithms.md, "Adaptive splitting").
//
// A task runs its range chunk by chunk. Before each chunk it looks at its worker's deque: if it is
// empty, no thief can find work here, so the task splits — it forks the lower half of what is
// left (which runs at once, on this worker) and keeps the upper half as its continuation, which a
// hungry thief steals. A non-empty deque means a thief still has something to take: no split.
// Nor does a range too small to pay for a steal split (loop_control::split_min: two chunks, and
// what the timed chunks say takes split_floor).
// On a pool of one worker a range never splits (nobody could steal the upper half); on more, with
// no thief hungry, it costs O(log n) forks. Either way it runs in index order.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <iterator>
#include <ranges>
#include <type_traits>

#include "magpie/algo/detail/control.hpp"
#include "magpie/algo/options.hpp"
#include "magpie/core/context.hpp"
#include "magpie/core/fork.hpp"
#include "magpie/core/task.hpp"

namespace magpie::algo::detail {

/// Whether this worker's deque holds nothing a thief could take (a thief may be hungry).
inline bool deque_empty() noexcept {
  core::context *ctx = core::this_context();
  return ctx == nullptr || ctx->tasks().empty();
}

/// Whether a continuation this worker leaves in its deque could be taken by another thread at
/// all. Not on a pool of one worker: its worker has nobody to steal from it, and a caller running
/// its root there as a guest is not stolen from either (it runs its root in the serial order), so
/// a split would only cost a fork and a join.
inline bool others_may_steal() noexcept {
  core::context *ctx = core::this_context();
  return ctx == nullptr || ctx->home() == nullptr || ctx->home()->workers() > 1;
}

/// How many chunks an untimed step of a range runs at once where nobody can steal from it
/// (others_may_steal() is false): the checks between steps (stop, find_if's skip, the loop's
/// cancellation scope) then cost ~0.1 % of the loop's time instead of ~1 %, and a stop still
/// takes effect within about solo_chunks × shrink_above of work.
inline constexpr std::size_t solo_chunks = 8;

/// Runs chunks [lo, hi) of `body` (a callable `void(std::size_t lo, std::size_t hi)` that must
/// not suspend), splitting on demand. Exceptions from `body` go to `ctl` (first one wins) and
/// stop the loop; the caller rethrows them after the join.
template <typename Body>
core::task<void> split_range(loop_control *ctl, Body const *body, std::size_t lo, std::size_t hi) {
  unsigned count = 1; // this task's chunks: every resample_every-th is timed
  bool const may_split = others_may_steal();
  while (lo < hi && !ctl->stopped()) {
    if constexpr (requires { body->skip_from(); }) {
      if (lo >= body->skip_from()) {
        break; // find_if: an earlier match makes the rest of this range irrelevant
      }
    }
    std::size_t const chunk = ctl->chunk();
    if (may_split && hi - lo >= ctl->split_min(chunk) && deque_empty()) {
      std::size_t const mid = lo + (hi - lo) / 2;
      co_await core::fork(split_range<Body>, ctl, body, lo, mid);
      lo = mid; // our continuation, which a thief may have stolen, takes the upper half
      continue;
    }
    bool const timed = ctl->should_time(count++);
    // Alone on its range (no thief can exist), an untimed adaptive chunk need not stay short for a
    // thief's sake: solo_chunks of them run between two checks.
    std::size_t const take = may_split || timed || ctl->fixed() || chunk > (hi - lo) / solo_chunks
                                 ? chunk
                                 : chunk * solo_chunks;
    std::size_t const end = lo + std::min(take, hi - lo);
    auto const t0 =
        timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    try {
      current_loop_scope scope(ctl->scope());
      (*body)(lo, end);
    } catch (...) {
      ctl->fail(std::current_exception());
      break;
    }
    if (timed) {
      ctl->observe(end - lo, std::chrono::steady_clock::now() - t0);
    }
    lo = end;
  }
  co_await core::join();
}

/// The chunk size a loop of body type `Body` last reached (settled, or, in a loop too short to
/// settle, still growing), with the number of indices it ran over: `n << learned_chunk_bits |
/// chunk` (0: none). A loop called again and again over the same n (from a plain thread, once
/// per frame or step) starts from it instead of calibrating from one index, which costs a few
/// short, timed chunks per call — and, with a thief, writes to the shared chunk size while both
/// read it — and from its split estimate, so that a loop too small to split is not split before
/// its first timed chunk. Relaxed: a hint; a call over another n ignores it.
template <typename Body>
inline std::atomic<std::uint64_t> learned_chunk{0};
/// The split estimate (loop_control::split_estimate) of the call that wrote learned_chunk<Body>
/// last: used with it, a hint as it is.
template <typename Body>
inline std::atomic<std::size_t> learned_split{0};

inline constexpr unsigned learned_chunk_bits = 20;

/// Runs `body` over [0, n) and rethrows the first exception of an iteration after every started
/// chunk has finished. Algorithms await it with call() and then join() (which rethrows).
template <typename Body>
core::task<void> run_loop(loop_control *ctl, Body const *body, std::size_t n) {
  if (n != 0) {
    constexpr std::uint64_t chunk_mask = (std::uint64_t{1} << learned_chunk_bits) - 1;
    bool const learn = !ctl->fixed() && n < (std::uint64_t{1} << (64 - learned_chunk_bits));
    if (learn) {
      std::uint64_t const last = learned_chunk<Body>.load(std::memory_order_relaxed);
      if (last >> learned_chunk_bits == n) {
        ctl->start_from(static_cast<std::size_t>(last & chunk_mask),
                        learned_split<Body>.load(std::memory_order_relaxed));
      }
    }
    co_await core::call(split_range<Body>, ctl, body, std::size_t{0}, n);
    co_await core::join(); // rethrows what the engine itself threw (an allocation failure)
    if (learn && ctl->split_estimate() != 0 && ctl->chunk() <= chunk_mask) { // a chunk was timed
      std::uint64_t const now = std::uint64_t{n} << learned_chunk_bits | ctl->chunk();
      if (learned_chunk<Body>.load(std::memory_order_relaxed) != now) { // writes only on change
        learned_chunk<Body>.store(now, std::memory_order_relaxed);
      }
      std::size_t const split = ctl->split_estimate();
      if (learned_split<Body>.load(std::memory_order_relaxed) != split) {
        learned_split<Body>.store(split, std::memory_order_relaxed);
      }
    }
  }
  ctl->rethrow_if_failed();
}

/// Never defined: the value returned after a failed require_random_access(), so that the
/// static_assert is the only error reported.
template <typename T>
core::task<T> rejected_iterator();

/// The index type of an iterator's random access.
template <typename I>
auto at(I const &first, std::size_t i) -> decltype(first[0]) {
  return first[static_cast<std::iter_difference_t<I>>(i)];
}

template <typename I>
I nth(I first, std::size_t i) {
  return first + static_cast<std::iter_difference_t<I>>(i);
}

/// The compile-time check shared by every algorithm: a readable error for other iterators.
template <typename I>
consteval bool require_random_access() {
  static_assert(std::random_access_iterator<I>,
                "magpie's parallel algorithms need random-access iterators (pointers, "
                "std::vector, std::array, std::deque, std::span, std::string iterators or "
                "std::ranges::random_access_range): copy the elements of a std::list, std::set "
                "or std::map into a std::vector first, or iterate over indices with "
                "magpie::for_range");
  return std::random_access_iterator<I>;
}

template <typename I>
std::size_t count_between(I first, I last) {
  return static_cast<std::size_t>(last - first);
}

/// The end of a random-access range as an iterator of its begin's type.
template <typename R>
auto end_of(R &&r) {
  if constexpr (std::ranges::random_access_range<R>) {
    return std::ranges::begin(r) + std::ranges::distance(r);
  } else {
    return std::ranges::begin(r); // rejected by require_random_access at the call
  }
}

template <typename T>
concept not_options = !std::same_as<std::remove_cvref_t<T>, loop_options>;

} // namespace magpie::algo::detail
