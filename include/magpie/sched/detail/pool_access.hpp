#pragma once
// magpie/sched/detail/pool_access.hpp — the door to sched::pool's plumbing, for magpie's own
// layers and tests; not for users.
//
// A user reads `class pool` (sched/pool.hpp) for what to call. What the library itself needs of a
// pool on top of that — handing it roots (sync_wait, spawn, task groups), submissions from tasks
// (resume_on), guest slots (the diagnostics) and observers (the trace layer) — is private to
// pool and reached only through pool_access, a friend of pool whose static functions forward to
// the pool member of the same name; that member's comment in sched/pool.hpp states the contract.
// (Parked tasks reach a pool through core::executor, whose hold/resubmit/unhold/workers call the
// pool's private ones: docs/protocols.md §7.)

#include <cstddef>
#include <cstdint>

#include "magpie/sched/job.hpp"

namespace magpie::core {
struct observer;
} // namespace magpie::core

namespace magpie::sched {

class pool;
enum class priority : std::uint8_t;

namespace detail {

struct worker;

struct pool_access {
  // The root protocol that sync_wait's `scheduler` concept names: a pool's private members, or
  // the public ones of another scheduler (inline_scheduler, a user's). Each is viable only if
  // `s` has the member (run_root_here is optional: sync_wait asks whether it is viable).

  /// s.submit_root(j): hands root job `j` to the scheduler, counted in flight until finish_root.
  template <typename S>
  static auto submit_root(S &s, job *j) -> decltype(s.submit_root(j)) {
    return s.submit_root(j);
  }
  /// s.finish_root(): ends the in-flight count of a root that has completed.
  template <typename S>
  static auto finish_root(S &s) noexcept -> decltype(s.finish_root()) {
    return s.finish_root();
  }
  /// s.run_root_here(j): runs root job `j` on the calling thread if the scheduler lets it.
  template <typename S>
  static auto run_root_here(S &s, job *j) -> decltype(s.run_root_here(j)) {
    return s.run_root_here(j);
  }

  // A pool's own (defined in sched/pool.hpp, after the class).

  /// pool::submit_root at priority `p`: returns where the job went, for withdraw_root.
  static std::size_t submit_root(pool &s, job *j, priority p);
  /// pool::withdraw_root.
  static bool withdraw_root(pool &s, job *j, std::size_t worker, priority p) noexcept;
  /// pool::run_stale_local.
  static void run_stale_local(pool &s, job const *newest, bool (*stale)(job const *j) noexcept,
                              void (*drop)(job *j) noexcept) noexcept;
  /// pool::help_root_here.
  static bool help_root_here(pool &s, job *j, bool (*admit)(job *j) noexcept);
  /// pool::others_waiting_here.
  static bool others_waiting_here(pool const &s) noexcept;
  /// pool::requeue_here.
  static void requeue_here(pool &s, job *j) noexcept;
  /// pool::open_host.
  static worker *open_host(pool &s);
  /// pool::host_root.
  static void host_root(pool &s, worker &slot, job *j);
  /// pool::help_host.
  static void help_host(pool &s, worker &slot) noexcept;
  /// pool::close_host.
  static void close_host(pool &s, worker &slot) noexcept;
  /// pool::guest_slots.
  static std::size_t guest_slots(pool const &s) noexcept;
  /// pool::open_submission.
  static void open_submission(pool &s);
  /// pool::submit_to.
  static void submit_to(pool &s, std::size_t index, job *j) noexcept;
  /// pool::choose_worker.
  static std::size_t choose_worker(pool &s) noexcept;
  /// pool::exchange_observer.
  static core::observer *exchange_observer(pool &s, core::observer *o) noexcept;
  /// pool::replace_observer.
  static bool replace_observer(pool &s, core::observer *expected, core::observer *o) noexcept;
};

} // namespace detail
} // namespace magpie::sched
