// magpie/src/mpi/poller.cpp — the progress thread: tests the MPI requests of every waiting task of
// the process and resubmits each task to its pool when its wait is over.
//
// Placement: one dedicated thread, started on the first wait. The alternatives were weighed:
//   - the reactor (src/io/reactor.cpp) sleeps in epoll and wakes only on a descriptor or a
//     deadline; MPI offers neither for a request (Open MPI's shared-memory and TCP transports
//     progress only when some thread calls into MPI), so the reactor would have to poll on a
//     timer, and its timers and sockets would wait behind the tests.
//   - idle workers: a lazy pool's idle workers sleep, and a busy pool's never idle, so requests
//     would progress only while some worker happens to have nothing to do — never, under load,
//     which is exactly when communication should overlap computation; and every worker would
//     contend on one request list.
//   - a dedicated thread costs one thread, which sleeps (condition variable, no MPI call at
//     all) while no request is pending. While requests are pending it polls: continuously (a
//     yield between two scans of the pending requests) for `hot_window` after the last submission
//     or completion — so ping-pong traffic sees microsecond latency — then with pauses that double
//     from `first_pause` to `longest_pause`, and then, as the quiet goes on, on up to 1/100 of
//     the time it has lasted (at most `longest_rest_pause`): a task waiting long on a receive
//     whose sender is late costs about one scan (one MPI_Testany) per millisecond for the first
//     100 ms, then ever fewer (a 5 s wait: ~500 scans instead of 5,000). A submission wakes the
//     thread from a pause at once. The price of the back-off is latency on a request that
//     completes after a long quiet spell: up to `longest_pause`, or 1 % of the quiet beyond
//     100 ms. A pending wait with a stop token keeps the pauses at `longest_pause` (its stop is
//     seen at the next scan).
// Before a task parks at all, it tests its request on its own worker for a few microseconds
// (src/mpi/operations.cpp, set_spin_before_park): a partner that answers at once is caught
// there, and request–reply traffic never pays the poller's hand-off and the pool's wake-up.
//
// A thread that knows a completion is due — code between two stretches of computation, as a
// rank's loop between batches — can scan at once with magpie::mpi::progress() instead of waiting
// for the poller's next scan: the scan's state (the arrays below) is guarded by a mutex that the
// poller holds only while it scans, and that progress() only tries to take.
//
// Protocol: docs/protocols.md §15. Ownership: whoever holds the scan mutex (the poller, or a
// thread in progress()) alone touches a node between submit() and wake() (see
// magpie/mpi/detail/wait_node.hpp).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <sys/prctl.h>

#include "magpie/mpi/call_lock.hpp"
#include "magpie/mpi/detail/wait_node.hpp"
#include "magpie/mpi/poller.hpp"

namespace magpie::mpi::detail {

using namespace std::chrono_literals;

namespace {

constexpr auto hot_window = 200us;        // poll without pausing this long after any activity
constexpr auto first_pause = 20us;        // then pause this long between polls, doubling …
constexpr auto longest_pause = 1ms;       // … up to this, …
constexpr int rest_share = 100;           // … then up to 1/rest_share of the quiet so far, …
constexpr auto longest_rest_pause = 50ms; // … at most this

/// One pending request of a mode-one or mode-all wait, in the array MPI_Testany scans.
struct slot {
  wait_node *node;
  int index; // in the node's arrays
};

class poller {
public:
  /// Starts the thread if it is not running. Throws std::system_error.
  void start() {
    std::lock_guard lock(m_lock);
    if (m_running) {
      return;
    }
    m_quit = false;
    m_thread = std::thread([this] { loop(); });
    m_running = true;
  }

  void submit(wait_node &n) noexcept {
    bool wake = false;
    {
      std::lock_guard lock(m_lock);
      n.m_poll_next = m_incoming;
      m_incoming = &n;
      wake = m_sleeping;
      m_submitted.fetch_add(1, std::memory_order_relaxed); // no edge: statistics
    }
    // The unlock publishes the node (its fields, the parked task) to the poller, which takes the
    // list under the same lock.
    if (wake) {
      m_wake.notify_one();
    }
  }

  void stop() noexcept {
    std::thread t;
    {
      std::lock_guard lock(m_lock);
      if (!m_running) {
        return;
      }
      m_quit = true;
      m_running = false;
      t = std::move(m_thread);
    }
    m_wake.notify_one();
    t.join();
  }

  poller_stats stats() noexcept {
    poller_stats s;
    s.pending_waits = m_pending.load(std::memory_order_relaxed); // no edge: statistics
    s.waits = m_submitted.load(std::memory_order_relaxed);
    s.tests = m_tests.load(std::memory_order_relaxed);
    s.completions = m_completions.load(std::memory_order_relaxed);
    return s;
  }

  /// Any thread (magpie::mpi::progress): one scan now, unless one is under way. True if a wait
  /// finished.
  bool progress() noexcept {
    std::unique_lock scan(m_scan, std::try_to_lock);
    if (!scan.owns_lock()) {
      return false; // the poller (or another thread) is scanning right now
    }
    return scan_once().finished;
  }

private:
  struct scan_result {
    bool active = false;   // a submission was adopted, or a request completed
    bool finished = false; // a wait finished (its task was resubmitted)
  };

  /// Under m_scan: adopts the submissions, tests every pending request, checks deadlines and stop
  /// tokens, and resubmits the tasks whose waits are over. No MPI call when nothing is pending.
  scan_result scan_once() noexcept {
    wait_node *list = nullptr;
    {
      std::lock_guard lock(m_lock);
      list = std::exchange(m_incoming, nullptr);
    }
    scan_result r;
    r.active = list != nullptr;
    adopt(list);
    if (m_nodes.empty()) {
      m_earliest = no_deadline; // what watch() finds with nothing pending, without the lock
      m_any_stoppable = false;
    } else {
      call_lock const lock; // under MPI_THREAD_SERIALIZED: the scan and the cancels
      if (test()) {
        r.active = true;
      }
      watch();
    }
    r.finished = wake_finished();
    return r;
  }

  void loop() noexcept {
    ::prctl(PR_SET_NAME, "magpie-mpi", 0, 0, 0);
    auto last_activity = std::chrono::steady_clock::now();
    auto pause = first_pause;
    for (;;) {
      // The scan mutex is held from the look for work to the end of the scan, and released for
      // the pauses below (where progress() may scan); the idle sleep keeps it (nothing pending:
      // nothing to scan, and a submission wakes us).
      std::unique_lock scan(m_scan);
      {
        std::unique_lock lock(m_lock);
        if (m_incoming == nullptr && m_nodes.empty()) { // idle: no MPI call at all
          m_sleeping = true;
          m_wake.wait(lock, [this] { return m_quit || m_incoming != nullptr; });
          m_sleeping = false;
        }
        if (m_quit) {
          if (!m_nodes.empty() || m_incoming != nullptr) {
            std::fputs("magpie::mpi: the poller stops (magpie::mpi::environment destroyed) while "
                       "tasks still wait on MPI requests: they will never resume (destroy their "
                       "pools before the environment)\n",
                       stderr);
          }
          return;
        }
      }
      bool const active = scan_once().active;
      nanos const earliest = m_earliest; // the scan's: read before another scan may rewrite them
      bool const any_stoppable = m_any_stoppable;
      scan.unlock();
      // Pause: none while hot, then doubling pauses that a submission interrupts.
      auto const now = std::chrono::steady_clock::now();
      if (active) {
        last_activity = now;
        pause = first_pause;
      }
      if (now - last_activity < hot_window) {
        std::this_thread::yield();
        continue;
      }
      std::chrono::nanoseconds wait = pause;
      if (earliest != no_deadline) {
        auto const until = std::chrono::nanoseconds(earliest - io::detail::now_nanos());
        wait = std::clamp<std::chrono::nanoseconds>(until, 0ns, wait);
      }
      std::unique_lock lock(m_lock);
      if (m_incoming == nullptr && !m_quit) {
        m_sleeping = true;
        m_wake.wait_for(lock, wait, [this] { return m_quit || m_incoming != nullptr; });
        m_sleeping = false;
      }
      auto cap = std::chrono::duration_cast<std::chrono::microseconds>(longest_pause);
      if (!any_stoppable) { // a long rest: pauses of 1 % of the quiet so far
        cap = std::clamp(std::chrono::duration_cast<std::chrono::microseconds>(
                             (now - last_activity) / rest_share),
                         cap,
                         std::chrono::duration_cast<std::chrono::microseconds>(longest_rest_pause));
      }
      pause = std::min<std::chrono::microseconds>(pause * 2, cap);
    }
  }

  /// Takes newly submitted nodes (newest first) into the arrays, oldest first.
  void adopt(wait_node *list) {
    wait_node *oldest_first = nullptr;
    while (list != nullptr) {
      wait_node *next = list->m_poll_next;
      list->m_poll_next = oldest_first;
      oldest_first = list;
      list = next;
    }
    for (wait_node *n = oldest_first; n != nullptr; n = n->m_poll_next) {
      n->m_left = 0;
      if (n->m_mode != wait_node::any) {
        for (int k = 0; k < n->m_count; ++k) {
          if (n->m_requests[k] != MPI_REQUEST_NULL) {
            m_requests.push_back(n->m_requests[k]);
            m_slots.push_back({n, k});
            ++n->m_left;
          }
        }
      }
      if (n->m_mode != wait_node::any && n->m_left == 0) {
        settle(*n, wait_node::done); // nothing pending (test_now settles these already)
      }
      m_nodes.push_back(n);
    }
    m_pending.store(m_nodes.size(), std::memory_order_relaxed); // no edge: statistics
  }

  /// Scans every mode-one/all request (MPI_Testany, again after each completion), and each
  /// mode-any wait's own requests (one MPI_Testany).
  /// True if anything completed.
  bool test() noexcept {
    bool any_done = false;
    // MPI_Testany until nothing more has completed: one scan and one progress call when
    // nothing has, one more per completion. Not MPI_Testsome: Open MPI 4.1's completes a
    // truncated receive and returns MPI_SUCCESS, losing the error, where MPI_Testany (as
    // MPI_Test) returns it.
    int const n = static_cast<int>(m_requests.size());
    for (int round = 0; n > 0 && round <= n; ++round) {
      int index = MPI_UNDEFINED;
      int flag = 0;
      MPI_Status st{};
      int const code = MPI_Testany(n, m_requests.data(), &index, &flag, &st);
      m_tests.fetch_add(1, std::memory_order_relaxed); // no edge: statistics
      if (index != MPI_UNDEFINED && (flag != 0 || code != MPI_SUCCESS)) {
        slot const s = m_slots[static_cast<std::size_t>(index)];
        // MPI freed a request that completed (null here); one that failed may still be live: the
        // caller's array gets whichever it is, and ours forgets it either way.
        MPI_Request const left = m_requests[static_cast<std::size_t>(index)];
        m_requests[static_cast<std::size_t>(index)] = MPI_REQUEST_NULL;
        complete(s, st, code, left);
        any_done = true;
        continue;
      }
      if (code != MPI_SUCCESS) {
        // A failure MPI did not attribute to a request: test each alone to find whose it is.
        for (std::size_t i = 0; i < m_requests.size(); ++i) {
          if (m_requests[i] == MPI_REQUEST_NULL) {
            continue;
          }
          int one = 0;
          MPI_Status one_st{};
          int const one_code = MPI_Test(&m_requests[i], &one, &one_st);
          if (one_code != MPI_SUCCESS || one != 0) {
            MPI_Request const left = m_requests[i];
            m_requests[i] = MPI_REQUEST_NULL;
            complete(m_slots[i], one_st, one_code, left);
            any_done = true;
          }
        }
      }
      break; // nothing (more) has completed
    }
    for (wait_node *node : m_nodes) {
      if (node->m_mode != wait_node::any || node->m_finished) {
        continue;
      }
      int index = MPI_UNDEFINED;
      int flag = 0;
      int const code =
          MPI_Testany(node->m_count, node->m_requests, &index, &flag, node->m_statuses);
      if (code != MPI_SUCCESS) {
        fail(*node, code);
        any_done = true;
      } else if (flag != 0) {
        node->m_index = index;
        settle(*node, wait_node::done);
        any_done = true;
      }
    }
    return any_done;
  }

  /// One request of a mode-one/all wait has completed (`code`: its error; `left`: what is left of
  /// the request, MPI_REQUEST_NULL unless MPI kept a failed one).
  void complete(slot const &s, MPI_Status const &st, int code, MPI_Request left) noexcept {
    wait_node &node = *s.node;
    m_completions.fetch_add(1, std::memory_order_relaxed); // no edge: statistics
    node.m_requests[s.index] = left;
    node.m_statuses[s.index] = st;
    --node.m_left;
    if (node.m_finished) {
      return; // already failed or timed out this round (its slots are being dropped)
    }
    if (code != MPI_SUCCESS) {
      fail(node, code);
      return;
    }
    if (node.m_left == 0) {
      wait_node::result_t result = wait_node::done;
      if (node.m_cancelling) {
        for (int k = 0; k < node.m_count; ++k) {
          int flag = 0;
          MPI_Test_cancelled(&node.m_statuses[k], &flag);
          if (flag != 0) {
            result = wait_node::stopped;
          }
        }
      }
      settle(node, result);
    }
  }

  void fail(wait_node &node, int code) noexcept {
    node.m_error = code;
    settle(node, wait_node::failed);
  }

  void settle(wait_node &node, wait_node::result_t r) noexcept {
    node.m_result = r;
    node.m_finished = true;
  }

  /// Deadlines and stop tokens of the waits still pending.
  void watch() noexcept {
    m_earliest = no_deadline;
    m_any_stoppable = false;
    nanos now = 0;
    for (wait_node *node : m_nodes) {
      if (node->m_finished) {
        continue;
      }
      bool const stoppable = node->m_stop.stop_possible();
      m_any_stoppable = m_any_stoppable || stoppable;
      if (!node->m_cancelling && stoppable && node->m_stop.stop_requested()) {
        node->m_cancelling = true;
        for (std::size_t i = 0; i < m_slots.size(); ++i) {
          if (m_slots[i].node == node && m_requests[i] != MPI_REQUEST_NULL) {
            int const code = MPI_Cancel(&m_requests[i]);
            if (code != MPI_SUCCESS) {
              fail(*node, code);
              break;
            }
          }
        }
        continue;
      }
      if (node->m_deadline != no_deadline && !node->m_cancelling) {
        if (now == 0) {
          now = io::detail::now_nanos();
        }
        if (node->m_deadline <= now) {
          settle(*node, wait_node::timed_out); // the requests stay pending, the caller's
        } else {
          m_earliest = std::min(m_earliest, node->m_deadline);
        }
      }
    }
  }

  /// Drops the finished waits' slots, then resubmits their tasks. True if there were any.
  bool wake_finished() noexcept {
    bool any = false;
    for (wait_node *node : m_nodes) {
      any = any || node->m_finished;
    }
    if (!any) {
      return false;
    }
    std::size_t out = 0;
    for (std::size_t i = 0; i < m_slots.size(); ++i) {
      if (!m_slots[i].node->m_finished && m_requests[i] != MPI_REQUEST_NULL) {
        m_slots[out] = m_slots[i];
        m_requests[out] = m_requests[i];
        ++out;
      }
    }
    m_slots.resize(out);
    m_requests.resize(out);
    m_done.clear();
    std::erase_if(m_nodes, [this](wait_node *node) {
      if (node->m_finished) {
        m_done.push_back(node);
        return true;
      }
      return false;
    });
    m_pending.store(m_nodes.size(), std::memory_order_relaxed); // no edge: statistics
    for (wait_node *node : m_done) {
      node->wake(); // point of no return for this node: its task may run and end
    }
    m_done.clear();
    return true;
  }

  std::mutex m_scan; // the scan's state below: the poller while it scans, or progress()
  std::mutex m_lock;
  std::condition_variable m_wake;
  wait_node *m_incoming = nullptr; // under m_lock: submitted, newest first
  bool m_sleeping = false;         // under m_lock: the poller waits on m_wake
  bool m_quit = false;             // under m_lock
  bool m_running = false;          // under m_lock
  std::thread m_thread;

  // Under m_scan.
  std::vector<MPI_Request> m_requests; // copies of the pending requests of mode one/all
  std::vector<slot> m_slots;           // whose each is
  std::vector<wait_node *> m_nodes;    // every pending wait, oldest first
  std::vector<wait_node *> m_done;
  nanos m_earliest = no_deadline;
  bool m_any_stoppable = false; // a pending wait has a stop token (watch()): short pauses

  std::atomic<std::size_t> m_pending{0};
  std::atomic<std::uint64_t> m_submitted{0};
  std::atomic<std::uint64_t> m_tests{0};
  std::atomic<std::uint64_t> m_completions{0};
};

poller &the_poller() {
  static poller p; // never destroyed before exit; the environment stops its thread
  return p;
}

/// MPI's readiness for magpie: 0 unknown, 1 ready (MULTIPLE).
std::atomic<int> mpi_ready{0};

} // namespace

void prepare(char const *what) {
  // acquire: pairs with the release below; a ready MPI and a started poller are seen together.
  if (mpi_ready.load(std::memory_order_acquire) == 1) [[likely]] {
    return;
  }
  int initialised = 0;
  int finalised = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  if (initialised == 0 || finalised != 0) {
    throw error(MPI_ERR_OTHER, (std::string(what) + ": MPI is not initialised (or already "
                                                    "finalised): make a magpie::mpi::environment "
                                                    "in main first")
                                   .c_str());
  }
  int level = MPI_THREAD_SINGLE;
  check(MPI_Query_thread(&level), "MPI_Query_thread");
  if (level < MPI_THREAD_SERIALIZED) {
    throw error(MPI_ERR_OTHER, (std::string(what) +
                                ": magpie::mpi needs MPI_THREAD_SERIALIZED or MPI_THREAD_MULTIPLE "
                                "(tasks start operations on any worker while the poller tests "
                                "them), and MPI provides only level " +
                                std::to_string(level))
                                   .c_str());
  }
  // Below MULTIPLE, one MPI call at a time (release: before the poller starts and this wait goes
  // on). MPI initialised without a magpie::mpi::environment gets here first.
  serialize_calls.store(level < MPI_THREAD_MULTIPLE, std::memory_order_release);
  the_poller().start();
  mpi_ready.store(1, std::memory_order_release); // release: see the acquire above
}

void submit(wait_node &node) noexcept { the_poller().submit(node); }

void stop_poller() noexcept {
  mpi_ready.store(0, std::memory_order_release); // release: the next prepare() checks MPI again
  the_poller().stop();
}

} // namespace magpie::mpi::detail

namespace magpie::mpi {
poller_stats poller_statistics() noexcept { return detail::the_poller().stats(); }

bool progress() noexcept {
  // acquire: as prepare()'s. Before the first wait, or once the environment is gone, nothing is
  // pending here: no MPI call (MPI may not be initialised, or already finalised).
  if (detail::mpi_ready.load(std::memory_order_acquire) != 1) {
    return false;
  }
  return detail::the_poller().progress();
}

} // namespace magpie::mpi
