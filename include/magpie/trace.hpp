#pragma once
// magpie/trace.hpp — observability, for users tuning a program: what the workers did, counted
// (trace::counters) and on a timeline (trace::session, Chrome/Perfetto trace-event JSON).
#include "magpie/trace/counters.hpp"
#include "magpie/trace/session.hpp"
