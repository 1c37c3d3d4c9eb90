// The main of magpie's MPI tests: MPI is initialised around GoogleTest, and the process fails if
// any rank's tests failed. Every rank runs the same cases in the same order. With
// MAGPIE_TEST_MPI_LEVEL=serialized in the environment MPI is asked for MPI_THREAD_SERIALIZED
// (magpie::mpi then serialises its calls, and the tests theirs) and every MPI call is checked not
// to overlap another (serial_check.cpp); else MPI_THREAD_MULTIPLE.

#include <cstdio>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "magpie/mpi.hpp"
#include "mpi/serial_check.hpp"

namespace {
/// The other ranks' report: their failures only, each with the rank and the test's name.
class failures_only : public ::testing::EmptyTestEventListener {
public:
  explicit failures_only(int rank) : m_rank(rank) {}
  void OnTestStart(::testing::TestInfo const &t) override {
    m_test = std::string(t.test_suite_name()) + "." + t.name();
  }
  // Called under GoogleTest's lock: ask it nothing here (OnTestStart recorded the name).
  void OnTestPartResult(::testing::TestPartResult const &r) override {
    if (r.failed()) {
      std::fprintf(stderr, "rank %d, %s: %s:%d: failure\n%s\n", m_rank, m_test.c_str(),
                   r.file_name() != nullptr ? r.file_name() : "?", r.line_number(), r.message());
    }
  }

private:
  int m_rank;
  std::string m_test;
};
} // namespace

int main(int argc, char **argv) {
  char const *level = std::getenv("MAGPIE_TEST_MPI_LEVEL");
  bool const serialized = level != nullptr && std::string(level) == "serialized";
  magpie::mpi::environment env(argc, argv,
                               serialized ? MPI_THREAD_SERIALIZED : MPI_THREAD_MULTIPLE);
  if (serialized && !env.serialised()) {
    std::fprintf(stderr, "rank %d: asked for MPI_THREAD_SERIALIZED, MPI provides level %d\n",
                 env.rank(), env.thread_level());
    return 1;
  }
  magpie::test::serial_check::enabled.store(serialized);
  ::testing::InitGoogleTest(&argc, argv);
  if (env.rank() != 0) { // one report per job: the other ranks print only their failures
    auto &listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new failures_only(env.rank()));
  }
  int mine = RUN_ALL_TESTS();
  long const overlaps = magpie::test::serial_check::overlaps.load();
  if (serialized) {
    std::fprintf(stderr,
                 "rank %d: %ld MPI calls checked under MPI_THREAD_SERIALIZED, %ld overlapped\n",
                 env.rank(), magpie::test::serial_check::calls.load(), overlaps);
  }
  if (overlaps != 0) {
    std::fprintf(stderr, "rank %d: %ld MPI calls overlapped another under MPI_THREAD_SERIALIZED\n",
                 env.rank(), overlaps);
    mine = 1;
  }
  int any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (mine != 0) {
    std::fprintf(stderr, "rank %d: tests failed\n", env.rank());
  }
  return any;
}
