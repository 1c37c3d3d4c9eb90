// summa — MPI + oneTBB: the product of a panel is a task_group tree (halves of C, run + inline
// call + wait) in the arena; the main thread posts the broadcasts of the next panel before it
// enters the arena and MPI_Waitall's them after — the usual overlap in this model (MPI progresses
// the broadcasts when MPI is called, here at the wait). MPI is called only from the main thread
// (MPI_THREAD_FUNNELED). Run: mpiexec -n P mpi_summa_tbb --size default --workers W --reps R.
#include <mpi.h>
#include <tbb/task_group.h>

#include "common/tbb_runtime.hpp"
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
  tbb::task_group g;
  g.run([first] { product(first); });
  product(second);
  g.wait();
}

void multiply(bench::tbb_runtime &rt, distributed &d) {
  MPI_Request next[2];
  d.post(0, next);
  MPI_Waitall(2, next, MPI_STATUSES_IGNORE);
  for (int k = 0; k < d.panels(); ++k) {
    if (k + 1 < d.panels()) {
      d.post(k + 1, next);
    }
    rt.run([&] { product(d.product(k)); });
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
    bench::tbb_runtime rt(o);
    status = summa_problem::run(o, "tbb", [&](distributed &d) { multiply(rt, d); });
  }
  MPI_Finalize();
  return status;
}
