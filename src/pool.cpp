// magpie/src/pool.cpp — the worker loop, stealing, and the lazy pool's sleep/wake protocol.
//
// The protocol and why no wake-up is lost: docs/protocols.md, "Sleep and wake-up"; why no
// submission outlives the pool or is lost at shutdown: docs/protocols.md §5.1.

#include "magpie/sched/pool.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "magpie/core/config.hpp"
#include "magpie/core/detail/fence.hpp"
#include "magpie/core/detail/pause.hpp"
#include "magpie/core/ext.hpp"
#include "magpie/sched/registry.hpp"

namespace magpie::sched {

namespace detail {

/// xoshiro128** style generator, small and fast enough for victim selection.
class rng {
public:
  explicit rng(std::uint64_t seed) noexcept {
    for (auto &s : m_s) { // splitmix64 to spread the seed
      seed += 0x9E3779B97F4A7C15ULL;
      std::uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
      s = static_cast<std::uint32_t>(z ^ (z >> 31)) | 1u;
    }
  }
  std::uint32_t operator()() noexcept {
    std::uint32_t const result = rotl(m_s[1] * 5, 7) * 9;
    std::uint32_t const t = m_s[1] << 9;
    m_s[2] ^= m_s[0];
    m_s[3] ^= m_s[1];
    m_s[1] ^= m_s[2];
    m_s[0] ^= m_s[3];
    m_s[2] ^= t;
    m_s[3] = rotl(m_s[3], 11);
    return result;
  }

private:
  static std::uint32_t rotl(std::uint32_t x, int k) noexcept { return (x << k) | (x >> (32 - k)); }
  std::uint32_t m_s[4];
};

/// A growable ring of queued roots: FIFO, with withdrawal of a recent entry (a tombstone).
class root_ring {
public:
  /// Starts with room for 64 roots, allocated with the pool (so that a warm pool submits roots
  /// without allocating: tests/core/zero_alloc_test.cpp).
  root_ring() : m_slots(64) {}

  bool empty() const noexcept { return m_live == 0; }

  /// May throw std::bad_alloc (growing); then nothing changed.
  void push(job *j) {
    if (m_tail - m_head == m_slots.size()) {
      grow();
    }
    m_slots[m_tail++ & (m_slots.size() - 1)] = j;
    ++m_live;
  }

  /// The oldest live entry (tombstones are skipped). Precondition: !empty().
  job *pop() noexcept {
    for (;;) {
      job *j = m_slots[m_head++ & (m_slots.size() - 1)];
      if (j != nullptr) {
        --m_live;
        return j;
      }
    }
  }

  /// Removes `j` if it is among the newest `window` entries.
  bool withdraw(job *j, std::size_t window) noexcept {
    std::size_t const mask = m_slots.size() - 1;
    for (std::size_t k = m_tail; k > m_head && m_tail - k < window;) {
      --k;
      if (m_slots[k & mask] == j) {
        m_slots[k & mask] = nullptr;
        --m_live;
        while (m_tail > m_head && m_slots[(m_tail - 1) & mask] == nullptr) {
          --m_tail; // trailing tombstones go at once: the ring does not fill with them
        }
        return true;
      }
    }
    return false;
  }

private:
  void grow() {
    std::size_t const n = 2 * m_slots.size();
    std::vector<job *> bigger(n);
    for (std::size_t k = m_head; k != m_tail; ++k) {
      bigger[k - m_head] = m_slots[k & (m_slots.size() - 1)];
    }
    m_tail -= m_head;
    m_head = 0;
    m_slots.swap(bigger);
  }

  std::vector<job *> m_slots; // size: a power of two
  std::size_t m_head = 0;     // oldest entry (monotonic; masked on access)
  std::size_t m_tail = 0;     // one past the newest
  std::size_t m_live = 0;     // entries that are not tombstones
};

/// Locks `m`, spinning briefly before sleeping in the kernel. Its holders never wait under it
/// (a few dozen instructions), so a spin almost always wins; a waiter that slept would cost both
/// sides a futex call (about a microsecond each on a VM), which is most of a plain thread's spawn.
void lock_spinning(std::mutex &m) {
  for (unsigned i = 0; i < 64; ++i) {
    if (m.try_lock()) {
      return;
    }
    core::detail::cpu_pause();
  }
  m.lock();
}

/// One worker's jobs that any worker may run: resumed tasks, then new roots by priority (see
/// sched::priority for the order and the starvation rule; docs/protocols.md §9.2). A mutex guards
/// the lists: pushes come from any thread, pops from the owner and from idle thieves, one job at
/// a time (a long job must not hold short ones queued behind it hostage).
class run_queue {
public:
  static constexpr std::size_t levels = 3;              // root levels: one per priority
  static constexpr std::uint32_t starvation_period = 8; // every 8th root pick goes lower
  static constexpr std::size_t withdraw_window = 64;    // how far back withdraw_root looks

  /// Any thread: a resumed task. Never throws.
  void push_resumed(job *j) noexcept {
    j->m_next = nullptr;
    lock_spinning(m_mutex);
    std::lock_guard lock(m_mutex, std::adopt_lock);
    (m_resumed_tail != nullptr ? m_resumed_tail->m_next : m_resumed_head) = j;
    m_resumed_tail = j;
    published_push();
  }

  /// Any thread: a root. May throw std::bad_alloc; then nothing was queued.
  void push_root(job *j, priority p) {
    lock_spinning(m_mutex);
    std::lock_guard lock(m_mutex, std::adopt_lock);
    m_roots[static_cast<std::size_t>(p)].push(j);
    published_push();
  }

  /// Any thread: takes `j` back if it is still queued among the newest roots of level `p`.
  bool withdraw(job *j, priority p) noexcept {
    lock_spinning(m_mutex);
    std::lock_guard lock(m_mutex, std::adopt_lock);
    if (!m_roots[static_cast<std::size_t>(p)].withdraw(j, withdraw_window)) {
      return false;
    }
    m_size.store(m_size.load(std::memory_order_relaxed) - 1,
                 std::memory_order_relaxed); // under the mutex; readers only want a hint
    return true;
  }

  /// Any thread: the next job by the order above, or null. `local_normal`: the worker's local
  /// deque of normal-priority roots (pool::submit_root from its own tasks) looks non-empty; it
  /// counts as part of the normal level. Sets `*take_local` (and returns null) when the pick is
  /// that deque's: the caller pops it (the owner, newest first) or steals from it (a thief).
  job *pop(bool local_normal, bool *take_local) noexcept {
    *take_local = false;
    if (m_size.load(std::memory_order_relaxed) == 0) { // a cheap look; the mutex decides
      *take_local = local_normal; // nothing resumed or queued here: only the local deque
      return nullptr;
    }
    // A worker that finds the lock taken looks again in its next round rather than sleeping on
    // it: the holder is a pusher (or another popper) for a few instructions.
    std::unique_lock lock(m_mutex, std::try_to_lock);
    if (!lock.owns_lock()) {
      return nullptr;
    }
    job *j = nullptr;
    if (m_resumed_head != nullptr) {
      j = m_resumed_head;
      m_resumed_head = j->m_next;
      if (m_resumed_head == nullptr) {
        m_resumed_tail = nullptr;
      }
      j->m_next = nullptr;
    } else if (std::size_t const level = pick_root_level(local_normal); level != levels) {
      constexpr auto normal = static_cast<std::size_t>(priority::normal);
      // Within the normal level the local deque goes first, except every 8th pick when this
      // queue also holds normal roots from outside (they are not starved by local spawns).
      if (level == normal && local_normal &&
          (m_roots[normal].empty() || ++m_local_picks % starvation_period != 0)) {
        *take_local = true;
        return nullptr;
      }
      j = m_roots[level].pop();
    } else {
      return nullptr;
    }
    m_size.store(m_size.load(std::memory_order_relaxed) - 1,
                 std::memory_order_relaxed); // under the mutex; readers only want a hint
    return j;
  }

  /// Any thread; seq_cst: see published_push.
  bool empty() const noexcept { return m_size.load(std::memory_order_seq_cst) == 0; }

private:
  /// Under the mutex, after a push.
  void published_push() noexcept {
    // seq_cst: orders this push before the submitter's look for sleepers (pool::wake), and a
    // would-be sleeper's registration before its look here (work_visible): one of them sees the
    // other (docs/protocols.md, "Sleep and wake-up"). The mutex publishes the job's contents.
    m_size.store(m_size.load(std::memory_order_relaxed) + 1, std::memory_order_seq_cst);
  }

  /// Under the mutex: the root level to take from (levels if no root is queued); the normal
  /// level is non-empty if `local_normal`.
  std::size_t pick_root_level(bool local_normal) noexcept {
    auto const level_empty = [&](std::size_t l) {
      return m_roots[l].empty() &&
             !(local_normal && l == static_cast<std::size_t>(priority::normal));
    };
    std::size_t top = levels;
    for (std::size_t l = 0; l < levels; ++l) {
      if (!level_empty(l)) {
        top = l;
        break;
      }
    }
    if (top == levels) {
      return levels;
    }
    if (++m_picks % starvation_period != 0) {
      return top;
    }
    // Starvation rule: this pick goes to a non-empty level below `top`, in rotation.
    std::size_t lower[levels];
    std::size_t n = 0;
    for (std::size_t l = top + 1; l < levels; ++l) {
      if (!level_empty(l)) {
        lower[n++] = l;
      }
    }
    return n == 0 ? top : lower[m_rotor++ % n];
  }

  std::mutex m_mutex;
  job *m_resumed_head = nullptr; // resumed tasks, FIFO (guarded by m_mutex)
  job *m_resumed_tail = nullptr;
  root_ring m_roots[levels];       // guarded by m_mutex
  std::uint32_t m_picks = 0;       // root picks so far (guarded by m_mutex)
  std::uint32_t m_rotor = 0;       // rotation among lower levels (guarded by m_mutex)
  std::uint32_t m_local_picks = 0; // normal picks while the local deque had work (m_mutex)
  std::atomic<std::size_t> m_size{0};
};

// A worker is its context: pool::calling_worker() turns this_context() into its worker with a
// static_cast, no lookup (it runs several times per spawn and per suspension).
struct worker : core::context {
  worker(pool *owner, std::size_t index) : core::context(owner, index, owner), random(index + 1) {}

  job_queue targeted; // jobs for this worker only (resume_on, resumes aimed at this worker)
  run_queue queued;   // resumed tasks, then roots by priority: this worker and idle thieves
  // Normal-priority roots spawned by this worker's own tasks: the owner pops the newest (depth
  // first, as a forked child), thieves steal the oldest (docs/protocols.md §9.2).
  core::deque<job *> local{64};
  // Tasks resumed by this worker's own tasks (pool::resubmit to any worker): pushed at the
  // bottom by the owner, taken from the top — oldest first — by the owner and thieves alike
  // (docs/protocols.md §9.2). Before the queues above: resumed tasks go before new roots.
  core::deque<job *> resumed{64};
  std::atomic<bool> idle{false}; // a hint for choosing where to submit roots
  std::condition_variable cv;    // with pool::m_sleep_mutex
  bool asleep = false;           // guarded by pool::m_sleep_mutex
  bool notified = false;         // guarded by pool::m_sleep_mutex
  // Roots spawned by this worker's tasks, and roots (from anywhere) finished on this worker: each
  // written only by this worker (no RMW, no shared line); pool::roots_done() compares the sums.
  alignas(64) std::atomic<std::uint64_t> roots_spawned{0};
  std::atomic<std::uint64_t> roots_finished{0};
  // Likewise the holds (tasks about to park) taken and ended on this worker (pool::hold/unhold).
  std::atomic<std::uint64_t> holds{0};
  std::atomic<std::uint64_t> unholds{0};
  std::atomic<bool> taken{false}; // a guest slot: a caller runs its root on it (run_root_here)
  // A guest slot: an empty chain a worker gave back (pool::keep_chain), for the slot's next root
  // when its own chain left with a task. Written by workers, taken by the slot's holder.
  std::atomic<core::stacklet *> returned_chain{nullptr};
  unsigned failures = 0; // consecutive rounds without work (owner only)
  bool active = false;   // counted in pool::m_active (lazy pools; owner only)
  rng random;
  std::thread thread;

  ~worker() {
    if (core::stacklet *chain = returned_chain.load(std::memory_order_acquire); chain != nullptr) {
      core::stacklet::destroy_empty_chain(chain);
    }
  }
  worker(worker const &) = delete;
  worker &operator=(worker const &) = delete;
};

} // namespace detail

namespace {
std::size_t resolve(std::size_t workers) {
  if (workers == 0) {
    workers = std::max(1u, std::thread::hardware_concurrency());
  }
  return workers;
}

pool_options pool_options_for(std::size_t workers) {
  pool_options o;
  o.workers = workers;
  return o;
}

/// After a job or a stolen continuation returns, the worker's strand has ended: every frame left
/// its stack and every continuation its deque (I1 in docs/protocols.md). Always on: once per
/// strand, not per task.
void check_strand_ended(core::context &ctx) noexcept {
  MAGPIE_CHECK(ctx.stack().empty() && ctx.tasks().empty(),
               "a worker's strand ended with frames or continuations left behind: an awaitable "
               "suspended a task without handing its stack on (see the stack protocol in "
               "docs/protocols.md), or a magpie bug: please report it");
}

/// Adds one to a counter that only the calling thread writes (or only the holder of the mutex
/// that guards it): a plain store, no read-modify-write.
void bump_own(std::atomic<std::uint64_t> &count, std::memory_order order) noexcept {
  count.store(count.load(std::memory_order_relaxed) + 1, order);
}

/// bump_own as the first half of a store–load handshake with the destructor (the caller loads
/// m_closing next; protocols §9.1): release (the counts' readers acquire) where the destructor's
/// membarrier orders the store before that load, seq_cst where it cannot.
void bump_own_then_load(std::atomic<std::uint64_t> &count) noexcept {
  core::detail::handshake_store(count, count.load(std::memory_order_relaxed) + 1,
                                std::memory_order_release);
}

constexpr unsigned spin_rounds = 64;   // failed rounds before yielding the core
constexpr unsigned yield_rounds = 256; // failed rounds before a lazy worker tries to sleep
} // namespace

core::executor::operations const pool::executor_operations = {
    [](core::executor &self) { static_cast<pool &>(self).hold(); },
    [](core::executor &self, job *j, std::size_t worker) noexcept {
      static_cast<pool &>(self).resubmit(j, worker);
    },
    [](core::executor &self) noexcept { static_cast<pool &>(self).unhold(); },
    [](core::executor const &self) noexcept { return static_cast<pool const &>(self).size(); },
    [](core::executor &self, core::stacklet *chain) noexcept {
      return static_cast<pool &>(self).keep_chain(chain);
    },
};

// Inlined into its callers (all in this file): hold, resubmit, unhold, submit_root, finish_root
// and run_stale_local each ask it once per spawn or suspension.
MAGPIE_FORCEINLINE detail::worker *pool::calling_worker() const noexcept {
  core::context *const c = core::this_context();
  // Every context whose owner is this pool is one of its workers.
  return c != nullptr && c->owner() == this ? static_cast<detail::worker *>(c) : nullptr;
}

pool::pool(std::size_t workers, idle_policy policy) : pool(pool_options_for(workers), policy) {}

pool::pool(pool_options const &options, idle_policy policy)
    : core::executor(executor_operations), m_policy(policy), m_placement(options.where) {
#if MAGPIE_PROCESS_BARRIER
  (void)core::detail::process_barrier_ready(); // before any worker: they take the light path
#endif
  // An unpinned pool needs no tree (and reads none: the machine's is read once, kept for good).
  bool const pinned = m_placement.what() != placement::kind::unpinned;
  topology const *topo =
      options.topo != nullptr ? options.topo : (pinned ? &topology::machine() : nullptr);
  std::size_t workers = options.workers;
  if (workers == 0 && pinned) {
    workers = m_placement.slots(*topo).size();
  }
  workers = resolve(workers);
  configure_placement(topo, options.victims, workers); // pool_topology.cpp: map, victim tables
  // Allocation can fail for any worker: until a thread starts, the members free themselves.
  m_workers.reserve(workers);
  for (std::size_t i = 0; i < workers; ++i) {
    m_workers.push_back(std::make_unique<detail::worker>(this, i));
  }
  if (options.callers_run_roots) {
    m_guests.reserve(workers);
    for (std::size_t k = 0; k < workers; ++k) {
      m_guests.push_back(std::make_unique<detail::worker>(this, workers + k));
    }
  }
  registry::add(*this); // diagnostics find the pool (trace::dump, tools/gdb/magpie.py)
  m_thieves.store(workers, std::memory_order_relaxed); // every worker starts as a thief
  try {
    for (auto &w : m_workers) {
      w->thread = std::thread([this, &w] {
        start(*w);
        run(*w);
      });
    }
  } catch (...) {
    // Thread k could not start (std::system_error, or std::bad_alloc for its state). No
    // destructor runs for a half-built pool: stop and join the started workers ourselves, before
    // the members they use are destroyed. Nothing was submitted, so nothing is lost.
    stop_workers();
    registry::remove(*this);
    throw;
  }
  // Every worker pins itself first: once we return, describe() and pin_error() are final.
  for (std::size_t left = m_starting.load(std::memory_order_acquire); left != 0;
       left = m_starting.load(std::memory_order_acquire)) { // acquire: the workers' pin results
    m_starting.wait(left, std::memory_order_acquire);
  }
  if (options.count_tasks) {
    count_tasks(true);
  }
}

pool::~pool() {
  MAGPIE_CHECK(!is_worker_thread(), "a magpie pool was destroyed by one of its own workers");
  {
    std::unique_lock lock(m_inflight_mutex);
    // seq_cst: new submissions now throw pool_closed; and a root's finish_root on a worker either
    // sees this store (and notifies under the mutex) or its count is seen by our predicate (§9.1).
    m_closing.store(true, std::memory_order_seq_cst);
#if MAGPIE_PROCESS_BARRIER
    // The workers' side of that handshake (holds, their ends, roots' finishes) is a plain
    // store where the process could register: this barrier on every running thread orders
    // each such store before its load of m_closing, or our store before it (§9.1, §13).
    core::detail::process_barrier();
#endif
    // Roots, submissions from tasks (resume_on) and parked tasks alike: after this wait no
    // submitter touches the pool again, and every job pushed to a queue was pushed before m_stop
    // (§5.1). Tasks parked on a primitive that never releases them keep us waiting: say so once.
    // Roots and parked tasks are counted apart (per worker, lock-free; roots from outside by their
    // submitters, under this mutex); a finish or an end of hold that sees `closing` notifies under
    // this mutex, so the predicate cannot miss it. Parked tasks first, then roots (§7, §9.1).
    auto const drained = [&] { return m_inflight == 0 && holds_pending() == 0 && roots_done(); };
    if (!m_inflight_cv.wait_for(lock, std::chrono::seconds(1), drained)) {
      if (std::size_t const parked = holds_pending(); parked != 0) {
        std::fprintf(stderr,
                     "magpie: a pool's destructor is waiting for %zu suspended task(s): they wait "
                     "on something (an event, a mutex, a future ...) that has not released them; "
                     "destroying that primitive resumes them with magpie::abandoned_wait\n",
                     parked);
      }
      m_inflight_cv.wait(lock, drained);
    }
  }
  stop_workers();
  registry::remove(*this);
}

void pool::stop_workers() noexcept {
  m_stop.store(true,
               std::memory_order_seq_cst); // read by workers; sleepers re-check under the lock
  {
    std::lock_guard lock(m_sleep_mutex); // a sleeper checks m_stop under this lock
    for (auto &w : m_workers) {
      w->notified = true;
      w->cv.notify_one();
    }
  }
  for (auto &w : m_workers) {
    if (w->thread.joinable()) { // a failed constructor started only some
      w->thread.join();
    }
  }
}

std::size_t pool::size() const noexcept { return m_workers.size(); }

core::context const &pool::worker_context(std::size_t i) const noexcept {
  MAGPIE_CHECK(i < m_workers.size() + m_guests.size(), "pool::worker_context: no such worker");
  return i < m_workers.size() ? *m_workers[i] : *m_guests[i - m_workers.size()];
}

std::size_t pool::in_flight() const noexcept {
  std::lock_guard lock(m_inflight_mutex);
  return m_inflight + holds_pending() + roots_pending();
}

std::vector<core::worker_stats> pool::stats() const {
  std::vector<core::worker_stats> out;
  out.reserve(m_workers.size() + m_guests.size());
  for (auto const &w : m_workers) {
    out.push_back(w->stats());
  }
  for (auto const &g : m_guests) {
    out.push_back(g->stats());
  }
  return out;
}

core::observer *pool::exchange_observer_locked(core::observer *o) noexcept {
  MAGPIE_CHECK(!is_worker_thread(), "a pool's observer was changed from one of its own workers: "
                                    "it would wait for itself to leave the observer");
  // Callers submit their roots from now on, so that the observer sees them run (guests are never
  // observed). A guest that began before this store runs its root unobserved, as a root that
  // began on a worker before the observer was installed is partly unobserved.
  m_observed.store(o != nullptr, std::memory_order_release);
  for (auto &w : m_workers) {
    (void)w->exchange_observer(o); // waits until the worker is out of the previous one
  }
  return std::exchange(m_observer, o);
}

core::observer *pool::exchange_observer(core::observer *o) noexcept {
  std::lock_guard lock(m_observer_mutex);
  return exchange_observer_locked(o);
}

bool pool::replace_observer(core::observer *expected, core::observer *o) noexcept {
  std::lock_guard lock(m_observer_mutex);
  if (m_observer != expected) {
    return false;
  }
  (void)exchange_observer_locked(o);
  return true;
}

void pool::count_tasks(bool on) {
  core::observer *const counting = &core::counting_observer();
  std::lock_guard lock(m_observer_mutex);
  if (m_observer != nullptr && m_observer != counting) {
    throw std::logic_error("magpie: pool::count_tasks while a trace session observes the pool");
  }
  (void)exchange_observer_locked(on ? counting : nullptr);
}

bool pool::counting_tasks() const noexcept {
  std::lock_guard lock(m_observer_mutex);
  return m_observer != nullptr;
}

std::size_t pool::choose_worker() noexcept {
  std::size_t const n = m_workers.size();
  if (n == 1) {
    return 0;
  }
  // Where the search starts rotates per submitting thread: a shared counter would be one more
  // cache line that every submission takes from the others.
  thread_local std::size_t rotor = 0;
  std::size_t const start = rotor++ % n;
  if (long const near = submitter_worker(); near >= 0) {
    // Pinned workers: the submitter's own worker or the nearest idle one (topology.cpp).
    auto const self = static_cast<std::size_t>(near);
    if (m_workers[self]->idle.exchange(false, std::memory_order_relaxed)) { // a hint: no edge
      return self;
    }
    for (std::size_t i : m_victims->nearest(self)) {
      if (m_workers[i]->idle.exchange(false, std::memory_order_relaxed)) { // a hint: no edge
        return i;
      }
    }
    return start;
  }
  for (std::size_t k = 0; k < n; ++k) {
    std::size_t const i = (start + k) % n;
    // A hint only; claiming it (exchange) steers the next submitter elsewhere.
    if (m_workers[i]->idle.exchange(false, std::memory_order_relaxed)) {
      return i;
    }
  }
  return start; // all busy: any will do, and idle thieves take roots from busy workers
}

void pool::open_submission() {
  std::lock_guard lock(m_inflight_mutex);
  if (m_closing.load(std::memory_order_relaxed)) { // written under this mutex
    throw pool_closed();
  }
  ++m_inflight;
}

void pool::close_submission() noexcept {
  std::lock_guard lock(m_inflight_mutex);
  if (--m_inflight == 0) {
    m_inflight_cv.notify_all(); // under the lock: the destructor cannot free the cv before this
  }
}

MAGPIE_FORCEINLINE void pool::unhold_on(detail::worker &own) noexcept {
  // On our worker the pool outlives this call (its destructor joins us): count without the
  // mutex (one writer: a plain store), then notify under it if the destructor waits. A handshake
  // as in hold() (the destructor's predicate sees the count, or we see closing).
  bump_own_then_load(own.unholds);
  if (m_closing.load(std::memory_order_seq_cst)) [[unlikely]] { // seq_cst: the handshake's load
    std::lock_guard lock(m_inflight_mutex);
    m_inflight_cv.notify_all();
  }
}

void pool::hold() {
  detail::worker *const own = calling_worker();
  if (own == nullptr) {
    // Off our workers: under the mutex, as the destructor's predicate (which thus sees it or has
    // already decided).
    std::lock_guard lock(m_inflight_mutex);
    if (m_closing.load(std::memory_order_relaxed) && m_inflight == 0 && // under this mutex
        holds_pending() == 0 && roots_done()) {
      throw pool_closed(); // the destructor saw nothing in flight: it may be past its wait
    }
    m_foreign_holds.fetch_add(1, std::memory_order_seq_cst); // seq_cst: as below
    return;
  }
  // One writer: a plain store. A handshake with the destructor's store of m_closing: either its
  // predicate sees this hold, or we see closing and decide under the mutex (§9.1).
  bump_own_then_load(own->holds);
  if (!m_closing.load(std::memory_order_seq_cst)) [[likely]] { // seq_cst: the handshake's load
    return;
  }
  std::lock_guard lock(m_inflight_mutex);
  // While anything else is in flight the destructor is still waiting, so our hold is safe; if
  // ours is all there is, it may have decided before our store: take it back and refuse.
  if (m_inflight == 0 && holds_pending() == 1 && roots_done()) {
    bump_own(own->unholds, std::memory_order_seq_cst); // seq_cst: as above
    m_inflight_cv.notify_all(); // under the lock; the destructor may have seen our hold
    throw pool_closed();
  }
}

void pool::resubmit(job *j, std::size_t worker) noexcept {
  std::size_t const n = m_workers.size();
  MAGPIE_CHECK(worker == core::ext::any_worker || worker < n + m_guests.size(),
               "a suspended task was resumed on a worker index its pool does not have");
  if (worker >= n) {
    worker = core::ext::any_worker; // a guest runs only its own root's strand: any worker will do
  }
  if (worker == core::ext::any_worker) {
#if !MAGPIE_ASYMMETRIC_FENCES // (a steal there pays a heavy fence: keep this path for pops)
    if (detail::worker *const own = calling_worker(); own != nullptr && !is_guest(*own)) {
      // A task of ours resumed it: keep it on our worker, lock-free, without a wake-up (we are
      // active, so a thief is awake: §6); idle thieves take it if we stay busy. The push cannot
      // fail once room is reserved; if reserving fails (no memory), use the locked queue below.
      bool reserved = true;
      try {
        own->resumed.reserve_one();
      } catch (...) {
        reserved = false;
      }
      if (reserved) {
        own->resumed.push_reserved(j); // release: publishes the job to a thief (as a fork's push)
        unhold_on(*own);               // on our worker: the pool outlives this call
        return;
      }
    }
#endif
    worker = choose_worker();
    m_workers[worker]->queued.push_resumed(j); // seq_cst: before the sleepers check in wake()
  } else {
    m_workers[worker]->targeted.push(j); // seq_cst: as above
  }
  // From here on `j` may be running and its task gone: touch only the pool, which our hold keeps
  // alive (as in submit_to).
  wake(worker);
  unhold(); // point of no return: the destructor may free the pool after this
}

void pool::unhold() noexcept {
  if (detail::worker *const own = calling_worker()) {
    unhold_on(*own);
    return;
  }
  // Elsewhere (a plain thread resuming a task): under the mutex, because once the destructor
  // sees the count it may free the pool; it cannot before we unlock.
  std::lock_guard lock(m_inflight_mutex);
  m_foreign_unholds.fetch_add(1, std::memory_order_seq_cst); // seq_cst: as above
  m_inflight_cv.notify_all(); // under the lock: the destructor cannot free the cv before this
}

std::size_t pool::pending(std::atomic<std::uint64_t> const *foreign_ends,
                          std::atomic<std::uint64_t> detail::worker::*ends,
                          std::atomic<std::uint64_t> const *foreign_starts,
                          std::atomic<std::uint64_t> detail::worker::*starts) const noexcept {
  // Ends first, then starts (docs/protocols.md §7, §9.1): every end we count was caused by a
  // start that happened before it, which the later loads see (the ends' stores are releases, our
  // loads acquires), so the starts we count are never fewer; equal sums mean none was pending
  // between the two passes. seq_cst loads: see finish_root and hold.
  // Guests count on their slots as workers do: a slot's successive holders are ordered by its
  // claim (acquire) and release (release), so each slot's counters still have one writer at a time.
  auto const sum = [&](std::atomic<std::uint64_t> detail::worker::*count) {
    std::uint64_t n = 0;
    for (auto const &w : m_workers) {
      n += ((*w).*count).load(std::memory_order_seq_cst);
    }
    for (auto const &g : m_guests) {
      n += ((*g).*count).load(std::memory_order_seq_cst);
    }
    return n;
  };
  std::uint64_t const ended = foreign_ends->load(std::memory_order_seq_cst) + sum(ends);
  std::uint64_t const started =
      (foreign_starts != nullptr ? foreign_starts->load(std::memory_order_seq_cst) : 0) +
      sum(starts);
  return static_cast<std::size_t>(started - ended);
}

std::size_t pool::holds_pending() const noexcept {
  return pending(&m_foreign_unholds, &detail::worker::unholds, &m_foreign_holds,
                 &detail::worker::holds);
}

std::size_t pool::submit_root(job *j, priority p) {
  detail::worker *const self = calling_worker();
  bool const own = self != nullptr;
  // A guest's task spawning: counted on the guest's slot, but queued on a worker (the guest runs
  // only its own root's strand) and woken there.
  bool const local = own && !is_guest(*self);
  if (own) {
    // A task of ours spawning: its own root is in flight, so the destructor is still waiting
    // and accepts this one too, even while closing (a spawned task that spawns more is waited
    // for). Counted on our worker's own counter (one writer: a plain store). release: a reader
    // that sees a finish caused by this root (through the job's hand-off) sees this count too.
    bump_own(self->roots_spawned, std::memory_order_release);
  } else {
    // Counted in flight until finish_root(), after the root has completed. Under the mutex: once
    // closing, a submission from elsewhere is refused, and the destructor's predicate (under it)
    // sees every count made before. One writer at a time: a plain store. The worker that finishes
    // the root counts that on its own counter, not here: this line stays with the submitters.
    std::lock_guard lock(m_inflight_mutex);
    if (m_closing.load(std::memory_order_relaxed)) { // written under this mutex
      throw pool_closed();
    }
    bump_own(m_foreign_roots, std::memory_order_seq_cst); // seq_cst: as the workers' (§9.1)
  }
  // A task spawning keeps the job local (thieves take it if we stay busy), and wakes nobody:
  // while we run tasks at least one thief is awake (docs/protocols.md §6). At normal priority it
  // goes to the worker's local deque (lock-free; newest first for the owner, oldest first for
  // thieves), as a forked child's continuation would (§9.2).
  std::size_t const index = local ? self->index() : choose_worker();
  try {
    if (local && p == priority::normal) {
      self->local.push(j); // release: publishes the job to a thief (as a fork's push)
      return local_queue;
    }
    m_workers[index]->queued.push_root(j, p); // seq_cst: before the sleepers check in wake()
  } catch (...) {
    finish_root(); // nothing was queued
    throw;
  }
  if (!local) {
    wake(index);
  }
  return index;
}

bool pool::withdraw_root(job *j, std::size_t worker, priority p) noexcept {
  if (worker == local_queue) {
    return false; // a deque cannot give up an item in the middle: see run_stale_local
  }
  return m_workers[worker]->queued.withdraw(j, p);
}

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

void pool::finish_root() noexcept {
  if (detail::worker *const own = calling_worker()) {
    // One writer per counter: a plain store. A handshake: with the load of m_closing below and
    // the destructor's store of it and its loads of the counts, either we see closing (and
    // notify), or the destructor's predicate sees this count. Also a release of the root's work.
    bump_own_then_load(own->roots_finished);
  } else {
    // A root that ended elsewhere (moved to another pool by resume_on; a sync_wait's, ended by
    // its waiting thread): a shared counter, under the mutex, because once the destructor sees it
    // it may free the pool (on our own worker it cannot: its destructor joins us first).
    std::lock_guard lock(m_inflight_mutex);
    m_foreign_finished.fetch_add(1, std::memory_order_seq_cst); // seq_cst: as above
    m_inflight_cv.notify_all(); // under the lock: the destructor cannot free the cv before this
    return;
  }
  if (m_closing.load(std::memory_order_seq_cst)) { // seq_cst: see above
    std::lock_guard lock(m_inflight_mutex); // the destructor checks the counts under this mutex
    m_inflight_cv.notify_all(); // under the lock: the destructor cannot free the cv before this
  }
}

bool pool::roots_done() const noexcept { return roots_pending() == 0; }

std::size_t pool::roots_pending() const noexcept {
  // Roots from outside are counted by their submitters (under the mutex), the others by the
  // workers whose tasks spawned them; all end on the finishing worker's count.
  return pending(&m_foreign_finished, &detail::worker::roots_finished, &m_foreign_roots,
                 &detail::worker::roots_spawned);
}

std::uint64_t pool::roots_submitted() const noexcept {
  std::uint64_t n = m_foreign_roots.load(std::memory_order_relaxed); // a statistic: no edge
  for (auto const &w : m_workers) {
    n += w->roots_spawned.load(std::memory_order_relaxed); // a statistic: no edge
  }
  for (auto const &g : m_guests) {
    n += g->roots_spawned.load(std::memory_order_relaxed); // a statistic: no edge
  }
  return n;
}

void pool::submit_to(std::size_t index, job *j) noexcept {
  m_workers[index]->targeted.push(j); // seq_cst: before the sleepers check in wake()
  // From here on `j` may be running, even finished, and its task's frame gone: touch only the
  // pool, which our open submission keeps alive (docs/protocols.md §5.1).
  wake(index);
  // Point of no return: once the count drops, the destructor may free the pool. The mutex orders
  // our push and wake before the destructor's m_stop store and its frees.
  close_submission();
}

void pool::wake(std::size_t index) noexcept {
  // seq_cst: either a would-be sleeper registered before this load (and we notify it under the
  // lock), or its registration comes later and its re-check under the lock sees our push.
  if (m_sleepers.load(std::memory_order_seq_cst) == 0) {
    return;
  }
  std::lock_guard lock(m_sleep_mutex);
  detail::worker &w = *m_workers[index];
  if (w.asleep && !w.notified) {
    w.notified = true;
    w.cv.notify_one();
  }
}

void pool::wake_one() noexcept {
  if (m_sleepers.load(std::memory_order_seq_cst) == 0) { // seq_cst: as in wake()
    return;
  }
  std::lock_guard lock(m_sleep_mutex);
  for (auto &w : m_workers) {
    if (w->asleep && !w->notified) {
      w->notified = true;
      w->cv.notify_one();
      return;
    }
  }
}

void pool::become_active() noexcept {
  if (m_policy != idle_policy::lazy) {
    return;
  }
  // seq_cst on both counters: a thief deciding whether it may sleep reads them in the same total
  // order, so it either sees us active or sees that we were not the last thief.
  m_active.fetch_add(1, std::memory_order_seq_cst);
  if (m_thieves.fetch_sub(1, std::memory_order_seq_cst) == 1) { // seq_cst: see above
    wake_one(); // we were the last thief, and now we make stealable work: wake a replacement
  }
}

void pool::become_thief() noexcept {
  if (m_policy != idle_policy::lazy) {
    return;
  }
  m_thieves.fetch_add(1, std::memory_order_seq_cst); // thief first: never a moment with work and
  m_active.fetch_sub(1, std::memory_order_seq_cst);  // no thief on our account
}

void pool::activate(detail::worker &w) noexcept {
  w.idle.store(false, std::memory_order_relaxed); // a hint for choose_worker(): no edge
  if (!w.active) {
    w.active = true;
    become_active();
  }
}

void pool::deactivate(detail::worker &w) noexcept {
  if (w.active) {
    w.active = false;
    become_thief();
  }
}

void pool::run_batch(detail::worker &w, job *j) {
  activate(w);
  while (j != nullptr) {
    job *next = j->m_next; // read first: running a job may end its storage's lifetime
    w.bump(core::counter::jobs);
    j->m_run(j, w);
    w.observe(core::event::strand_end);
    check_strand_ended(w);
    j = next;
  }
}

bool pool::run_jobs(detail::worker &w) {
  if (job *targeted_jobs = w.targeted.take_all()) {
    run_batch(w, targeted_jobs);
    return true;
  }
  return run_queued(w, w);
}

bool pool::run_queued(detail::worker &w, detail::worker &from) {
  if (!from.resumed.empty()) {
    if (auto const taken = from.resumed.steal()) { // the oldest, by the owner or a thief
      run_batch(w, taken.value);
      return true;
    }
  }
  bool take_local = false;
  // one job: the rest stay where idle thieves can take them
  job *j = from.queued.pop(!from.local.empty(), &take_local);
  if (take_local) {
    if (&w == &from) {
      auto const popped = w.local.pop(); // the newest: depth first
      j = popped.ok ? popped.value : nullptr;
    } else {
      auto const stolen = from.local.steal(); // the oldest, as a continuation is stolen
      j = stolen ? stolen.value : nullptr;
    }
  }
  if (j == nullptr) {
    return false;
  }
  run_batch(w, j);
  return true;
}

bool pool::try_steal(detail::worker &w) {
  std::size_t const n = m_workers.size();
  // While callers run roots here, every other attempt goes to a guest slot (a free slot's deque
  // is empty: the attempt fails at once). A guest has no queues: its jobs all went to workers.
  // relaxed: a hint; a guest's continuation is also seen by work_visible (seq_cst) before a
  // thief sleeps, and the last thief stays awake while the guest counts as active (§6).
  if (n < 2) {
    return false; // (a one-worker pool does not steal from its guests: run_root_here)
  }
  bool const guests = m_guests_running.load(std::memory_order_relaxed) != 0;
  std::uint64_t const bits = (std::uint64_t{w.random()} << 32) | w.random();
  if (guests && (bits & 1u) != 0) {
    std::size_t const k = static_cast<std::size_t>(bits >> 33) % m_guests.size();
    return steal_from(w, *m_guests[k], n + k);
  }
  std::size_t const victim = m_victims->pick(w.index(), bits); // the pool's victim policy
  return steal_from(w, *m_workers[victim], victim);
}

bool pool::steal_from(detail::worker &w, detail::worker &v, std::size_t victim) {
  auto stolen = v.thief().steal();
  if (!stolen) {
    if (stolen.status == core::steal_status::empty && !is_guest(v) && run_queued(w, v)) {
      return true; // the victim is busy with something else: we run its queued work
    }
    w.bump(core::counter::steal_fails);
    return false;
  }
  activate(w);
  w.bump(core::counter::steals);
  w.observe(core::event::steal, victim);
  // The steal's acquire made the frame's state ours; we are now its only runner.
  core::ext::resume_stolen(stolen.value, w);
  w.observe(core::event::strand_end);
  check_strand_ended(w);
  return true;
}

bool pool::work_visible(detail::worker const &w) const noexcept {
  if (!w.targeted.empty()) {
    return true;
  }
  for (auto const &other : m_workers) {
    // seq_cst loads: hints, but fresh ones (see protocols §6)
    if (!other->tasks().empty() || !other->queued.empty() || !other->local.empty() ||
        !other->resumed.empty()) {
      return true;
    }
  }
  for (auto const &guest : m_guests) {
    if (!guest->tasks().empty()) { // seq_cst: as above (a guest has nothing else to take)
      return true;
    }
  }
  return false;
}

bool pool::is_guest(detail::worker const &w) const noexcept {
  return w.index() >= m_workers.size();
}

detail::worker *pool::claim_guest() noexcept {
  std::size_t const g = m_guests.size();
  // Each thread starts at a slot of its own choosing: concurrent callers rarely collide.
  thread_local std::size_t hint = 0;
  for (std::size_t k = 0; k < g; ++k) {
    detail::worker &slot = *m_guests[(hint + k) % g];
    // acquire: what the slot's previous holder wrote (its counters, stack, deque) is ours now
    if (!slot.taken.load(std::memory_order_relaxed) &&
        !slot.taken.exchange(true, std::memory_order_acquire)) {
      hint = (hint + k) % g;
      return &slot;
    }
  }
  return nullptr;
}

bool pool::keep_chain(core::stacklet *chain) noexcept {
  // A guest slot's chain leaves with its root (a join, a wait, resume_on) and ends up on a worker,
  // which then has one chain too many: it comes back here. At most one chain waits per slot.
  if (chain->capacity() < core::stack::initial_capacity) {
    return false; // a parked task's small chain: a root would outgrow it at once
  }
  for (auto const &guest : m_guests) {
    core::stacklet *expected = nullptr;
    // release: the chain's fields (its saved top, its cached successor) go with it
    if (guest->returned_chain.load(std::memory_order_relaxed) == nullptr &&
        guest->returned_chain.compare_exchange_strong(expected, chain, std::memory_order_release,
                                                      std::memory_order_relaxed)) {
      return true;
    }
  }
  return false;
}

bool pool::run_root_here(job *j) {
  if (m_guests.empty() || m_observed.load(std::memory_order_acquire) || is_worker_thread()) {
    return false; // (sync_wait refuses the last case before it gets here)
  }
  detail::worker *const g = claim_guest();
  if (g == nullptr) {
    return false; // every slot is in use: the root goes to a worker
  }
  if (!g->stack().has_chain()) {
    // The slot's last root left with its chain (a join, a wait, resume_on): take the one a worker
    // gave back (acquire: its fields, from that worker), else a fresh full-sized one. (Not the
    // small first stacklet a worker starts after a park: roots are fork-join work, and a chain
    // that grows on every visit would allocate on every visit.)
    if (core::stacklet *chain = g->returned_chain.exchange(nullptr, std::memory_order_acquire);
        chain != nullptr) {
      g->adopt_stack(chain);
    } else {
      try {
        g->stack().ensure();
      } catch (...) {
        g->taken.store(false, std::memory_order_release);
        throw;
      }
    }
  }
  {
    // In flight exactly as a root submitted from outside (submit_root): refused once closing,
    // seen by the destructor's predicate otherwise; finish_root ends it.
    std::lock_guard lock(m_inflight_mutex);
    if (m_closing.load(std::memory_order_relaxed)) { // written under this mutex
      g->taken.store(false, std::memory_order_release);
      throw pool_closed();
    }
    bump_own(m_foreign_roots, std::memory_order_seq_cst); // seq_cst: as the workers' (§9.1)
  }
  // On a pool of two or more workers thieves look at the guests from now on, and the guest counts
  // as active (a lazy pool keeps a thief awake while it runs, §5.2 and §6): if no thief is awake,
  // wake one to take our continuations. A one-worker pool leaves the guest's work to the guest:
  // it runs its root in the serial order, as the pool's one worker would, and its worker stays
  // free for spawned and resumed tasks.
  bool const shared = m_workers.size() >= 2;
  if (shared) {
    m_guests_running.fetch_add(1, std::memory_order_seq_cst);
    if (m_policy == idle_policy::lazy) {
      m_active.fetch_add(1, std::memory_order_seq_cst); // seq_cst: the counters' total order (§6)
      if (m_thieves.load(std::memory_order_seq_cst) == 0) {
        wake_one();
      }
    }
  }
  core::context *const previous = core::set_this_context(g);
  g->bump(core::counter::jobs);
  j->m_run(j, *g); // returns when the root's strand ends here (it completed or waits elsewhere)
  check_strand_ended(*g);
  core::set_this_context(previous);
  if (shared) {
    if (m_policy == idle_policy::lazy) {
      m_active.fetch_sub(1, std::memory_order_seq_cst);
    }
    m_guests_running.fetch_sub(1, std::memory_order_relaxed); // a hint for thieves
  }
  g->taken.store(false, std::memory_order_release); // release: the next holder sees our writes
  return true;
}

void pool::idle(detail::worker &w) {
  // A hint for choose_worker() (no edge), written once rather than every round: submitters read
  // its line.
  if (!w.idle.load(std::memory_order_relaxed)) {
    w.idle.store(true, std::memory_order_relaxed);
  }
  ++w.failures;
  if (w.failures < spin_rounds) {
    core::detail::cpu_pause();
    return;
  }
  if (m_policy == idle_policy::busy || w.failures < yield_rounds) {
    std::this_thread::yield();
    return;
  }
  w.failures = 0;
  // Leave the thieves. If we were the last one while some worker runs tasks, stay: that worker's
  // deque may fill, and nobody else would look.
  if (m_thieves.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
      m_active.load(std::memory_order_seq_cst) > 0) {  // seq_cst: the counters' total order
    m_thieves.fetch_add(1, std::memory_order_seq_cst); // back to being a thief
    std::this_thread::yield();
    return;
  }
  {
    std::unique_lock lock(m_sleep_mutex);
    w.asleep = true;
    w.notified = false;
    m_sleepers.fetch_add(1, std::memory_order_seq_cst); // seq_cst: pairs with wake()'s load
    // Re-check after registering. Sleep only if no job is queued for us, no deque holds work, we
    // are not stopping, and we are not needed as the last thief.
    bool const needed = m_thieves.load(std::memory_order_seq_cst) == 0 &&
                        m_active.load(std::memory_order_seq_cst) > 0; // seq_cst: see protocols §6
    if (!needed && !work_visible(w) && !m_stop.load(std::memory_order_seq_cst)) { // under the lock
      w.bump(core::counter::sleeps);
      w.observe(core::event::sleep);
      // relaxed m_stop: the destructor sets it before taking this lock to notify us
      w.cv.wait(lock, [&] { return w.notified || m_stop.load(std::memory_order_relaxed); });
      if (w.notified) {
        w.bump(core::counter::wakes);
      }
      w.observe(core::event::wake);
    }
    w.asleep = false;
    m_sleepers.fetch_sub(1, std::memory_order_seq_cst); // awake again: wakers may skip us
  }
  m_thieves.fetch_add(1, std::memory_order_seq_cst); // a thief again (protocols §6)
}

void pool::start(detail::worker &w) noexcept {
  std::size_t const i = w.index();
  if (m_worker_cpu[i] >= 0) {
    m_pin_error[i] = pin_this_thread(static_cast<unsigned>(m_worker_cpu[i]));
  }
  // The stack is first touched here, on the worker's thread (and node, once pinned): see
  // docs/topology.md for stacks handed to other workers at a join.
  (void)w.renew_stack_here();
  // release: publishes m_pin_error[i] to the constructor's acquire
  if (m_starting.fetch_sub(1, std::memory_order_release) == 1) {
    m_starting.notify_all();
  }
}

void pool::run(detail::worker &w) {
  core::set_this_context(&w);
  for (;;) {
    if (run_jobs(w) || try_steal(w)) {
      w.failures = 0;
      continue; // still active: a worker that finds work job after job stays counted as one
    }
    deactivate(w); // a thief again: from here on we look for work (docs/protocols.md §6)
    if (m_stop.load(std::memory_order_acquire)) { // acquire: pairs with the destructor's store
      // Every submission to this pool was pushed before m_stop was stored (the destructor waited
      // for them under m_inflight_mutex), so this look sees every job still queued for us, even
      // one that the look at the top of the loop missed (docs/protocols.md §5.1).
      if (run_jobs(w)) {
        continue;
      }
      break;
    }
    idle(w);
  }
  core::set_this_context(nullptr);
}

busy_pool::busy_pool(std::size_t workers) : pool(workers, idle_policy::busy) {}
lazy_pool::lazy_pool(std::size_t workers) : pool(workers, idle_policy::lazy) {}
busy_pool::busy_pool(pool_options const &options) : pool(options, idle_policy::busy) {}
lazy_pool::lazy_pool(pool_options const &options) : pool(options, idle_policy::lazy) {}

} // namespace magpie::sched
