#pragma once
// magpie/magpie.hpp — the one header users include.
//
// magpie is a C++20 library for fine-grained fork–join parallelism: continuation stealing on
// stackless coroutines whose frames live on per-worker segmented stacks. See README.md.
//
// It includes every layer's umbrella header; each of them brings its layer's names into
// namespace magpie (magpie::task, magpie::lazy_pool, magpie::mutex, ...), so a program may
// include just the layers it uses instead.

#include "magpie/algo.hpp"
#include "magpie/core.hpp"
#include "magpie/sched.hpp"
#include "magpie/sync.hpp"
#include "magpie/trace.hpp"
#if defined(__linux__)
#  include "magpie/io.hpp"
#endif
