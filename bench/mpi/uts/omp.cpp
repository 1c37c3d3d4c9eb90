// Distributed UTS — MPI + OpenMP tasks. The rank loop (mpi/uts/driver.hpp) makes every MPI call
// on the main thread between batches (MPI_THREAD_FUNNELED): a thief's request waits for the end
// of the victim's batch. A repetition is one parallel region whose master thread runs the rank
// loop; a batch is a task per batch node, then a taskwait; a node makes a task per child (the last
// inline) and taskwaits, as in bench/uts. (A region per batch costs the other threads' wake-up at
// every batch: with more threads than cores, a time slice each, seconds per run.)
#include <mpi.h>

#include <vector>

#include "common/omp_runtime.hpp"
#include "mpi/uts/driver.hpp"

namespace {

uts::result visit(uts::tree const &t, mpi_uts::rank_state &s, uts::node const &n, int levels) {
  std::vector<uts::slot> kids;
  int const next = mpi_uts::expand(t, n, levels, s, kids);
  if (next > 0) {
    int const k = static_cast<int>(kids.size());
    for (int i = 0; i < k - 1; ++i) {
#pragma omp task shared(t, s, kids) firstprivate(i, next)
      kids[i].r = visit(t, s, kids[i].n, next);
    }
    kids[k - 1].r = visit(t, s, kids[k - 1].n, next);
#pragma omp taskwait
  }
  return mpi_uts::finish(n, kids);
}

} // namespace

int main(int argc, char **argv) {
  bench::ensure_omp_stacksize(argv); // before MPI_Init: it may re-execute the binary
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  auto const o = mpi_uts::parse(argc, argv);
  uts::tree const &t = uts::find(o.size);
  omp_set_dynamic(0);
  int const workers = static_cast<int>(o.workers);
  int const status = mpi_uts::measure(o, "omp", [&](mpi_uts::rank_state &s) {
    uts::result mine;
    // One team per repetition: the master thread (MPI's main thread) runs the rank loop and makes
    // the batches' tasks; the others wait at the region's end barrier, running those tasks.
#pragma omp parallel num_threads(workers)
#pragma omp master
    mine = mpi_uts::run_funneled(s, [&](std::span<uts::node const> batch) {
      std::vector<uts::result> rs(batch.size());
      for (std::size_t i = 0; i < batch.size(); ++i) {
#pragma omp task shared(t, s, batch, rs) firstprivate(i)
        rs[i] = visit(t, s, batch[i], s.parameters().batch_levels);
      }
#pragma omp taskwait
      return mpi_uts::sum(rs);
    });
    return mine;
  });
  MPI_Finalize();
  return status;
}
