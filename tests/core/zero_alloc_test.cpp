// No heap allocation per task in steady state: this executable replaces the global operator
// new/delete with counting versions. After a warm-up run, a second sync_wait(fib) must not call
// operator new at all on the inline scheduler and on 1-worker pools. On multi-worker pools a
// steal may legitimately need a fresh stacklet; there the count is only reported.

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>

#include <gtest/gtest.h>

#include "common/test_support.hpp"

// ThreadSanitizer's runtime defines the global allocation functions itself (strongly), so they
// cannot be replaced there: under TSan this executable only reports that it was skipped. The
// other presets (dev, dev-clang, asan-ubsan) check the property.
#if defined(__SANITIZE_THREAD__)
#  define MAGPIE_TEST_COUNT_NEW 0
#elif defined(__has_feature)
#  if __has_feature(thread_sanitizer)
#    define MAGPIE_TEST_COUNT_NEW 0
#  endif
#endif
#if !defined(MAGPIE_TEST_COUNT_NEW)
#  define MAGPIE_TEST_COUNT_NEW 1
#endif

namespace {
std::atomic<long> g_news{0}; // every operator new since the process started
std::atomic<bool> g_counting{false};

[[maybe_unused]] __attribute__((noinline)) void *counted_alloc(std::size_t bytes,
                                                               std::size_t align) {
  if (g_counting.load(std::memory_order_relaxed)) {
    g_news.fetch_add(1, std::memory_order_relaxed);
  }
  if (bytes == 0) {
    bytes = 1;
  }
  void *p = nullptr;
  if (align <= alignof(std::max_align_t)) {
    p = std::malloc(bytes);
  } else {
    bytes = (bytes + align - 1) / align * align; // aligned_alloc wants a multiple
    p = std::aligned_alloc(align, bytes);
  }
  return p;
}

// Out of line so that GCC does not pair the inlined malloc with a free in operator delete and
// warn about mismatched allocation functions.
[[maybe_unused]] __attribute__((noinline)) void counted_free(void *p) noexcept { std::free(p); }
} // namespace

#if MAGPIE_TEST_COUNT_NEW
// The replaceable global allocation functions (all of them: a missed overload would hide calls).
void *operator new(std::size_t n) {
  if (void *p = counted_alloc(n, 0)) {
    return p;
  }
  throw std::bad_alloc();
}
void *operator new[](std::size_t n) { return ::operator new(n); }
void *operator new(std::size_t n, std::align_val_t a) {
  if (void *p = counted_alloc(n, static_cast<std::size_t>(a))) {
    return p;
  }
  throw std::bad_alloc();
}
void *operator new[](std::size_t n, std::align_val_t a) { return ::operator new(n, a); }
void *operator new(std::size_t n, std::nothrow_t const &) noexcept { return counted_alloc(n, 0); }
void *operator new[](std::size_t n, std::nothrow_t const &) noexcept { return counted_alloc(n, 0); }
void *operator new(std::size_t n, std::align_val_t a, std::nothrow_t const &) noexcept {
  return counted_alloc(n, static_cast<std::size_t>(a));
}
void *operator new[](std::size_t n, std::align_val_t a, std::nothrow_t const &) noexcept {
  return counted_alloc(n, static_cast<std::size_t>(a));
}
void operator delete(void *p) noexcept { counted_free(p); }
void operator delete[](void *p) noexcept { counted_free(p); }
void operator delete(void *p, std::size_t) noexcept { counted_free(p); }
void operator delete[](void *p, std::size_t) noexcept { counted_free(p); }
void operator delete(void *p, std::align_val_t) noexcept { counted_free(p); }
void operator delete[](void *p, std::align_val_t) noexcept { counted_free(p); }
void operator delete(void *p, std::size_t, std::align_val_t) noexcept { counted_free(p); }
void operator delete[](void *p, std::size_t, std::align_val_t) noexcept { counted_free(p); }
void operator delete(void *p, std::nothrow_t const &) noexcept { counted_free(p); }
void operator delete[](void *p, std::nothrow_t const &) noexcept { counted_free(p); }
void operator delete(void *p, std::align_val_t, std::nothrow_t const &) noexcept {
  counted_free(p);
}
void operator delete[](void *p, std::align_val_t, std::nothrow_t const &) noexcept {
  counted_free(p);
}
#endif

namespace {

using namespace magpie::test;

/// operator new calls made (by any thread) during `fn()`.
template <typename Fn>
long news_during(Fn &&fn) {
  long const before = g_news.load();
  g_counting = true;
  fn();
  g_counting = false;
  return g_news.load() - before;
}

class zero_alloc : public scheduler_test {
protected:
  void SetUp() override {
    if (!MAGPIE_TEST_COUNT_NEW) {
      GTEST_SKIP() << "operator new cannot be replaced under ThreadSanitizer";
    }
  }
};

TEST(zero_alloc_self_check, the_replacement_counts) {
  if (!MAGPIE_TEST_COUNT_NEW) {
    GTEST_SKIP() << "operator new cannot be replaced under ThreadSanitizer";
  }
  EXPECT_EQ(news_during([] {
              int *volatile p = new int(3); // volatile: the new-expression cannot be elided
              delete p;
            }),
            1);
  EXPECT_EQ(news_during([] {
              ::operator delete(::operator new(100, std::align_val_t{64}), std::align_val_t{64});
            }),
            1);
}

magpie::task<long> call_chain(int n) {
  if (n == 0) {
    co_return 0;
  }
  long r = 0;
  co_await magpie::call(&r, call_chain, n - 1);
  co_return r + 1;
}

TEST(zero_alloc_self_check, stacklet_allocations_are_counted) {
  if (!MAGPIE_TEST_COUNT_NEW) {
    GTEST_SKIP() << "operator new cannot be replaced under ThreadSanitizer";
  }
  // A chain deeper than the first stacklet must allocate: proves the counter sees the runtime.
  magpie::inline_scheduler s;
  long r = 0;
  EXPECT_GT(news_during([&] { r = magpie::sync_wait(s, call_chain, 20000); }), 0);
  EXPECT_EQ(r, 20000);
}

TEST_P(zero_alloc, second_fib_run_allocates_nothing) {
  int const n = 25;
  long r = 0;
  long const warm = news_during([&] { r = m_sched.run(fib, n); });
  EXPECT_EQ(r, serial_fib(n));
  long second = 0;
  long const steady = news_during([&] { second = m_sched.run(fib, n); });
  EXPECT_EQ(second, serial_fib(n));
  std::printf("[ info     ] %s: operator new calls: warm-up %ld, second run %ld\n",
              to_string(GetParam()).c_str(), warm, steady);
  if (m_sched.serial()) {
    EXPECT_EQ(steady, 0) << "a second fib(" << n << ") allocated on the heap";
  }
}

TEST_P(zero_alloc, steady_state_with_void_tasks_and_stack_arrays) {
  // A workload that also uses stack_alloc and discarded results.
  auto body = [](int n) -> magpie::task<void> {
    auto scratch = co_await magpie::stack_alloc<long>(64);
    co_await magpie::fork(fib, n);
    co_await magpie::call(fib, n - 1);
    co_await magpie::join();
    scratch[0] = n;
  };
  m_sched.run(body, 18);
  long const steady = news_during([&] {
    for (int i = 0; i < 5; ++i) {
      m_sched.run(body, 18);
    }
  });
  if (m_sched.serial()) {
    EXPECT_EQ(steady, 0);
  } else {
    std::printf("[ info     ] %s: operator new calls in 5 runs: %ld\n",
                to_string(GetParam()).c_str(), steady);
  }
}

INSTANTIATE_TEST_SUITE_P(all, zero_alloc, ::testing::ValuesIn(all_schedulers()), sched_name{});

} // namespace
