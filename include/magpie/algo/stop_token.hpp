#pragma once
// magpie/algo/stop_token.hpp — the stop token the parallel algorithms take (core/stop_token.hpp).

#include "magpie/core/stop_token.hpp"

namespace magpie::algo {

using core::stop_source;
using core::stop_token;

} // namespace magpie::algo
