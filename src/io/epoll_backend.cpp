// magpie/src/io/epoll_backend.cpp — the reactor's backend on Linux: epoll, one-shot
// registrations, an eventfd for wake-ups, and nanosecond timeouts (epoll_pwait2).

#include <cerrno>
#include <ctime>
#include <system_error>

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "backend.hpp"
#include "magpie/io/fd.hpp"

namespace magpie::io::detail {

backend::backend() {
  m_epoll = ::epoll_create1(EPOLL_CLOEXEC);
  if (m_epoll < 0) {
    throw std::system_error(errno, std::system_category(), "magpie::io: epoll_create1");
  }
  m_wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (m_wake < 0) {
    int const e = errno;
    ::close(m_epoll);
    throw std::system_error(e, std::system_category(), "magpie::io: eventfd");
  }
  epoll_event ev{};
  ev.events = EPOLLIN; // level-triggered: stays ready until wait() drains it
  ev.data.fd = m_wake;
  if (::epoll_ctl(m_epoll, EPOLL_CTL_ADD, m_wake, &ev) != 0) {
    int const e = errno;
    ::close(m_wake);
    ::close(m_epoll);
    throw std::system_error(e, std::system_category(), "magpie::io: epoll_ctl");
  }
}

backend::~backend() {
  ::close(m_wake);
  ::close(m_epoll);
}

int backend::watch(int fd, unsigned interest, bool &known) noexcept {
  epoll_event ev{};
  ev.events = EPOLLONESHOT | ((interest & want_read) != 0 ? EPOLLIN | EPOLLRDHUP : 0u) |
              ((interest & want_write) != 0 ? EPOLLOUT : 0u);
  ev.data.fd = fd;
  int op = known ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
  for (int tries = 0; tries < 2; ++tries) {
    if (::epoll_ctl(m_epoll, op, fd, &ev) == 0) {
      known = true;
      return 0;
    }
    // Our record can be stale: the descriptor was closed (epoll forgot it) and its number
    // reused, or registered by an earlier wait that we forgot. Switch operations once.
    if (errno == ENOENT && op == EPOLL_CTL_MOD) {
      op = EPOLL_CTL_ADD;
    } else if (errno == EEXIST && op == EPOLL_CTL_ADD) {
      op = EPOLL_CTL_MOD;
    } else {
      break;
    }
  }
  known = false;
  return errno;
}

void backend::forget(int fd) noexcept {
  (void)::epoll_ctl(m_epoll, EPOLL_CTL_DEL, fd, nullptr); // ENOENT, EBADF: nothing to forget
}

int backend::wait(nanos deadline, ready_event *out, int max) noexcept {
  constexpr int batch = 256;
  epoll_event evs[batch];
  int n;
  if (deadline == no_deadline) {
    n = ::epoll_wait(m_epoll, evs, max < batch ? max : batch, -1);
  } else {
    nanos const left = deadline - now_nanos();
    timespec ts{};
    if (left > 0) {
      ts.tv_sec = static_cast<time_t>(left / 1'000'000'000);
      ts.tv_nsec = static_cast<long>(left % 1'000'000'000);
    }
    n = ::epoll_pwait2(m_epoll, evs, max < batch ? max : batch, &ts, nullptr);
    if (n < 0 && errno == ENOSYS) { // a kernel before 5.11: millisecond timeouts, rounded up
      n = ::epoll_wait(m_epoll, evs, max < batch ? max : batch,
                       left > 0 ? static_cast<int>((left + 999'999) / 1'000'000) : 0);
    }
  }
  if (n < 0) {
    return 0; // EINTR: the caller looks at its timers and waits again
  }
  int out_n = 0;
  for (int i = 0; i < n; ++i) {
    if (evs[i].data.fd == m_wake) {
      std::uint64_t drained;
      (void)!::read(m_wake, &drained, sizeof drained); // EAGAIN if another wait drained it
      continue;
    }
    std::uint32_t const e = evs[i].events;
    std::uint8_t ready = 0;
    if ((e & (EPOLLERR | EPOLLHUP)) != 0) {
      ready = want_read | want_write;
    }
    if ((e & (EPOLLIN | EPOLLRDHUP | EPOLLPRI)) != 0) {
      ready |= want_read;
    }
    if ((e & EPOLLOUT) != 0) {
      ready |= want_write;
    }
    out[out_n++] = {evs[i].data.fd, ready};
  }
  return out_n;
}

void backend::wake() noexcept {
  std::uint64_t const one = 1;
  (void)!::write(m_wake, &one, sizeof one); // EAGAIN only at 2^64-2 pending: already awake
}

} // namespace magpie::io::detail
