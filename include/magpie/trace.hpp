#pragma once
// magpie/trace.hpp — observability, for users tuning a program: what the workers did, counted
// (trace::counters) and on a timeline (trace::session, Chrome/Perfetto trace-event JSON); what
// each worker runs now (trace::dump) and why a program is stuck (trace::watchdog); how much
// parallelism the program has (trace::work_span_probe, in MAGPIE_OBSERVE_TASKS builds). Brings in
// the scheduling layer and the core (magpie/sched.hpp); magpie::dump is trace::dump.

#include "magpie/sched.hpp"
#include "magpie/trace/counters.hpp"
#include "magpie/trace/dump.hpp"
#include "magpie/trace/session.hpp"
#include "magpie/trace/watchdog.hpp"
#include "magpie/trace/work_span.hpp"

// The observability layer's names for users, in namespace magpie (with those of the core and the
// scheduling layer, from sched.hpp).
namespace magpie {
using trace::dump; // magpie::dump(pool[, out]): each worker's chain of tasks (trace/dump.hpp)
} // namespace magpie
