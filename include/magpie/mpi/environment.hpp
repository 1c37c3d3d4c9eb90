#pragma once
// magpie/mpi/environment.hpp — MPI's lifetime and thread level, for programs whose tasks wait on
// MPI.
//
//   int main(int argc, char **argv) {
//     magpie::mpi::environment env(argc, argv); // MPI_Init_thread(MPI_THREAD_MULTIPLE)
//     magpie::lazy_pool pool;                    // destroyed before env: its tasks are done
//     ...
//   }                                            // stops magpie's poller, then MPI_Finalize
//
// magpie::mpi needs MPI_THREAD_MULTIPLE: a task starts its operation (MPI_Isend, MPI_Irecv, …) on
// whichever worker runs it, while magpie's poller thread tests the pending requests. With a lower
// level every wait throws magpie::mpi::error (MPI_ERR_OTHER) saying so; plain MPI calls outside
// magpie still work. Open MPI 4.1 and MPICH provide MULTIPLE.

#include <mpi.h>

namespace magpie::mpi {

/// Initialises MPI (unless it already is) and finalises it at destruction (only if this object
/// initialised it). Sets MPI_ERRORS_RETURN on MPI_COMM_WORLD and MPI_COMM_SELF, so that MPI
/// failures become magpie::mpi::error exceptions. One per process, made on the main thread
/// before any pool whose tasks use MPI and destroyed after them. Destruction stops magpie's
/// poller thread first (a wait still pending then is a bug: said on stderr).
class environment {
public:
  /// MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE), or, if MPI is already initialised, only
  /// the error handlers (this object then does not finalise). Throws magpie::mpi::error if
  /// MPI_Init_thread fails, std::logic_error if MPI was already finalised.
  environment(int &argc, char **&argv);
  /// As above, without the command line.
  environment();
  environment(environment const &) = delete;
  environment &operator=(environment const &) = delete;
  /// Stops the poller thread, then MPI_Finalize if this object initialised MPI.
  ~environment();

  /// The thread level MPI provides (MPI_Query_thread). magpie's waits need MPI_THREAD_MULTIPLE.
  int thread_level() const noexcept { return m_provided; }
  /// True if this object called MPI_Init_thread (and will call MPI_Finalize).
  bool owns_mpi() const noexcept { return m_owner; }
  /// This process's rank in MPI_COMM_WORLD.
  int rank() const noexcept { return m_rank; }
  /// The number of processes in MPI_COMM_WORLD.
  int size() const noexcept { return m_size; }

private:
  void init(int *argc, char ***argv);
  int m_provided = MPI_THREAD_SINGLE;
  int m_rank = 0;
  int m_size = 1;
  bool m_owner = false;
};

} // namespace magpie::mpi
