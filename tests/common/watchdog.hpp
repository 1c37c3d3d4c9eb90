#pragma once
// tests/common/watchdog.hpp — what every magpie test executable shares, gtest or not: the build
// flavour (sanitizers shrink sizes) and a watchdog that turns a hang into a loud failure.

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "magpie/core/config.hpp" // MAGPIE_UNDER_ASAN, MAGPIE_UNDER_TSAN

namespace magpie::test {

// ---------------------------------------------------------------------------------------------
// Build flavour: sanitizers slow everything down 5–20×; the suite keeps the same shapes but
// smaller sizes there so that a whole preset stays well under three minutes on two cores.

inline constexpr bool sanitized = MAGPIE_UNDER_TSAN || MAGPIE_UNDER_ASAN;

/// `normal` in plain builds, `small` under sanitizers.
constexpr int scaled(int normal, int small) noexcept { return sanitized ? small : normal; }

// ---------------------------------------------------------------------------------------------
// Watchdog: a bug that hangs (a lost wake-up, a join that never completes) must fail the test
// rather than stall CI until ctest's own timeout. The thread aborts the process with a message.

class watchdog {
public:
  explicit watchdog(std::string what, std::chrono::seconds limit = default_limit())
      : m_what(std::move(what)), m_thread([this, limit] { watch(limit); }) {}
  watchdog(watchdog const &) = delete;
  watchdog &operator=(watchdog const &) = delete;
  ~watchdog() {
    {
      std::lock_guard lock(m_mutex);
      m_done = true;
    }
    m_cv.notify_one();
    m_thread.join();
  }

  static std::chrono::seconds default_limit() noexcept {
    return std::chrono::seconds(sanitized ? 150 : 60);
  }

private:
  void watch(std::chrono::seconds limit) {
    std::unique_lock lock(m_mutex);
    if (!m_cv.wait_for(lock, limit, [&] { return m_done; })) {
      std::fprintf(stderr,
                   "\nmagpie test watchdog: `%s` did not finish within %lld s (a hang: lost "
                   "wake-up or a join that never completes?); aborting\n",
                   m_what.c_str(), static_cast<long long>(limit.count()));
      std::fflush(stderr);
      std::abort();
    }
  }

  std::string m_what;
  std::mutex m_mutex;
  std::condition_variable m_cv;
  bool m_done = false;
  std::thread m_thread; // last: starts after the other members exist
};

} // namespace magpie::test
