#pragma once
// bench/common/omp_runtime.hpp — an OpenMP team of P threads; `run` executes its function in a
// `single` region so that the rest of the team steals its tasks.
//
// Worker stacks: both libgomp and libomp read OMP_STACKSIZE when the library loads, before main.
// If it is unset, `ensure_omp_stacksize` sets it to 1 GiB (address space, touched only as used;
// UTS T3XXL recurses ~10^5 deep) and re-executes the binary.

#include <omp.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <type_traits>

#include "common/harness.hpp"

namespace bench {

inline void ensure_omp_stacksize(char **argv) {
  if (std::getenv("OMP_STACKSIZE") == nullptr) {
    setenv("OMP_STACKSIZE", "1G", 1);
    execv("/proc/self/exe", argv);
    std::perror("bench: re-exec with OMP_STACKSIZE failed; continuing with the default");
  }
}

/// Which OpenMP runtime this binary uses (the compiler decides).
inline char const *omp_library() noexcept {
#if defined(__clang__)
  return "libomp";
#else
  return "libgomp";
#endif
}

class omp_runtime {
public:
  explicit omp_runtime(options const &o) : m_workers(static_cast<int>(o.workers)) {
    omp_set_dynamic(0);
  }

  char const *name() const noexcept { return "omp"; }

  template <typename Fn>
  auto run(Fn &&fn) {
    using result_t = std::invoke_result_t<Fn &>;
    result_t out{};
    // num_threads on the construct, not omp_set_num_threads(): the ICV set by the latter belongs
    // to the calling thread, and the harness measures on a thread of its own (which would get
    // the default team size, nproc, whatever --workers said).
#pragma omp parallel num_threads(m_workers)
    {
#pragma omp single
      { out = fn(); }
    }
    return out;
  }

  int workers() const noexcept { return m_workers; }

private:
  int m_workers;
};

} // namespace bench
