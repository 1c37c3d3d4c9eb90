// EXPECT: iallreduce: T must be an arithmetic type
// MPI's predefined reductions know MPI's predefined types: a struct needs its own MPI_Datatype
// and MPI_Op, and the message says how to await the raw MPI_Iallreduce instead.
#include <functional>

#include "magpie/magpie.hpp"
#include "magpie/mpi.hpp"

struct pair {
  int a;
  int b;
};

magpie::task<pair> total(pair mine) {
  co_return co_await magpie::mpi::iallreduce(mine, std::plus<>{}, MPI_COMM_WORLD);
}
