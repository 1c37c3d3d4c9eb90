#pragma once
// magpie/core/stack_alloc.hpp — temporary arrays on the task's own segmented stack.
//
//   auto buf = co_await magpie::stack_alloc<double>(n);  // n value-initialised doubles
//   auto tmp = co_await magpie::stack_alloc_uninitialized<double>(n); // n, not initialised
//   ... use buf[i], buf.span() ...
//                                                      // freed when `buf` goes out of scope
//
// A portable, overflow-free alloca: the memory comes from the stack that holds the task's frame,
// by pointer bump, and is freed in FILO order. Allocate and free only outside fork–join scopes
// (before the first fork or after the join): inside a scope the task may be running on a thief's
// stack. Both rules are checked. One exception to the second: when an exception unwinds a scope
// whose continuation was stolen, an array is destroyed — its elements and its bytes — only when
// every child of the scope has arrived (at the next join or at the task's end): children may keep
// writing results into its elements (`fork(&a[i], ...)`) or reading them through references
// until they finish (docs/exception-scopes.md). Cost: a 32-byte header in front of each non-empty
// array's elements, written only in that case.

#include <coroutine>
#include <cstddef>
#include <exception>
#include <memory>
#include <new>
#include <span>
#include <type_traits>

#include "magpie/core/config.hpp"
#include "magpie/core/context.hpp"
#include "magpie/core/frame.hpp"

namespace magpie::core {

template <typename T, bool Initialise = true>
struct stack_alloc_awaitable;

/// An array of T on the task's stack; neither copyable nor movable (it must die in FILO order).
template <typename T>
class stack_array {
  static_assert(alignof(T) <= stacklet::alignment,
                "magpie::stack_alloc: over-aligned types (alignof > 16) are not supported");

public:
  stack_array(stack_array const &) = delete;
  stack_array &operator=(stack_array const &) = delete;

  ~stack_array() {
    if (m_data == nullptr) {
      return;
    }
    MAGPIE_CHECK( // always on: freeing here would free frames a thief may be running on
        !m_owner->m_unjoined || std::uncaught_exceptions() > 0,
        "a magpie::stack_array was freed inside a fork-join scope: let it go out of scope "
        "before the first fork or after the join");
    auto *header = header_of(m_data);
    if (m_owner->m_steals != 0) [[unlikely]] {
      // Inside a scope whose continuation was stolen (an exception is unwinding it): children of
      // the scope may still write or read the elements, and the array lies on the task's own
      // chain, which another worker holds until they finish. Destroy nothing now: the task's
      // runner destroys the elements and frees the bytes once every child has arrived (the next
      // join, or the task's end). Only the header is written; the elements are the children's.
      header->destroy = std::is_trivially_destructible_v<T> ? nullptr : &destroy_elements;
      header->count = m_size;
      m_owner->defer_destroy(header);
      return;
    }
    // Not stolen: every child has finished and the array is on top of the current chain.
    destroy_elements(m_data, m_size);
    stack &s = m_owner->m_ctx->stack();
    MAGPIE_ASSERT(s.is_top(header, frame_base::array_header_bytes + m_size * sizeof(T)),
                  "magpie::stack_array freed out of FILO order");
    s.deallocate(header);
  }

  /// The first element (null when empty).
  T *data() const noexcept { return m_data; }
  /// Number of elements.
  std::size_t size() const noexcept { return m_size; }
  /// True if the array has no elements.
  bool empty() const noexcept { return m_size == 0; }
  /// Element `i`; `i < size()` (checked in debug builds).
  T &operator[](std::size_t i) const noexcept {
    MAGPIE_ASSERT(i < m_size, "magpie::stack_array index out of range");
    return m_data[i];
  }
  /// Iterator to the first element.
  T *begin() const noexcept { return m_data; }
  /// Iterator past the last element.
  T *end() const noexcept { return m_data + m_size; }
  /// The elements as a span.
  std::span<T> span() const noexcept { return {m_data, m_size}; }

private:
  template <typename, bool>
  friend struct stack_alloc_awaitable;

  /// Value-initialises the elements, or (Initialise false: trivially default-constructible T
  /// only) leaves them uninitialised.
  template <bool Initialise>
  stack_array(frame_base *owner, std::size_t n, std::bool_constant<Initialise>)
      : m_owner(owner), m_size(n) {
    if (n == 0) {
      return;
    }
    // Debug only: always on, this test cost ~1 ns per stack_alloc with Clang 16 (about 9% on fib
    // with one stack array per task; docs/clang-coroutine-frames.md, "Always-on checks").
    MAGPIE_ASSERT(!owner->m_unjoined,
                  "magpie::stack_alloc inside a fork-join scope: allocate before the first fork or "
                  "after the join");
    // Outside a scope no array awaits a deferred free: every path that ends a scope frees them
    // (docs/protocols.md, "Stack arrays unwound while stolen"); one left would be freed later,
    // below this array.
    MAGPIE_ASSERT(owner->m_deferred == nullptr,
                  "internal: stack arrays unwound in the last fork-join scope were not freed");
    stack &s = owner->m_ctx->stack();
    // One bump: the header (frame_base::deferred_array, used only if the destruction is
    // deferred), then the elements, 16-byte aligned like every stack allocation.
    void *mem = s.allocate(frame_base::array_header_bytes + n * sizeof(T)); // may throw (hook)
    T *elements =
        reinterpret_cast<T *>(static_cast<std::byte *>(mem) + frame_base::array_header_bytes);
    if constexpr (Initialise) {
      try {
        std::uninitialized_value_construct_n(elements, n);
      } catch (...) {
        s.deallocate(mem);
        throw;
      }
    } else { // trivially default-constructible: starting the elements' lifetimes does nothing
      std::uninitialized_default_construct_n(elements, n);
    }
    m_data = elements;
  }

  static frame_base::deferred_array *header_of(T *elements) noexcept {
    return reinterpret_cast<frame_base::deferred_array *>(reinterpret_cast<std::byte *>(elements) -
                                                          frame_base::array_header_bytes);
  }

  /// Destroys `n` elements in the reverse order of their construction (type-erased for the
  /// deferred record).
  static void destroy_elements(void *elements, std::size_t n) noexcept {
    if constexpr (!std::is_trivially_destructible_v<T>) {
      T *data = static_cast<T *>(elements);
      for (std::size_t i = n; i-- > 0;) {
        data[i].~T();
      }
    }
  }

  frame_base *m_owner;
  T *m_data = nullptr;
  std::size_t m_size;
};

/// What `co_await stack_alloc<T>(n)` (Initialise) or `stack_alloc_uninitialized<T>(n)` becomes
/// inside a task.
template <typename T, bool Initialise>
struct stack_alloc_awaitable {
  frame_base *m_owner; ///< the task that allocates
  std::size_t m_count; ///< number of elements

  /// Never suspends: the allocation happens in await_resume.
  bool await_ready() const noexcept { return true; }
  /// Not called (await_ready is true).
  void await_suspend(std::coroutine_handle<>) const noexcept {}
  /// Allocates the array and value-initialises it (or not); throws what the stacklet allocator or
  /// T's constructor throws.
  stack_array<T> await_resume() const {
    return stack_array<T>(m_owner, m_count, std::bool_constant<Initialise>{});
  }
};

namespace detail {
template <typename T, bool Initialise>
struct [[nodiscard("co_await it")]] stack_alloc_request {
  using magpie_awaitable = void;
  std::size_t m_count;
  stack_alloc_awaitable<T, Initialise> magpie_bind(frame_base &self) const noexcept {
    return {&self, m_count};
  }
};
} // namespace detail

/// Allocates `n` value-initialised T on the current task's stack.
template <typename T>
detail::stack_alloc_request<T, true> stack_alloc(std::size_t n) noexcept {
  return {n};
}

/// Allocates `n` T on the current task's stack without initialising them, for buffers that are
/// written before they are read (a merge's output, a scratch array): their values are
/// indeterminate until assigned, and reading one first is undefined behaviour. Saves
/// stack_alloc's zero-filling pass (n · sizeof(T) bytes written). T must be trivially
/// default-constructible (and is trivially destroyed); otherwise use stack_alloc, which
/// constructs the elements.
template <typename T>
detail::stack_alloc_request<T, false> stack_alloc_uninitialized(std::size_t n) noexcept {
  static_assert(std::is_trivially_default_constructible_v<T>,
                "magpie::stack_alloc_uninitialized needs a trivially default-constructible T "
                "(ints, doubles, pointers, aggregates of them); use magpie::stack_alloc<T>(n), "
                "which constructs the elements");
  return {n};
}

} // namespace magpie::core
