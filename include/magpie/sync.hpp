#pragma once
// magpie/sync.hpp — tasks that wait: the suspension primitive, spawn and futures, task groups and
// coroutine-aware synchronisation. For users whose tasks wait on each other or on other threads
// without blocking a worker. This header is enough to write such programs: it brings in the
// scheduling layer and the core (magpie/sched.hpp), and every name as magpie::NAME.

#include "magpie/sched.hpp"
#include "magpie/sync/barrier.hpp"
#include "magpie/sync/channel.hpp"
#include "magpie/sync/channel_sender.hpp"
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

// The synchronisation layer's names for users, in namespace magpie (with those of the core and the
// scheduling layer, from sched.hpp).
namespace magpie {
using sync::abandoned_wait;
using sync::barrier;
using sync::channel;
using sync::channel_sender;
using sync::condition_variable;
using sync::counter;
using sync::event;
using sync::future;
using sync::latch;
using sync::mutex;
using sync::receive_result;
using sync::receive_status;
using sync::resume_handle;
using sync::semaphore;
using sync::send_status;
using sync::set_unobserved_exception_handler;
using sync::shared_guard;
using sync::shared_mutex;
using sync::spawn;
using sync::suspend;
using sync::task_group;
using sync::unique_guard;
using sync::unobserved_exception_handler;
} // namespace magpie
