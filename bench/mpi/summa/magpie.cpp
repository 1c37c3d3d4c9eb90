// summa — MPI + magpie: the product of a panel is forked work (halves of C, fork + call + join);
// the broadcasts of the next panel are awaited by a forked task (co_await magpie::mpi::wait_all)
// that parks on magpie's poller, so no worker blocks on MPI and every worker computes meanwhile.
// MPI_THREAD_MULTIPLE (magpie::mpi::environment): the broadcasts start on whichever worker runs
// the task. Run: mpiexec -n P mpi_summa_magpie --size default --workers W --reps R.
#include <mpi.h>

#include <cstdio>
#include <exception>
#include <span>

#include "common/magpie_runtime.hpp"
#include "magpie/mpi.hpp"
#include "mpi/summa/problem.hpp"

namespace {

using summa_problem::block;
using summa_problem::distributed;

magpie::task<void> product(block x) {
  block first{};
  block second{};
  if (summa_problem::split_or_compute(x, &first, &second)) {
    co_await magpie::fork(product, first);
    co_await magpie::call(product, second);
    co_await magpie::join();
  }
}

/// Starts the broadcasts of panel k and waits for them without holding a worker.
magpie::task<void> receive(distributed *d, int k) {
  MPI_Request r[2];
  d->post(k, r);
  co_await magpie::mpi::wait_all(std::span<MPI_Request>(r));
}

/// One multiplication: panel k's product runs while the task that awaits panel k+1 is parked.
magpie::task<void> multiply(distributed *d) {
  co_await magpie::call(receive, d, 0);
  co_await magpie::join();
  for (int k = 0; k < d->panels(); ++k) {
    if (k + 1 < d->panels()) {
      co_await magpie::fork(receive, d, k + 1); // posts, then parks: this continuation goes on
    }
    co_await magpie::call(product, d->product(k));
    co_await magpie::join(); // panel k's product done and panel k+1 arrived
  }
}

} // namespace

int main(int argc, char **argv) {
  magpie::mpi::environment env(argc, argv); // MPI_THREAD_MULTIPLE; outlives the pool
  auto const o = bench::parse_options(argc, argv);
  int status = 1;
  try {
    bench::magpie_runtime rt(o);
    status = summa_problem::run(o, "magpie", [&](distributed &d) { rt.run(multiply, &d); });
  } catch (std::exception const &e) {
    std::fprintf(stderr, "mpi_summa_magpie: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  return status;
}
