// magpie/src/io/reactor.cpp — the process-wide reactor: timer shards, the descriptor table, and
// the thread that sleeps in the backend until the earliest deadline or a descriptor event, then
// resubmits the tasks whose wait ended to their pools.
//
// Protocol and proofs (no missed deadline while the reactor falls asleep; exactly one party wakes
// a descriptor wait with a deadline): docs/protocols.md §10.

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <limits>
#include <memory>
#include <new>
#include <thread>

#include <sys/prctl.h>
#include <unistd.h>

#include "backend.hpp"
#include "magpie/io/fd.hpp"
#include "magpie/io/timer.hpp"

namespace magpie::io::detail {
namespace {

/// A shard of the pending timers: the heap, its lock, and its earliest deadline for the reactor.
struct alignas(64) shard {
  spin_lock lock;
  timer_heap heap;
  std::atomic<nanos> earliest{no_deadline}; // the heap's top, stored under `lock`
};

/// The waits on one descriptor. Guarded by its own lock.
struct fd_entry {
  spin_lock lock;
  bool known = false; // registered with the backend
  fd_awaitable *reader = nullptr;
  fd_awaitable *writer = nullptr;
};

/// Descriptor number → entry, in chunks allocated on first use and kept until exit.
class fd_table {
public:
  static constexpr int chunk_bits = 10;
  static constexpr int chunks = 1 << 14; // 16 M descriptors

  ~fd_table() {
    for (auto &c : m_chunks) {
      delete[] c.load(std::memory_order_relaxed); // no edge: single-threaded teardown
    }
  }

  /// The entry of `fd`, created if `create`; null if out of range or memory.
  fd_entry *find(int fd, bool create) noexcept {
    if (fd < 0 || (fd >> chunk_bits) >= chunks) {
      return nullptr;
    }
    auto &slot = m_chunks[fd >> chunk_bits];
    fd_entry *c = slot.load(std::memory_order_acquire); // acquire: pairs with the publishing CAS
    if (c == nullptr) {
      if (!create) {
        return nullptr;
      }
      fd_entry *fresh = new (std::nothrow) fd_entry[std::size_t{1} << chunk_bits];
      if (fresh == nullptr) {
        return nullptr;
      }
      // acq_rel: release publishes the new chunk's entries; acquire sees a racing winner's.
      if (slot.compare_exchange_strong(c, fresh, std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
        c = fresh;
      } else {
        delete[] fresh;
      }
    }
    return &c[fd & ((1 << chunk_bits) - 1)];
  }

private:
  std::atomic<fd_entry *> m_chunks[chunks] = {};
};

class reactor {
public:
  static reactor &instance() {
    // Constructed on first use and never destroyed: tasks may wait on it until the process ends,
    // and no static destructor can know that they will not.
    static reactor *const r = [] {
      auto *made = new reactor();
      s_started.store(made, std::memory_order_release); // release: pairs with started()'s acquire
      return made;
    }();
    return *r;
  }

  /// The reactor if something started it, else null: then no task waits on it, and io::cancel
  /// has nothing to do (without this, io::close in a program that never waits would start the
  /// reactor's thread and descriptors, and could only terminate if that failed: it is noexcept).
  static reactor *started() noexcept {
    return s_started.load(std::memory_order_acquire); // acquire: sees the constructed reactor
  }

  bool arm(wait_node &n) noexcept {
    thread_local std::size_t mine = m_next_shard.fetch_add(1, std::memory_order_relaxed); // no edge
    std::size_t const index = mine % m_nshards;
    shard &s = m_shards[index];
    nanos const deadline = n.m_deadline;
    n.m_shard = static_cast<std::uint8_t>(index);
    s.lock.lock();
    try {
      s.heap.reserve_one();
    } catch (...) {
      s.lock.unlock();
      return false;
    }
    s.heap.push(&n);
    bool const first = s.heap.top() == &n;
    if (first) {
      // seq_cst: ordered before our load of m_armed below (Dekker with the reactor's store of
      // m_armed and its re-read of the shards: docs/protocols.md §10).
      s.earliest.store(deadline, std::memory_order_seq_cst);
    }
    s.lock.unlock(); // point of no return for sleeps: the reactor may fire `n` from here on
    if (first) {
      wake_by(deadline);
    }
    return true;
  }

  bool cancel(wait_node &n) noexcept {
    shard &s = m_shards[n.m_shard];
    s.lock.lock();
    bool const queued = n.m_index != wait_node::not_queued;
    if (queued) {
      s.heap.erase(&n);
      s.earliest.store(s.heap.earliest(), std::memory_order_seq_cst); // seq_cst: as in arm
    }
    s.lock.unlock();
    return queued; // a later deadline left in m_armed only wakes the reactor early, harmlessly
  }

  bool fd_begin(fd_awaitable &a) noexcept {
    fd_entry *e = m_fds.find(a.m_fd, true);
    if (e == nullptr) {
      a.m_result = a.m_fd < 0 || a.m_fd >= (fd_table::chunks << fd_table::chunk_bits)
                       ? wait_node::failed
                       : wait_node::out_of_memory;
      a.m_error = EBADF;
      return false;
    }
    e->lock.lock();
    fd_awaitable *&slot = a.m_interest == want_read ? e->reader : e->writer;
    fd_awaitable *other = a.m_interest == want_read ? e->writer : e->reader;
    if (slot != nullptr) {
      e->lock.unlock();
      a.m_result = wait_node::failed;
      a.m_error = -1;
      return false;
    }
    unsigned const interest =
        unsigned{a.m_interest} | (other != nullptr ? unsigned{other->m_interest} : 0u);
    int const err = m_backend.watch(a.m_fd, interest, e->known);
    if (err != 0) {
      e->lock.unlock();
      a.m_result = err == EPERM ? wait_node::ready : wait_node::failed; // EPERM: a regular file
      a.m_error = err;
      return false;
    }
    slot = &a;
    if (a.m_deadline != no_deadline && !arm(a)) {
      slot = nullptr; // the registration may fire once more and find nobody: harmless
      e->lock.unlock();
      a.m_result = wait_node::out_of_memory;
      return false;
    }
    e->lock.unlock(); // point of no return: an event or the deadline may resume the task now
    return true;
  }

  std::size_t fd_cancel(int fd) noexcept {
    fd_entry *e = m_fds.find(fd, false);
    if (e == nullptr) {
      return 0;
    }
    fd_awaitable *woken[2] = {};
    std::size_t count = 0;
    e->lock.lock();
    for (fd_awaitable **slot : {&e->reader, &e->writer}) {
      if (*slot != nullptr && claim(**slot)) {
        (*slot)->m_result = wait_node::cancelled;
        woken[count++] = *slot;
      }
      *slot = nullptr; // one whose deadline claimed it is woken by the timer (it finds no slot)
    }
    m_backend.forget(fd);
    e->known = false;
    e->lock.unlock();
    for (std::size_t i = 0; i < count; ++i) {
      finish(*woken[i]);
    }
    return count;
  }

  reactor_stats stats() const noexcept {
    reactor_stats st;
    st.wakeups = m_wakeups.load(std::memory_order_relaxed);  // no edge: a counter
    st.fired = m_fired.load(std::memory_order_relaxed);      // no edge: a counter
    st.fd_events = m_events.load(std::memory_order_relaxed); // no edge: a counter
    for (std::size_t i = 0; i < m_nshards; ++i) {
      m_shards[i].lock.lock();
      st.pending_timers += m_shards[i].heap.size();
      m_shards[i].lock.unlock();
    }
    return st;
  }

private:
  reactor() : m_nshards(shard_count()), m_shards(new shard[m_nshards]) {
    m_thread = std::thread([this] { run(); });
  }

  static std::size_t shard_count() noexcept {
    std::size_t n = 4;
    while (n < 2 * std::size_t{std::thread::hardware_concurrency()} && n < 64) {
      n *= 2;
    }
    return n;
  }

  /// A descriptor wait with a deadline is woken by whoever claims it first: the descriptor's
  /// side (event, cancel: under the entry's lock) or the timer (under the shard's lock).
  static bool claim(wait_node &a) noexcept {
    // acq_rel: the loser touches the node no more after this; the winner takes the other lock
    // (shard and entry, or shard and the primitive's) before waking, which orders the loser's
    // last access before the wake.
    return a.m_deadline == no_deadline || !a.m_claimed.exchange(true, std::memory_order_acq_rel);
  }

  /// After the descriptor's side claimed `a` and left the entry's lock: drops its timer, wakes it.
  void finish(fd_awaitable &a) noexcept {
    if (a.m_deadline != no_deadline) {
      cancel(a); // under the shard lock: a timer that lost the claim is done with `a`
    }
    a.wake(); // point of no return
  }

  void wake_by(nanos deadline) noexcept {
    // seq_cst: after our store of the shard's earliest (Dekker, docs/protocols.md §10).
    nanos cur = m_armed.load(std::memory_order_seq_cst);
    while (deadline < cur) {
      // seq_cst: as above; the winner of a lowering CAS wakes the reactor.
      if (m_armed.compare_exchange_weak(cur, deadline, std::memory_order_seq_cst)) {
        m_backend.wake();
        return;
      }
    }
  }

  nanos earliest() const noexcept {
    nanos e = no_deadline;
    for (std::size_t i = 0; i < m_nshards; ++i) {
      nanos const s = m_shards[i].earliest.load(std::memory_order_seq_cst); // seq_cst: Dekker
      e = s < e ? s : e;
    }
    return e;
  }

  void fire_timers(nanos now) noexcept {
    for (std::size_t i = 0; i < m_nshards; ++i) {
      shard &s = m_shards[i];
      if (s.earliest.load(std::memory_order_seq_cst) > now) { // seq_cst: Dekker (see arm)
        continue;
      }
      wait_node *list = nullptr;
      s.lock.lock();
      while (!s.heap.empty() && s.heap.top()->m_deadline <= now) {
        wait_node *n = s.heap.pop();
        if (n->m_kind != wait_node::sleep_kind && !claim(*n)) {
          continue; // the descriptor's (or primitive's) side claimed it and wakes it: touch it no
                    // more
        }
        n->m_next = list; // the job link is free until the wake
        list = n;
      }
      s.earliest.store(s.heap.earliest(), std::memory_order_seq_cst); // seq_cst: as in arm
      s.lock.unlock();
      while (list != nullptr) {
        wait_node *n = list;
        list = static_cast<wait_node *>(n->m_next);      // read first: the woken task may free n
        m_fired.fetch_add(1, std::memory_order_relaxed); // no edge: a counter
        if (n->m_kind == wait_node::sleep_kind) {
          n->m_result = wait_node::ready;
          n->wake(); // point of no return
        } else if (n->m_kind == wait_node::timeout_kind) {
          auto &t = static_cast<timeout_node &>(*n);
          t.m_expired(t); // takes it out of its primitive and wakes it: point of no return
        } else {
          timed_out(static_cast<fd_awaitable &>(*n));
        }
      }
    }
  }

  /// The timer claimed a descriptor wait: take it out of its entry, then wake it.
  void timed_out(fd_awaitable &a) noexcept {
    fd_entry *e = m_fds.find(a.m_fd, false);
    e->lock.lock(); // orders a descriptor side that lost the claim before our wake
    fd_awaitable *&slot = a.m_interest == want_read ? e->reader : e->writer;
    if (slot == &a) {
      slot = nullptr; // its one-shot registration may still fire: it then finds nobody
    }
    a.m_result = wait_node::timed_out;
    e->lock.unlock();
    a.wake(); // point of no return
  }

  void fd_ready(ready_event ev) noexcept {
    fd_entry *e = m_fds.find(ev.fd, false);
    if (e == nullptr) {
      return;
    }
    fd_awaitable *woken[2] = {};
    std::size_t count = 0;
    e->lock.lock();
    for (fd_awaitable **slot : {&e->reader, &e->writer}) {
      fd_awaitable *a = *slot;
      if (a != nullptr && (ev.ready & a->m_interest) != 0) {
        if (claim(*a)) {
          a->m_result = wait_node::ready;
          woken[count++] = a;
        }
        *slot = nullptr;
      }
    }
    // The one-shot registration is disarmed: re-arm it for a waiter still there.
    unsigned const rest = (e->reader != nullptr ? unsigned{want_read} : 0u) |
                          (e->writer != nullptr ? unsigned{want_write} : 0u);
    if (rest != 0 && m_backend.watch(ev.fd, rest, e->known) != 0) {
      // The descriptor is gone (closed under its waiters): fail them rather than lose them.
      for (fd_awaitable **slot : {&e->reader, &e->writer}) {
        if (*slot != nullptr && claim(**slot)) {
          (*slot)->m_result = wait_node::failed;
          (*slot)->m_error = EBADF;
          woken[count++] = *slot;
        }
        *slot = nullptr;
      }
    }
    e->lock.unlock();
    for (std::size_t i = 0; i < count; ++i) {
      finish(*woken[i]);
    }
  }

  void run() noexcept {
    (void)::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL); // wake at the deadline, not 50 us late
    constexpr int batch = 256;
    ready_event events[batch];
    for (;;) {
      // seq_cst: we are awake and will look at every shard below: arms need not wake us.
      m_armed.store(std::numeric_limits<nanos>::min(), std::memory_order_seq_cst);
      fire_timers(now_nanos());
      nanos const next = earliest();
      // seq_cst: publish when we will look again, then re-read the shards (Dekker with arm).
      m_armed.store(next, std::memory_order_seq_cst);
      if (earliest() < next || next <= now_nanos()) {
        continue; // armed meanwhile, or already due: look again before sleeping
      }
      int const n = m_backend.wait(next, events, batch);
      m_wakeups.fetch_add(1, std::memory_order_relaxed); // no edge: a counter
      for (int i = 0; i < n; ++i) {
        m_events.fetch_add(1, std::memory_order_relaxed); // no edge: a counter
        fd_ready(events[i]);
      }
    }
  }

  std::size_t m_nshards;
  std::unique_ptr<shard[]> m_shards;
  backend m_backend;
  fd_table m_fds;
  alignas(64) std::atomic<nanos> m_armed{std::numeric_limits<nanos>::min()};
  alignas(64) std::atomic<std::size_t> m_next_shard{0};
  std::atomic<std::uint64_t> m_wakeups{0};
  std::atomic<std::uint64_t> m_fired{0};
  std::atomic<std::uint64_t> m_events{0};
  std::thread m_thread;
  static inline std::atomic<reactor *> s_started{nullptr};
};

} // namespace

void start_reactor() { (void)reactor::instance(); }
bool arm_timer(wait_node &n) noexcept { return reactor::instance().arm(n); }
bool cancel_timer(wait_node &n) noexcept { return reactor::instance().cancel(n); }
bool fd_awaitable::fd_wait_begin(fd_awaitable &self) noexcept {
  return reactor::instance().fd_begin(self);
}

} // namespace magpie::io::detail

namespace magpie::io {

std::size_t cancel(int fd) noexcept {
  // A wait that registers after this load is ordered after this cancel: nothing to resume.
  detail::reactor *const r = detail::reactor::started();
  return r != nullptr ? r->fd_cancel(fd) : 0;
}

int close(int fd) noexcept {
  (void)cancel(fd);
  return ::close(fd);
}

reactor_stats reactor_statistics() {
  detail::start_reactor();
  return detail::reactor::instance().stats();
}

} // namespace magpie::io
