#pragma once
// magpie/sched/sync_wait.hpp — the way into magpie from ordinary code.
//
//   magpie::lazy_pool pool;
//   long r = magpie::sync_wait(pool, fib, 40);
//
// Blocks the calling thread until the root task completes and returns its value, or rethrows its
// exception (polling for up to 4 µs before it sleeps: a short root costs no system call). Any
// number of threads may call sync_wait on one scheduler at once. Calling it from a worker of the
// same scheduler would deadlock a one-worker pool, so it throws std::logic_error.

#include <atomic>
#include <chrono>
#include <concepts>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>

#include "magpie/core/detail/pause.hpp"
#include "magpie/core/ext.hpp"
#include "magpie/core/fork.hpp"
#include "magpie/core/frame.hpp"
#include "magpie/core/scope.hpp"
#include "magpie/core/task.hpp"
#include "magpie/sched/job.hpp"

namespace magpie::sched {

/// What sync_wait needs of a scheduler: take a root job, account for its end, and recognise its
/// own worker threads.
template <typename S>
concept scheduler = requires(S &s, job *j, S const &cs) {
  s.submit_root(j);
  s.finish_root();
  { cs.is_worker_thread() } -> std::convertible_to<bool>;
};

namespace detail {

/// A one-shot completion that one plain thread may wait for: `pending`, `done`, or
/// `thread_waiting` (the waiter sleeps). The completer exchanges `done` in and, if it took
/// `thread_waiting` out, calls notify_thread(key). Words that also hold other states (a future's
/// word holds a waiting task's address) share the three values.
inline constexpr std::uintptr_t word_pending = 0;
inline constexpr std::uintptr_t word_done = 1;
inline constexpr std::uintptr_t word_thread_waiting = 2;

/// Where plain threads sleep: a few mutex/condition-variable pairs shared by all waits (by the
/// address of what is waited for), so that it carries none and may be gone as soon as its waiter
/// has seen `done`: the completer touches only the slot (static) after its exchange.
struct thread_wait_slot {
  std::mutex mutex;
  std::condition_variable cv;
};
inline thread_wait_slot &thread_wait_slot_of(void const *key) noexcept {
  static thread_wait_slot slots[16];
  auto const a = reinterpret_cast<std::uintptr_t>(key);
  return slots[(a >> 6) % 16];
}

/// The completer's side, after its exchange returned `word_thread_waiting`: wakes the waiter.
/// `key` is only an address here (what it named may be gone).
inline void notify_thread(void const *key) noexcept {
  thread_wait_slot &slot = thread_wait_slot_of(key);
  std::lock_guard lock(slot.mutex); // the waiter checks the word under it: waiting, or will see
  slot.cv.notify_all();             // done (the slot's other waits just look again)
}

/// The waiting thread's side: blocks until `word` is `word_done` (acquire: the completer's writes
/// are visible), or until `deadline` (then false). It first polls for up to 4 µs — less than a
/// sleep and a wake-up cost the two threads (~6 µs on a VM) — or until the deadline if sooner (a
/// deadline already past: no polling); while it polls the word stays `pending`, so a completion
/// then costs neither side a system call. Then it announces itself (`pending` →
/// `thread_waiting`) and sleeps on the slot of `key`. Protocol: docs/protocols.md §9.1.
template <typename Clock, typename Duration>
bool wait_for_done(std::atomic<std::uintptr_t> &word, void const *key,
                   std::chrono::time_point<Clock, Duration> const *deadline) {
  auto const is_done = [&] { return word.load(std::memory_order_acquire) == word_done; };
  auto const until = std::chrono::steady_clock::now() + std::chrono::microseconds(4);
  for (;;) {
    if (deadline != nullptr && Clock::now() >= *deadline) {
      break;
    }
    for (int i = 0; i < 32; ++i) {
      if (is_done()) {
        return true;
      }
      core::detail::cpu_pause();
    }
    if (std::chrono::steady_clock::now() >= until) {
      break;
    }
  }
  std::uintptr_t w = word_pending;
  // acq_rel; on failure acquire: a result that became ready meanwhile is visible.
  if (!word.compare_exchange_strong(w, word_thread_waiting, std::memory_order_acq_rel,
                                    std::memory_order_acquire) &&
      w == word_done) {
    return true;
  }
  thread_wait_slot &slot = thread_wait_slot_of(key);
  std::unique_lock lock(slot.mutex);
  // The completer stores `done` before taking this mutex to notify: we either see `done` here,
  // or are waiting (the mutex released) when it notifies.
  if (deadline == nullptr) {
    slot.cv.wait(lock, is_done);
    return true;
  }
  return slot.cv.wait_until(lock, *deadline, is_done);
}

template <typename T>
struct value_slot {
  T value{};
  T *target() noexcept { return &value; }
  T take() { return std::move(value); }
};
template <>
struct value_slot<void> {
  void take() const noexcept {}
};

/// A root task's job and its anchor, living in sync_wait's frame on the caller's thread.
template <typename Fn, typename... Args>
struct root_job final : job, core::root_block {
  using value_type = core::async_result_t<Fn, Args...>;

  root_job(Fn &&fn, Args &&...args)
      : m_fn(std::forward<Fn>(fn)), m_args(std::forward<Args>(args)...) {
    m_run = &start;
    m_on_complete = &complete;
  }

  static void start(job *j, core::context &ctx) {
    auto *self = static_cast<root_job *>(j);
    core::detail::promise<value_type> *child = nullptr;
    try {
      child = core::detail::create_task(std::forward<Fn>(self->m_fn), std::move(self->m_args));
    } catch (...) { // an argument's copy or the stack's growth threw: the caller gets it
      self->store_exception(std::current_exception());
      complete(self);
      return;
    }
    if constexpr (std::is_void_v<value_type>) {
      core::ext::start_root(child, self, ctx, static_cast<void *>(nullptr));
    } else {
      core::ext::start_root(child, self, ctx, self->m_value.target());
    }
  }

  static void complete(core::root_block *b) noexcept {
    auto *self = static_cast<root_job *>(b);
    // acq_rel: release publishes the result to the waiter's acquire. The last touch of the job:
    // once `done` is in, the waiter may return and free it; only its address is used below.
    if (self->m_word.exchange(word_done, std::memory_order_acq_rel) == word_thread_waiting) {
      notify_thread(self);
    }
  }

  void wait() {
    (void)wait_for_done(m_word, this,
                        static_cast<std::chrono::steady_clock::time_point const *>(nullptr));
  }

  value_type result() {
    if (has_exception()) {
      std::rethrow_exception(take_exception());
    }
    return m_value.take();
  }

  Fn &&m_fn;
  std::tuple<Args &&...> m_args;
  value_slot<value_type> m_value;
  std::atomic<std::uintptr_t> m_word{word_pending};
};

} // namespace detail

/// Runs `fn(args...)` as a root task on `s` and waits for it. Rethrows the task's exception.
template <scheduler S, typename Fn, typename... Args>
  requires core::async_function<Fn, Args...>
core::async_result_t<Fn, Args...> sync_wait(S &s, Fn &&fn, Args &&...args) {
  using value_type = core::async_result_t<Fn, Args...>;
  static_assert(std::is_void_v<value_type> || std::default_initializable<value_type>,
                "magpie::sync_wait: the root task's value type must be default-constructible");
  if (s.is_worker_thread()) {
    throw std::logic_error("magpie::sync_wait called from a worker of the same scheduler: it would "
                           "wait for itself; inside a task use co_await magpie::call(...) instead");
  }
  detail::root_job<Fn, Args...> root(std::forward<Fn>(fn), std::forward<Args>(args)...);
  // Called from an algorithm's iteration: the root and its descendants are inside that
  // algorithm's cancellation scope (which outlives this call).
  core::ext::set_scope(root, core::detail::thread_scope());
  s.submit_root(&root); // may throw (e.g. pool_closed)
  root.wait();
  s.finish_root();
  return root.result();
}

} // namespace magpie::sched
