#pragma once
// magpie/io.hpp — tasks that wait on the outside world: timers (sleep_for, sleep_until) and file
// descriptors (readable, writable) on Linux, served by one process-wide reactor thread that
// sleeps in epoll. For servers and pipelines whose tasks wait on time or sockets without
// blocking a worker. Linux only. This header is enough to write such programs: it brings in the
// layers they start and wait for tasks with (magpie/sync.hpp, which brings in magpie/sched.hpp and
// magpie/core.hpp), and every name as magpie::NAME. The Asio completion token is separate:
// magpie/io/asio.hpp (CMake target magpie::asio).

#include "magpie/io/fd.hpp"
#include "magpie/io/timer.hpp"
#include "magpie/sync.hpp"

// The outside world's names for users, in namespace magpie (with those of the layers below, from
// sync.hpp).
namespace magpie {
using io::readable;
using io::sleep_for;
using io::sleep_until;
using io::writable;
} // namespace magpie
