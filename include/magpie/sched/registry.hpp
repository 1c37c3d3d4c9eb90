#pragma once
// magpie/sched/registry.hpp — every live pool, where diagnostics can find it: trace::dump, the
// stall watchdog and the gdb extension (tools/gdb/magpie.py), which finds the list through the
// C symbol `magpie_debug` in a live process or a core file, without debug information.
//
// A pool registers itself when constructed and leaves when destroyed; nothing here is on a
// task's path. The records start with plain C structs whose layout the gdb extension reads.

#include <cstddef>
#include <cstdint>

namespace magpie::core {
struct frame_base;
}

extern "C" {

/// One worker as a debugger reads it: its context and where its stack keeps its top stacklet
/// and bump pointer (core::stack::debug_top / debug_sp).
struct magpie_debug_worker {
  void const *context;    ///< the worker's core::context
  void *const *stack_top; ///< address of the stack's top-stacklet pointer
  void *const *stack_sp;  ///< address of the stack's bump pointer
};

/// One live pool as a debugger reads it (the prefix of sched::registry::entry).
struct magpie_debug_pool {
  magpie_debug_pool *next;     ///< the next live pool, or null
  void const *pool;            ///< the sched::pool
  std::size_t workers;         ///< entries in `worker`
  magpie_debug_worker *worker; ///< one per worker, by index
  void const *executor;        ///< the pool as a core::executor (parked tasks' `home`)
  std::size_t callers;         ///< guest slots after the workers in `worker` (callers' roots)
};

/// A task parked on a waiting primitive, a timer or resume_on (trace::track_parked).
struct magpie_debug_parked {
  void const *frame; ///< its core::frame_base
  void const *home;  ///< the executor (e.g. the sched::pool) of the worker it parked on
};

/// What the gdb extension needs to walk task chains: the list of pools and the layout of the
/// structures it reads (offsets in bytes). Version 1.
struct magpie_debug_info {
  std::uint32_t version;           ///< layout version of this struct (2)
  std::uint32_t promise_offset;    ///< coroutine frame start → its frame_base (the promise)
  std::uint32_t frame_handle;      ///< frame_base::m_handle (the coroutine frame's address)
  std::uint32_t frame_parent;      ///< frame_base::m_parent
  std::uint32_t frame_ctx;         ///< frame_base::m_ctx
  std::uint32_t frame_kind;        ///< frame_base::m_kind (one byte)
  std::uint32_t frame_size;        ///< sizeof(frame_base)
  std::uint32_t kind_root;         ///< the value of frame_kind::root
  std::uint32_t stacklet_header;   ///< sizeof(stacklet): where its bytes begin
  std::uint32_t stacklet_prev;     ///< stacklet::m_prev
  std::uint32_t stacklet_saved_sp; ///< stacklet::m_saved_sp
  std::uint32_t stack_alignment;   ///< every frame starts at a multiple of this
  magpie_debug_pool *pools;        ///< the live pools (most recent first), or null
  magpie_debug_parked *parked;     ///< parked tasks, while trace::track_parked is on
  std::size_t parked_count;        ///< entries in `parked`
  std::uint32_t tracking;          ///< nonzero while trace::track_parked is on
  /// root_block::m_caller: with_stop's anchor (a root_block whose m_parent is null) points at the
  /// task awaiting it, where a chain continues.
  std::uint32_t anchor_caller;
};

/// The one registry (defined in src/registry.cpp). Changed under a lock; a debugger reads it
/// while the process is stopped.
extern magpie_debug_info magpie_debug;
}

namespace magpie::sched {
class pool;
}

namespace magpie::sched::registry {

/// Adds `p` (whose workers' contexts exist) to the registry. Throws std::bad_alloc.
void add(pool const &p);
/// Removes `p` (no-op if absent). After it returns no diagnostic reads `p` through the registry.
void remove(pool const &p) noexcept;

/// Starts keeping the list of parked tasks (installs core::ext::park_hooks), or stops (and
/// forgets the list) once every start has been matched by a stop. Any thread.
void track_parked(bool on) noexcept;
/// Calls `visit(f, arg)` for every parked task recorded whose executor is `home` (null: all),
/// under the lock that the park and resume hooks take: a recorded task is not resumed (its
/// resumption waits for the lock) while `visit` reads it. Returns false if nothing is tracked.
/// `visit` must not park or resume tasks.
bool visit_parked(void const *home, void (*visit)(core::frame_base const *f, void *arg), void *arg);
/// Parked tasks that could not be recorded (out of memory) since tracking started.
std::uint64_t parked_lost() noexcept;

} // namespace magpie::sched::registry
