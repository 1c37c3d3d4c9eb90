#pragma once
// magpie/sync.hpp — tasks that wait: the suspension primitive, spawn and futures, task groups and
// coroutine-aware synchronisation. For users whose tasks wait on each other or on other threads
// without blocking a worker.

#include "magpie/sched.hpp"
#include "magpie/sync/suspend.hpp"
#include "magpie/sync/barrier.hpp"
#include "magpie/sync/channel.hpp"
#include "magpie/sync/event.hpp"
#include "magpie/sync/latch.hpp"
