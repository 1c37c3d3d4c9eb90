#pragma once
// magpie/sync/detail/spawned.hpp — what futures, task groups and counters share: a task started
// as a root job on a pool, whose state (the callable and its decay-copied arguments, the anchor
// of its result) lives on the heap, reference-counted between the pool's job and the reader.
//
// Life of a spawned task (docs/protocols.md §9.1):
//   1. spawn: the state is allocated with two references (the job's, the reader's), the callable
//      and the arguments are decay-copied into it, and the job is submitted as a root
//      (pool::submit_root counts it in flight).
//   2. claim: whoever first moves `m_claim` away from `unclaimed` runs the task — the pool's
//      worker running the job (`started`: the task starts as a root), or a task of the same pool
//      that awaits the future before the job ran (`helped`: the task runs as its called child,
//      on the waiting worker, at once), or a plain thread reading the future (`helped` too: the
//      task runs as a root on a guest slot of the pool, help_from_thread). The loser does nothing
//      (the job just drops its reference).
//   3. complete (exactly once, by the runner): the callable and the arguments are destroyed, the
//      kind-specific `finished()` publishes the result (a future) or counts down (a group), then
//      pool::finish_root ends the in-flight count.
//   4. release: the last reference frees the state; an exception nobody read is reported to the
//      unobserved-exception handler first (never lost silently).

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <mutex>
#include <new>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

#include "magpie/core/config.hpp"
#include "magpie/core/context.hpp"
#include "magpie/core/ext.hpp"
#include "magpie/core/fork.hpp"
#include "magpie/core/frame.hpp"
#include "magpie/core/task.hpp"
#include "magpie/sched/pool.hpp"

namespace magpie::sync {

/// Called with an exception that a spawned task threw and that nobody will ever read: its future
/// was destroyed unread (before or after the task finished), a counter's task threw, or a
/// task_group was destroyed holding an exception that no wait() rethrew. Must not throw. Runs on
/// the thread that drops the last reference (a worker, or the thread destroying the future).
using unobserved_exception_handler = void (*)(std::exception_ptr) noexcept;

namespace detail {

/// The default handler: one line on stderr with the exception's what().
inline void print_unobserved(std::exception_ptr e) noexcept {
  try {
    std::rethrow_exception(std::move(e));
  } catch (std::exception const &x) {
    std::fprintf(stderr, "magpie: a spawned task's exception was never read: %s\n", x.what());
  } catch (...) {
    std::fprintf(stderr, "magpie: a spawned task's exception was never read (not a "
                         "std::exception)\n");
  }
}

inline std::atomic<unobserved_exception_handler> unobserved_handler{&print_unobserved};

inline void report_unobserved(std::exception_ptr e) noexcept {
  // acquire: pairs with set_unobserved_exception_handler's release (the handler's own state).
  unobserved_handler.load(std::memory_order_acquire)(std::move(e));
}

} // namespace detail

/// Replaces the handler of unread exceptions (see unobserved_exception_handler) and returns the
/// previous one. Null restores the default, which prints the exception's what() to stderr. Any
/// thread; a report already running may still use the old handler.
inline unobserved_exception_handler
set_unobserved_exception_handler(unobserved_exception_handler h) noexcept {
  // acq_rel: release publishes the new handler's state to reporters; acquire returns the old one.
  return detail::unobserved_handler.exchange(h != nullptr ? h : &detail::print_unobserved,
                                             std::memory_order_acq_rel);
}

namespace detail {

/// `std::ref(x)` passes `x` by reference; everything else is decay-copied (as std::thread does).
template <typename A>
using stored_t = std::decay_t<A>;
template <typename S>
struct passed {
  using type = S &&;
};
template <typename T>
struct passed<std::reference_wrapper<T>> {
  using type = T &;
};
/// How a stored argument reaches the task: a moved copy, or the referent of a reference_wrapper.
template <typename S>
using passed_t = typename passed<S>::type;

template <typename S>
passed_t<S> pass(S &s) noexcept {
  if constexpr (std::is_same_v<passed_t<S>, S &&>) {
    return std::move(s);
  } else {
    return s.get();
  }
}

template <typename T>
inline constexpr bool dependent_false_v = false;

/// The compile-time checks of spawn(fn, args...), each with what to do.
template <typename Fn, typename... Args>
consteval bool check_spawnable() {
  using F = stored_t<Fn>;
  if constexpr (!std::is_constructible_v<F, Fn> ||
                !(std::is_constructible_v<stored_t<Args>, Args> && ...)) {
    static_assert(dependent_false_v<Fn>,
                  "magpie::spawn: the callable and the arguments are copied into the task's state "
                  "(as std::thread does): pass std::move(x) for a move-only object, or std::ref(x) "
                  "to pass a reference (which must then outlive the task)");
  } else if constexpr (!std::is_invocable_v<F &&, passed_t<stored_t<Args>>...>) {
    static_assert(dependent_false_v<Fn>,
                  "magpie::spawn: fn cannot be called with these arguments once they are "
                  "decay-copied (a non-const lvalue reference parameter needs std::ref(x)); check "
                  "their number and types against fn's parameters");
  } else if constexpr (!core::async_function<F &&, passed_t<stored_t<Args>>...>) {
    static_assert(dependent_false_v<Fn>,
                  "magpie::spawn: fn must be an async function (a coroutine returning "
                  "magpie::task<T>); to run a plain function, wrap it in one");
  } else {
    using T = core::async_result_t<F &&, passed_t<stored_t<Args>>...>;
    static_assert(std::is_void_v<T> || (std::default_initializable<T> && std::movable<T>),
                  "magpie::spawn: the task's value type must be default-constructible and "
                  "movable (the task assigns its result into the state; the reader moves it out)");
  }
  return true;
}

template <typename Fn, typename... Args>
using spawn_result_t = core::async_result_t<stored_t<Fn> &&, passed_t<stored_t<Args>>...>;

/// Where spawned states come from: a small cache per thread of freed blocks by size class, over
/// the global operator new/delete. A spawned state is typically allocated on one worker and freed
/// on another (where the task or its reader finished); with glibc's malloc every such free goes
/// back to the allocating thread's arena under its lock, and two workers spawning and finishing
/// each other's tasks contended on it (skynet with a task group, 2 workers: a third of the run in
/// futex calls). Here a block freed on a thread is reused by that thread's next spawn. Size
/// classes are 24, 40, 56 … bytes: 64-bit glibc hands out chunks of 16·k bytes holding 16·k − 8,
/// so a block of a class fills its chunk exactly (with 64-byte classes a 184-byte future state
/// took a 192-byte block in a 208-byte chunk; now a 184-byte block in a 192-byte chunk). Bounded:
/// at most `cap_bytes` of blocks per class and thread; a thread's blocks are freed when it exits.
///
/// When one thread spawns and others finish (a plain thread or a caller's root filling a task
/// group that the workers run), the spawner's cache runs dry and the finishers' fill up. A
/// finisher whose cache of a class is full hands `batch` blocks to a process-wide *depot* of that
/// class (one lock per `batch` frees), and a spawner whose cache is empty takes a batch from it
/// (one lock per `batch` spawns), instead of a malloc and a free of another thread's chunk per
/// task (which contended on glibc's arena lock: futex waits on both sides). The depot keeps at
/// most `depot_bytes` per class; beyond that, and for larger states, plain new/delete. Off under
/// AddressSanitizer, which must see every allocation to find use-after-free.
class state_cache {
public:
  static constexpr std::size_t classes = 32; ///< blocks of 24 … 520 bytes
  /// Bytes of free blocks kept per class and thread (≤ 3 MiB in all).
  static constexpr std::size_t cap_bytes = std::size_t{96} * 1024;
  /// Blocks moved between a thread's cache and the depot at once.
  static constexpr std::uint32_t batch = 32;
  /// Bytes of free blocks the depot keeps per class (process-wide).
  static constexpr std::size_t depot_bytes = std::size_t{1024} * 1024;

  /// The bytes of a block of class `c`.
  static constexpr std::size_t block_bytes(std::size_t c) noexcept { return 16 * c + 24; }
  /// The smallest class whose blocks hold `n` bytes (classes and beyond: too large to cache).
  static constexpr std::size_t class_of(std::size_t n) noexcept {
    return n <= 24 ? 0 : (n - 9) / 16;
  }
  /// How many free blocks of class `c` a thread keeps.
  static constexpr std::uint32_t cap(std::size_t c) noexcept {
    return static_cast<std::uint32_t>(cap_bytes / block_bytes(c));
  }

  static void *allocate(std::size_t n) {
    if constexpr (enabled) {
      std::size_t const c = class_of(n);
      if (c < classes) {
        lists &l = local();
        if (l.head[c] == nullptr && !l.dead) {
          l.count[c] = depot_of(c).take(l.head[c]); // a batch of blocks other threads freed
        }
        if (node *b = l.head[c]) {
          l.head[c] = b->next;
          --l.count[c];
          return b;
        }
        return ::operator new(block_bytes(c));
      }
    }
    return ::operator new(n);
  }

  static void deallocate(void *p, std::size_t n) noexcept {
    if constexpr (enabled) {
      std::size_t const c = class_of(n);
      if (c < classes) {
        lists &l = local();
        if (!l.dead && l.count[c] >= cap(c)) {
          // Full: the newest `batch` blocks go to the depot (or are freed if it is full).
          node *first = l.head[c];
          node *last = first;
          for (std::uint32_t k = 1; k < batch; ++k) {
            last = last->next;
          }
          l.head[c] = last->next;
          l.count[c] -= batch;
          last->next = nullptr;
          depot_of(c).give(first, cap_depot(c));
        }
        if (!l.dead) {
          l.head[c] = ::new (p) node{l.head[c], nullptr};
          ++l.count[c];
          return;
        }
        ::operator delete(p);
        return;
      }
    }
    (void)n;
    ::operator delete(p); // unsized: Clang < 19 declares no sized form by default
  }

private:
  static constexpr bool enabled = !MAGPIE_UNDER_ASAN;

  struct node {
    node *next;       ///< the next block of the list (or batch)
    node *next_batch; ///< in the depot, on a batch's first block: the next batch
  };

  /// How many batches the depot keeps of class `c`.
  static constexpr std::uint32_t cap_depot(std::size_t c) noexcept {
    return static_cast<std::uint32_t>(depot_bytes / (batch * block_bytes(c)));
  }

  /// Process-wide batches of free blocks of one class, each a list of exactly `batch` blocks.
  /// Never destroyed (threads may free states during static destruction): what it holds at
  /// exit stays reachable.
  struct depot {
    std::mutex mutex;
    node *batches = nullptr; // guarded by mutex
    std::uint32_t count = 0; // batches held (guarded by mutex)

    /// Takes a batch into `head` (null if none): the number of blocks taken.
    std::uint32_t take(node *&head) noexcept {
      std::lock_guard lock(mutex);
      node *b = batches;
      if (b == nullptr) {
        return 0;
      }
      batches = b->next_batch;
      --count;
      head = b;
      return batch;
    }

    /// Keeps the batch `first` if fewer than `limit` are kept, else frees its blocks.
    void give(node *first, std::uint32_t limit) noexcept {
      {
        std::lock_guard lock(mutex);
        if (count < limit) {
          first->next_batch = batches;
          batches = first;
          ++count;
          return;
        }
      }
      while (first != nullptr) {
        node *next = first->next;
        ::operator delete(first);
        first = next;
      }
    }
  };

  static depot &depot_of(std::size_t c) noexcept {
    // Never destroyed (see depot): a union's member outlives the union's empty destructor.
    union depots {
      depots() noexcept : all{} {}
      ~depots() {}
      depot all[classes];
    };
    static depots d;
    return d.all[c];
  }
  /// Trivially destructible, so usable until the thread's very end; `reaper` empties it first.
  struct lists {
    node *head[classes];
    std::uint32_t count[classes];
    bool dead; ///< the thread is exiting: free, do not keep
  };
  struct reaper {
    ~reaper() {
      lists &l = state;
      l.dead = true;
      for (std::size_t c = 0; c < classes; ++c) {
        while (node *b = l.head[c]) {
          l.head[c] = b->next;
          ::operator delete(b);
        }
        l.count[c] = 0;
      }
    }
  };
  /// Out of line and opaque under Clang, as core::this_context(): Clang (<= 16) may cache a
  /// thread_local's address across a coroutine suspension, and spawn() runs inside tasks, which
  /// resume on other threads: a cached address would be another thread's lists.
  MAGPIE_CLANG_OPAQUE_TLS static lists &local() noexcept {
    thread_local reaper r; // registered on first use; frees the lists at thread exit
    (void)r;
    return *core::detail::opaque_address(&state);
  }
  static inline thread_local constinit lists state{};
};
static_assert(state_cache::cap(state_cache::classes - 1) >= state_cache::batch,
              "a full cache must hold a batch for the depot");
static_assert(state_cache::block_bytes(state_cache::class_of(24)) == 24 &&
              state_cache::block_bytes(state_cache::class_of(25)) == 40 &&
              state_cache::block_bytes(state_cache::class_of(184)) == 184 &&
              state_cache::block_bytes(state_cache::class_of(185)) == 200 &&
              state_cache::block_bytes(state_cache::class_of(1)) == 24);

/// The type-erased state of a spawned task. See the top of this file.
struct spawned : core::job, core::root_block {
  /// States come from the per-thread cache (see state_cache).
  static void *operator new(std::size_t n) { return state_cache::allocate(n); }
  /// Back to the freeing thread's cache (sized: a state's dynamic type is deleted through its
  /// virtual destructor, which passes its size).
  static void operator delete(void *p, std::size_t n) noexcept { state_cache::deallocate(p, n); }
  /// An over-aligned state (an argument declared alignas(64), say) bypasses the cache.
  static void *operator new(std::size_t n, std::align_val_t a) { return ::operator new(n, a); }
  /// The matching deallocation of an over-aligned state.
  static void operator delete(void *p, std::align_val_t a) noexcept { ::operator delete(p, a); }

  enum claim_state : std::uint8_t { unclaimed, started, helped };

  explicit spawned(sched::pool &p, std::uint32_t refs) noexcept : m_pool(&p), m_refs(refs) {
    m_run = &run_job;
    m_on_complete = &root_completed;
  }
  spawned(spawned const &) = delete;
  spawned &operator=(spawned const &) = delete;
  virtual ~spawned() = default;

  /// Drops one reference; the last one reports an unread exception and frees the state.
  void release() noexcept {
    // References are never added, only dropped: a count of 1 seen here is ours alone, and no
    // other owner is left to race us, so the last owner frees without a read-modify-write.
    // acquire (the load): pairs with the other owners' releases (their fetch_sub), as below.
    // acq_rel: release publishes this owner's writes (the result, the reader's take) to the last
    // owner; acquire, if we are last, makes every other owner's writes visible before the free.
    if (m_refs.load(std::memory_order_acquire) == 1 ||
        m_refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      if (has_exception()) [[unlikely]] {
        report_unobserved(take_exception());
      }
      delete this;
    }
  }

  /// A waiting task of the same pool tries to run the task itself (helping). True if it won.
  bool claim_for_help() noexcept {
    claim_state expected = unclaimed;
    // acq_rel: exactly one of the job and the helpers wins; no data is handed over by it (the
    // state's contents reached both through the submission and the future respectively).
    return m_claim.load(std::memory_order_relaxed) == unclaimed &&
           m_claim.compare_exchange_strong(expected, helped, std::memory_order_acq_rel,
                                           std::memory_order_relaxed);
  }

  /// Completion, exactly once, by whoever ran the task (see the top of this file). After
  /// `finished()` the reader may free everything but what our own reference keeps.
  void complete() noexcept {
    drop_call();
    sched::pool *const p = m_pool; // read first: finished() may let the reader go on
    finished();
    sched::detail::pool_access::finish_root(
        *p); // the pool's destructor may proceed once this returns
  }

  /// Completion by a helper that is itself the one reader (a future awaited and helped): the
  /// result is already where the reader looks and nobody else waits, so nothing is published.
  void complete_as_reader() noexcept {
    drop_call();
    sched::detail::pool_access::finish_root(*m_pool);
  }

  /// Inside the await_suspend of a task that won claim_for_help(): creates the task as a called
  /// child of `waiter` and returns its coroutine to transfer to; or, if creating it threw (an
  /// argument's move, the stack's growth), stores the exception and returns null.
  virtual std::coroutine_handle<> call_from(core::frame_base &waiter) noexcept = 0;

  /// After claim_for_help(): takes the pool's job back from its queue if it is still there (it
  /// then never runs), dropping the job's reference at once instead of when the job would run.
  /// A job on a worker's local deque cannot be taken from the middle: see drop_stale_jobs.
  void withdraw_job() noexcept {
    if (sched::detail::pool_access::withdraw_root(*m_pool, this, m_queue_worker, m_priority)) {
      release(); // the job's reference (the caller holds another: this never frees)
    }
  }

  /// On a plain thread that is about to wait for this task (a future's get() or wait()): if the
  /// task has not started, runs it here, as a guest of m_pool (pool::help_root_here), instead of
  /// waiting for a worker to wake up and take it; returns once its strand ends here (it
  /// completed, or it waits and a worker will finish it). Does nothing if the task has started,
  /// or the pool runs no guests (callers_run_roots off, an observer installed, every guest slot
  /// taken), or a guest stack cannot be had: the caller then waits as before.
  void help_from_thread() noexcept {
    if (m_claim.load(std::memory_order_relaxed) != unclaimed) { // a hint; the claim decides
      return;
    }
    struct helper : core::job {
      spawned *state = nullptr;
    };
    helper h;
    h.state = this;
    h.m_run = [](core::job *j, core::context &guest) {
      static_cast<helper *>(j)->state->start(guest);
    };
    // On the guest slot, before thieves see it: claim the task, or leave it to the worker that
    // took it. The job stays counted in flight (submit_root) and is ended by complete(); its
    // reference is dropped where it is taken back, or by run_job once it runs and finds the claim.
    auto const admit = [](core::job *j) noexcept {
      spawned &self = *static_cast<helper *>(j)->state;
      if (!self.claim_for_help()) {
        return false; // a worker started it meanwhile
      }
      self.m_on_complete = &helped_root_completed;
      self.withdraw_job();
      return true;
    };
    try {
      (void)sched::detail::pool_access::help_root_here(*m_pool, &h, admit);
    } catch (...) { // no guest stack to be had (std::bad_alloc): a worker will run the task
    }
  }

  /// On a worker of m_pool, after this helped task completed: if its job is the newest on the
  /// worker's local deque, runs it and the jobs of other helped tasks below it (each only drops
  /// its reference), so that a tree of spawn-then-await tasks keeps O(depth · fan-out) states
  /// alive, not one per task.
  void drop_stale_jobs() noexcept {
    sched::detail::pool_access::run_stale_local(*m_pool, this, &stale_job, &drop_stale_job);
  }

  sched::pool *m_pool;
  std::size_t m_queue_worker = 0; ///< where submit_root queued the job (futures only)
  sched::priority m_priority = sched::priority::normal;

protected:
  /// Creates the task on `worker`'s stack and starts it as a root anchored here.
  virtual void start(core::context &worker) noexcept = 0;
  /// Destroys the stored callable and arguments.
  virtual void drop_call() noexcept = 0;
  /// The kind-specific end: publish the result, or count down.
  virtual void finished() noexcept = 0;

private:
  /// A spawned task's job whose task has been claimed: running it only drops its reference.
  static bool stale_job(core::job const *j) noexcept {
    return j->m_run == &run_job &&
           // relaxed: a hint; run_job's CAS decides (a claimed state never becomes unclaimed)
           static_cast<spawned const *>(j)->m_claim.load(std::memory_order_relaxed) != unclaimed;
  }

  /// What run_job does for a job stale_job() found claimed (claims are never undone, so its
  /// compare-and-swap would fail): drop the job's reference.
  static void drop_stale_job(core::job *j) noexcept { static_cast<spawned *>(j)->release(); }

  static void run_job(core::job *j, core::context &worker) noexcept {
    auto *self = static_cast<spawned *>(j);
    claim_state expected = unclaimed;
    // acq_rel: as in claim_for_help.
    if (!self->m_claim.compare_exchange_strong(expected, started, std::memory_order_acq_rel,
                                               std::memory_order_relaxed)) {
      self->release(); // a waiting task ran it: nothing left to do but drop the job's reference
      return;
    }
    self->start(worker);
  }

  static void root_completed(core::root_block *b) noexcept {
    auto *self = static_cast<spawned *>(b);
    self->complete();
    self->release(); // the job's reference
  }

  /// The end of a task its reading thread ran (help_from_thread): the job's reference is not
  /// ours (the job drops it), and the reader holds its own.
  static void helped_root_completed(core::root_block *b) noexcept {
    static_cast<spawned *>(b)->complete();
  }

  std::atomic<std::uint32_t> m_refs;
  std::atomic<claim_state> m_claim{unclaimed};
};

/// The part of the state that knows the callable: `Base` (a future's state, a counted child)
/// plus the stored callable and arguments, destroyed at completion.
template <typename Base, typename Fn, typename... Args>
class spawned_call final : public Base {
public:
  using value_type = core::async_result_t<Fn &&, passed_t<Args>...>;

  template <typename F, typename... A>
  spawned_call(typename Base::init const &init, F &&fn, A &&...args) : Base(init) {
    m_call.emplace(std::forward<F>(fn), std::forward<A>(args)...); // may throw: spawn throws
  }

  std::coroutine_handle<> call_from(core::frame_base &waiter) noexcept override {
    try {
      auto bound = std::apply(
          [&](Fn &fn, Args &...args) {
            if constexpr (std::is_void_v<value_type> || !Base::keeps_value) {
              return core::call(std::move(fn), pass(args)...).magpie_bind(waiter);
            } else {
              return core::call(this->target(), std::move(fn), pass(args)...).magpie_bind(waiter);
            }
          },
          *m_call);
      return bound.await_suspend(std::noop_coroutine()); // the child's coroutine
    } catch (...) {
      this->store_exception(std::current_exception());
      return {};
    }
  }

private:
  void start(core::context &worker) noexcept override {
    core::detail::promise<value_type> *child = nullptr;
    try {
      child = std::apply(
          [&](Fn &fn, Args &...args) {
            return core::detail::create_task(std::move(fn), std::forward_as_tuple(pass(args)...));
          },
          *m_call);
    } catch (...) { // an argument's move or the stack's growth threw: the reader gets it
      this->store_exception(std::current_exception());
      this->m_on_complete(this);
      return;
    }
    if constexpr (std::is_void_v<value_type>) {
      core::ext::start_root(child, this, worker, static_cast<void *>(nullptr));
    } else if constexpr (!Base::keeps_value) {
      core::ext::start_root(child, this, worker, static_cast<value_type *>(nullptr)); // discarded
    } else {
      core::ext::start_root(child, this, worker, this->target());
    }
  }

  void drop_call() noexcept override { m_call.reset(); }

  std::optional<std::tuple<Fn, Args...>> m_call;
};

/// One reference to a spawned state, released on destruction. Move-only.
template <typename State>
class state_ref {
public:
  state_ref() noexcept = default;
  explicit state_ref(State *s) noexcept : m_state(s) {}
  state_ref(state_ref &&o) noexcept : m_state(std::exchange(o.m_state, nullptr)) {}
  state_ref &operator=(state_ref &&o) noexcept {
    if (this != &o) {
      reset();
      m_state = std::exchange(o.m_state, nullptr);
    }
    return *this;
  }
  ~state_ref() { reset(); }

  void reset() noexcept {
    if (State *s = std::exchange(m_state, nullptr)) {
      s->release();
    }
  }
  State *get() const noexcept { return m_state; }
  State *operator->() const noexcept { return m_state; }
  State &operator*() const noexcept { return *m_state; }
  explicit operator bool() const noexcept { return m_state != nullptr; }

private:
  State *m_state = nullptr;
};

/// Allocates the state of `fn(args...)` over `Base` (constructed from `init`) and submits its
/// job to `p` at priority `prio` — or, if `host` is a guest slot the calling thread holds
/// (pool::open_host), pushes it on that slot's deque. Returns the state. If anything throws (a
/// copy, the allocation, pool_closed), nothing was submitted and nothing leaks.
template <typename Base, typename Fn, typename... Args>
Base *launch(sched::pool &p, sched::priority prio, sched::detail::worker *host,
             typename Base::init const &init, Fn &&fn, Args &&...args) {
  using state = spawned_call<Base, stored_t<Fn>, stored_t<Args>...>;
  auto *s = new state(init, std::forward<Fn>(fn), std::forward<Args>(args)...);
  s->m_priority = prio;
  std::size_t worker = 0;
  try {
    if (host != nullptr) {
      sched::detail::pool_access::host_root(p, *host, s); // may throw pool_closed, bad_alloc
    } else {
      worker = sched::detail::pool_access::submit_root(p, s, prio); // may throw pool_closed
    }
  } catch (...) {
    delete s;
    throw;
  }
  if constexpr (Base::keeps_value) {
    // The reader's reference keeps the state alive; only the reader (after we return) reads it.
    s->m_queue_worker = worker;
  }
  return s;
}

} // namespace detail
} // namespace magpie::sync
