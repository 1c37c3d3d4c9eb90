#pragma once
// magpie/core.hpp — the core layer: tasks, fork/call/join, frames on segmented stacks, the deque.
//
// If you write your own scheduler, this is all you need: create a core::context per worker,
// install it with core::set_this_context(), steal core::frame_base* continuations from other
// workers' deques, and resume them (see src/pool/ for the reference implementation). The names
// a task's author uses (task, fork, call, join, ...) are also magpie::NAME.

#include "magpie/core/config.hpp"
#include "magpie/core/context.hpp"
#include "magpie/core/deque.hpp"
#include "magpie/core/ext.hpp"
#include "magpie/core/fork.hpp"
#include "magpie/core/frame.hpp"
#include "magpie/core/scope.hpp"
#include "magpie/core/stack.hpp"
#include "magpie/core/stack_alloc.hpp"
#include "magpie/core/stop_token.hpp"
#include "magpie/core/task.hpp"

// The core's names for users, in namespace magpie (the layers above add theirs).
namespace magpie {
using core::async_function;
using core::async_result_t;
using core::call;
using core::fork;
using core::join;
using core::stack_alloc;
using core::stack_alloc_uninitialized;
using core::stack_array;
using core::stop_scope;
using core::task;
using core::with_stop;
namespace this_task = core::this_task;
} // namespace magpie
