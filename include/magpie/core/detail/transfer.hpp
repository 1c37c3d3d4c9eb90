#pragma once
// magpie/core/detail/transfer.hpp — what happens when a task finishes, and the slow path of join.
//
// Protocol: docs/protocols.md ("Final suspend" and "Join counting and stack hand-off").

#include <chrono>
#include <coroutine>

#include "magpie/core/config.hpp"
#include "magpie/core/context.hpp"
#include "magpie/core/detail/pause.hpp"
#include "magpie/core/frame.hpp"

// GCC inlines the hot path into each task's coroutine (its budget needs the nudge); Clang does
// better calling it (measured with callgrind on fib: instructions per task).
#if defined(__clang__)
#  define MAGPIE_FINAL_INLINE inline
#else
#  define MAGPIE_FINAL_INLINE MAGPIE_FORCEINLINE
#endif

namespace magpie::core::detail {

MAGPIE_FINAL_INLINE std::coroutine_handle<> final_transfer(frame_base *f) noexcept;

/// For awaitables that suspend a task elsewhere (resume_on, and later futures, mutexes, timers):
/// call after the task has released its chain into `m_stack` and been published to whoever
/// resumes it. The worker must not end its strand with continuations left in its deque (I1 in
/// docs/protocols.md): it takes the bottom one, the suspended task's parent or an ancestor, as
/// if it had stolen it, so that the task's eventual completion arrives at that parent's join.
inline std::coroutine_handle<> continue_after_handoff(context *ctx) noexcept {
  if (ctx->tasks().owner_sees_empty()) { // usual after a hand-off: skip pop's barrier
    return std::noop_coroutine();
  }
  if (auto popped = ctx->tasks().pop()) {
    ++popped.value->m_steals; // we are its runner now, exactly as a thief would be
    ctx->observe(event::resume);
    return popped.value->m_handle;
  }
  return std::noop_coroutine();
}

/// How long a caller running its own root waits at a stolen parent for the parent's runner to
/// reach the join (wait_for_joiner): about what a worker that finishes the parent takes to hand
/// the root's end back to the caller, and far less than the caller then polls for it anyway.
inline constexpr std::chrono::nanoseconds joiner_wait{10'000};

/// A caller running its own root (context::runs_own_root), whose child ended and found the
/// parent stolen: polls the parent's join counter, for at most joiner_wait, until the parent's
/// runner has reached its join (has subtracted its share: the counter is below join_init / 2),
/// so that the arrival that follows is the last one and the caller resumes the parent itself.
/// Only a delay before the arrival, which decides as always (docs/protocols.md §5.2); the parent
/// cannot finish its join before we arrive, so its frame outlives these reads.
MAGPIE_NOINLINE inline void wait_for_joiner(frame_base const *parent) noexcept {
  auto const joined = [parent] {
    // relaxed: a hint; the arrival's acq_rel decrement is what orders and decides
    return parent->m_joins.load(std::memory_order_relaxed) < frame_base::join_init / 2;
  };
  if (joined()) {
    return;
  }
  auto const until = std::chrono::steady_clock::now() + joiner_wait;
  for (unsigned i = 1; !joined(); ++i) {
    cpu_pause();
    if (i % 64 == 0 && std::chrono::steady_clock::now() >= until) {
      return;
    }
  }
}

/// A forked child finished and found its parent's continuation gone from the deque: the parent
/// was stolen. Arrive at the parent's join; resume it if we are the last to arrive.
MAGPIE_NOINLINE inline std::coroutine_handle<>
arrive_at_stolen_parent(context *ctx, frame_base *parent) noexcept {
  if (ctx->runs_own_root()) {
    wait_for_joiner(parent);
  }
  // Frames still on our stack belong to the parent (its own frame is the top one): the parent
  // owns this chain from now on. This must happen before the decrement below, after which the
  // parent may be resumed elsewhere and take the chain.
  if (!ctx->stack().empty()) {
    parent->m_stack = ctx->release_stack();
  }
  // acq_rel: release publishes this child's results and the stack hand-off above to whoever
  // arrives last; acquire, if that is us, makes every other arriver's writes visible here.
  if (parent->m_joins.fetch_sub(1, std::memory_order_acq_rel) != 1) {
    // Point of no return: another worker may already be running the parent. Touch nothing.
    return std::noop_coroutine();
  }
  // Last to arrive: the parent is suspended at its join (or its final suspend) and is ours.
  ctx->observe(event::resume);
  ctx->adopt_stack(parent->m_stack);
  parent->m_stack = nullptr;
  parent->m_ctx = ctx;
  parent->m_steals = 0;
  parent->m_joins.store(frame_base::join_init, std::memory_order_relaxed); // sole owner now
  // The parent owns its chain again, whose top are the stack arrays it unwound while stolen:
  // free them now. The join's await_resume sees m_steals == 0 and would skip them, leaving them
  // to a later join that frees them below live arrays (docs/protocols.md, "Stack arrays").
  if (parent->m_deferred != nullptr) [[unlikely]] {
    parent->release_deferred(ctx->stack());
  }
  if (parent->m_at_final) {
    parent->m_at_final = false;
    return final_transfer(parent);
  }
  return parent->m_handle;
}

/// A task reached its final suspend while continuations were stolen in its last scope (it threw,
/// or returned without joining): wait for the children before completing.
MAGPIE_NOINLINE inline std::coroutine_handle<> final_join(frame_base *f) noexcept {
  std::uint32_t const share = frame_base::join_init - f->m_steals;
  context *const f_ctx = f->m_ctx;
  f->m_at_final = true;
  // acq_rel: as in join (see join_awaitable::await_suspend).
  if (f->m_joins.fetch_sub(share, std::memory_order_acq_rel) != share) {
    // The last child completes us; do not touch f. Older continuations may be in our deque (f
    // ran self-stolen): carry on with them.
    f_ctx->bump(counter::join_suspends);
    f_ctx->observe(event::join_suspend);
    return continue_after_handoff(f_ctx);
  }
  f->m_at_final = false;
  f->m_ctx->adopt_stack(f->m_stack);
  f->m_stack = nullptr;
  f->m_steals = 0;
  f->m_joins.store(frame_base::join_init, std::memory_order_relaxed); // sole owner now
  return final_transfer(f); // with m_steals == 0: settle_before_destroy frees deferred arrays
}

/// The rare work before a frame dies: a child's exception nobody joined is passed up, and stack
/// arrays unwound while the task was stolen are freed (the task owns its chain again).
MAGPIE_NOINLINE inline void settle_before_destroy(frame_base *f, context *ctx) noexcept {
  if (f->has_exception()) {
    f->m_parent->store_exception(f->take_exception());
  }
  if (f->m_deferred != nullptr) {
    f->release_deferred(ctx->stack());
  }
}

/// A root's end, out of line: the worker's strand ends here (observed before the anchor learns of
/// it: its waiter may return at once, and an event recorded after that would be stamped late by
/// any preemption in between), then the anchor completes.
MAGPIE_NOINLINE inline void complete_root(context *ctx, frame_base *parent) noexcept {
  ctx->observe(event::strand_end);
  auto *block = static_cast<root_block *>(parent);
  block->m_on_complete(block);
}

/// Where a finished task goes next, once its frame is gone: its parent (a call's, at once; a
/// fork's, if the continuation is still in our deque, else through the join), or, for a root,
/// the anchor's completion.
MAGPIE_FORCEINLINE std::coroutine_handle<> transfer_to_parent(context *ctx, frame_base *parent,
                                                              frame_kind kind) noexcept {
  switch (kind) {
  case frame_kind::called:
    parent->m_ctx = ctx; // we may have been stolen and resumed elsewhere: the parent follows us
    return parent->m_handle;
  case frame_kind::forked:
    if (auto popped = ctx->tasks().pop()) [[likely]] {
      MAGPIE_ASSERT(popped.value == parent,
                    "internal: popped a continuation that is not the parent");
      return parent->m_handle;
    }
    return arrive_at_stolen_parent(ctx, parent);
  case frame_kind::root:
    break;
  }
  complete_root(ctx, parent);
  return std::noop_coroutine();
}

/// The frame-freeing cases that call out (the frame has parameters to destroy, or its stacklet
/// empties), out of line: the hot path then calls nothing that `parent` and `kind` must survive.
MAGPIE_NOINLINE inline std::coroutine_handle<>
destroy_then_transfer(frame_base *f, context *ctx, frame_base *parent, frame_kind kind) noexcept {
  if (f->m_trivial_frame) {
    ctx->stack().deallocate(f->m_handle.address());
  } else {
    f->m_handle.destroy(); // runs the parameters' destructors, then frees the frame (FILO)
  }
  return transfer_to_parent(ctx, parent, kind);
}

/// Destroys a finished task's frame and continues with whatever comes next on this worker.
MAGPIE_FINAL_INLINE std::coroutine_handle<> final_transfer(frame_base *f) noexcept {
  MAGPIE_ASSERT(!f->m_unjoined, "a magpie task returned with forked children it never joined: add "
                                "`co_await magpie::join();` before co_return");
  if (f->m_steals != 0) [[unlikely]] {
    return final_join(f);
  }
  context *const ctx = f->m_ctx;
  ctx->observe_task(event::task_end);
  if (f->has_exception() || f->m_deferred != nullptr) [[unlikely]] {
    settle_before_destroy(f, ctx);
  }
  frame_base *const parent = f->m_parent;
  frame_kind const kind = f->m_kind;
  // At the final suspend point only the promise and the parameter copies are alive; if both are
  // trivially destructible, ending their lifetime needs no code, so the bytes are released
  // directly (the coroutine frame starts at the address the promise's operator new returned).
  if (!f->m_trivial_frame || !ctx->stack().deallocate_in_place(f->m_handle.address()))
      [[unlikely]] {
    return destroy_then_transfer(f, ctx, parent, kind);
  }
  return transfer_to_parent(ctx, parent, kind);
}

} // namespace magpie::core::detail
