// The main of magpie's MPI tests: MPI is initialised (THREAD_MULTIPLE) around GoogleTest, and the
// process fails if any rank's tests failed. Every rank runs the same cases in the same order.

#include <cstdio>

#include <gtest/gtest.h>

#include "magpie/mpi.hpp"

int main(int argc, char **argv) {
  magpie::mpi::environment env(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  if (env.rank() != 0) { // one report per job: the other ranks print only their failures
    auto &listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int const mine = RUN_ALL_TESTS();
  int any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (mine != 0) {
    std::fprintf(stderr, "rank %d: tests failed\n", env.rank());
  }
  return any;
}
