#pragma once
// bench/common/tbb_runtime.hpp — oneTBB limited to P threads: an arena of P slots (the calling
// thread plus P−1 workers) under a global_control cap. Worker stacks are 1 GiB of address space
// (touched only as used) so that deep trees (UTS T3XXL) do not overflow them.

#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <cstddef>
#include <utility>

#include "common/harness.hpp"

namespace bench {

class tbb_runtime {
public:
  explicit tbb_runtime(options const &o)
      : m_threads(tbb::global_control::max_allowed_parallelism, o.workers),
        m_stack(tbb::global_control::thread_stack_size, std::size_t{1} << 30),
        m_arena(static_cast<int>(o.workers)) {}

  char const *name() const noexcept { return "tbb"; }

  /// Runs `fn()` inside the arena and returns its value.
  template <typename Fn>
  auto run(Fn &&fn) {
    return m_arena.execute(std::forward<Fn>(fn));
  }

private:
  tbb::global_control m_threads;
  tbb::global_control m_stack;
  tbb::task_arena m_arena;
};

} // namespace bench
