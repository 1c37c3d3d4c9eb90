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
  if (summa_problem::split_or_compute(x, &first, &second)) {
    tbb::task_group g;
    g.run([first] { product(first); });
    product(second);
    g.wait();
  }
}

} // namespace

int main(int argc, char **argv) {
  summa_problem::funneled_mpi mpi(argc, argv);
  auto const o = bench::parse_options(argc, argv);
  bench::tbb_runtime rt(o);
  return summa_problem::run(o, "tbb", [&](distributed &d) {
    summa_problem::multiply_then_wait(d, [&](block x) { rt.run([&] { product(x); }); });
  });
}
