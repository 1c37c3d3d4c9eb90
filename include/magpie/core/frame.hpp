#pragma once
// magpie/core/frame.hpp — the type-erased part of every task's coroutine frame.
//
// The join counter and the stack hand-off are described, with a proof sketch, in
// docs/protocols.md ("Join counting and stack hand-off"). Read it before changing this file.

#include <atomic>
#include <coroutine>
#include <cstdint>
#include <exception>

#include "magpie/core/config.hpp"
#include "magpie/core/stack.hpp"

namespace magpie::core {

class context;

/// How a task was started: its final suspend does different things for each.
enum class frame_kind : std::uint8_t {
  root,   ///< started by a scheduler for sync_wait; its parent is a root_block
  forked, ///< started by fork: its parent's continuation was pushed on the deque
  called, ///< started by call: its parent is suspended until it returns
};

/// The scheduler-visible state of a task. The promise of every task<T> derives from this.
struct frame_base {
  /// The join counter's initial value: it exceeds any number of steals in one fork–join scope.
  static constexpr std::uint32_t join_init = std::uint32_t{1} << 30;

  frame_base() = default;
  frame_base(frame_base const &) = delete;
  frame_base &operator=(frame_base const &) = delete;

  /// Stores the first exception of a child; later ones are dropped. Any thread.
  void store_exception(std::exception_ptr e) noexcept {
    // acq_rel exchange: exactly one child claims the slot. Its write of m_exception reaches the
    // joiner through the join counter (release by the child, acquire by the joiner).
    if (!m_exception_set.exchange(true, std::memory_order_acq_rel)) {
      m_exception = std::move(e);
    }
  }

  /// True if a child's exception waits to be rethrown. Only the task's runner, after a join.
  bool has_exception() const noexcept { return m_exception_set.load(std::memory_order_relaxed); }

  /// Takes the stored exception and clears the slot. Only the task's runner, after a join.
  std::exception_ptr take_exception() noexcept {
    std::exception_ptr e = std::move(m_exception);
    m_exception = nullptr;
    m_exception_set.store(false, std::memory_order_relaxed); // single owner after the join
    return e;
  }

  std::coroutine_handle<> m_handle;  ///< this task's coroutine
  frame_base *m_parent = nullptr;    ///< the task (or root_block) waiting for this one
  context *m_ctx = nullptr;          ///< the worker running this task (updated on every hop)
  stacklet *m_stack = nullptr;       ///< the chain this task owns while it is suspended
  std::exception_ptr m_exception;    ///< a child's exception, rethrown at the next join
  std::atomic<std::uint32_t> m_joins{join_init}; ///< split join counter (see protocols.md)
  std::uint32_t m_steals = 0;        ///< continuations stolen in this scope (runner only)
  frame_kind m_kind = frame_kind::called;
  std::atomic<bool> m_exception_set{false};
  bool m_unjoined = false;           ///< forked since the last join
  bool m_at_final = false;           ///< waiting in final suspend for stolen children
};

/// The anchor of a root task: where its exception lands and who is told when it completes.
/// Lives in the frame of whoever waits (sync_wait's caller).
struct root_block : frame_base {
  /// Called exactly once, on the worker that completes the root task, after its frame is freed.
  /// After it returns the block may be gone.
  void (*m_on_complete)(root_block *) noexcept = nullptr;
};

} // namespace magpie::core
