#pragma once
// magpie/core.hpp — the core layer: tasks, fork/call/join, frames on segmented stacks, the deque.
//
// If you write your own scheduler, this is all you need: create a core::context per worker,
// install it with core::set_this_context(), steal core::frame_base* continuations from other
// workers' deques, and resume them (see src/pool.cpp for the reference implementation).

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
