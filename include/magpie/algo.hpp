#pragma once
// magpie/algo.hpp — parallel algorithms for users: for_each, for_each_n, for_range, transform,
// reduce, transform_reduce, inclusive_scan, exclusive_scan, sort, stable_sort, find_if, any_of,
// all_of, none_of; loop_options (grain, stop token), stop_requested() and commutative(op).
// docs/algorithms.md.
//
// Each is an object with two kinds of call: with a scheduler first, it blocks the calling thread
// (like std::for_each(std::execution::par, ...)); without one, it is a magpie async function to
// start with fork/call/sync_wait from a task.

#include "magpie/algo/find.hpp"
#include "magpie/algo/for_each.hpp"
#include "magpie/algo/operation.hpp"
#include "magpie/algo/options.hpp"
#include "magpie/algo/reduce.hpp"
#include "magpie/algo/scan.hpp"
#include "magpie/algo/sort.hpp"
