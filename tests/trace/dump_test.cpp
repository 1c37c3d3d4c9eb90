// Async backtraces, the stall watchdog and the dump signal (magpie/trace/dump.hpp, watchdog.hpp):
// the dump names the functions of a known chain blocked at a known point, parked tasks are
// listed, the watchdog fires once for a stuck program and never for a busy one, a signal prints.

#include <atomic>
#include <chrono>
#include <csignal>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "magpie/magpie.hpp"

#include "common/test_support.hpp"
#include "common/workloads.hpp"

namespace {

using namespace std::chrono_literals;

/// Where the chain stops: c() announces it has arrived, then blocks its worker until released
/// (for at most 30 s, so that a failing test cannot hang).
struct gate {
  std::atomic<int> reached{0};
  std::atomic<bool> open{false};
};

[[gnu::noinline]] void block_at(gate &g) {
  g.reached.store(1, std::memory_order_release); // the chain's frames happen-before the dump
  auto const deadline = std::chrono::steady_clock::now() + 30s;
  while (!g.open.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
}

magpie::task<int> chain_level_c(gate *g) {
  block_at(*g);
  co_return 3;
}

magpie::task<int> chain_level_b(gate *g) {
  int r = 0;
  // Through with_stop's anchor: the dump must step over it to b (root_block::m_caller).
  co_await magpie::with_stop(magpie::stop_token{}, &r, chain_level_c, g);
  co_await magpie::join();
  co_return r + 2;
}

magpie::task<int> chain_level_a(gate *g) {
  int x = 0;
  long y = 0;
  co_await magpie::fork(&x, chain_level_b, g); // forked: a's continuation may be stolen
  co_await magpie::call(&y, magpie::test::fib, 10);
  co_await magpie::join();
  co_return x + static_cast<int>(y);
}

/// Runs chain_level_a in `pool` on a thread of its own until the gate opens.
class blocked_chain {
public:
  explicit blocked_chain(magpie::pool &pool)
      : m_thread([this, &pool] { m_result = magpie::sync_wait(pool, chain_level_a, &m_gate); }) {
    EXPECT_TRUE(magpie::test::wait_for(m_gate.reached)) << "the chain never reached c()";
  }
  ~blocked_chain() { release(); }
  void release() {
    m_gate.open.store(true, std::memory_order_release);
    if (m_thread.joinable()) {
      m_thread.join();
      EXPECT_EQ(m_result, 5 + 55);
    }
  }

private:
  gate m_gate;
  int m_result = 0;
  std::thread m_thread;
};

/// The position of `what` in `text` after `from`, or npos.
std::size_t after(std::string const &text, char const *what, std::size_t from) {
  return from == std::string::npos ? from : text.find(what, from);
}

/// True if `text` shows the chain c → b → a, in that order, within one worker's section.
bool shows_chain(std::string const &text) {
  std::size_t const c = text.find("#0 ");
  std::size_t const cc = after(text, "chain_level_c(", c);
  std::size_t const b = after(text, "#1 ", cc);
  std::size_t const bb = after(text, "chain_level_b(", b);
  std::size_t const a = after(text, "#2 ", bb);
  std::size_t const aa = after(text, "chain_level_a(", a);
  return aa != std::string::npos && text.find("worker", cc) > aa &&
         text.find("(root)", aa) != std::string::npos;
}

template <typename Pool>
void dump_names_the_chain() {
  Pool pool(2);
  blocked_chain chain(pool);
  magpie::trace::task_dump const d = magpie::trace::snapshot(pool);
  std::string const text = d.to_string();
  EXPECT_TRUE(shows_chain(text)) << text;
  std::size_t running = 0;
  for (auto const &w : d.workers) {
    if (!w.chain.empty() && w.chain.front().function.find("chain_level_c(") != std::string::npos) {
      ++running;
      ASSERT_EQ(w.chain.size(), 3u) << text;
      EXPECT_TRUE(w.chain.back().root);
      EXPECT_FALSE(w.chain.front().root);
      EXPECT_NE(w.chain.front().frame, nullptr);
    }
  }
  EXPECT_EQ(running, 1u) << text;
  EXPECT_FALSE(d.parked_tracked);
  EXPECT_NE(text.find("parked tasks: not tracked"), std::string::npos);
  chain.release();
  // Once the pool is idle, no worker runs a task.
  EXPECT_TRUE(magpie::test::wait_until([&] {
    bool idle = pool.in_flight() == 0;
    for (auto const &w : magpie::trace::snapshot(pool).workers) {
      idle = idle && w.chain.empty();
    }
    return idle;
  })) << magpie::dump(pool);
}

TEST(Dump, NamesTheChainOfABlockedTaskLazy) { dump_names_the_chain<magpie::lazy_pool>(); }
TEST(Dump, NamesTheChainOfABlockedTaskBusy) { dump_names_the_chain<magpie::busy_pool>(); }

TEST(Dump, StringAndStreamFormsAgree) {
  magpie::lazy_pool pool(1);
  blocked_chain chain(pool);
  std::ostringstream out;
  magpie::trace::dump(pool, out);
  EXPECT_TRUE(shows_chain(out.str())) << out.str();
  EXPECT_TRUE(shows_chain(magpie::dump(pool))); // also in namespace magpie
}

magpie::task<int> parked_inner(magpie::event *ev) {
  co_await ev->wait();
  co_return 1;
}

magpie::task<int> parked_outer(magpie::event *ev) {
  int r = 0;
  co_await magpie::call(&r, parked_inner, ev);
  co_return r;
}

std::size_t count(std::string const &text, char const *what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

TEST(Dump, ListsParkedTasksWhileTracked) {
  magpie::trace::track_parked tracking;
  magpie::lazy_pool pool(2);
  magpie::event ev;
  constexpr int waiters = 3;
  std::vector<std::thread> threads;
  std::atomic<int> sum{0};
  for (int i = 0; i < waiters; ++i) {
    threads.emplace_back([&] { sum += magpie::sync_wait(pool, parked_outer, &ev); });
  }
  magpie::trace::task_dump d;
  // Until all three are parked and their workers have moved on (a task is recorded as parked
  // just before its worker hands its stack away: a snapshot may catch it in both places).
  ASSERT_TRUE(magpie::test::wait_until([&] {
    d = magpie::trace::snapshot(pool);
    bool idle = true;
    for (auto const &w : d.workers) {
      idle = idle && w.chain.empty();
    }
    return d.parked.size() == waiters && idle;
  })) << d.to_string();
  std::string const text = d.to_string();
  EXPECT_TRUE(d.parked_tracked);
  EXPECT_NE(text.find("parked tasks: 3"), std::string::npos) << text;
  for (auto const &chain : d.parked) {
    ASSERT_EQ(chain.size(), 2u) << text;
    EXPECT_NE(chain[0].function.find("parked_inner("), std::string::npos) << text;
    EXPECT_NE(chain[1].function.find("parked_outer("), std::string::npos) << text;
    EXPECT_TRUE(chain[1].root);
  }
  EXPECT_EQ(count(text, "parked_inner("), 3u);
  ev.set();
  for (auto &t : threads) {
    t.join();
  }
  EXPECT_EQ(sum.load(), waiters);
  d = magpie::trace::snapshot(pool);
  EXPECT_TRUE(d.parked.empty()) << d.to_string();
}

TEST(Dump, SymbolizeNamesPlainFunctionsAndFallsBack) {
  std::string const name = magpie::trace::symbolize(reinterpret_cast<void const *>(&block_at));
  EXPECT_NE(name.find("block_at("), std::string::npos) << name;
  int on_the_stack = 0;
  std::string const raw = magpie::trace::symbolize(&on_the_stack); // in no module: an address
  EXPECT_EQ(raw.rfind("0x", 0), 0u) << raw;
}

/// Collects the watchdog's reports.
struct reports {
  std::mutex mutex;
  std::vector<std::string> texts;
  magpie::trace::watchdog::report_fn sink() {
    return [this](std::string const &text) {
      std::lock_guard lock(mutex);
      texts.push_back(text);
    };
  }
  std::vector<std::string> get() {
    std::lock_guard lock(mutex);
    return texts;
  }
};

TEST(Watchdog, FiresOnceForAStuckPool) {
  magpie::lazy_pool pool(2);
  reports r;
  magpie::trace::watchdog w(pool, 100ms, r.sink());
  blocked_chain chain(pool);
  ASSERT_TRUE(magpie::test::wait_until([&] { return w.fired() == 1; })) << "it never fired";
  std::this_thread::sleep_for(500ms); // five more windows of the same stall
  EXPECT_EQ(w.fired(), 1u);
  chain.release();
  auto const texts = r.get();
  ASSERT_EQ(texts.size(), 1u);
  EXPECT_NE(texts[0].find("magpie watchdog: no task started or finished"), std::string::npos);
  EXPECT_TRUE(shows_chain(texts[0])) << texts[0];
  EXPECT_NE(texts[0].find("steals"), std::string::npos) << texts[0]; // the counters' table
  EXPECT_NE(texts[0].find("total"), std::string::npos) << texts[0];
}

TEST(Watchdog, NeverFiresForABusyPool) {
  magpie::busy_pool pool(2);
  reports r;
  std::size_t fired = 0;
  {
    magpie::trace::watchdog w(pool, 300ms, r.sink());
    auto const end = std::chrono::steady_clock::now() + 1s;
    long total = 0;
    while (std::chrono::steady_clock::now() < end) {
      total += magpie::sync_wait(pool, magpie::test::fib, 18);
    }
    EXPECT_GT(total, 0);
    fired = w.fired();
  }
  EXPECT_EQ(fired, 0u);
  EXPECT_TRUE(r.get().empty());
}

TEST(Watchdog, NeverFiresForAnIdlePool) {
  magpie::lazy_pool pool(2);
  magpie::trace::watchdog w(pool, 20ms, [](std::string const &) {});
  std::this_thread::sleep_for(200ms); // nothing in flight: no stall
  EXPECT_EQ(w.fired(), 0u);
  EXPECT_THROW(magpie::trace::watchdog(pool, 0ms), std::invalid_argument);
}

TEST(DumpSignal, PrintsTheDumpToStderr) {
  magpie::lazy_pool pool(2);
  blocked_chain chain(pool);
  testing::internal::CaptureStderr();
  std::string text;
  {
    magpie::trace::dump_on_signal sig(pool, SIGUSR2);
    EXPECT_THROW(magpie::trace::dump_on_signal(pool, SIGUSR2), std::logic_error);
    ASSERT_EQ(std::raise(SIGUSR2), 0);
    bool const printed = magpie::test::wait_until([&] { return sig.printed() == 1; });
    text = testing::internal::GetCapturedStderr();
    ASSERT_TRUE(printed);
  }
  EXPECT_NE(text.find("magpie: signal"), std::string::npos) << text;
  EXPECT_TRUE(shows_chain(text)) << text;
  EXPECT_THROW(magpie::trace::dump_on_signal(pool, SIGKILL), std::invalid_argument);
}

} // namespace
