#pragma once
// magpie/sched/pool.hpp — thread pools of work-stealing workers: busy_pool and lazy_pool.
//
// Each worker owns a Chase–Lev deque of stealable continuations and two multi-producer queues of
// submitted jobs: roots from sync_wait (which an idle worker may take from a busy one) and tasks
// moved to it with resume_on (which only it runs). There is no global queue.
//
// busy_pool: idle workers keep stealing (lowest latency; burns idle cores).
// lazy_pool: idle workers sleep; while any worker runs tasks at least one stays awake to steal,
//            and no wake-up is lost (docs/protocols.md, "Sleep and wake-up").
//
// Destruction finishes in-flight work: the destructor refuses new submissions (sync_wait and
// resume_on into the pool throw magpie::pool_closed), waits until every submitted root has
// completed, every accepted resume_on has been queued and every task group that a plain thread
// filled has been waited for (it holds a caller slot until then: sync/task_group.hpp; after 1 s
// the destructor says so on stderr, as it does for parked tasks), then joins the threads — which
// run every queued job and finish every task still in the pool until it completes or moves on.
// So a pool may be destroyed as soon as no task of another pool is on its way into it (a
// resume_on evaluated after the destructor has returned uses a dead object) — for example right
// after a root that finished in it returned to its caller. Destroying a pool from one of its own
// workers is an error (checked). If the constructor throws (a thread or an allocation fails), it
// stops and joins the workers it started and frees everything first. Protocol: docs/protocols.md
// §5.1.

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "magpie/core/context.hpp"
#include "magpie/sched/detail/pool_access.hpp"
#include "magpie/sched/job.hpp"
#include "magpie/sched/topology.hpp"
#include "magpie/sched/victims.hpp"

namespace magpie::sched {

/// Thrown when work is submitted to a pool that is shutting down.
class pool_closed : public std::runtime_error {
public:
  pool_closed() : std::runtime_error("magpie: work submitted to a pool that is being destroyed") {}
};

/// Whether idle workers spin or sleep.
enum class idle_policy : std::uint8_t { busy, lazy };

/// The priority of a root task (a spawned task, a task group's child, a sync_wait root): which
/// queued job a worker starts next. Forked and called children are never queued — they start at
/// once, on their parent's worker — so they run at their parent's priority.
///
/// Order in which a worker (and a thief, on its victim's queue) picks submitted work: jobs aimed
/// at it (resume_on), then resumed tasks (tasks that waited and were woken), then new roots, high
/// before normal before low, FIFO within a level — except that normal roots spawned by the
/// pool's own tasks go to the spawning worker's local deque, which that worker runs newest first
/// (depth first, like forked children; thieves take the oldest), and a task group's normal
/// children spawned by a plain thread that holds a caller slot go to that slot's deque (thieves
/// take the oldest; the thread's wait() runs the rest, newest first). Starvation rule: every 8th
/// root a queue hands out comes, in rotation, from a non-empty level below the highest non-empty
/// one (its oldest job); so a queued job behind m older jobs of its own level starts within 16·(m +
/// 1) root picks of its queue, however much higher-priority work keeps arriving (docs/protocols.md
/// §9.2).
enum class priority : std::uint8_t { high, normal, low };

namespace detail {
struct worker;
}

/// How a pool is built: how many workers, where they run, how thieves pick victims
/// (docs/topology.md). Converts from a placement: `lazy_pool pool(placement::numa_node(0));`.
struct pool_options {
  /// Number of workers; 0: one per slot of a pinned placement, else hardware_concurrency().
  std::size_t workers = 0;
  /// Where the workers run (pinned at thread start); unpinned by default.
  placement where = placement::unpinned();
  /// How a thief picks its victim; uniform by default. `weighted` needs a pinned placement to
  /// know distances (unpinned workers are all at distance 1: the draw is then uniform).
  victim_policy victims = victim_policy::uniform;
  /// The tree the placement and the weights refer to; null: topology::machine(). Must outlive
  /// the pool's constructor (it is not kept). A synthetic tree whose CPUs the machine lacks
  /// leaves those workers unpinned (describe() says so): useful for tests only.
  topology const *topo = nullptr;
  /// Count forks, calls and finished tasks per worker from the start (see count_tasks()).
  bool count_tasks = false;
  /// Whether a plain thread's sync_wait (and every blocking algorithm) runs its root itself, as a
  /// guest of the pool, instead of handing it to a worker and waiting (docs/protocols.md §5.2).
  /// Roots and loops called from ordinary code then cost no hand-off and no wake-up, and the
  /// caller works instead of waiting (bench/README.md, `edges`). A pool of P ≥ 2 workers then
  /// runs a root on P + 1 threads; a one-worker pool runs it all on the caller. trace::dump and
  /// the gdb extension list a caller's chain as "caller k"; stats() has a row per guest slot.
  /// On by default. A root that leaves its caller (a join whose children were stolen, a wait,
  /// resume_on) takes the caller's stack chain along, as it would a worker's; the worker that
  /// ends up with one chain too many gives it back to the guest slot, so that steady traffic
  /// allocates nothing. Off: every root goes to a worker, and the caller sleeps until it is done
  /// (this_worker_index() inside a root is then a worker's index, never -1).
  bool callers_run_roots = true;

  pool_options() = default;
  /// Options with this placement and defaults otherwise.
  pool_options(placement p) : where(std::move(p)) {} // NOLINT: implicit on purpose
};

/// The common machinery of busy_pool and lazy_pool. Thread-safe: any thread may submit. It is
/// the executor (core/context.hpp) of its workers: tasks suspended on them come back through it.
class pool : public core::executor {
public:
  /// Starts `workers` threads (0 means std::thread::hardware_concurrency()) with the given idle
  /// policy. If a thread or an allocation fails, stops and joins those already started, then
  /// throws.
  pool(std::size_t workers, idle_policy policy);
  /// A pool built as `options` say. Throws std::invalid_argument for a placement that selects no
  /// PU, std::system_error or std::bad_alloc as the other constructor. Returns once every worker
  /// has started and tried its pinning.
  pool(pool_options const &options, idle_policy policy);
  pool(pool const &) = delete;
  pool &operator=(pool const &) = delete;
  /// Waits for every root, spawned or parked task in flight, then joins the workers (see top).
  ~pool();

  /// Number of worker threads.
  std::size_t size() const noexcept;
  /// Whether idle workers spin or sleep.
  idle_policy policy() const noexcept { return m_policy; }

  /// True until the destructor has begun.
  bool accepting() const noexcept { return !m_closing.load(std::memory_order_acquire); }

  /// True if the calling thread is one of this pool's workers.
  bool is_worker_thread() const noexcept {
    core::context const *c = core::this_context();
    return c != nullptr && c->owner() == this;
  }

  /// The pool whose worker runs the calling thread (a task's own pool), or null on any other
  /// thread (a plain thread, or a worker of the inline scheduler).
  static pool *current() noexcept {
    core::context *c = core::this_context();
    core::executor *home = c != nullptr ? c->home() : nullptr;
    return home != nullptr && home->implemented_by(executor_operations) ? static_cast<pool *>(home)
                                                                        : nullptr;
  }

  /// Per-worker counters (a racy snapshot; exact once the pool is idle): one entry per worker,
  /// then one per guest slot (the callers that ran roots here: pool_options::callers_run_roots,
  /// one slot per worker). Any thread, any time. trace::counters(pool) sums them and prints them
  /// as a table or JSON.
  std::vector<core::worker_stats> stats() const;
  /// Worker `i`'s context, for diagnostics (trace::dump reads its stack; any thread may call
  /// its thread-safe members: stats(), index()); for size() ≤ i < stats().size(), guest slot
  /// i − size() (pool_options::callers_run_roots). Precondition: i < stats().size().
  core::context const &worker_context(std::size_t i) const noexcept;
  /// Work in flight: roots submitted and not yet finished, submissions from tasks not yet queued,
  /// and tasks parked on this pool's workers (a racy snapshot; takes a short lock). Any thread.
  std::size_t in_flight() const noexcept;
  /// Roots submitted to this pool so far (sync_wait, spawn, task groups). Any thread.
  std::uint64_t roots_submitted() const noexcept;

  /// Turns the counting of forks, calls and finished tasks (core::worker_stats) on or off for
  /// every worker. It costs the fork/call path an out-of-line call while on; off, one branch.
  /// Any thread, but not while a trace::session observes this pool (which counts as well).
  void count_tasks(bool on);
  /// True while forks, calls and finished tasks are counted (count_tasks, or a trace session).
  bool counting_tasks() const noexcept;

  /// The placement the pool was built with.
  placement const &where() const noexcept { return m_placement; }
  /// The victim policy and its tables.
  victim_selector const &victims() const noexcept { return *m_victims; }
  /// Worker `i`'s PU: its logical index in the pool's topology, or -1 if unpinned.
  long worker_pu(std::size_t i) const { return m_worker_pu.at(i); }
  /// Worker `i`'s CPU number (as the kernel counts), or -1 if unpinned.
  long worker_cpu(std::size_t i) const { return m_worker_cpu.at(i); }
  /// 0 if worker `i` is pinned to its CPU (or unpinned by request), else the errno value with
  /// which the kernel refused (the worker then runs unpinned).
  int pin_error(std::size_t i) const { return m_pin_error.at(i); }
  /// A multi-line description: policy, placement, victim policy, topology, and the worker → PU
  /// (CPU) map with each worker's pinning outcome.
  std::string describe() const;

private:
  // The plumbing: how magpie's own layers hand this pool roots, submissions from tasks and
  // observers. They call it through detail::pool_access (sched/detail/pool_access.hpp), which
  // forwards to these members; core calls hold/resubmit/unhold/workers through
  // core::executor::operations (executor_operations below). Not for users.
  friend struct detail::pool_access;

  /// Hands a root job to some worker, preferring an idle one, at priority `p` (see `priority`).
  /// From one of this pool's own workers the job goes to that worker's queue (where idle thieves
  /// may take it). Throws pool_closed once the destructor has begun, except from a task of this
  /// pool while the pool still drains its work (a spawned task that spawns more is waited for
  /// too). Counts the job as in flight until `finish_root()`: lock-free from a worker of this
  /// pool, under a mutex that no worker takes on the way from anywhere else. Returns the
  /// index of the worker whose queue holds the job (for withdraw_root), or `local_queue`: a
  /// normal-priority root submitted by a task of this pool goes to its worker's local deque,
  /// where that worker takes the newest first and thieves the oldest (see `priority`).
  std::size_t submit_root(job *j, priority p = priority::normal);
  /// What submit_root returns for a job pushed on the submitting worker's local deque.
  static constexpr std::size_t local_queue = static_cast<std::size_t>(-1);

  /// Takes a root job back from worker `worker`'s queue, where submit_root(j, p) put it, if it
  /// is still there and among the 64 newest of its priority (a spawned task that its reader ran
  /// itself). True if it was taken back: it will not run. Does not end the in-flight count
  /// (finish_root still must be called). Any thread.
  bool withdraw_root(job *j, std::size_t worker, priority p) noexcept;
  /// On a worker of this pool (elsewhere it does nothing): if `newest` is the newest job on the
  /// calling worker's local deque, takes at once, newest first, the jobs at its bottom for which
  /// `stale(j)` holds and calls `drop(j)` for each (what running it would do: drop what it
  /// holds), stopping at the first for which it does not (which stays where it was). For a
  /// spawned task its reader ran itself: the deque cannot give up an item in the middle, so the
  /// reader trims such jobs from the bottom.
  void run_stale_local(job const *newest, bool (*stale)(job const *j) noexcept,
                       void (*drop)(job *j) noexcept) noexcept;
  /// Runs root job `j` on the calling thread, as a *guest* of the pool, if the thread may: it is
  /// not already one of this pool's workers or guests, one of the pool's guest slots (as many as
  /// workers) is free, the pool was built with callers_run_roots, and no observer is installed
  /// (a trace session or count_tasks sees every root on a worker). Returns false, having done
  /// nothing, otherwise: the caller then submits the root with submit_root.
  ///
  /// The guest runs the root on a stack and a deque of its own; idle workers steal its
  /// continuations as they steal each other's. It runs nothing but `j` and what `j` forks and
  /// calls (never another root, a resumed task or a stolen continuation), and it returns as soon
  /// as `j`'s strand ends there: when the root completes, or when it waits (for stolen children,
  /// or on a primitive), in which case a worker finishes it. Counts the root in flight as
  /// submit_root does (throws pool_closed once the destructor has begun): call finish_root()
  /// once the root has completed. docs/protocols.md §5.2.
  bool run_root_here(job *j);
  /// As run_root_here, for a job that stands for a root already counted in flight by
  /// submit_root (a spawned task whose reader, a plain thread, runs it itself instead of waiting
  /// for a worker: sync::detail::spawned). Counts nothing and never throws pool_closed: the root
  /// it stands for was accepted, and the destructor waits for it. Once the guest slot and its
  /// stack are ready, and before the guest becomes visible to thieves, calls `admit(j)`, which
  /// claims the root; if it returns false (a worker took the root first) the slot is released
  /// and nothing runs. False, having done nothing, under the same conditions as run_root_here
  /// or when `admit` refuses; throws what the slot's stack allocation throws.
  bool help_root_here(job *j, bool (*admit)(job *j) noexcept);
  /// On a worker of this pool (not a guest): true if tasks resumed from elsewhere wait for the
  /// calling worker — jobs aimed at it, tasks its own tasks resumed, or resumed tasks in its
  /// queue (woken by a timer, a descriptor, another thread). A hint, for yield(). False on any
  /// other thread.
  bool others_waiting_here() const noexcept;
  /// On a worker of this pool, in the await_suspend of a task that took a hold (executor::hold)
  /// and parked: queues `j`, which resumes it, behind the resumed tasks already waiting in the
  /// calling worker's queue, and ends the hold. No wake-up: the worker is active (§6). Never
  /// throws. From the push on, `j` may run: touch neither it nor its task.
  void requeue_here(job *j) noexcept;
  /// Number of guest slots (see run_root_here): size(), or 0 without callers_run_roots.
  std::size_t guest_slots() const noexcept { return m_guests.size(); }

  /// Hosting (a task group's spawns from a plain thread; docs/protocols.md §5.4): claims a free
  /// guest slot for the calling thread to keep between calls. The thread pushes normal-priority
  /// roots onto the slot's deque (host_root), where every worker may steal them (the oldest
  /// first), runs those still there itself when it waits (help_host: the newest first), and gives
  /// the slot back (close_host). Counts an open submission until close_host: the destructor waits
  /// for it. Null, having done nothing, where run_root_here would refuse (a thread of this pool,
  /// callers_run_roots off, an observer installed, every slot taken); throws pool_closed once the
  /// destructor has begun.
  detail::worker *open_host();
  /// The holder of `slot` (the thread that opened it): counts root `j` in flight (finish_root
  /// ends it, wherever `j` completes) and pushes it onto the slot's deque; on a lazy pool, wakes a
  /// worker if none is awake to steal it. Throws pool_closed once the destructor has begun, or
  /// std::bad_alloc if the deque cannot grow: then nothing was counted or queued.
  void host_root(detail::worker &slot, job *j);
  /// The holder of `slot`, on a plain thread: runs the roots still on the slot's deque, newest
  /// first, as a guest of the pool (as run_root_here runs one: thieves may take their
  /// continuations), until the deque is empty. Runs nothing if an observer is installed or no
  /// stack can be had: workers take the roots then. Never runs anything but those roots.
  void help_host(detail::worker &slot) noexcept;
  /// Gives `slot` back and ends open_host's submission. Any thread, once the slot's deque is
  /// empty and its holder pushes no more: after the holder's help_host, or once every root it
  /// hosted has been taken (each has started). The destructor may proceed once it returns.
  void close_host(detail::worker &slot) noexcept;

  /// Called once per submit_root, after the root has completed: by the worker that completed it
  /// (lock-free: a store to that worker's own count), or by any other thread (under the
  /// in-flight mutex, e.g. sync_wait's waiting thread). The destructor may proceed once it returns.
  void finish_root() noexcept;

  /// Counts one submission from a task (resume_on) as in flight: the destructor waits for it.
  /// Throws pool_closed once the destructor has begun. Each call must be followed by exactly one
  /// `submit_to`, which ends the submission (docs/protocols.md §5.1).
  void open_submission();

  /// Hands `j` to worker `index` specifically (resume_on), wakes that worker, then ends the
  /// submission opened by `open_submission()`. Never throws. From the push on, `j` may run and
  /// its task finish: the caller must not touch `j` (or its task) during or after this call, and
  /// must not touch the pool after it returns.
  void submit_to(std::size_t index, job *j) noexcept;

  /// A worker to send work to: with a pinned placement the submitter's own worker (a task of
  /// this pool, or the worker pinned to the calling thread's CPU) if idle, else the nearest idle
  /// one (docs/topology.md); otherwise an idle one if any looks idle, else the next in turn.
  std::size_t choose_worker() noexcept;

  /// executor: counts a task about to be suspended on one of this pool's workers as in flight
  /// (the destructor waits for it). Throws pool_closed once the destructor has begun and the pool
  /// has no work left in flight (a task of the pool's own roots may still suspend while the pool
  /// drains). Ended by `resubmit`.
  void hold();
  /// executor: queues a resumed task's job on `worker` (only that worker runs it) or, for
  /// core::ext::any_worker, on an idle-looking worker (where idle thieves may take it too), wakes
  /// the worker, then ends one `hold`. Resumed tasks run before new roots. Never throws.
  void resubmit(job *j, std::size_t worker) noexcept;
  /// executor: ends one `hold` without a resubmission.
  void unhold() noexcept;
  /// executor: the number of workers (users ask size(); core asks core::executor::workers()).
  std::size_t workers() const noexcept { return size(); }

  /// Installs `o` (null: none) as the observer of every worker (core/observer.hpp) and returns
  /// the previous one. Returns once no worker is still inside a call into the previous one, so
  /// the caller may free it. Any thread but the pool's workers; one caller at a time (the
  /// trace layer's sessions serialise themselves).
  core::observer *exchange_observer(core::observer *o) noexcept;
  /// As exchange_observer, but only if the pool's observer is `expected` (atomically with
  /// respect to the other calls); returns whether it installed `o`.
  bool replace_observer(core::observer *expected, core::observer *o) noexcept;

  /// exchange_observer's work, with m_observer_mutex held.
  core::observer *exchange_observer_locked(core::observer *o) noexcept;
  friend struct detail::worker;
  static core::executor::operations const executor_operations;

  void run(detail::worker &w);
  void start(detail::worker &w) noexcept;
  void configure_placement(topology const *topo, victim_policy victims, std::size_t workers);
  long submitter_worker() const noexcept;
  bool try_steal(detail::worker &w);
  bool run_jobs(detail::worker &w);
  bool run_queued(detail::worker &w, detail::worker &from);
  void run_batch(detail::worker &w, job *j);
  void idle(detail::worker &w);
  detail::worker *claim_guest() noexcept;
  void ready_guest_stack(detail::worker &g);
  void enter_guest() noexcept;
  void leave_guest() noexcept;
  bool run_hosted(detail::worker &w, detail::worker &slot);
  bool thief_on_its_way() const noexcept;
  bool run_as_guest(job *j, bool (*admit)(job *j) noexcept);
  bool keep_chain(core::stacklet *chain) noexcept;
  bool is_guest(detail::worker const &w) const noexcept;
  bool steal_from(detail::worker &w, detail::worker &victim, std::size_t index);
  bool work_visible(detail::worker const &w) const noexcept;
  void wake(std::size_t index) noexcept;
  void wake_one() noexcept;
  /// CASes `w`'s sleep word from asleep to notified and wakes it; false if it was not asleep.
  bool notify_if_asleep(detail::worker &w) noexcept;
  bool roots_done() const noexcept;
  std::size_t holds_pending() const noexcept;
  std::size_t roots_pending() const noexcept;
  std::size_t pending(std::atomic<std::uint64_t> const *foreign_ends,
                      std::atomic<std::uint64_t> detail::worker::*ends,
                      std::atomic<std::uint64_t> const *foreign_starts,
                      std::atomic<std::uint64_t> detail::worker::*starts) const noexcept;
  /// This pool's worker that runs the calling thread, or null.
  detail::worker *calling_worker() const noexcept;
  /// unhold() on `own`, the calling thread's worker (resubmit has already looked it up).
  void unhold_on(detail::worker &own) noexcept;
  void activate(detail::worker &w) noexcept;
  void deactivate(detail::worker &w) noexcept;
  void become_active() noexcept;
  void become_thief() noexcept;
  void close_submission() noexcept;
  void stop_workers() noexcept;

  idle_policy m_policy;
  std::vector<std::unique_ptr<detail::worker>> m_workers;
  // Contexts for callers that run their roots here (run_root_here), indexed size() + k.
  std::vector<std::unique_ptr<detail::worker>> m_guests;

  placement m_placement;
  std::string m_topology_summary;
  std::unique_ptr<victim_selector> m_victims;
  std::vector<long> m_worker_pu;          // logical PU per worker, or -1
  std::vector<long> m_worker_cpu;         // CPU number per worker, or -1
  std::vector<int> m_pin_error;           // written by each worker before m_starting reaches 0
  std::atomic<std::size_t> m_starting{0}; // workers that have not yet pinned themselves

  // The counters below on lines of their own: padding, not alignas(64), so that a pool may be a
  // task's local (core::detail::line_gap).
  [[maybe_unused]] core::detail::line_gap m_gap_active;
  std::atomic<std::size_t> m_active{0}; // workers running tasks
  [[maybe_unused]] core::detail::line_gap m_gap_thieves;
  std::atomic<std::size_t> m_thieves{0}; // workers awake and looking for work
  [[maybe_unused]] core::detail::line_gap m_gap_sleepers;
  std::atomic<std::size_t> m_sleepers{0};
  [[maybe_unused]] core::detail::line_gap m_gap_guests;
  std::atomic<std::size_t> m_guests_running{0}; // thieves look at guests while > 0
  std::atomic<std::size_t> m_guests_hosting{0}; // slots held by open_host: thieves look too
  std::atomic<bool> m_observed{false}; // an observer is installed: callers submit their roots
  std::atomic<bool> m_stop{false};
  std::atomic<bool> m_closing{false};

  // Its own line: plain threads take it on every submission, while workers read the flags above
  // on every finish and every round of their loop.
  [[maybe_unused]] core::detail::line_gap m_gap_inflight;
  mutable std::mutex m_inflight_mutex;
  std::condition_variable m_inflight_cv;
  std::size_t m_inflight = 0; // submissions from tasks (open_submission)
  // Roots submitted from outside the pool (written under m_inflight_mutex). Roots submitted by
  // our own tasks are counted per worker, and so are the finishes on our workers
  // (detail::worker); a root that finished off our workers is counted in m_foreign_finished.
  std::atomic<std::uint64_t> m_foreign_roots{0};
  [[maybe_unused]] core::detail::line_gap m_gap_finished;
  std::atomic<std::uint64_t> m_foreign_finished{0};
  // Holds (parked tasks) are counted per worker too; these count those taken or ended off our
  // workers (modified under m_inflight_mutex).
  std::atomic<std::uint64_t> m_foreign_holds{0};
  std::atomic<std::uint64_t> m_foreign_unholds{0};
  mutable std::mutex m_observer_mutex;  // one exchange_observer at a time
  core::observer *m_observer = nullptr; // guarded by m_observer_mutex
};

// pool_access's forwarders (sched/detail/pool_access.hpp), defined where pool is complete. The
// reference leaves them out with the class (detail/ is not among Doxygen's inputs).
#ifndef MAGPIE_DOXYGEN
namespace detail {
inline std::size_t pool_access::submit_root(pool &s, job *j, priority p) {
  return s.submit_root(j, p);
}
inline bool pool_access::withdraw_root(pool &s, job *j, std::size_t worker, priority p) noexcept {
  return s.withdraw_root(j, worker, p);
}
inline void pool_access::run_stale_local(pool &s, job const *newest,
                                         bool (*stale)(job const *j) noexcept,
                                         void (*drop)(job *j) noexcept) noexcept {
  s.run_stale_local(newest, stale, drop);
}
inline bool pool_access::help_root_here(pool &s, job *j, bool (*admit)(job *j) noexcept) {
  return s.help_root_here(j, admit);
}
inline std::size_t pool_access::guest_slots(pool const &s) noexcept { return s.guest_slots(); }
inline bool pool_access::others_waiting_here(pool const &s) noexcept {
  return s.others_waiting_here();
}
inline void pool_access::requeue_here(pool &s, job *j) noexcept { s.requeue_here(j); }
inline worker *pool_access::open_host(pool &s) { return s.open_host(); }
inline void pool_access::host_root(pool &s, worker &slot, job *j) { s.host_root(slot, j); }
inline void pool_access::help_host(pool &s, worker &slot) noexcept { s.help_host(slot); }
inline void pool_access::close_host(pool &s, worker &slot) noexcept { s.close_host(slot); }
inline void pool_access::open_submission(pool &s) { s.open_submission(); }
inline void pool_access::submit_to(pool &s, std::size_t index, job *j) noexcept {
  s.submit_to(index, j);
}
inline std::size_t pool_access::choose_worker(pool &s) noexcept { return s.choose_worker(); }
inline core::observer *pool_access::exchange_observer(pool &s, core::observer *o) noexcept {
  return s.exchange_observer(o);
}
inline bool pool_access::replace_observer(pool &s, core::observer *expected,
                                          core::observer *o) noexcept {
  return s.replace_observer(expected, o);
}
} // namespace detail
#endif

/// A pool whose idle workers keep looking for work.
class busy_pool : public pool {
public:
  /// `workers` = 0 means std::thread::hardware_concurrency().
  explicit busy_pool(std::size_t workers = 0);
  /// Built as `options` say (placement, victim policy; see pool_options).
  explicit busy_pool(pool_options const &options);
};

/// A pool whose idle workers sleep.
class lazy_pool : public pool {
public:
  /// `workers` = 0 means std::thread::hardware_concurrency().
  explicit lazy_pool(std::size_t workers = 0);
  /// Built as `options` say (placement, victim policy; see pool_options).
  explicit lazy_pool(pool_options const &options);
};

// A pool may be a task's local (or a local of a function inlined into a task): no member may
// raise its alignment above a task frame's (core::detail::line_gap, not alignas(64)).
static_assert(alignof(lazy_pool) <= alignof(std::max_align_t) &&
                  alignof(busy_pool) <= alignof(std::max_align_t),
              "a pool must not be over-aligned: pad with core::detail::line_gap, not alignas");

} // namespace magpie::sched
