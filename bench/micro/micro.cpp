// bench/micro/micro.cpp — what magpie's primitives cost, one at a time.
//
//   BM_fork_join_unstolen   one `fork` of an empty child + `join`, nothing stolen (1 worker)
//   BM_call                 one `call` of an empty child, for comparison
//   BM_stack_alloc          one `stack_alloc` + destruction of a small array (trivial elements,
//                           and std::string elements), outside any scope (the common path)
//   BM_steal_round_trip     a forked child's continuation stolen by the other worker of a
//                           2-worker busy pool, and the join completed (see below)
//   BM_stack_push_pop       magpie::core::stack allocate + deallocate (bump pointer)
//   BM_stack_cross_stacklet a push/pop pair that crosses a stacklet boundary every time
//   BM_sync_wait_*          the latency of sync_wait on an empty task per scheduler
//
// Steal round trip, honestly: the forked child does not return until its parent's continuation
// has started on the other worker (it spins on a flag the continuation sets), so every iteration
// contains exactly one steal. Measured per iteration: fork → steal → continuation runs (reported
// as `steal_latency_ns`, from the child's first instruction to the continuation's first
// instruction) → the continuation reaches join and suspends → the child sees the flag and
// returns → the child, last to arrive, resumes the parent (the whole iteration's time).
// The two workers alternate roles. A busy pool is used so that the thief is awake: the latency
// of waking a sleeping lazy worker is what BM_sync_wait_lazy shows.

#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>

#include "magpie/magpie.hpp"

namespace {

magpie::task<void> empty() { co_return; }

magpie::task<void> fork_join_loop(std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    co_await magpie::fork(empty);
    co_await magpie::join();
  }
}

magpie::task<void> call_loop(std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    co_await magpie::call(empty);
  }
}

constexpr std::int64_t batch = 10'000;

void BM_fork_join_unstolen(benchmark::State &state) {
  magpie::lazy_pool pool(1);
  while (state.KeepRunningBatch(batch)) {
    magpie::sync_wait(pool, fork_join_loop, batch);
  }
}
BENCHMARK(BM_fork_join_unstolen);

void BM_fork_join_inline(benchmark::State &state) {
  magpie::inline_scheduler s;
  while (state.KeepRunningBatch(batch)) {
    magpie::sync_wait(s, fork_join_loop, batch);
  }
}
BENCHMARK(BM_fork_join_inline);

void BM_call(benchmark::State &state) {
  magpie::lazy_pool pool(1);
  while (state.KeepRunningBatch(batch)) {
    magpie::sync_wait(pool, call_loop, batch);
  }
}
BENCHMARK(BM_call);

template <typename T>
magpie::task<void> stack_alloc_loop(std::int64_t n, std::size_t size) {
  for (std::int64_t i = 0; i < n; ++i) {
    auto a = co_await magpie::stack_alloc<T>(size);
    benchmark::DoNotOptimize(a.data());
  }
}

template <typename T>
void BM_stack_alloc(benchmark::State &state) {
  magpie::inline_scheduler s;
  auto const size = static_cast<std::size_t>(state.range(0));
  while (state.KeepRunningBatch(batch)) {
    magpie::sync_wait(s, stack_alloc_loop<T>, batch, size);
  }
}
BENCHMARK(BM_stack_alloc<std::uint64_t>)->Arg(16);
BENCHMARK(BM_stack_alloc<std::string>)->Arg(4);

// --- steal round trip -------------------------------------------------------------------------

struct steal_probe {
  std::atomic<bool> stolen{false};
  std::chrono::steady_clock::time_point child_start;
  double latency_ns_sum = 0;
};

magpie::task<void> wait_until_stolen(steal_probe *p) {
  p->child_start = std::chrono::steady_clock::now();
  // acquire: pairs with the continuation's release store, so its latency write is visible.
  while (!p->stolen.load(std::memory_order_acquire)) {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }
  co_return;
}

magpie::task<void> steal_loop(steal_probe *p, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    p->stolen.store(false, std::memory_order_relaxed); // nobody else looks until the fork
    co_await magpie::fork(wait_until_stolen, p);
    // Here on the thief (the child is still spinning on the other worker).
    auto const now = std::chrono::steady_clock::now();
    p->latency_ns_sum += std::chrono::duration<double, std::nano>(now - p->child_start).count();
    p->stolen.store(true, std::memory_order_release); // release: the latency sum above
    co_await magpie::join();
  }
}

void BM_steal_round_trip(benchmark::State &state) {
  magpie::busy_pool pool(2);
  steal_probe probe;
  std::int64_t const n = 1000;
  std::int64_t iterations = 0;
  while (state.KeepRunningBatch(n)) {
    magpie::sync_wait(pool, steal_loop, &probe, std::int64_t{n});
    iterations += n;
  }
  state.counters["steal_latency_ns"] = probe.latency_ns_sum / static_cast<double>(iterations);
}
BENCHMARK(BM_steal_round_trip)->UseRealTime();

// --- segmented stack ----------------------------------------------------------------------------

void BM_stack_push_pop(benchmark::State &state) {
  magpie::core::stack s;
  s.ensure();
  auto const bytes = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    void *p = s.allocate(bytes);
    benchmark::DoNotOptimize(p);
    s.deallocate(p);
  }
}
BENCHMARK(BM_stack_push_pop)->Arg(64)->Arg(256);

void BM_stack_cross_stacklet(benchmark::State &state) {
  magpie::core::stack s;
  s.ensure();
  // Fill the first stacklet so that each further allocation needs the (cached) next one.
  void *filler = s.allocate(magpie::core::stack::initial_capacity);
  for (auto _ : state) {
    void *p = s.allocate(64);
    benchmark::DoNotOptimize(p);
    s.deallocate(p);
  }
  s.deallocate(filler);
}
BENCHMARK(BM_stack_cross_stacklet);

void BM_stack_push_pop_deep(benchmark::State &state) {
  magpie::core::stack s;
  s.ensure();
  void *ptrs[1024];
  for (auto _ : state) {
    for (auto &p : ptrs) {
      p = s.allocate(128);
    }
    for (int i = 1023; i >= 0; --i) {
      s.deallocate(ptrs[i]);
    }
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * 1024);
}
BENCHMARK(BM_stack_push_pop_deep);

// --- sync_wait latency ---------------------------------------------------------------------------

void BM_sync_wait_inline(benchmark::State &state) {
  magpie::inline_scheduler s;
  for (auto _ : state) {
    magpie::sync_wait(s, empty);
  }
}
BENCHMARK(BM_sync_wait_inline);

void BM_sync_wait_busy(benchmark::State &state) {
  magpie::busy_pool pool(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) {
    magpie::sync_wait(pool, empty);
  }
}
BENCHMARK(BM_sync_wait_busy)->Arg(1)->Arg(2)->UseRealTime();

void BM_sync_wait_lazy(benchmark::State &state) {
  magpie::lazy_pool pool(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) {
    magpie::sync_wait(pool, empty);
  }
}
BENCHMARK(BM_sync_wait_lazy)->Arg(1)->Arg(2)->UseRealTime();

// A lazy pool whose workers have gone to sleep: the wake-up latency.
void BM_sync_wait_lazy_asleep(benchmark::State &state) {
  magpie::lazy_pool pool(1);
  for (auto _ : state) {
    state.PauseTiming();
    std::this_thread::sleep_for(std::chrono::milliseconds(2)); // long enough to fall asleep
    state.ResumeTiming();
    magpie::sync_wait(pool, empty);
  }
}
BENCHMARK(BM_sync_wait_lazy_asleep)->UseRealTime()->Iterations(300);

} // namespace

BENCHMARK_MAIN();
