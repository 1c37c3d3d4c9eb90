// The control: the same shapes with what the typed operations accept must compile.
#include <functional>
#include <span>

#include "magpie/magpie.hpp"
#include "magpie/mpi.hpp"

struct point {
  double x;
  int id;
};

magpie::task<int> fine(point const *p, int mine) {
  co_await magpie::mpi::isend(*p, 1, 0, MPI_COMM_WORLD);
  co_return co_await magpie::mpi::iallreduce(mine, std::plus<>{}, MPI_COMM_WORLD);
}
