#pragma once
// Replaces the global allocation functions (every operator new/delete form) with ones that call
// two hooks, which the including test defines:
//
//   void *magpie_test_allocate(std::size_t bytes, std::size_t align); // null: out of memory
//   void magpie_test_deallocate(void *p) noexcept;
//
// The definitions are not inline: include this header in exactly one translation unit of an
// executable, and keep such tests in executables of their own. ThreadSanitizer's runtime defines
// the global allocation functions itself (strongly), so under TSan nothing is replaced and
// MAGPIE_TEST_REPLACE_NEW is 0: the including test should then report that it was skipped.

#include <cstddef>
#include <cstdlib>
#include <new>

#include "magpie/core/config.hpp" // MAGPIE_UNDER_TSAN

#if !defined(MAGPIE_TEST_REPLACE_NEW)
#  define MAGPIE_TEST_REPLACE_NEW (!MAGPIE_UNDER_TSAN)
#endif

void *magpie_test_allocate(std::size_t bytes, std::size_t align);
void magpie_test_deallocate(void *p) noexcept;

namespace magpie::test {

/// The memory behind the hooks: malloc, or aligned_alloc for over-aligned requests.
inline void *raw_allocate(std::size_t bytes, std::size_t align) noexcept {
  if (bytes == 0) {
    bytes = 1;
  }
  if (align <= alignof(std::max_align_t)) {
    return std::malloc(bytes);
  }
  bytes = (bytes + align - 1) / align * align; // aligned_alloc wants a multiple
  return std::aligned_alloc(align, bytes);
}

} // namespace magpie::test

#if MAGPIE_TEST_REPLACE_NEW
void *operator new(std::size_t n) {
  if (void *p = magpie_test_allocate(n, 0)) {
    return p;
  }
  throw std::bad_alloc();
}
void *operator new[](std::size_t n) { return ::operator new(n); }
void *operator new(std::size_t n, std::align_val_t a) {
  if (void *p = magpie_test_allocate(n, static_cast<std::size_t>(a))) {
    return p;
  }
  throw std::bad_alloc();
}
void *operator new[](std::size_t n, std::align_val_t a) { return ::operator new(n, a); }
void *operator new(std::size_t n, std::nothrow_t const &) noexcept {
  return magpie_test_allocate(n, 0);
}
void *operator new[](std::size_t n, std::nothrow_t const &) noexcept {
  return magpie_test_allocate(n, 0);
}
void *operator new(std::size_t n, std::align_val_t a, std::nothrow_t const &) noexcept {
  return magpie_test_allocate(n, static_cast<std::size_t>(a));
}
void *operator new[](std::size_t n, std::align_val_t a, std::nothrow_t const &) noexcept {
  return magpie_test_allocate(n, static_cast<std::size_t>(a));
}
void operator delete(void *p) noexcept { magpie_test_deallocate(p); }
void operator delete[](void *p) noexcept { magpie_test_deallocate(p); }
void operator delete(void *p, std::size_t) noexcept { magpie_test_deallocate(p); }
void operator delete[](void *p, std::size_t) noexcept { magpie_test_deallocate(p); }
void operator delete(void *p, std::align_val_t) noexcept { magpie_test_deallocate(p); }
void operator delete[](void *p, std::align_val_t) noexcept { magpie_test_deallocate(p); }
void operator delete(void *p, std::size_t, std::align_val_t) noexcept { magpie_test_deallocate(p); }
void operator delete[](void *p, std::size_t, std::align_val_t) noexcept {
  magpie_test_deallocate(p);
}
void operator delete(void *p, std::nothrow_t const &) noexcept { magpie_test_deallocate(p); }
void operator delete[](void *p, std::nothrow_t const &) noexcept { magpie_test_deallocate(p); }
void operator delete(void *p, std::align_val_t, std::nothrow_t const &) noexcept {
  magpie_test_deallocate(p);
}
void operator delete[](void *p, std::align_val_t, std::nothrow_t const &) noexcept {
  magpie_test_deallocate(p);
}
#endif
