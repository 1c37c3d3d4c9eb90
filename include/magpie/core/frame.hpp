#pragma once
// magpie/core/frame.hpp — the type-erased part of every task's coroutine frame.
//
// The join counter and the stack hand-off are described, with a proof sketch, in
// docs/protocols.md ("Join counting and stack hand-off"). Read it before changing this file.

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <new>

#include "magpie/core/config.hpp"
#include "magpie/core/stack.hpp"

namespace magpie::core {

class context;
class stop_scope;

/// How a task was started: its final suspend does different things for each.
enum class frame_kind : std::uint8_t {
  root,   ///< started by a scheduler for sync_wait; its parent is a root_block
  forked, ///< started by fork: its parent's continuation was pushed on the deque
  called, ///< started by call: its parent is suspended until it returns
};

/// A heap cell holding an exception in flight between a child and its parent's join.
class exception_box {
public:
  /// Boxes `e`; never fails (returns a static box meaning std::bad_alloc if allocation fails).
  static exception_box *make(std::exception_ptr e) noexcept {
    auto *box = new (std::nothrow) exception_box{std::move(e)};
    return box != nullptr ? box : &out_of_memory();
  }
  /// Frees `box` (null allowed) and returns its exception.
  static std::exception_ptr release(exception_box *box) noexcept {
    if (box == nullptr) {
      return nullptr;
    }
    if (box == &out_of_memory()) {
      return std::make_exception_ptr(std::bad_alloc());
    }
    std::exception_ptr e = std::move(box->m_exception);
    delete box;
    return e;
  }
  /// Frees `box` (null allowed) and its exception.
  static void destroy(exception_box *box) noexcept { (void)release(box); }

private:
  explicit exception_box(std::exception_ptr e) noexcept : m_exception(std::move(e)) {}
  static exception_box &out_of_memory() noexcept {
    static exception_box box{nullptr};
    return box;
  }
  std::exception_ptr m_exception;
};

/// The scheduler-visible state of a task. The promise of every task<T> derives from this.
struct frame_base {
  /// The join counter's initial value: it exceeds any number of steals in one fork–join scope.
  static constexpr std::uint32_t join_init = std::uint32_t{1} << 30;

  frame_base(frame_base const &) = delete;
  frame_base &operator=(frame_base const &) = delete;

  /// A frame whose links start null (an anchor such as a root_block).
  frame_base() noexcept : m_parent(nullptr), m_ctx(nullptr), m_kind(frame_kind::called) {}
  // Trivially destroyed: a task's pending exception is passed on before its frame dies
  // (detail::final_transfer); a root_block frees its own.

  /// Stores the first exception of a child; later ones are dropped. Any thread. The exception
  /// lives on the heap so that frames, which rarely see one, stay small and trivially destroyed;
  /// if even that allocation fails, std::bad_alloc is stored instead (a static one, never lost).
  void store_exception(std::exception_ptr e) noexcept {
    if (m_exception.load(std::memory_order_relaxed) != nullptr) { // a hint; the CAS decides
      return; // the slot is taken: this exception is dropped (destroyed here)
    }
    exception_box *box = exception_box::make(std::move(e));
    exception_box *expected = nullptr;
    // release CAS: publishes the box's contents; exactly one child wins. The joiner also sees it
    // through the join counter (release by the child, acquire by the joiner).
    if (!m_exception.compare_exchange_strong(expected, box, std::memory_order_release,
                                             std::memory_order_relaxed)) {
      exception_box::destroy(box);
    }
  }

  /// True if a child's exception waits to be rethrown. Only the task's runner, after a join.
  bool has_exception() const noexcept {
    return m_exception.load(std::memory_order_relaxed) != nullptr; // ordered by the join
  }

  /// Takes the stored exception and clears the slot. Only the task's runner, after a join.
  std::exception_ptr take_exception() noexcept {
    // acquire: pairs with store_exception's release (the join already ordered it; cheap).
    exception_box *box = m_exception.exchange(nullptr, std::memory_order_acquire);
    return exception_box::release(box);
  }

  /// The header in front of every non-empty stack_array's elements (core/stack_alloc.hpp): the
  /// record of a deferred destruction. Written only when ~stack_array defers (an exception unwinds
  /// a scope whose continuation was stolen), so that the list never touches the elements, which
  /// the scope's children may still be writing or reading.
  struct deferred_array {
    deferred_array *next; ///< the next record, lower on the chain (destroyed later)
    void (*destroy)(void *elements, std::size_t n) noexcept; ///< null: trivially destructible
    std::size_t count;                                       ///< elements
  };
  /// Bytes of the header; the elements follow it and keep the stack's 16-byte alignment.
  static constexpr std::size_t array_header_bytes = stack::round_up(sizeof(deferred_array));
  static_assert(array_header_bytes % stacklet::alignment == 0);

  /// Remembers a stack_array to destroy and free once the task owns its chain again. The list is
  /// kept in destruction order: most recently allocated (topmost) first.
  void defer_destroy(deferred_array *array) noexcept {
    array->next = nullptr;
    if (m_deferred == nullptr) {
      m_deferred = array;
    } else {
      deferred_array *last = m_deferred;
      while (last->next != nullptr) {
        last = last->next;
      }
      last->next = array;
    }
  }

  /// Destroys the deferred arrays' elements and frees them, topmost first (FILO). The task must
  /// own its chain again and every child of the scope must have arrived (after a join, or at the
  /// task's end): the children's writes to the elements happen-before the destructors.
  void release_deferred(stack &s) noexcept {
    for (deferred_array *d = m_deferred; d != nullptr;) {
      deferred_array *next = d->next; // read before the free below
      if (d->destroy != nullptr) {
        d->destroy(reinterpret_cast<std::byte *>(d) + array_header_bytes, d->count);
      }
      s.deallocate(d);
      d = next;
    }
    m_deferred = nullptr;
  }

  std::coroutine_handle<> m_handle; ///< this task's coroutine
  frame_base *m_parent;             ///< the task (or root_block) waiting for this one
  context *m_ctx;                   ///< the worker running this task (updated on every hop)
  stacklet *m_stack = nullptr;      ///< the chain this task owns while it is suspended
  std::atomic<exception_box *> m_exception{nullptr}; ///< a child's exception, for the next join
  deferred_array *m_deferred = nullptr;          ///< stack arrays unwound while the task was stolen
  std::atomic<std::uint32_t> m_joins{join_init}; ///< split join counter (see protocols.md)
  std::uint32_t m_steals = 0; ///< continuations stolen in this scope (runner only)
  frame_kind m_kind;          ///< how the task was started (set by every constructor)
  bool m_unjoined = false;    ///< forked since the last join
  bool m_at_final = false;    ///< waiting in final suspend for stolen children
  /// Nothing in the frame needs destroying once the body has finished (promise and parameter
  /// copies are trivially destructible), so the frame's bytes can be released without the
  /// coroutine's destroy path.
  bool m_trivial_frame = false;

protected:
  /// For task promises: m_parent, m_ctx and m_kind (and a promise's return pointer) are left
  /// unset, because whoever starts a task sets them before it first runs (detail::make_child for
  /// fork and call, ext::start_root for roots). GCC does not inline a task's ramp into its
  /// caller, so stores made here would not be merged with those and would cost every task.
  struct links_set_by_starter {};
  /// A task promise's base: the links stay unset (see links_set_by_starter).
  explicit frame_base(links_set_by_starter) noexcept {}
};

/// The anchor of a root task: where its exception lands and who is told when it completes.
/// Lives in the frame of whoever waits (sync_wait's caller).
struct root_block : frame_base {
  /// Called exactly once, on the worker that completes the root task, after its frame is freed.
  /// After it returns the block may be gone.
  void (*m_on_complete)(root_block *) noexcept = nullptr;
  /// The cancellation scope of every task below this anchor (null: none; core/scope.hpp). Set
  /// before the first task below it starts; never changed while one runs.
  stop_scope const *m_scope = nullptr;
  /// For with_stop's anchor, which sits between a task and its child: that task (async
  /// backtraces continue there). Null for the root of a computation.
  frame_base *m_caller = nullptr;

  root_block() = default;

  /// Bytes from a root_block's frame_base to its m_caller, for the task dump and debuggers
  /// (offsetof is not portable on this non-standard-layout type).
  static std::size_t debug_caller_offset() noexcept {
    static root_block const probe;
    return static_cast<std::size_t>(
        reinterpret_cast<std::byte const *>(&probe.m_caller) -
        reinterpret_cast<std::byte const *>(static_cast<frame_base const *>(&probe)));
  }
  ~root_block() { // an exception nobody collected dies here
    // Its last owner destroys it, after every writer (a relaxed look suffices; a spawned task's
    // state dies once per spawn, and an unconditional exchange was a locked instruction).
    if (has_exception()) [[unlikely]] {
      (void)take_exception();
    }
  }
};

} // namespace magpie::core
