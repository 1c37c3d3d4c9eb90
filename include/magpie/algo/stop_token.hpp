#pragma once
// magpie/algo/stop_token.hpp — the stop token the parallel algorithms take (core/stop_token.hpp).

#include "magpie/core/stop_token.hpp"

namespace magpie::algo {

/// The source of the algorithms' stop tokens: core::stop_source (std::stop_source or the stand-in).
using core::stop_source;
/// The token loop_options carries: core::stop_token (std::stop_token or the stand-in).
using core::stop_token;

} // namespace magpie::algo
