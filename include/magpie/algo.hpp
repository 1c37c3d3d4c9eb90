#pragma once
// magpie/algo.hpp — parallel algorithms for users: for_each, for_each_n, for_range, transform,
// reduce, transform_reduce, inclusive_scan, exclusive_scan, sort, stable_sort, find_if, any_of,
// all_of, none_of; loop_options (grain, stop token), stop_requested() and commutative(op).
// docs/algorithms.md.
//
// Each is an object with two kinds of call: with a scheduler first, it blocks the calling thread
// (like std::for_each(std::execution::par, ...)); without one, it is a magpie async function to
// start with fork/call/sync_wait from a task. This header is enough to write such programs: it
// brings in the scheduling layer (magpie/sched.hpp) and every name above as magpie::NAME.

#include "magpie/algo/find.hpp"
#include "magpie/algo/for_each.hpp"
#include "magpie/algo/operation.hpp"
#include "magpie/algo/options.hpp"
#include "magpie/algo/reduce.hpp"
#include "magpie/algo/scan.hpp"
#include "magpie/algo/sort.hpp"
#include "magpie/sched.hpp"

// The algorithms' names for users, in namespace magpie (with those of the core and the scheduling
// layer, from sched.hpp).
namespace magpie {
using algo::all_of;
using algo::any_of;
using algo::commutative;
using algo::commutative_op;
using algo::exclusive_scan;
using algo::find_if;
using algo::for_each;
using algo::for_each_n;
using algo::for_range;
using algo::inclusive_scan;
using algo::loop_options;
using algo::none_of;
using algo::reduce;
using algo::sort;
using algo::stable_sort;
using algo::stop_requested;
using algo::stop_source;
using algo::stop_token;
using algo::transform;
using algo::transform_reduce;
} // namespace magpie
