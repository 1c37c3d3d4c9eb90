#pragma once
// magpie/sched.hpp — the scheduling layer: pools, the inline scheduler, sync_wait, resume_on,
// yield. For users who run tasks; scheduler authors need only magpie/core.hpp. Brings in the core
// (magpie/core.hpp); every name of both layers is also magpie::NAME.

#include "magpie/core.hpp"
#include "magpie/sched/inline_scheduler.hpp"
#include "magpie/sched/job.hpp"
#include "magpie/sched/pool.hpp"
#include "magpie/sched/resume_on.hpp"
#include "magpie/sched/sync_wait.hpp"
#include "magpie/sched/yield.hpp"

// The scheduling layer's names for users, in namespace magpie (with the core's, from core.hpp).
namespace magpie {
using sched::busy_pool;
using sched::idle_policy;
using sched::inline_scheduler;
using sched::lazy_pool;
using sched::placement;
using sched::pool;
using sched::pool_closed;
using sched::pool_options;
using sched::priority;
using sched::resume_on;
using sched::sync_wait;
using sched::this_worker_index;
using sched::topology;
using sched::victim_policy;
using sched::yield;
} // namespace magpie
