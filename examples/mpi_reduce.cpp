// A distributed reduction: every MPI rank sums the squares of its block of 1..n with magpie's
// parallel algorithm on its own pool, then a task awaits MPI_Iallreduce of the ranks' parts —
// without blocking a worker. Run with mpiexec -n <ranks> (any number of ranks).
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "magpie/magpie.hpp"
#include "magpie/mpi.hpp"

// [reduce]
// This rank's block of 1..n: [first, last).
magpie::task<long> sum_of_squares(long n, int rank, int ranks) {
  long const first = 1 + n * rank / ranks;
  long const last = 1 + n * (rank + 1) / ranks;
  std::vector<long> block(static_cast<std::size_t>(last - first));
  for (long i = first; i < last; ++i) {
    block[static_cast<std::size_t>(i - first)] = i;
  }
  long mine = 0; // fork–join inside the rank: the parallel algorithm's async form
  co_await magpie::call(&mine, magpie::transform_reduce, block.begin(), block.end(), 0L,
                        std::plus<>{}, [](long x) { return x * x; });
  co_await magpie::join();
  // Between the ranks: the task suspends until every rank's part has arrived.
  co_return co_await magpie::mpi::iallreduce(mine, std::plus<>{}, MPI_COMM_WORLD);
}
// [reduce]

// [own_call]
// A raw MPI call of the program's own, awaited by a task: each rank passes its rank to the right.
magpie::task<int> from_the_left(int rank, int ranks) {
  int const mine = rank;
  MPI_Request request = MPI_REQUEST_NULL;
  {
    magpie::mpi::call_lock lock; // needed under MPI_THREAD_SERIALIZED; nothing under MULTIPLE
    MPI_Isend(&mine, 1, MPI_INT, (rank + 1) % ranks, 7, MPI_COMM_WORLD, &request);
  }
  int const theirs =
      co_await magpie::mpi::irecv<int>((rank + ranks - 1) % ranks, 7, MPI_COMM_WORLD);
  co_await magpie::mpi::wait(request); // tested by magpie (under the lock where there is one)
  co_return theirs;
}
// [own_call]

int main(int argc, char **argv) {
  // [main]
  magpie::mpi::environment env(argc, argv); // MPI_Init_thread(MPI_THREAD_MULTIPLE)
  long const n = 100000;
  long total = 0;
  {
    magpie::lazy_pool pool(2); // one pool per rank, destroyed before the environment
    total = magpie::sync_wait(pool, sum_of_squares, n, env.rank(), env.size());
  }
  // [main]
  int left = -1;
  {
    magpie::lazy_pool pool(1);
    left = magpie::sync_wait(pool, from_the_left, env.rank(), env.size());
  }
  long const expected = n * (n + 1) * (2 * n + 1) / 6;
  if (left != (env.rank() + env.size() - 1) % env.size()) {
    std::printf("rank %d: WRONG value from the left: %d\n", env.rank(), left);
    return 1;
  }
  if (env.rank() == 0) {
    std::printf("sum of the squares of 1..%ld over %d ranks = %ld: %s\n", n, env.size(), total,
                total == expected ? "ok" : "WRONG");
  }
  return total == expected ? 0 : 1;
}
