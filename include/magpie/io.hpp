#pragma once
// magpie/io.hpp — tasks that wait on the outside world: timers (sleep_for, sleep_until) and file
// descriptors (readable, writable) on Linux, served by one process-wide reactor thread that
// sleeps in epoll. For servers and pipelines whose tasks wait on time or sockets without
// blocking a worker. The Asio completion token is separate: magpie/io/asio.hpp.

#include "magpie/io/fd.hpp"
#include "magpie/io/timer.hpp"
