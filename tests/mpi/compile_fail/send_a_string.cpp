// EXPECT: T must be trivially copyable
// A std::string's bytes are a pointer into this process: sending them would be meaningless on the
// other rank. The typed operations refuse T that is not trivially copyable, and say what to do.
#include <string>

#include "magpie/magpie.hpp"
#include "magpie/mpi.hpp"

magpie::task<void> send_name(std::string const *name) {
  co_await magpie::mpi::isend(*name, 1, 0, MPI_COMM_WORLD);
}
