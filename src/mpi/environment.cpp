// magpie/src/mpi/environment.cpp — MPI_Init_thread / MPI_Finalize around magpie's poller.

#include <stdexcept>

#include "magpie/mpi/call_lock.hpp"
#include "magpie/mpi/detail/wait_node.hpp"
#include "magpie/mpi/environment.hpp"
#include "magpie/mpi/error.hpp"

namespace magpie::mpi {

environment::environment(int &argc, char **&argv, int required) { init(&argc, &argv, required); }

environment::environment(int required) { init(nullptr, nullptr, required); }

void environment::init(int *argc, char ***argv, int required) {
  if (required != MPI_THREAD_MULTIPLE && required != MPI_THREAD_SERIALIZED) {
    throw std::invalid_argument("magpie::mpi::environment: the thread level must be "
                                "MPI_THREAD_MULTIPLE or MPI_THREAD_SERIALIZED (tasks call MPI "
                                "from every worker, and the poller from its own thread)");
  }
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (finalised != 0) {
    throw std::logic_error("magpie::mpi::environment: MPI was already finalised");
  }
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (initialised == 0) {
    detail::check(MPI_Init_thread(argc, argv, required, &m_provided), "MPI_Init_thread");
    m_owner = true;
  } else {
    detail::check(MPI_Query_thread(&m_provided), "MPI_Query_thread");
  }
  // Below MULTIPLE, one MPI call at a time (release: before any task or thread can call MPI).
  detail::serialize_calls.store(m_provided < MPI_THREAD_MULTIPLE, std::memory_order_release);
  // Errors come back as codes (then as magpie::mpi::error), not as an abort of the job.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &m_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &m_size);
}

environment::~environment() {
  detail::stop_poller(); // before MPI_Finalize: the poller may be inside MPI_Testany
  if (m_owner) {
    MPI_Finalize();
  }
}

} // namespace magpie::mpi
