#pragma once
// magpie/mpi.hpp — tasks that wait on MPI, for programs that run one magpie pool per MPI rank:
// MPI between ranks, fork–join inside each. Optional: CMake target magpie::mpi, built when an MPI
// implementation is found; not included by magpie/magpie.hpp. This header is enough to write such
// programs: it brings in magpie/io.hpp (and with it the layers below) and every name of the layer
// as magpie::mpi::NAME. Guide: docs/guide/beyond-one-machine.md.

#include "magpie/io.hpp"
#include "magpie/mpi/call_lock.hpp"
#include "magpie/mpi/environment.hpp"
#include "magpie/mpi/error.hpp"
#include "magpie/mpi/operations.hpp"
#include "magpie/mpi/poller.hpp"
#include "magpie/mpi/wait.hpp"
