// magpie/src/mpi/environment.cpp — MPI_Init_thread / MPI_Finalize around magpie's poller.

#include <stdexcept>

#include "magpie/mpi/detail/wait_node.hpp"
#include "magpie/mpi/environment.hpp"
#include "magpie/mpi/error.hpp"

namespace magpie::mpi {

environment::environment(int &argc, char **&argv) { init(&argc, &argv); }

environment::environment() { init(nullptr, nullptr); }

void environment::init(int *argc, char ***argv) {
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (finalised != 0) {
    throw std::logic_error("magpie::mpi::environment: MPI was already finalised");
  }
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (initialised == 0) {
    detail::check(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &m_provided), "MPI_Init_thread");
    m_owner = true;
  } else {
    detail::check(MPI_Query_thread(&m_provided), "MPI_Query_thread");
  }
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
