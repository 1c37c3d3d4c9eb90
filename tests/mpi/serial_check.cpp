// The check of the serialised run (MPI_THREAD_SERIALIZED): every MPI call that magpie::mpi or
// these tests make goes through these definitions (MPI's profiling interface: the program's
// MPI_Isend is this one, which calls PMPI_Isend), each of which notes whether another MPI call was
// in progress on another thread when it began. Under SERIALIZED none may be: magpie::mpi takes
// its call lock around its own calls and the tests take it around theirs. main.cpp turns the
// check on for the serialised run and fails the run if it saw an overlap. (MPI_Initialized,
// MPI_Finalized and MPI_Query_thread may be called from any thread at any time: not checked.)

#include <mpi.h>

#include <atomic>

#include "mpi/serial_check.hpp"

namespace magpie::test::serial_check {

std::atomic<bool> enabled{false};
std::atomic<long> overlaps{0};
std::atomic<long> calls{0};

namespace {
std::atomic<int> inside{0};

/// Marks one MPI call in progress for its lifetime.
class call {
public:
  call() {
    calls.fetch_add(1, std::memory_order_relaxed);
    // seq_cst: a total order of the calls' entries and exits
    if (inside.fetch_add(1) != 0 && enabled.load(std::memory_order_relaxed)) {
      overlaps.fetch_add(1, std::memory_order_relaxed);
    }
  }
  call(call const &) = delete;
  call &operator=(call const &) = delete;
  ~call() { inside.fetch_sub(1); }
};
} // namespace

} // namespace magpie::test::serial_check

using magpie::test::serial_check::call;

extern "C" {

int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request *request) {
  call const c;
  return PMPI_Isend(buf, count, type, dest, tag, comm, request);
}

int MPI_Irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
              MPI_Request *request) {
  call const c;
  return PMPI_Irecv(buf, count, type, source, tag, comm, request);
}

int MPI_Ibcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm,
               MPI_Request *request) {
  call const c;
  return PMPI_Ibcast(buf, count, type, root, comm, request);
}

int MPI_Iallreduce(const void *in, void *out, int count, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm, MPI_Request *request) {
  call const c;
  return PMPI_Iallreduce(in, out, count, type, op, comm, request);
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request) {
  call const c;
  return PMPI_Ibarrier(comm, request);
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status) {
  call const c;
  return PMPI_Test(request, flag, status);
}

int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status) {
  call const c;
  return PMPI_Testany(count, requests, index, flag, status);
}

int MPI_Wait(MPI_Request *request, MPI_Status *status) {
  call const c;
  return PMPI_Wait(request, status);
}

int MPI_Cancel(MPI_Request *request) {
  call const c;
  return PMPI_Cancel(request);
}

int MPI_Test_cancelled(const MPI_Status *status, int *flag) {
  call const c;
  return PMPI_Test_cancelled(status, flag);
}

int MPI_Request_free(MPI_Request *request) {
  call const c;
  return PMPI_Request_free(request);
}

int MPI_Get_count(const MPI_Status *status, MPI_Datatype type, int *count) {
  call const c;
  return PMPI_Get_count(status, type, count);
}

int MPI_Error_class(int code, int *cls) {
  call const c;
  return PMPI_Error_class(code, cls);
}

int MPI_Error_string(int code, char *text, int *length) {
  call const c;
  return PMPI_Error_string(code, text, length);
}

int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  call const c;
  return PMPI_Send(buf, count, type, dest, tag, comm);
}

int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
             MPI_Status *status) {
  call const c;
  return PMPI_Recv(buf, count, type, source, tag, comm, status);
}

int MPI_Barrier(MPI_Comm comm) {
  call const c;
  return PMPI_Barrier(comm);
}

int MPI_Comm_rank(MPI_Comm comm, int *rank) {
  call const c;
  return PMPI_Comm_rank(comm, rank);
}

int MPI_Comm_size(MPI_Comm comm, int *size) {
  call const c;
  return PMPI_Comm_size(comm, size);
}

} // extern "C"
