// magpie::mpi, as docs/guide/beyond-one-machine.md names it: magpie/mpi.hpp's awaitables compiled
// and linked against MPI's C library. Run without mpiexec, so it starts no MPI: it checks that
// the poller is idle before any wait.
#include <cstdio>
#include <functional>

#include <magpie/magpie.hpp>
#include <magpie/mpi.hpp>

namespace {
magpie::task<long> total(long mine) {
  co_return co_await magpie::mpi::iallreduce(mine, std::plus<>{}, MPI_COMM_WORLD);
}
} // namespace

int main(int argc, char **) {
  if (argc > 1) { // never: under mpiexec, this would reduce over the ranks
    magpie::mpi::environment env;
    magpie::lazy_pool pool(1);
    return static_cast<int>(magpie::sync_wait(pool, total, 1L)) == env.size() ? 0 : 1;
  }
  magpie::mpi::poller_stats const s = magpie::mpi::poller_statistics();
  std::printf("magpie::mpi linked; waits so far: %llu\n", static_cast<unsigned long long>(s.waits));
  return s.waits == 0 ? 0 : 1;
}
