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
// magpie::mpi works under MPI_THREAD_MULTIPLE (a task starts its operation — MPI_Isend,
// MPI_Irecv, … — on whichever worker runs it, while magpie's poller thread tests the pending
// requests) and under MPI_THREAD_SERIALIZED, where it takes a lock around each of its MPI calls
// and the program's own calls must take it too (magpie::mpi::call_lock, call_lock.hpp). Below
// that (FUNNELED, SINGLE: only one thread may ever call MPI) every wait throws magpie::mpi::error
// (MPI_ERR_OTHER) saying so; plain MPI calls outside magpie still work. Open MPI 4.1 and MPICH
// provide MULTIPLE, and SERIALIZED when asked for it.

#include <mpi.h>

namespace magpie::mpi {

/// Initialises MPI (unless it already is) and finalises it at destruction (only if this object
/// initialised it). Sets MPI_ERRORS_RETURN on MPI_COMM_WORLD and MPI_COMM_SELF, so that MPI
/// failures become magpie::mpi::error exceptions. One per process, made on the main thread
/// before any pool whose tasks use MPI and destroyed after them. Destruction stops magpie's
/// poller thread first (a wait still pending then is a bug: said on stderr).
class environment {
public:
  /// MPI_Init_thread(argc, argv, required), or, if MPI is already initialised, only the error
  /// handlers (this object then does not finalise). `required` is MPI_THREAD_MULTIPLE (the
  /// default) or MPI_THREAD_SERIALIZED (magpie::mpi then serialises its MPI calls, and so must
  /// the program: call_lock.hpp); the level MPI provides decides (thread_level()). Throws
  /// std::invalid_argument for another `required`, magpie::mpi::error if MPI_Init_thread fails,
  /// std::logic_error if MPI was already finalised.
  explicit environment(int &argc, char **&argv, int required = MPI_THREAD_MULTIPLE);
  /// As above, without the command line.
  explicit environment(int required = MPI_THREAD_MULTIPLE);
  environment(environment const &) = delete;
  environment &operator=(environment const &) = delete;
  /// Stops the poller thread, then MPI_Finalize if this object initialised MPI.
  ~environment();

  /// The thread level MPI provides (MPI_Query_thread). magpie's waits need MPI_THREAD_SERIALIZED
  /// or MPI_THREAD_MULTIPLE; under SERIALIZED they serialise their MPI calls (call_lock.hpp).
  int thread_level() const noexcept { return m_provided; }
  /// True if MPI calls are serialised (thread_level() is MPI_THREAD_SERIALIZED): a program's own
  /// MPI calls made while magpie::mpi is active must hold a magpie::mpi::call_lock.
  bool serialised() const noexcept { return m_provided == MPI_THREAD_SERIALIZED; }
  /// True if this object called MPI_Init_thread (and will call MPI_Finalize).
  bool owns_mpi() const noexcept { return m_owner; }
  /// This process's rank in MPI_COMM_WORLD.
  int rank() const noexcept { return m_rank; }
  /// The number of processes in MPI_COMM_WORLD.
  int size() const noexcept { return m_size; }

private:
  void init(int *argc, char ***argv, int required);
  int m_provided = MPI_THREAD_SINGLE;
  int m_rank = 0;
  int m_size = 1;
  bool m_owner = false;
};

} // namespace magpie::mpi
