#pragma once
// magpie/sched.hpp — the scheduling layer: pools, the inline scheduler, sync_wait, resume_on.
// For users who run tasks; scheduler authors need only magpie/core.hpp.

#include "magpie/core.hpp"
#include "magpie/sched/inline_scheduler.hpp"
#include "magpie/sched/job.hpp"
#include "magpie/sched/pool.hpp"
#include "magpie/sched/resume_on.hpp"
#include "magpie/sched/sync_wait.hpp"
