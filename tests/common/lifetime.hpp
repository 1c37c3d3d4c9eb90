#pragma once
// tests/common/lifetime.hpp — leak and lifetime instruments for magpie's tests.
//
// Three instruments, each able to fail (they are checked by tests/stress/lifetime_test.cpp):
//
//   tracked<T>       a value type that counts constructions and destructions and carries a magic
//                    word, so that a double destruction, or a read of / assignment to a destroyed
//                    object, is counted as an error instead of passing silently. Use it for task
//                    arguments, return values and frame-resident state: when every program has
//                    finished, `lifetime::live() == 0` proves that every argument and every frame
//                    that held one was destroyed, and `lifetime::errors() == 0` that none was
//                    destroyed twice or used after its death.
//   tracked_error    an exception type with a live-instance counter: after the exception that
//                    reached sync_wait's caller is dropped, `tracked_error::live() == 0` proves
//                    that no exception object leaked inside the runtime.
//   stacklet_ledger  a stacklet allocator (installed with core::set_stacklet_allocator) that
//                    records every live stacklet: a free of an unknown pointer or with a wrong size
//                    is an error, and the ledger must be empty again once the schedulers are gone.
//                    It also injects allocation failures (std::bad_alloc) on request.
//
// Also: copy_bomb, an argument type whose copy constructor throws when armed.
//
// Header-only, no gtest dependency (the soak executable uses it too). Everything here is
// thread-safe. Counters are process-wide: compare against a baseline taken before the code under
// test, or call lifetime::reset() between tests.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

#include "magpie/core/stack.hpp"

namespace magpie::lifetime {

// ---------------------------------------------------------------------------------------------
// Lifetime counters shared by every tracked<T>.

struct counters {
  std::atomic<long> constructed{0}; ///< every constructor, copies and moves included
  std::atomic<long> destroyed{0};
  std::atomic<long> errors{0}; ///< double destruction, use after destruction
  std::atomic<char const *> first_error{nullptr};
};

inline counters &global_counters() noexcept {
  static counters c;
  return c;
}

/// tracked<T> objects alive now (constructed minus destroyed).
inline long live() noexcept {
  auto &c = global_counters();
  return c.constructed.load() - c.destroyed.load();
}
/// Lifetime errors seen so far.
inline long errors() noexcept { return global_counters().errors.load(); }
/// What the first error was (a static string), or null.
inline char const *first_error() noexcept { return global_counters().first_error.load(); }
/// Clears the error count (the live count is a balance and is never reset).
inline void reset_errors() noexcept {
  global_counters().errors = 0;
  global_counters().first_error = nullptr;
}

namespace detail {
inline void report(char const *what) noexcept {
  auto &c = global_counters();
  c.errors.fetch_add(1);
  char const *expected = nullptr;
  c.first_error.compare_exchange_strong(expected, what);
}
} // namespace detail

/// A T with a lifetime audit. Reads and assignments of a destroyed object, and double
/// destruction, are counted as errors (a destroyed object's bytes still exist inside a coroutine
/// frame or a stacklet, so the magic word is readable; outside such storage, ASan catches it).
template <typename T>
class tracked {
public:
  tracked() noexcept(noexcept(T{})) : m_value{} { born(); }
  tracked(T v) noexcept(std::is_nothrow_move_constructible_v<T>) : m_value(std::move(v)) {
    born();
  } // NOLINT: implicit on purpose
  tracked(tracked const &o) : m_value((o.check("copy from a destroyed tracked"), o.m_value)) {
    born();
  }
  tracked(tracked &&o) noexcept(std::is_nothrow_move_constructible_v<T>)
      : m_value((o.check("move from a destroyed tracked"), std::move(o.m_value))) {
    born();
  }
  tracked &operator=(tracked const &o) {
    check("assignment to a destroyed tracked");
    o.check("assignment from a destroyed tracked");
    m_value = o.m_value;
    return *this;
  }
  tracked &operator=(tracked &&o) noexcept(std::is_nothrow_move_assignable_v<T>) {
    check("assignment to a destroyed tracked");
    o.check("assignment from a destroyed tracked");
    m_value = std::move(o.m_value);
    return *this;
  }
  ~tracked() {
    check("double destruction of a tracked");
    // Through a volatile pointer: a plain store to a dying object is a dead store the optimiser
    // may remove, and then a later use would look alive.
    *static_cast<std::uint64_t volatile *>(&m_magic) = dead_magic;
    global_counters().destroyed.fetch_add(1);
  }

  T const &value() const noexcept {
    check("read of a destroyed tracked");
    return m_value;
  }
  T &value() noexcept {
    check("read of a destroyed tracked");
    return m_value;
  }
  bool alive() const noexcept { return load_magic() == alive_magic; }

private:
  static constexpr std::uint64_t alive_magic = 0x7ac4edA11fe0001ULL;
  static constexpr std::uint64_t dead_magic = 0xdeadbeefdeadbeefULL;

  void born() noexcept { global_counters().constructed.fetch_add(1); }
  std::uint64_t load_magic() const noexcept {
    return *static_cast<std::uint64_t const volatile *>(&m_magic);
  }
  void check(char const *what) const noexcept {
    if (load_magic() != alive_magic) {
      detail::report(what);
    }
  }

  std::uint64_t m_magic = alive_magic;
  T m_value;
};

// ---------------------------------------------------------------------------------------------
// An exception type that counts its live instances.

class tracked_error : public std::runtime_error {
public:
  explicit tracked_error(std::uint64_t id)
      : std::runtime_error("magpie test error " + std::to_string(id)), m_id(id) {
    counter().fetch_add(1);
  }
  tracked_error(tracked_error const &o) : std::runtime_error(o), m_id(o.m_id) {
    counter().fetch_add(1);
  }
  tracked_error &operator=(tracked_error const &) = default;
  ~tracked_error() override { counter().fetch_sub(1); }

  std::uint64_t id() const noexcept { return m_id; }

  /// tracked_error objects alive now (exception objects included).
  static long live() noexcept { return counter().load(); }

private:
  static std::atomic<long> &counter() noexcept {
    static std::atomic<long> n{0};
    return n;
  }
  std::uint64_t m_id;
};

// ---------------------------------------------------------------------------------------------
// An argument whose copy throws when armed.

struct copy_bomb_error : std::runtime_error {
  copy_bomb_error() : std::runtime_error("copy_bomb: copy constructor threw") {}
};

/// Copying an armed copy_bomb throws copy_bomb_error (moves never throw). Carries a tracked<int>
/// so that leaks of partially constructed argument packs are visible.
class copy_bomb {
public:
  explicit copy_bomb(bool armed, int value = 0) : m_armed(armed), m_value(value) {}
  copy_bomb(copy_bomb const &o) : m_armed(o.m_armed), m_value(o.m_value) {
    if (m_armed) {
      throw copy_bomb_error();
    }
  }
  copy_bomb(copy_bomb &&) noexcept = default;
  copy_bomb &operator=(copy_bomb const &) = default;
  copy_bomb &operator=(copy_bomb &&) noexcept = default;
  ~copy_bomb() = default;

  int value() const noexcept { return m_value.value(); }

private:
  bool m_armed;
  tracked<int> m_value;
};

// ---------------------------------------------------------------------------------------------
// The stacklet ledger: a counting, checking, failure-injecting stacklet allocator.

/// Installs itself as the stacklet allocator for its lifetime; at most one exists at a time.
/// Create it before any scheduler and destroy it after the last one (stacklets are handed to the
/// allocator that was installed when they are freed).
class stacklet_ledger {
  struct state {
    std::mutex mutex;
    bool installed = false;
    std::unordered_map<void *, std::size_t> live;
    std::size_t allocations = 0, deallocations = 0, injected = 0, errors = 0;
    long fail_countdown = -1;
    std::size_t fail_min_bytes = 0;
    unsigned fail_per_million = 0;
    std::uint64_t rng = 0;
  };

  static state &get() {
    static state s;
    return s;
  }

  template <typename F>
  static auto locked(F f) {
    state &s = get();
    std::lock_guard lock(s.mutex);
    return f(s);
  }

public:
  stacklet_ledger() {
    state &s = get();
    std::lock_guard lock(s.mutex);
    if (s.installed) {
      throw std::logic_error("stacklet_ledger: only one may exist at a time");
    }
    s.installed = true;
    s.live.clear();
    s.allocations = s.deallocations = s.injected = s.errors = 0;
    s.fail_countdown = -1;
    s.fail_min_bytes = 0;
    s.fail_per_million = 0;
    s.rng = 0x9E3779B97F4A7C15ULL;
    m_previous = core::set_stacklet_allocator({&allocate, &deallocate});
  }
  stacklet_ledger(stacklet_ledger const &) = delete;
  stacklet_ledger &operator=(stacklet_ledger const &) = delete;
  ~stacklet_ledger() {
    core::set_stacklet_allocator(m_previous);
    state &s = get();
    std::lock_guard lock(s.mutex);
    // Anything still recorded leaked (the caller checks live() before we go); it stays leaked,
    // so that LeakSanitizer reports it too.
    s.live.clear();
    s.installed = false;
  }

  /// Stacklets allocated through the ledger and not yet freed.
  std::size_t live() const {
    std::lock_guard lock(get().mutex);
    return get().live.size();
  }
  std::size_t live_bytes() const {
    std::lock_guard lock(get().mutex);
    std::size_t n = 0;
    for (auto const &kv : get().live) {
      n += kv.second;
    }
    return n;
  }
  std::size_t allocations() const {
    return locked([](state &s) { return s.allocations; });
  }
  std::size_t deallocations() const {
    return locked([](state &s) { return s.deallocations; });
  }
  /// Failures injected so far.
  std::size_t injected() const {
    return locked([](state &s) { return s.injected; });
  }
  /// Frees of unknown pointers (double frees) or with the wrong size.
  std::size_t errors() const {
    return locked([](state &s) { return s.errors; });
  }

  /// The allocation after `n` more successful ones fails (n = 0: the next one); -1 disarms.
  void fail_after(long n) {
    locked([n](state &s) {
      s.fail_countdown = n;
      return 0;
    });
  }
  /// Every allocation of at least `min_bytes` fails with probability `per_million`/10^6
  /// (a deterministic sequence from `seed`). per_million = 0 disarms.
  void fail_randomly(unsigned per_million, std::size_t min_bytes = 0, std::uint64_t seed = 1) {
    locked([&](state &s) {
      s.fail_per_million = per_million;
      s.fail_min_bytes = min_bytes;
      s.rng = seed * 0x9E3779B97F4A7C15ULL + 1;
      return 0;
    });
  }
  /// Stops injecting failures.
  void disarm() {
    fail_after(-1);
    fail_randomly(0);
  }

private:
  static bool should_fail(state &s, std::size_t bytes) {
    if (s.fail_countdown >= 0) {
      if (s.fail_countdown == 0) {
        s.fail_countdown = -1;
        return true;
      }
      --s.fail_countdown;
    }
    if (s.fail_per_million != 0 && bytes >= s.fail_min_bytes) {
      s.rng ^= s.rng << 13; // xorshift64
      s.rng ^= s.rng >> 7;
      s.rng ^= s.rng << 17;
      return s.rng % 1000000 < s.fail_per_million;
    }
    return false;
  }

  static void *allocate(std::size_t bytes) {
    state &s = get();
    {
      std::lock_guard lock(s.mutex);
      if (should_fail(s, bytes)) {
        ++s.injected;
        throw std::bad_alloc();
      }
    }
    void *p = ::operator new(bytes, std::align_val_t{64});
    std::lock_guard lock(s.mutex);
    ++s.allocations;
    s.live.emplace(p, bytes);
    return p;
  }

  static void deallocate(void *p, std::size_t bytes) noexcept {
    state &s = get();
    {
      std::lock_guard lock(s.mutex);
      ++s.deallocations;
      auto it = s.live.find(p);
      if (it == s.live.end() || it->second != bytes) {
        ++s.errors;
        std::fprintf(stderr, "stacklet_ledger: free of %s stacklet %p (%zu bytes)\n",
                     it == s.live.end() ? "an unknown" : "a wrongly sized", p, bytes);
        if (it == s.live.end()) {
          return; // a double free: do not free it again
        }
      }
      s.live.erase(it);
    }
    ::operator delete(p, std::align_val_t{64});
  }

  core::stacklet_allocator m_previous{};
};

} // namespace magpie::lifetime
