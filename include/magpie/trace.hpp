#pragma once
// magpie/trace.hpp — observability, for users tuning a program: what the workers did, counted
// (trace::counters) and on a timeline (trace::session, Chrome/Perfetto trace-event JSON); what
// each worker runs now (trace::dump) and why a program is stuck (trace::watchdog); how much
// parallelism the program has (trace::work_span_probe, in MAGPIE_OBSERVE_TASKS builds).
#include "magpie/trace/counters.hpp"
#include "magpie/trace/dump.hpp"
#include "magpie/trace/session.hpp"
#include "magpie/trace/watchdog.hpp"
#include "magpie/trace/work_span.hpp"
