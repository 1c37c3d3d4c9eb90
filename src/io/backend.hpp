// magpie/src/io/backend.hpp — the reactor's one interface to the operating system's readiness
// notification (internal). Implemented with epoll in epoll_backend.cpp; another backend (io_uring,
// kqueue) would implement the same class.
#pragma once

#include <cstdint>

#include "magpie/io/detail/timer_heap.hpp"

namespace magpie::io::detail {

/// A descriptor that became ready: `ready` holds want_read / want_write bits (an error or a
/// hang-up sets both: the next operation reports it).
struct ready_event {
  int fd;
  std::uint8_t ready;
};

/// Readiness notification. watch/forget: any thread; wait: the reactor thread only; wake: any.
class backend {
public:
  backend();  // throws std::system_error
  ~backend(); // never called for the process-wide reactor (it lives until exit)
  backend(backend const &) = delete;
  backend &operator=(backend const &) = delete;

  /// Watches `fd` for `interest` (want_read | want_write), once: the first event disarms it
  /// until the next watch. `known` says whether `fd` is registered already (updated). Returns 0,
  /// EPERM for a descriptor that is always ready (a regular file), or another errno.
  int watch(int fd, unsigned interest, bool &known) noexcept;

  /// Stops watching `fd` (if it was).
  void forget(int fd) noexcept;

  /// Blocks until a descriptor is ready, wake() is called or `deadline` (steady-clock ns;
  /// no_deadline: none) passes. Returns the number of events stored in `out` (0 after a wake,
  /// a timeout or a signal).
  int wait(nanos deadline, ready_event *out, int max) noexcept;

  /// Any thread: makes the current or next wait() return.
  void wake() noexcept;

private:
  int m_epoll = -1;
  int m_wake = -1; // an eventfd
};

} // namespace magpie::io::detail
