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
  if (!summa_problem::split(x, &first, &second)) {
    summa_problem::leaf(x);
    return;
  }
#pragma omp task
  product(first);
  product(second);
#pragma omp taskwait
}

void multiply(bench::omp_runtime &rt, distributed &d) {
  MPI_Request next[2];
  d.post(0, next);
  MPI_Waitall(2, next, MPI_STATUSES_IGNORE);
  for (int k = 0; k < d.panels(); ++k) {
    if (k + 1 < d.panels()) {
      d.post(k + 1, next);
    }
    rt.run([&] {
      product(d.product(k));
      return 0;
    });
    if (k + 1 < d.panels()) {
      MPI_Waitall(2, next, MPI_STATUSES_IGNORE);
    }
  }
}

} // namespace

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  auto const o = bench::parse_options(argc, argv);
  int status = 1;
  {
    bench::omp_runtime rt(o);
    status = summa_problem::run(o, "omp", [&](distributed &d) { multiply(rt, d); });
  }
  MPI_Finalize();
  return status;
}
