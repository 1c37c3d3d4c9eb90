// The main of magpie's MPI tests: MPI is initialised (THREAD_MULTIPLE) around GoogleTest, and the
// process fails if any rank's tests failed. Every rank runs the same cases in the same order.

#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "magpie/mpi.hpp"

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
  magpie::mpi::environment env(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  if (env.rank() != 0) { // one report per job: the other ranks print only their failures
    auto &listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new failures_only(env.rank()));
  }
  int const mine = RUN_ALL_TESTS();
  int any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (mine != 0) {
    std::fprintf(stderr, "rank %d: tests failed\n", env.rank());
  }
  return any;
}
