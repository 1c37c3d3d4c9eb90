#pragma once
// magpie/mpi/error.hpp — MPI failures as exceptions.
//
// Every call magpie::mpi makes to MPI checks its return code; a failure is thrown as
// magpie::mpi::error, which carries MPI's error code and MPI_Error_string's text. MPI returns its
// error codes only on communicators whose error handler is MPI_ERRORS_RETURN: magpie::mpi::
// environment sets it on MPI_COMM_WORLD and MPI_COMM_SELF (and communicators duplicated or split
// from them inherit it); on a communicator of your own, call
// `MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN)`, or MPI's default handler
// (MPI_ERRORS_ARE_FATAL) aborts the job before magpie sees the error.

#include <mpi.h>

#include <stdexcept>
#include <string>
#include <system_error>

#include "magpie/mpi/call_lock.hpp"

namespace magpie::mpi {

/// An MPI call failed. `code()` is MPI's error code (MPI_Error_class gives its class); `what()`
/// says which operation failed and quotes MPI_Error_string.
class error : public std::runtime_error {
public:
  /// The error `code` that MPI returned from `operation` (a function name such as "MPI_Isend").
  error(int code, char const *operation)
      : std::runtime_error(describe(code, operation)), m_code(code) {}

  /// MPI's error code, as the failed call returned it (or as its status reported it).
  int code() const noexcept { return m_code; }
  /// The class of code() (MPI_ERR_RANK, MPI_ERR_TRUNCATE, …), from MPI_Error_class.
  int error_class() const noexcept {
    int cls = MPI_ERR_UNKNOWN;
    call_lock const lock; // under MPI_THREAD_SERIALIZED
    MPI_Error_class(m_code, &cls);
    return cls;
  }

private:
  static std::string describe(int code, char const *operation) {
    char text[MPI_MAX_ERROR_STRING] = {};
    int length = 0;
    call_lock const lock; // under MPI_THREAD_SERIALIZED (a thread may hold it already: it counts)
    if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) {
      length = 0;
    }
    return std::string("magpie::mpi: ") + operation +
           " failed: " + std::string(text, static_cast<std::size_t>(length)) + " (MPI error code " +
           std::to_string(code) + ")";
  }
  int m_code;
};

/// Thrown from a wait whose stop token was stopped: the pending operation was cancelled
/// (MPI_Cancel succeeded, and the request is complete and freed). An operation that completed
/// before the cancel took effect is not reported as cancelled: the wait returns its result.
/// A std::system_error with std::errc::operation_canceled, as magpie::io's cancelled waits.
class cancelled : public std::system_error {
public:
  cancelled()
      : std::system_error(std::make_error_code(std::errc::operation_canceled),
                          "magpie::mpi: the wait was stopped by its stop token and the MPI "
                          "operation cancelled") {}
};

namespace detail {
/// Throws error(code, operation) unless code is MPI_SUCCESS.
inline void check(int code, char const *operation) {
  if (code != MPI_SUCCESS) [[unlikely]] {
    throw error(code, operation);
  }
}
} // namespace detail

} // namespace magpie::mpi
