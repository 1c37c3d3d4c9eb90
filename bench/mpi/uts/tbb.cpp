// Distributed UTS — MPI + oneTBB task_group. The rank loop (mpi/uts/driver.hpp) makes every MPI
// call on the main thread between batches (MPI_THREAD_FUNNELED): a thief's request waits for the
// end of the victim's batch. A batch runs in an arena of W slots (the main thread and W − 1
// workers): a task per batch node; a node runs a task per child (the last inline) and waits, as
// in bench/uts.
#include <mpi.h>
#include <tbb/task_group.h>

#include <vector>

#include "common/tbb_runtime.hpp"
#include "mpi/uts/driver.hpp"

namespace {

uts::result visit(uts::tree const &t, mpi_uts::rank_state &s, uts::node const &n, int levels) {
  std::vector<uts::slot> kids;
  int const next = mpi_uts::expand(t, n, levels, s, kids);
  if (next > 0) {
    std::size_t const k = kids.size();
    tbb::task_group g;
    for (std::size_t i = 0; i + 1 < k; ++i) {
      g.run([&t, &s, &kids, i, next] { kids[i].r = visit(t, s, kids[i].n, next); });
    }
    kids[k - 1].r = visit(t, s, kids[k - 1].n, next);
    g.wait();
  }
  return mpi_uts::finish(n, kids);
}

} // namespace

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int status = 0;
  {
    auto const o = mpi_uts::parse(argc, argv);
    uts::tree const &t = uts::find(o.size);
    bench::options bo;
    bo.workers = o.workers;
    bench::tbb_runtime rt(bo); // destroyed (its threads stopped) before MPI_Finalize
    status = mpi_uts::measure(o, "tbb", [&](mpi_uts::rank_state &s) {
      // One arena entry per repetition: the main thread (MPI's) runs the rank loop inside it.
      return rt.run([&] {
        return mpi_uts::run_funneled(s, [&](std::span<uts::node const> batch) {
          std::vector<uts::result> rs(batch.size());
          tbb::task_group g;
          for (std::size_t i = 0; i < batch.size(); ++i) {
            g.run([&, i] { rs[i] = visit(t, s, batch[i], s.parameters().batch_levels); });
          }
          g.wait();
          return mpi_uts::sum(rs);
        });
      });
    });
  }
  MPI_Finalize();
  return status;
}
