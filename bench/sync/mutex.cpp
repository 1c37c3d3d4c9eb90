// mutex — magpie tasks contending for one lock: magpie::mutex (sizes `magpie…`; `magpie-timed…`
// lock it with `co_await try_lock_for(10s)`, a deadline that never passes: a lock that times out
// fails the check), a magpie::semaphore of one permit (sizes `semaphore…`), a
// magpie::shared_mutex (sizes `shared…`; `shared-timed…` lock it with `co_await
// try_lock_for(10s)`, as magpie-timed) or std::mutex (sizes `std…`). See mutex_problem.hpp.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>

#include "common/magpie_runtime.hpp"
#include "sync/mutex_problem.hpp"

namespace {

// Each lock, and the counter, on a cache line of its own: with the semaphore's heir pointer on
// the counter's line (as it was before they were aligned), the semaphore-spaced run took 1.5x
// the mutex's for the same protocol.
struct shared_state {
  alignas(64) magpie::mutex magpie_lock;
  alignas(64) magpie::semaphore magpie_semaphore{1};
  alignas(64) magpie::shared_mutex magpie_shared;
  alignas(64) std::mutex std_lock;
  alignas(64) std::int64_t counter = 0;                     // guarded by the lock under test
  alignas(64) std::atomic<std::int64_t> shared_sections{0}; // shared-read's readers count here
  mutex_problem::size const *z = nullptr;
};

/// One critical section's body, the lock held.
void section(shared_state *s) {
  mutex_problem::spin(s->z->work_in);
  ++s->counter;
}

magpie::task<void> worker_task(shared_state *s) {
  auto const &z = *s->z;
  for (std::int64_t i = 0; i < mutex_problem::per_task(z); ++i) {
    switch (z.kind) {
    case mutex_problem::lock_kind::magpie: {
      auto g = co_await s->magpie_lock.scoped_lock();
      section(s);
      break;
    }
    case mutex_problem::lock_kind::magpie_timed: {
#if defined(__linux__)
      bool const locked = co_await s->magpie_lock.try_lock_for(std::chrono::seconds(10));
      if (locked) {
        section(s);
        s->magpie_lock.unlock();
      }
#endif
      break;
    }
    case mutex_problem::lock_kind::semaphore:
      co_await s->magpie_semaphore.acquire();
      section(s);
      s->magpie_semaphore.release();
      break;
    case mutex_problem::lock_kind::shared_read:
      if (i % 4 != 0) {
        auto g = co_await s->magpie_shared.scoped_lock_shared();
        mutex_problem::spin(z.work_in);
        s->shared_sections.fetch_add(1, std::memory_order_relaxed);
        break;
      }
      [[fallthrough]];
    case mutex_problem::lock_kind::shared: {
      auto g = co_await s->magpie_shared.scoped_lock();
      section(s);
      break;
    }
    case mutex_problem::lock_kind::shared_timed: {
#if defined(__linux__)
      bool const locked = co_await s->magpie_shared.try_lock_for(std::chrono::seconds(10));
      if (locked) {
        section(s);
        s->magpie_shared.unlock();
      }
#endif
      break;
    }
    case mutex_problem::lock_kind::std_mutex: {
      std::lock_guard g(s->std_lock);
      section(s);
      break;
    }
    }
    mutex_problem::spin(z.work_out);
  }
}

magpie::task<void> fan_out(shared_state *s, int lo, int hi) {
  if (hi - lo == 1) {
    co_await magpie::call(worker_task, s);
    co_return;
  }
  int const mid = lo + (hi - lo) / 2;
  co_await magpie::fork(fan_out, s, lo, mid);
  co_await magpie::call(fan_out, s, mid, hi);
  co_await magpie::join();
}

} // namespace

int main(int argc, char **argv) {
  auto const o = bench::parse_options(argc, argv);
  auto const &z = mutex_problem::find(o.size);
  bench::magpie_runtime rt(o);
  return bench::measure(
      o, mutex_problem::name, rt.name(),
      [&] {
        shared_state s;
        s.z = &z;
        rt.run(fan_out, &s, 0, z.tasks);
        return s.counter + s.shared_sections.load();
      },
      [&](std::int64_t r) { return mutex_problem::check(r, z); },
      {{"sections", std::to_string(mutex_problem::per_task(z) * z.tasks)}});
}
