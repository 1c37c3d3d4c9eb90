// summa — MPI + OpenMP tasks: the product of a panel is a task tree (halves of C, task +
// inline call + taskwait) in a parallel region; the master thread posts the broadcasts of the
// next panel before the region and MPI_Waitall's them after it — the usual overlap in this
// model (MPI progresses the broadcasts when MPI is called, here at the wait). MPI is called only
// outside parallel regions (MPI_THREAD_FUNNELED).
// Run: mpiexec -n P mpi_summa_omp --size default --workers W --reps R.
#include <mpi.h>

#include "common/omp_runtime.hpp"
#include "mpi/summa/problem.hpp"

namespace {

using summa_problem::block;
using summa_problem::distributed;

void product(block x) {
  block first{};
  block second{};
  if (summa_problem::split_or_compute(x, &first, &second)) {
#pragma omp task
    product(first);
    product(second);
#pragma omp taskwait
  }
}

} // namespace

int main(int argc, char **argv) {
  summa_problem::funneled_mpi mpi(argc, argv);
  auto const o = bench::parse_options(argc, argv);
  bench::omp_runtime rt(o);
  return summa_problem::run(o, "omp", [&](distributed &d) {
    summa_problem::multiply_then_wait(d, [&](block x) {
      rt.run([&] {
        product(x);
        return 0;
      });
    });
  });
}
