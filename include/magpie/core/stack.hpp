#pragma once
// magpie/core/stack.hpp — geometric segmented stacks: where every task frame lives.
//
// A stack is a chain of stacklets (a small header followed by bytes). Allocation bumps a pointer
// in the top stacklet; when it is full the next stacklet is at least twice as large. When the top
// stacklet empties, it is kept as a cache (at most one) so that a loop that allocates and frees
// across a stacklet boundary does not call the allocator each time ("hot splitting").
//
// Ownership of a whole chain moves between workers (see docs/protocols.md, "Stack hand-off"): a
// worker that must leave a suspended task on its stack `release()`s the chain, and the worker that
// later resumes the task `adopt()`s it. A `stack` object itself never moves.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>

#include "magpie/core/config.hpp"

namespace magpie::core {

/// Hooks through which stacklets are allocated (tests inject failures here). `allocate` may throw
/// (e.g. std::bad_alloc); a throw surfaces at the fork/call that needed the memory.
struct stacklet_allocator {
  /// Returns at least `bytes` bytes, or throws: aligned to 64 if `bytes` ≥ 4,096, else to at
  /// least 16 (the default allocator's choice; stronger alignment is always fine).
  void *(*allocate)(std::size_t bytes);
  /// Frees what `allocate` returned, given the same `bytes`.
  void (*deallocate)(void *ptr, std::size_t bytes) noexcept;
};

/// Process-wide stack statistics (relaxed counters, updated only when stacklets come and go).
struct stack_stats {
  std::size_t stacklets_allocated; ///< stacklets ever allocated
  std::size_t stacklets_live;      ///< stacklets currently allocated
  std::size_t bytes_live;          ///< bytes in live stacklets
  std::size_t bytes_peak;          ///< high-water mark of bytes_live
};

namespace detail {

/// Stacklets smaller than this come from plain operator new (aligned to
/// __STDCPP_DEFAULT_NEW_ALIGNMENT__, at least stacklet::alignment): an over-aligned allocation
/// of a few hundred bytes costs glibc up to the alignment again in padding and split-off remnants
/// (measured: 458 instead of 298 resident bytes per 272-byte stacklet). Larger ones are aligned
/// to 64 so that their data starts on a cache line.
inline constexpr std::size_t small_stacklet_bytes = 4096;

inline void *default_stacklet_allocate(std::size_t bytes) {
  if (bytes < small_stacklet_bytes) {
    return ::operator new(bytes);
  }
  return ::operator new(bytes, std::align_val_t{64});
}
inline void default_stacklet_deallocate(void *ptr, std::size_t bytes) noexcept {
  if (bytes < small_stacklet_bytes) {
    ::operator delete(ptr);
    return;
  }
  ::operator delete(ptr, std::align_val_t{64});
}

struct stack_globals {
  // Two words, set together while no pool runs; relaxed: installing hooks is not a sync point.
  std::atomic<void *(*)(std::size_t)> allocate{default_stacklet_allocate};
  std::atomic<void (*)(void *, std::size_t) noexcept> deallocate{default_stacklet_deallocate};
  std::atomic<std::size_t> allocated{0};
  std::atomic<std::size_t> live{0};
  std::atomic<std::size_t> bytes_live{0};
  std::atomic<std::size_t> bytes_peak{0};
};

inline stack_globals &globals() noexcept {
  static stack_globals g;
  return g;
}

} // namespace detail

/// Replaces the stacklet allocator; returns the previous one. Call only while no pool runs.
inline stacklet_allocator set_stacklet_allocator(stacklet_allocator hooks) noexcept {
  auto &g = detail::globals(); // relaxed: hooks change only while no pool runs (no edge)
  return {g.allocate.exchange(hooks.allocate, std::memory_order_relaxed),
          g.deallocate.exchange(hooks.deallocate, std::memory_order_relaxed)};
}

/// A snapshot of the stack counters.
inline stack_stats get_stack_stats() noexcept {
  auto &g = detail::globals(); // relaxed: statistics, no edge
  return {g.allocated.load(std::memory_order_relaxed), g.live.load(std::memory_order_relaxed),
          g.bytes_live.load(std::memory_order_relaxed),
          g.bytes_peak.load(std::memory_order_relaxed)};
}

/// Resets the peak to the current live bytes (for measurements).
inline void reset_stack_peak() noexcept {
  auto &g = detail::globals();
  g.bytes_peak.store(g.bytes_live.load(std::memory_order_relaxed), // statistics: no edge
                     std::memory_order_relaxed);
}

/// The header of one segment of a stack. The usable bytes follow the header.
class stacklet {
public:
  static constexpr std::size_t alignment = 16; ///< every allocation is aligned to this

  /// The first usable byte, right after the header.
  std::byte *base() noexcept { return reinterpret_cast<std::byte *>(this + 1); }
  /// One past the last usable byte.
  std::byte *end() noexcept { return base() + m_capacity; }
  /// Usable bytes after the header.
  std::size_t capacity() const noexcept { return m_capacity; }
  /// For diagnostics only (trace::dump, tools/gdb/magpie.py): the bump pointer this stacklet
  /// saved when it stopped being the top of a live stack. Racy if read by another thread.
  std::byte *saved_sp() const noexcept { return m_saved_sp; }
  /// For debuggers: the offset of the link to the stacklet below.
  static constexpr std::size_t debug_prev_offset() noexcept { return offsetof(stacklet, m_prev); }
  /// For debuggers: the offset of the saved bump pointer (saved_sp()).
  static constexpr std::size_t debug_saved_sp_offset() noexcept {
    return offsetof(stacklet, m_saved_sp);
  }
  /// The segment below this one, or null for a chain's first.
  stacklet *prev() const noexcept { return m_prev; }

  /// Allocates a stacklet with at least `capacity` usable bytes through the installed hooks.
  static stacklet *create(std::size_t capacity, stacklet *prev) {
    auto &g = detail::globals();
    std::size_t const bytes = sizeof(stacklet) + capacity;
    void *mem =
        g.allocate.load(std::memory_order_relaxed)(bytes); // hooks: see set_stacklet_allocator
    auto *s = ::new (mem) stacklet(capacity, prev);
    g.allocated.fetch_add(1, std::memory_order_relaxed); // statistics only: no ordering
    g.live.fetch_add(1, std::memory_order_relaxed);
    std::size_t const now =
        g.bytes_live.fetch_add(bytes, std::memory_order_relaxed) + bytes; // stats
    std::size_t peak = g.bytes_peak.load(std::memory_order_relaxed);      // statistics: no edge
    while (now > peak &&
           !g.bytes_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
    return s;
  }

  /// Frees this stacklet (not its neighbours).
  static void destroy(stacklet *s) noexcept {
    auto &g = detail::globals();
    std::size_t const bytes = sizeof(stacklet) + s->m_capacity;
    g.live.fetch_sub(1, std::memory_order_relaxed); // statistics only
    g.bytes_live.fetch_sub(bytes, std::memory_order_relaxed);
    s->~stacklet();
    g.deallocate.load(std::memory_order_relaxed)(s, bytes); // hooks: see set_stacklet_allocator
  }

  /// Frees a chain that holds no live allocation: the top and its cached successor.
  static void destroy_empty_chain(stacklet *top) noexcept {
    MAGPIE_ASSERT(top->m_prev == nullptr && top->m_saved_sp == top->base(),
                  "internal: only an empty stack may be freed");
    if (top->m_next != nullptr) {
      destroy(top->m_next);
    }
    destroy(top);
  }

private:
  friend class stack;

  stacklet(std::size_t capacity, stacklet *prev) noexcept
      : m_prev(prev), m_capacity(capacity), m_saved_sp(base()) {}

  stacklet *m_prev;           // the segment below, or null for the first
  stacklet *m_next = nullptr; // a cached empty segment above, or null
  std::size_t m_capacity;     // usable bytes after the header
  std::byte *m_saved_sp;      // the bump pointer, valid while this is not the top of a live stack
};

// Four words and no padding: a parked task's stacklet holds its frame and this header only.
// Padding it to a cache line would cost 32 bytes per parked task and buy nothing measurable:
// frames are packed at 16-byte steps on the stack anyway, and fib's per-task time
// (`micro_fib_overhead`, bench/README.md) does not depend on the header's size within noise.
static_assert(sizeof(stacklet) == 4 * sizeof(void *) &&
              sizeof(stacklet) % stacklet::alignment == 0);
static_assert(__STDCPP_DEFAULT_NEW_ALIGNMENT__ >= stacklet::alignment,
              "small stacklets come from plain operator new (detail::small_stacklet_bytes)");

/// A worker's stack: the bump pointer of the top stacklet, cached for speed. Not thread-safe: only
/// the worker that holds the stack touches it.
class stack {
public:
  /// Usable bytes of a chain's first stacklet (four pages with the header): deep enough that
  /// recursions of typical depth never cross a stacklet boundary.
  static constexpr std::size_t initial_capacity = 16384 - sizeof(stacklet);
  /// A chain begun after the worker handed its chain to a task parked on a waiting primitive
  /// starts with a stacklet of exactly its first frame's size (see release()): such chains often
  /// end up parked themselves (spawned tasks that wait), and then hold only that frame and a
  /// header. The segment above such a small one has at least `handoff_capacity` usable bytes (one
  /// kibibyte with the header), and a chain that turns out deep grows geometrically from there.
  static constexpr std::size_t handoff_capacity = 1024 - sizeof(stacklet);

  stack() = default;
  stack(stack const &) = delete;
  stack &operator=(stack const &) = delete;
  ~stack() {
    if (m_top != nullptr) {
      sync();
      MAGPIE_ASSERT(empty(), "a stack was destroyed while a task frame still lived on it");
      stacklet::destroy_empty_chain(m_top);
    }
  }

  /// Gives this stack a fresh first stacklet if it has none.
  void ensure() {
    if (m_top == nullptr) {
      adopt(create(initial_capacity, nullptr));
    }
  }

  /// On the thread that will use this (empty) stack: replaces its first stacklet by a fresh one
  /// of the same capacity whose pages this thread writes first, so that on a NUMA machine the
  /// kernel places them on this thread's node (first touch). Returns false, keeping the old
  /// stacklet, if the allocation fails. Called by pools when a worker starts.
  bool renew_here() noexcept {
    MAGPIE_ASSERT(empty(), "internal: renew_here() on a stack in use");
    std::size_t const capacity = m_top != nullptr ? m_top->m_capacity : initial_capacity;
    stacklet *fresh = nullptr;
    try {
      fresh = create(capacity, nullptr);
    } catch (...) {
      return false;
    }
    constexpr std::size_t page = 4096;
    for (std::byte *p = fresh->base(); p < fresh->end(); p += page) {
      *static_cast<std::byte volatile *>(p) = std::byte{0}; // the first touch of each page
    }
    if (stacklet *old = release(); old != nullptr) {
      stacklet::destroy_empty_chain(old);
    }
    adopt(fresh);
    return true;
  }

  /// Bump-allocates `bytes` (rounded up to 16). May grow the stack; throws what the hook throws.
  MAGPIE_FORCEINLINE void *allocate(std::size_t bytes) {
    bytes = round_up(bytes);
    if (static_cast<std::size_t>(m_end - m_sp) >= bytes) [[likely]] {
      std::byte *p = m_sp;
      m_sp += bytes;
      return p;
    }
    return allocate_slow(bytes);
  }

  /// Frees the most recent allocation (FILO); `ptr` must be its address.
  MAGPIE_FORCEINLINE void deallocate(void *ptr) noexcept {
    m_sp = static_cast<std::byte *>(ptr);
    if (m_sp == m_top->base() && m_top->m_prev != nullptr) [[unlikely]] {
      pop_stacklet();
    }
  }

  /// Frees the most recent allocation, `ptr`, if that leaves its stacklet in use, and returns
  /// true; otherwise changes nothing and returns false (call `deallocate`). Never calls out.
  MAGPIE_FORCEINLINE bool deallocate_in_place(void *ptr) noexcept {
    if (static_cast<std::byte *>(ptr) == m_top->base() && m_top->m_prev != nullptr) [[unlikely]] {
      return false;
    }
    m_sp = static_cast<std::byte *>(ptr);
    return true;
  }

  /// True if no allocation is live on this stack.
  bool empty() const noexcept {
    return m_top == nullptr || (m_top->m_prev == nullptr && m_sp == m_top->base());
  }

  /// False once the chain was handed away (release) until one is adopted or allocated again.
  bool has_chain() const noexcept { return m_top != nullptr; }

  /// True if `ptr` is the most recent allocation of `bytes` bytes (for debug checks).
  bool is_top(void const *ptr, std::size_t bytes) const noexcept {
    return static_cast<std::byte const *>(ptr) + round_up(bytes) == m_sp;
  }

  /// Detaches the whole chain (to hand it to a suspended task) and leaves this stack without one.
  /// The next chain starts with a stacklet of exactly its first allocation's size if
  /// `small_next`, else with `initial_capacity` bytes.
  /// A parked chain (`small_next`) also drops its cached empty segment: it holds only its frames.
  stacklet *release(bool small_next = false) noexcept {
    m_small_next = small_next;
    sync();
    stacklet *top = m_top;
    if (small_next && top != nullptr && top->m_next != nullptr) {
      stacklet::destroy(top->m_next);
      top->m_next = nullptr;
    }
    m_top = nullptr;
    m_sp = m_end = nullptr;
    return top;
  }

  /// Makes `top` (a chain released earlier) this stack's chain. This stack must have none.
  void adopt(stacklet *top) noexcept {
    MAGPIE_ASSERT(m_top == nullptr, "internal: adopt() onto a stack that still holds a chain");
    m_top = top;
    m_sp = top->m_saved_sp;
    m_end = top->end();
  }

  /// For diagnostics only (trace::dump, tools/gdb/magpie.py): where this stack keeps its top
  /// stacklet and its bump pointer. Another thread reading through them races with the owner.
  stacklet *const *debug_top() const noexcept { return &m_top; }
  /// See debug_top().
  std::byte *const *debug_sp() const noexcept { return &m_sp; }

  /// Any thread: stacklets this stack has allocated (a relaxed snapshot).
  std::uint64_t stacklets_created() const noexcept {
    return m_created.load(std::memory_order_relaxed); // a statistic: no edge
  }
  /// Any thread: bytes (headers included) of the largest chain this stack has grown to hold (a
  /// relaxed snapshot). Chains move between workers: this is the largest this stack extended.
  std::uint64_t peak_chain_bytes() const noexcept {
    return m_peak.load(std::memory_order_relaxed); // a statistic: no edge
  }

  /// `n` rounded up to stacklet::alignment.
  static constexpr std::size_t round_up(std::size_t n) noexcept {
    return (n + stacklet::alignment - 1) & ~(stacklet::alignment - 1);
  }

private:
  void sync() noexcept {
    if (m_top != nullptr) {
      m_top->m_saved_sp = m_sp;
    }
  }

  MAGPIE_NOINLINE void *allocate_slow(std::size_t bytes) {
    if (m_top == nullptr) { // the chain was handed away and there was no spare
      // After a park, the first frame gets a stacklet of exactly its size: if it parks in turn it
      // holds its frame and a header, nothing more. Later frames grow the chain from there.
      std::size_t capacity = m_small_next ? bytes : initial_capacity;
      while (capacity < bytes) {
        capacity = 2 * capacity + sizeof(stacklet);
      }
      adopt(create(capacity, nullptr));
      return allocate(bytes);
    }
    sync();
    stacklet *next = m_top->m_next;
    if (next == nullptr || next->m_capacity < bytes) {
      std::size_t capacity = 2 * m_top->m_capacity + sizeof(stacklet); // geometric growth
      if (capacity < handoff_capacity) { // above an exact-sized first stacklet: start at 1 KiB
        capacity = handoff_capacity;
      }
      while (capacity < bytes) {
        capacity *= 2;
      }
      stacklet *fresh = create(capacity, m_top); // may throw: nothing changed yet
      if (next != nullptr) {
        stacklet::destroy(next); // too small to be useful
      }
      next = fresh;
      m_top->m_next = next;
    }
    m_top = next;
    m_sp = next->base() + bytes;
    m_end = next->end();
    return next->base();
  }

  /// stacklet::create, counted in this stack's statistics (single writer: the owner).
  stacklet *create(std::size_t capacity, stacklet *prev) {
    stacklet *s = stacklet::create(capacity, prev);
    std::uint64_t chain = 0;
    for (stacklet const *p = s; p != nullptr; p = p->m_prev) {
      chain += sizeof(stacklet) + p->m_capacity;
    }
    // relaxed: statistics, read as snapshots
    m_created.store(m_created.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (chain > m_peak.load(std::memory_order_relaxed)) {
      m_peak.store(chain, std::memory_order_relaxed);
    }
    return s;
  }

  MAGPIE_NOINLINE void pop_stacklet() noexcept {
    stacklet *empty = m_top;
    if (empty->m_next != nullptr) { // keep at most one cached segment
      stacklet::destroy(empty->m_next);
      empty->m_next = nullptr;
    }
    empty->m_saved_sp = empty->base();
    m_top = empty->m_prev;
    m_sp = m_top->m_saved_sp;
    m_end = m_top->end();
  }

  std::byte *m_sp = nullptr;
  std::byte *m_end = nullptr;
  stacklet *m_top = nullptr;
  bool m_small_next = false; // the chain was released to a parked task: start the next one small
  std::atomic<std::uint64_t> m_created{0}; // stacklets allocated (owner writes, anyone reads)
  std::atomic<std::uint64_t> m_peak{0};    // largest chain in bytes (owner writes, anyone reads)
};

} // namespace magpie::core
