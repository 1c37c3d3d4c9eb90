#pragma once
// magpie/mpi/operations.hpp — typed MPI operations that a task starts and awaits in one co_await.
//
//   co_await magpie::mpi::isend(std::span<double const>(v), 1, tag, comm);
//   MPI_Status s = co_await magpie::mpi::irecv(std::span<double>(v), 0, tag, comm);
//   int x = co_await magpie::mpi::irecv<int>(0, tag, comm);
//   co_await magpie::mpi::ibcast(std::span<int>(v), 0, comm);
//   long total = co_await magpie::mpi::iallreduce(part, std::plus<>{}, comm);
//
// Each function returns an awaitable; the co_await starts the operation (MPI_Isend, MPI_Irecv,
// MPI_Ibcast, MPI_Iallreduce) on the task's worker and then waits for it as magpie::mpi::wait
// does (magpie/mpi/wait.hpp: same contract, same poller). The buffers are the caller's and must
// stay alive and untouched until the co_await returns; the single-value forms keep the value in
// the awaitable. A failure to start or to complete throws magpie::mpi::error.
//
// Element types: any trivially copyable T (a static_assert refuses the others). Arithmetic types
// (and std::byte) travel as MPI's predefined type (MPI_INT, MPI_DOUBLE, …); other trivially
// copyable types as MPI_BYTE, sizeof(T) bytes each — between ranks of the same binary on the
// same architecture. iallreduce needs an arithmetic T, and an operation: std::plus,
// std::multiplies, std::logical_and/or, std::bit_and/or/xor (MPI_SUM, MPI_PROD, MPI_LAND, …),
// magpie::mpi::minimum / maximum (MPI_MIN, MPI_MAX), or an MPI_Op.

#include <mpi.h>

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <stdexcept>
#include <type_traits>

#include "magpie/core/frame.hpp"
#include "magpie/core/stop_token.hpp"
#include "magpie/mpi/call_lock.hpp"
#include "magpie/mpi/detail/wait_node.hpp"
#include "magpie/mpi/error.hpp"

namespace magpie::mpi {

/// The reduction MPI_MIN, as a function object for iallreduce.
struct minimum {};
/// The reduction MPI_MAX, as a function object for iallreduce.
struct maximum {};

namespace detail {

template <typename T>
inline constexpr bool is_predefined = std::is_arithmetic_v<T> || std::is_same_v<T, std::byte>;

template <typename T>
inline constexpr bool is_span = false;
template <typename T, std::size_t N>
inline constexpr bool is_span<std::span<T, N>> = true;

template <typename T>
inline constexpr bool is_transferable = std::is_trivially_copyable_v<T>;

/// MPI's predefined datatype for T, or MPI_BYTE (elements then count sizeof(T) bytes each).
template <typename T>
MPI_Datatype datatype() noexcept {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, char>) {
    return MPI_CHAR;
  } else if constexpr (std::is_same_v<U, signed char>) {
    return MPI_SIGNED_CHAR;
  } else if constexpr (std::is_same_v<U, unsigned char>) {
    return MPI_UNSIGNED_CHAR;
  } else if constexpr (std::is_same_v<U, bool>) {
    return MPI_C_BOOL;
  } else if constexpr (std::is_same_v<U, short>) {
    return MPI_SHORT;
  } else if constexpr (std::is_same_v<U, unsigned short>) {
    return MPI_UNSIGNED_SHORT;
  } else if constexpr (std::is_same_v<U, int>) {
    return MPI_INT;
  } else if constexpr (std::is_same_v<U, unsigned>) {
    return MPI_UNSIGNED;
  } else if constexpr (std::is_same_v<U, long>) {
    return MPI_LONG;
  } else if constexpr (std::is_same_v<U, unsigned long>) {
    return MPI_UNSIGNED_LONG;
  } else if constexpr (std::is_same_v<U, long long>) {
    return MPI_LONG_LONG;
  } else if constexpr (std::is_same_v<U, unsigned long long>) {
    return MPI_UNSIGNED_LONG_LONG;
  } else if constexpr (std::is_same_v<U, float>) {
    return MPI_FLOAT;
  } else if constexpr (std::is_same_v<U, double>) {
    return MPI_DOUBLE;
  } else if constexpr (std::is_same_v<U, long double>) {
    return MPI_LONG_DOUBLE;
  } else if constexpr (std::is_same_v<U, wchar_t>) {
    return MPI_WCHAR;
  } else if constexpr (std::is_same_v<U, char16_t>) {
    return MPI_UINT16_T;
  } else if constexpr (std::is_same_v<U, char32_t>) {
    return MPI_UINT32_T;
  } else {
    return MPI_BYTE;
  }
}

/// MPI's count for `n` elements of T (bytes for non-predefined types). Throws std::length_error
/// past INT_MAX.
template <typename T>
int count_of(std::size_t n, char const *what) {
  std::size_t const units = is_predefined<std::remove_cv_t<T>> ? n : n * sizeof(T);
  if (!is_predefined<std::remove_cv_t<T>> && n != 0 && units / sizeof(T) != n) {
    check_count(std::numeric_limits<std::size_t>::max(), what);
  }
  check_count(units, what);
  return static_cast<int>(units);
}

/// True if Op is F<T> for some T (std::plus<int>, std::plus<>).
template <template <typename> class F, typename Op>
inline constexpr bool is_function_object = false;
template <template <typename> class F, typename T>
inline constexpr bool is_function_object<F, F<T>> = true;

template <typename Op>
inline constexpr bool no_mpi_op = false;

/// The MPI_Op of a function object, or `op` itself if it is one (a static_assert lists the
/// function objects known).
template <typename Op>
MPI_Op to_mpi_op(Op const &op) noexcept {
  if constexpr (std::is_same_v<Op, MPI_Op>) {
    return op;
  } else if constexpr (is_function_object<std::plus, Op>) {
    return MPI_SUM;
  } else if constexpr (is_function_object<std::multiplies, Op>) {
    return MPI_PROD;
  } else if constexpr (is_function_object<std::logical_and, Op>) {
    return MPI_LAND;
  } else if constexpr (is_function_object<std::logical_or, Op>) {
    return MPI_LOR;
  } else if constexpr (is_function_object<std::bit_and, Op>) {
    return MPI_BAND;
  } else if constexpr (is_function_object<std::bit_or, Op>) {
    return MPI_BOR;
  } else if constexpr (is_function_object<std::bit_xor, Op>) {
    return MPI_BXOR;
  } else if constexpr (std::is_same_v<Op, minimum>) {
    return MPI_MIN;
  } else if constexpr (std::is_same_v<Op, maximum>) {
    return MPI_MAX;
  } else {
    static_assert(no_mpi_op<Op>,
                  "magpie::mpi::iallreduce: no MPI_Op is known for this function object; use "
                  "std::plus, std::multiplies, std::logical_and, std::logical_or, std::bit_and, "
                  "std::bit_or, std::bit_xor, magpie::mpi::minimum, magpie::mpi::maximum, or "
                  "pass an MPI_Op (MPI_Op_create for your own)");
    return MPI_OP_NULL;
  }
}

/// Everything an operation needs to start. `in`/`out` null: the awaitable's own value slot.
struct op_args {
  enum kind_t : std::uint8_t { send, recv, bcast, allreduce };
  void const *in = nullptr;
  void *out = nullptr;
  int count = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  int peer = 0; ///< destination, source or root
  int tag = 0;
  MPI_Op op = MPI_OP_NULL;
  MPI_Comm comm = MPI_COMM_NULL;
  kind_t kind = send;
  char const *what = "";
};

/// Starts the operation into `*r`; throws error on failure. Defined in src/mpi/poller.cpp.
void start(op_args const &args, MPI_Request *r);

/// Where a single-value form keeps its value: none for span forms.
template <typename Result>
struct value_slot {
  Result in{};
  Result out{};
};
template <>
struct value_slot<void> {};
template <>
struct value_slot<MPI_Status> {};

/// The awaitable of every typed operation: starts it when the task co_awaits, then waits.
/// Result: void, MPI_Status (irecv of a span), or a T (single-value irecv and iallreduce).
template <typename Result>
struct op_awaitable : wait_awaitable {
  op_args m_args;
  MPI_Request m_request = MPI_REQUEST_NULL;
  MPI_Status m_status{};
  [[no_unique_address]] value_slot<Result> m_value;

  op_awaitable(op_args const &args, core::frame_base &self, core::stop_token stop,
               value_slot<Result> const &value)
      : m_args(args), m_value(value) {
    m_frame = &self;
    m_stop = std::move(stop);
    m_what = args.what;
    m_count = 1;
  }

  /// Starts the operation here, where the awaitable's address is final (it may throw: nothing
  /// is suspended), then tests it once.
  bool await_ready() {
    if constexpr (!std::is_void_v<Result> && !std::is_same_v<Result, MPI_Status>) {
      if (m_args.kind == op_args::allreduce) {
        m_args.in = &m_value.in;
      }
      m_args.out = &m_value.out;
    }
    start(m_args, &m_request);
    m_requests = &m_request;
    m_statuses = &m_status;
    return test_now();
  }

  /// As wait_awaitable's; if the pool refuses the task (pool_closed), the operation this
  /// awaitable started is cancelled and completed before the exception leaves (its buffers may
  /// go with the exception's unwinding).
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> h) {
    try {
      return wait_awaitable::await_suspend(h);
    } catch (...) {
      {
        call_lock const lock; // under MPI_THREAD_SERIALIZED
        MPI_Cancel(&m_request);
        MPI_Wait(&m_request, MPI_STATUS_IGNORE);
      }
      throw;
    }
  }

  Result await_resume() const {
    rethrow();
    if constexpr (std::is_same_v<Result, MPI_Status>) {
      return m_status;
    } else if constexpr (!std::is_void_v<Result>) {
      return m_value.out;
    }
  }
};

/// What the typed operations return: bound to the awaiting task by co_await.
template <typename Result>
struct [[nodiscard("co_await it")]] op_request {
  using magpie_awaitable = void;
  op_args m_args;
  core::stop_token m_stop;
  [[no_unique_address]] value_slot<Result> m_value;

  op_awaitable<Result> magpie_bind(core::frame_base &self) && {
    wait_home(self, m_args.what);
    return op_awaitable<Result>(m_args, self, std::move(m_stop), m_value);
  }
};

/// The arguments of an operation on `n` elements of T (the buffers' addresses may be filled in
/// later: see op_awaitable).
template <typename T>
op_args args_for(op_args::kind_t kind, char const *what, std::size_t n, int peer, MPI_Comm comm) {
  op_args a;
  a.kind = kind;
  a.what = what;
  a.count = count_of<T>(n, what);
  a.type = datatype<T>();
  a.peer = peer;
  a.comm = comm;
  return a;
}

template <typename T>
constexpr void require_transferable() {
  static_assert(is_transferable<std::remove_cv_t<T>>,
                "magpie::mpi sends the bytes of its elements: T must be trivially copyable "
                "(serialise other types into a buffer of bytes, or of a trivially copyable "
                "struct, first)");
}

template <typename T>
constexpr void require_reducible() {
  require_transferable<T>();
  static_assert(is_predefined<std::remove_cv_t<T>>,
                "magpie::mpi::iallreduce: T must be an arithmetic type (one of MPI's predefined "
                "datatypes); reduce other types with MPI_Iallreduce and your own MPI_Datatype and "
                "MPI_Op, then co_await magpie::mpi::wait(request)");
}

} // namespace detail

/// Inside a task: sends `data` to rank `dest` (MPI_Isend) and waits until the send buffer may be
/// reused.
template <typename T>
detail::op_request<void> isend(std::span<T> data, int dest, int tag, MPI_Comm comm) {
  detail::require_transferable<T>();
  auto a =
      detail::args_for<T>(detail::op_args::send, "magpie::mpi::isend", data.size(), dest, comm);
  a.in = data.data();
  a.tag = tag;
  return {a, {}, {}};
}

/// Inside a task: sends one value (MPI_Isend of one element).
template <typename T>
  requires(!std::is_pointer_v<T> && !detail::is_span<T>)
detail::op_request<void> isend(T const &value, int dest, int tag, MPI_Comm comm) {
  return isend(std::span<T const>(&value, 1), dest, tag, comm);
}

/// Inside a task: receives into `data` from rank `source` (or MPI_ANY_SOURCE) with `tag` (or
/// MPI_ANY_TAG); returns the status (MPI_Get_count says how many arrived). With `stop`: a stop
/// cancels the receive (see magpie::mpi::wait).
template <typename T>
detail::op_request<MPI_Status> irecv(std::span<T> data, int source, int tag, MPI_Comm comm,
                                     core::stop_token stop = {}) {
  static_assert(!std::is_const_v<T>, "magpie::mpi::irecv: the buffer must be writable");
  detail::require_transferable<T>();
  auto a =
      detail::args_for<T>(detail::op_args::recv, "magpie::mpi::irecv", data.size(), source, comm);
  a.out = data.data();
  a.tag = tag;
  return {a, std::move(stop), {}};
}

/// Inside a task: receives one value of type T and returns it: `int x = co_await irecv<int>(…)`.
template <typename T>
detail::op_request<T> irecv(int source, int tag, MPI_Comm comm, core::stop_token stop = {}) {
  detail::require_transferable<T>();
  static_assert(std::is_default_constructible_v<T>,
                "magpie::mpi::irecv<T>: T must be default-constructible (or receive into a span)");
  auto a = detail::args_for<T>(detail::op_args::recv, "magpie::mpi::irecv", 1, source, comm);
  a.tag = tag; // the buffer is the awaitable's
  return {a, std::move(stop), {}};
}

/// Inside a task: broadcasts `data` from rank `root` to every rank of `comm` (MPI_Ibcast), in
/// place. Every rank of `comm` must call it, with the same count.
template <typename T>
detail::op_request<void> ibcast(std::span<T> data, int root, MPI_Comm comm) {
  static_assert(!std::is_const_v<T>, "magpie::mpi::ibcast: the buffer must be writable");
  detail::require_transferable<T>();
  auto a =
      detail::args_for<T>(detail::op_args::bcast, "magpie::mpi::ibcast", data.size(), root, comm);
  a.out = data.data();
  return {a, {}, {}};
}

/// Inside a task: broadcasts one value in place.
template <typename T>
  requires(!std::is_const_v<T> && !detail::is_span<T>)
detail::op_request<void> ibcast(T &value, int root, MPI_Comm comm) {
  return ibcast(std::span<T>(&value, 1), root, comm);
}

/// Inside a task: element-wise reduction of every rank's `in` with `op`, into every rank's `out`
/// (MPI_Iallreduce). `in` and `out` have the same size and do not overlap.
template <typename T, typename Op>
detail::op_request<void> iallreduce(std::span<T const> in, std::span<T> out, Op op, MPI_Comm comm) {
  detail::require_reducible<T>();
  if (in.size() != out.size()) {
    throw std::invalid_argument("magpie::mpi::iallreduce: `in` and `out` differ in size");
  }
  auto a = detail::args_for<T>(detail::op_args::allreduce, "magpie::mpi::iallreduce", in.size(), 0,
                               comm);
  a.in = in.data();
  a.out = out.data();
  a.op = detail::to_mpi_op(op);
  return {a, {}, {}};
}

/// Inside a task: as above, in place (MPI_IN_PLACE): `data` holds this rank's part, then the
/// result.
template <typename T, typename Op>
  requires(!std::is_const_v<T>)
detail::op_request<void> iallreduce(std::span<T> data, Op op, MPI_Comm comm) {
  detail::require_reducible<T>();
  auto a = detail::args_for<T>(detail::op_args::allreduce, "magpie::mpi::iallreduce", data.size(),
                               0, comm);
  a.in = MPI_IN_PLACE;
  a.out = data.data();
  a.op = detail::to_mpi_op(op);
  return {a, {}, {}};
}

/// Inside a task: reduces one value over every rank and returns the result:
/// `long total = co_await iallreduce(mine, std::plus<>{}, comm)`.
template <typename T, typename Op>
  requires(!std::is_pointer_v<T> && !detail::is_span<T>)
detail::op_request<T> iallreduce(T const &value, Op op, MPI_Comm comm) {
  detail::require_reducible<T>();
  auto a = detail::args_for<T>(detail::op_args::allreduce, "magpie::mpi::iallreduce", 1, 0, comm);
  a.op = detail::to_mpi_op(op); // the buffers are the awaitable's
  detail::op_request<T> r{a, {}, {}};
  r.m_value.in = value;
  return r;
}

} // namespace magpie::mpi
