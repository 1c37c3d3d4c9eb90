#pragma once
// magpie/magpie.hpp — the one header users include.
//
// magpie is a C++20 library for fine-grained fork–join parallelism: continuation stealing on
// stackless coroutines whose frames live on per-worker segmented stacks. See README.md.

#include "magpie/core.hpp"
#include "magpie/sched.hpp"
#include "magpie/sync.hpp"

namespace magpie {

using core::async_function;
using core::async_result_t;
using core::call;
using core::fork;
using core::join;
using core::stack_alloc;
using core::stack_array;
using core::task;

using sched::busy_pool;
using sched::idle_policy;
using sched::inline_scheduler;
using sched::lazy_pool;
using sched::placement;
using sched::pool;
using sched::pool_closed;
using sched::pool_options;
using sched::resume_on;
using sched::sync_wait;
using sched::this_worker_index;
using sched::topology;
using sched::victim_policy;

using sync::abandoned_wait;
using sync::resume_handle;
using sync::suspend;

} // namespace magpie
