// EXPECT: no MPI_Op is known for this function object
// A lambda has no MPI_Op: iallreduce lists the function objects it maps, or takes an MPI_Op.
#include "magpie/magpie.hpp"
#include "magpie/mpi.hpp"

magpie::task<int> total(int mine) {
  co_return co_await magpie::mpi::iallreduce(
      mine, [](int x, int y) { return x + y; }, MPI_COMM_WORLD);
}
