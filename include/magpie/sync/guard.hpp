#pragma once
// magpie/sync/guard.hpp — the scoped owners of a lock of magpie::mutex or magpie::shared_mutex:
// what `co_await m.scoped_lock()` and `co_await m.scoped_lock_shared()` return.

#include <mutex>
#include <utility>

#include "magpie/core/config.hpp"

namespace magpie::sync {

class condition_variable;

/// Owns one lock of `Mutex` — exclusive (`Shared` false: released with `unlock()`) or shared
/// (`Shared` true: released with `unlock_shared()`) — and releases it when destroyed, also during
/// unwinding. Move-only; not thread-safe (one task or thread uses it at a time, as the lock's
/// owner). Use the names unique_guard<M> and shared_guard<M>.
template <typename Mutex, bool Shared>
class [[nodiscard("the guard unlocks when it is destroyed: name it")]] basic_guard {
public:
  /// A guard that owns nothing.
  basic_guard() noexcept = default;
  /// Adopts a lock of the guard's kind that the caller holds on `m`.
  basic_guard(Mutex &m, std::adopt_lock_t) noexcept : m_mutex(&m) {}
  /// Takes over `other`'s lock; `other` owns nothing afterwards.
  basic_guard(basic_guard &&other) noexcept : m_mutex(std::exchange(other.m_mutex, nullptr)) {}
  /// Releases the lock this guard owns, if any, then takes over `other`'s.
  basic_guard &operator=(basic_guard &&other) noexcept {
    if (this != &other) {
      reset();
      m_mutex = std::exchange(other.m_mutex, nullptr);
    }
    return *this;
  }
  /// Releases the lock if the guard still owns it.
  ~basic_guard() { reset(); }

  /// True while the guard owns a lock.
  bool owns_lock() const noexcept { return m_mutex != nullptr; }
  /// owns_lock().
  explicit operator bool() const noexcept { return owns_lock(); }
  /// The mutex whose lock the guard owns (null if none).
  Mutex *mutex() const noexcept { return m_mutex; }

  /// Releases the lock now. Precondition (checked, always): the guard owns a lock.
  void unlock() noexcept {
    MAGPIE_CHECK(m_mutex != nullptr, "magpie guard: unlock() of a guard that owns no lock");
    reset();
  }
  /// Gives up ownership without unlocking; returns the mutex (the caller must unlock it).
  Mutex *release() noexcept { return std::exchange(m_mutex, nullptr); }

private:
  friend class condition_variable;

  void reset() noexcept {
    if (Mutex *m = std::exchange(m_mutex, nullptr); m != nullptr) {
      if constexpr (Shared) {
        m->unlock_shared();
      } else {
        m->unlock();
      }
    }
  }

  Mutex *m_mutex = nullptr;
};

/// An exclusive lock of `Mutex` (magpie::mutex, magpie::shared_mutex), released on destruction.
template <typename Mutex>
using unique_guard = basic_guard<Mutex, false>;

/// A shared lock of `Mutex` (magpie::shared_mutex), released on destruction.
template <typename Mutex>
using shared_guard = basic_guard<Mutex, true>;

} // namespace magpie::sync
