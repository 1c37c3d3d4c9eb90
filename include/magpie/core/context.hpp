#pragma once
// magpie/core/context.hpp — what a worker owns: its stack and its deque (the `ext` interface).
//
// A scheduler creates one `context` per worker thread and installs it with `set_this_context()`
// on that thread. Tasks find the current worker through `this_context()`, an accessor the compiler
// cannot hoist across a suspension point (a task may resume on another thread).

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "magpie/core/config.hpp"
#include "magpie/core/deque.hpp"
#include "magpie/core/observer.hpp"
#include "magpie/core/stack.hpp"

namespace magpie::core {

struct frame_base;
class context;

/// An intrusive unit of work handed to a worker from outside its strand: a root task, a task
/// moved with resume_on, a suspended task being resumed. The submitter owns the storage (a
/// sync_wait frame, a future's state, an awaitable inside the suspended task) and keeps it alive
/// until `m_run` has been called; `m_run` runs on the chosen worker's thread.
struct job {
  job *m_next = nullptr;                               ///< intrusive queue link
  void (*m_run)(job *self, context &worker) = nullptr; ///< what the worker calls
};

/// The submission hook of the scheduler a worker belongs to, reachable from every worker's
/// context (`context::home()`): how a suspended task finds its way back without knowing which
/// scheduler runs it. Implemented by sched::pool and sched::inline_scheduler.
///
/// Dispatch goes through a table of functions fixed at construction, not virtual functions: a
/// scheduler's destructor waits for parked tasks while other threads resubmit them, and a vtable
/// pointer would be rewritten under those calls as the destructor runs.
class executor {
public:
  /// The scheduler's implementation of the calls below.
  struct operations {
    /// Counts a parked task as in flight (see hold()).
    void (*hold)(executor &self);
    /// Queues `j` on `worker` and ends one hold (see resubmit()).
    void (*resubmit)(executor &self, job *j, std::size_t worker) noexcept;
    /// Ends one hold without a resubmission (see unhold()).
    void (*unhold)(executor &self) noexcept;
    /// Number of workers (see workers()).
    std::size_t (*workers)(executor const &self) noexcept;
    /// Takes an empty chain a worker has no use for (see keep_chain()); null: none is kept.
    bool (*keep_chain)(executor &self, stacklet *chain) noexcept;
  };

  executor(executor const &) = delete;
  executor &operator=(executor const &) = delete;

  /// Any thread, before a task parks on this executor's worker: counts the parked task as in
  /// flight, so that the scheduler outlives it (its destructor waits). Throws (sched::pool_closed)
  /// if the scheduler is shutting down and has no work of its own left. Each successful call is
  /// ended by exactly one `resubmit` or `unhold`.
  void hold() { m_ops->hold(*this); }

  /// Any thread: queues `j` on worker `worker` (or on one of the executor's choosing, preferring
  /// an idle one, for ext::any_worker), wakes that worker (the notify), then ends one `hold`.
  /// Never throws. From the push on, `j` may run: the caller must not touch `j` again, nor the
  /// executor after this call returns.
  void resubmit(job *j, std::size_t worker) noexcept { m_ops->resubmit(*this, j, worker); }

  /// Any thread: ends one `hold` without a resubmission (the task was resumed on the worker that
  /// suspended it, without leaving it). Never throws.
  void unhold() noexcept { m_ops->unhold(*this); }

  /// Number of workers.
  std::size_t workers() const noexcept { return m_ops->workers(*this); }

  /// A worker of this executor, about to free `chain` (an empty stack chain it has no room for:
  /// it already keeps a spare): returns true if the executor took it instead, for a thread that
  /// lost its own chain to a task that left it (a pool's guest slots, pool::run_root_here).
  bool keep_chain(stacklet *chain) noexcept {
    return m_ops->keep_chain != nullptr && m_ops->keep_chain(*this, chain);
  }

  /// True if this executor was built with `ops` (how a scheduler recognises its own kind).
  bool implemented_by(operations const &ops) const noexcept { return m_ops == &ops; }

protected:
  /// Binds the scheduler's implementation (`ops` must outlive the executor).
  explicit executor(operations const &ops) noexcept : m_ops(&ops) {}
  ~executor() = default;

private:
  operations const *m_ops;
};

namespace detail {
inline thread_local context *tls_context = nullptr;
} // namespace detail

/// The context of the worker running on this thread, or null on a thread that is no worker.
#if defined(__clang__)
// Clang (<= 16) may cache the address of a thread_local across a coroutine suspension point, so
// that a task resumed on another thread reads the first thread's variable. An opaque call cannot
// be cached. GCC lowers coroutines before optimising and does not have this problem.
MAGPIE_NOINLINE inline context *this_context() noexcept {
  return detail::opaque_address(detail::tls_context); // opaque: calls are never merged
}
#else
inline context *this_context() noexcept { return detail::tls_context; }
#endif

/// Installs `c` as this thread's context; returns the previous one.
inline context *set_this_context(context *c) noexcept {
  context *old = detail::tls_context;
  detail::tls_context = c;
  return old;
}

/// A snapshot of one worker's counters. The first group is always counted (rare events: their
/// counting costs nothing measurable). `forks`, `calls` and `tasks` are counted only in builds
/// with MAGPIE_OBSERVE_TASKS (core/config.hpp) and only while an observer is installed
/// (sched::pool::count_tasks, trace::session). While counting covered every task of the pool,
/// forks + calls + roots == tasks once the pool is idle (summed over the workers).
struct worker_stats {
  std::uint64_t steals = 0;        ///< continuations this worker stole
  std::uint64_t steal_fails = 0;   ///< steal attempts that found nothing or lost a race
  std::uint64_t jobs = 0;          ///< submitted jobs (roots, resumptions) this worker ran
  std::uint64_t handoffs = 0;      ///< stacks this worker gave to a suspended task
  std::uint64_t sleeps = 0;        ///< times this worker went to sleep (lazy pools)
  std::uint64_t wakes = 0;         ///< times this worker was woken from sleep by a notification
  std::uint64_t roots = 0;         ///< root tasks started on this worker
  std::uint64_t join_suspends = 0; ///< joins (or task ends) that waited for stolen children
  std::uint64_t parks = 0;         ///< tasks suspended on something other than children
  std::uint64_t stacklets = 0;     ///< stacklets this worker's stack allocated
  std::uint64_t stack_peak = 0;    ///< bytes of the largest chain this worker's stack held
  std::uint64_t forks = 0;         ///< children forked (while counted)
  std::uint64_t calls = 0;         ///< children called (while counted)
  std::uint64_t tasks = 0;         ///< tasks that finished on this worker (while counted)
};

/// The counters a worker keeps.
enum class counter : std::uint8_t {
  steals,
  steal_fails,
  jobs,
  handoffs,
  sleeps,
  wakes,
  roots,
  join_suspends,
  parks,
  forks,
  calls,
  tasks,
  count_
};

/// One worker's private state. Not thread-safe except for `thief()` and `stats()`.
class context {
public:
  /// `owner` identifies the scheduler (used to detect sync_wait from inside its own worker);
  /// `home` is the executor through which tasks suspended on this worker are resumed (null for a
  /// context that cannot suspend tasks).
  explicit context(void const *owner = nullptr, std::size_t index = 0, executor *home = nullptr)
      : m_owner(owner), m_home(home), m_index(index) {
    m_stack.ensure();
  }
  context(context const &) = delete;
  context &operator=(context const &) = delete;
  ~context() {
    if (m_spare != nullptr) {
      stacklet::destroy_empty_chain(m_spare);
    }
  }

  /// Owner only: the worker's segmented stack, where the frames of the tasks it runs live.
  core::stack &stack() noexcept { return m_stack; }
  /// The stack, for diagnostics (trace::dump reads its fields through stack::debug_top()).
  core::stack const &stack() const noexcept { return m_stack; }
  /// Owner only: the deque of this worker's stealable continuations.
  deque<frame_base *> &tasks() noexcept { return m_tasks; }
  /// Any thread: the stealing view of tasks().
  deque<frame_base *>::thief thief() noexcept { return deque<frame_base *>::thief(m_tasks); }

  /// The scheduler that created this context (as given to the constructor).
  void const *owner() const noexcept { return m_owner; }
  /// The executor that resumes tasks suspended on this worker (null if there is none).
  executor *home() const noexcept { return m_home; }
  /// This worker's index within its scheduler.
  std::size_t index() const noexcept { return m_index; }

  /// Owner only: whether this context is a caller running its own root (a pool's guest slot
  /// during run_root_here). It may run nothing else, so where a child of its ends and finds its
  /// parent stolen, it waits a little for the parent's runner to reach the join first
  /// (detail::arrive_at_stolen_parent), and then continues its root itself instead of leaving
  /// the rest to that worker and waiting to be told the root is done (docs/protocols.md §5.2).
  bool runs_own_root() const noexcept { return m_runs_own_root; }
  /// Owner only: see runs_own_root().
  void set_runs_own_root(bool on) noexcept { m_runs_own_root = on; }
  /// Owner only: counts one event. A relaxed load and store, not a read-modify-write: only the
  /// owner writes, and readers want a snapshot, not an edge.
  void bump(counter c) noexcept {
    auto &a = m_counters[static_cast<std::size_t>(c)];
    a.store(a.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); // no edge: a counter
  }

  /// Any thread: a snapshot of the counters.
  worker_stats stats() const noexcept {
    auto get = [&](counter c) { // relaxed: a snapshot, no edge
      return m_counters[static_cast<std::size_t>(c)].load(std::memory_order_relaxed);
    };
    worker_stats s;
    s.steals = get(counter::steals);
    s.steal_fails = get(counter::steal_fails);
    s.jobs = get(counter::jobs);
    s.handoffs = get(counter::handoffs);
    s.sleeps = get(counter::sleeps);
    s.wakes = get(counter::wakes);
    s.roots = get(counter::roots);
    s.join_suspends = get(counter::join_suspends);
    s.parks = get(counter::parks);
    s.stacklets = m_stack.stacklets_created();
    s.stack_peak = m_stack.peak_chain_bytes();
    s.forks = get(counter::forks);
    s.calls = get(counter::calls);
    s.tasks = get(counter::tasks);
    return s;
  }

  /// Owner only: reports `e` to the observer, if one is installed. While none is, this is one
  /// relaxed load and a branch that predicts well; the work is out of line (observed()). For the
  /// rare events only: per-task events go through observe_task().
  MAGPIE_FORCEINLINE void observe([[maybe_unused]] event e,
                                  [[maybe_unused]] std::uint64_t arg = 0) noexcept {
#if MAGPIE_OBSERVE
    // relaxed: only a hint that someone wants `e`; observed() loads the observer with ordering.
    if ((m_wants.load(std::memory_order_relaxed) & event_bit(e)) != 0) [[unlikely]] {
      observed(e, arg);
    }
#endif
  }

  /// Owner only: reports a per-task event (fork, call, task_end, join) to the observer, in builds
  /// with MAGPIE_OBSERVE_TASKS; compiles to nothing otherwise (see config.hpp for the cost).
  MAGPIE_FORCEINLINE void observe_task([[maybe_unused]] event e) noexcept {
#if MAGPIE_OBSERVE_TASKS
    observe(e);
#endif
  }

  /// Any thread: installs `o` (null: none) as this worker's observer and returns the previous
  /// one. Returns once the worker has left any call into the previous observer, so that the
  /// caller may then free it. Not to be called concurrently for one context; never from the
  /// worker itself while it reports an event.
  observer *exchange_observer(observer *o) noexcept {
    // The filter first (a hint: the worker may see it with either observer, see observed()).
    m_wants.store(o != nullptr ? o->m_wants : event_set{0}, std::memory_order_relaxed);
    // seq_cst: with observed()'s store of an odd m_inside and its load of m_observer, either the
    // worker sees our store, or we see that it is inside (a store-load handshake, protocols
    // §13). Its side is a seq_cst store, or a plain one and our membarrier, which makes every
    // running thread execute a full barrier between our exchange and our load.
    observer *const previous = m_observer.exchange(o, std::memory_order_seq_cst);
#if MAGPIE_PROCESS_BARRIER
    detail::process_barrier();
#endif
    std::uint32_t const inside = m_inside.load(std::memory_order_seq_cst);
    if ((inside & 1u) != 0) {
      // acquire: pairs with the release at the end of observed(): its use of `previous`
      // happens-before our return.
      while (m_inside.load(std::memory_order_acquire) == inside) {
        std::atomic_signal_fence(std::memory_order_seq_cst); // a spin: one event's worth of work
      }
    }
    return previous;
  }

  /// On this worker's own thread, before it runs anything: re-allocates the (empty) stack there,
  /// so that its memory is first touched on the worker's NUMA node (core::stack::renew_here).
  /// Returns false, keeping the old stack, if the allocation fails.
  bool renew_stack_here() noexcept { return m_stack.renew_here(); }

  /// Gives the current chain away (a suspended task lives on it) and continues on the spare one,
  /// or on none: the next allocation then creates a fresh first stacklet — one of exactly that
  /// allocation's size if `parked` (the chain went to a task suspended on a waiting primitive:
  /// chains begun after that tend to be parked too, and then hold one frame), a full-sized one
  /// otherwise (a join's hand-off in fork–join work, where depth matters more).
  stacklet *release_stack(bool parked = false) noexcept {
    bump(counter::handoffs);
    stacklet *top = m_stack.release(parked);
    if (m_spare != nullptr) {
      m_stack.adopt(m_spare);
      m_spare = nullptr;
    }
    return top;
  }

  /// Takes over `top`, the chain of a task about to be resumed. The current chain must be empty;
  /// it is kept as the spare, or given to the executor (executor::keep_chain) if there is one
  /// already, or freed.
  void adopt_stack(stacklet *top) noexcept {
    MAGPIE_ASSERT(m_stack.empty(), "internal: a worker adopted a stack while its own was in use");
    if (stacklet *mine = m_stack.release(); mine != nullptr) {
      if (m_spare == nullptr) {
        m_spare = mine;
      } else if (m_home == nullptr || !m_home->keep_chain(mine)) {
        stacklet::destroy_empty_chain(mine);
      }
    }
    m_stack.adopt(top);
  }

private:
  /// The observed path of observe(): counts the event, then hands it to the observer.
  MAGPIE_NOINLINE void observed(event e, std::uint64_t arg) noexcept {
    // Only this thread writes m_inside: odd while we may use the observer (exchange_observer).
    std::uint32_t const inside = m_inside.load(std::memory_order_relaxed) + 1;
    // relaxed (where membarrier orders it, else seq_cst): the first half of the handshake with
    // exchange_observer, protocols §13.
    detail::handshake_store(m_inside, inside, std::memory_order_relaxed);
    // seq_cst: see exchange_observer; also acquires the observer's state from its installer.
    if (observer *o = m_observer.load(std::memory_order_seq_cst); o != nullptr) {
      switch (e) {
      case event::fork:
        bump(counter::forks);
        break;
      case event::call:
        bump(counter::calls);
        break;
      case event::task_end:
        bump(counter::tasks);
        break;
      default:
        break;
      }
      if (o->m_record != nullptr) {
        o->m_record(*o, *this, e, arg);
      }
    }
    m_inside.store(inside + 1, std::memory_order_release); // release: our use of `o` is over
  }

  core::stack m_stack;
  deque<frame_base *> m_tasks;
  stacklet *m_spare = nullptr;
  void const *m_owner;
  executor *m_home;
  std::size_t m_index;
  std::atomic<observer *> m_observer{nullptr}; // see observe(); written by exchange_observer
  std::atomic<event_set> m_wants{0};           // the events observe() reports (a hint)
  std::atomic<std::uint32_t> m_inside{0};      // odd while observed() runs (owner writes)
  bool m_runs_own_root = false;                // see runs_own_root()
  // Single writer (the owner), any reader: on a line of their own, so that readers summing
  // them from other threads do not slow the owner's stack and deque fields down.
  alignas(64) std::atomic<std::uint64_t> m_counters[static_cast<std::size_t>(counter::count_)] = {};
};

} // namespace magpie::core
