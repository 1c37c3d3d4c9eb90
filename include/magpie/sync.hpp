#pragma once
// magpie/sync.hpp — tasks that wait: the suspension primitive, spawn and futures, task groups and
// coroutine-aware synchronisation. For users whose tasks wait on each other or on other threads
// without blocking a worker.

#include "magpie/sched.hpp"
#include "magpie/sync/barrier.hpp"
#include "magpie/sync/channel.hpp"
#include "magpie/sync/condition_variable.hpp"
#include "magpie/sync/counter.hpp"
#include "magpie/sync/event.hpp"
#include "magpie/sync/future.hpp"
#include "magpie/sync/guard.hpp"
#include "magpie/sync/latch.hpp"
#include "magpie/sync/mutex.hpp"
#include "magpie/sync/semaphore.hpp"
#include "magpie/sync/shared_mutex.hpp"
#include "magpie/sync/suspend.hpp"
#include "magpie/sync/task_group.hpp"
