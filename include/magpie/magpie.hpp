#pragma once
// magpie/magpie.hpp — the one header users include.
//
// magpie is a C++20 library for fine-grained fork–join parallelism: continuation stealing on
// stackless coroutines whose frames live on per-worker segmented stacks. See README.md.

#include "magpie/algo.hpp"
#include "magpie/core.hpp"
#include "magpie/sched.hpp"
#include "magpie/sync.hpp"
#include "magpie/trace.hpp"
#if defined(__linux__)
#  include "magpie/io.hpp"
#endif

namespace magpie {

using core::async_function;
using core::async_result_t;
using core::call;
using core::fork;
using core::join;
using core::stack_alloc;
using core::stack_array;
using core::stop_scope;
using core::task;
using core::with_stop;
namespace this_task = core::this_task;

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

using sync::abandoned_wait;
using sync::barrier;
using sync::channel;
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

using trace::dump; // magpie::dump(pool[, out]): each worker's chain of tasks (trace/dump.hpp)

#if defined(__linux__)
using io::readable;
using io::sleep_for;
using io::sleep_until;
using io::writable;
#endif

} // namespace magpie
