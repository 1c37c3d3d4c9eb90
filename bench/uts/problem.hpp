#pragma once
// bench/uts/problem.hpp — the Unbalanced Tree Search benchmark (Olivier et al., LCPC 2006), as
// defined in BENCHMARKS.md ("UTS"): the trees, their sizes and their reference answers.
//
// A node is (20-byte SHA-1 state, height); the tree is never stored. Child i of P has state
// SHA1(P.state ‖ BE32(i)). The draw u ∈ [0, 1) comes from bytes 16..19 of the node's own state.
// Each traversal returns (nodes, leaves, max depth), 64-bit.
//
// Sizes: for each of the paper's six trees there is a default-scale tree of the same family and
// shape parameters (b0, q, m), cut down to 0.25–1.2 M nodes so that it runs in a fraction of a
// second: fewer levels for the geometric trees; for the binomial ones fewer root children and a
// root seed r chosen (by scanning r) for a tree of that size that is still deep (T3XXL: ~3,000
// levels; the paper's is ~10^5 deep and has 2.8·10^9 nodes). `<T>-paper` is the paper's own tree.
// Reference answers: T1-paper and the check vectors are BENCHMARKS.md's. The default-scale trees,
// T1L-paper, T3-paper and T3L-paper were computed here by the serial projection and printed
// identically by every runtime at 1 and 2 workers (the three paper trees also match the published
// UTS sample-tree sizes). T1XXL-paper and T3XXL-paper (> 10^9 nodes) have none: they are
// "print it" (UNREF) and the runner checks that all runtimes agree.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "common/harness.hpp"
#include "uts/sha1.hpp"

namespace uts {

inline constexpr char const *problem_name = "uts";

enum class family : std::uint8_t { geometric_fixed, geometric_linear, binomial };

struct tree {
  char const *name;
  family kind;
  double b0;
  int d;                              ///< geometric: depth limit
  double q;                           ///< binomial: probability of having children
  int m;                              ///< binomial: number of children
  int r;                              ///< root seed
  std::uint64_t nodes, leaves, depth; ///< reference, or 0 when none
};

struct node {
  digest state;
  int height;
};

struct result {
  std::uint64_t nodes = 0;
  std::uint64_t leaves = 0;
  std::uint64_t depth = 0;

  /// Adds a child's result into this one.
  void add(result const &c) noexcept {
    nodes += c.nodes;
    leaves += c.leaves;
    depth = c.depth > depth ? c.depth : depth;
  }
};

// clang-format off
inline constexpr tree trees[] = {
    // name          family                     b0       d   q         m  r    reference (nodes, leaves, depth)
    {"T1",          family::geometric_fixed,  4,      8,  0,        0, 19,  257'042, 205'878, 8},
    {"T1L",         family::geometric_fixed,  4,      9,  0,        0, 29,  399'504, 320'056, 9},
    {"T1XXL",       family::geometric_fixed,  4,      9,  0,        0, 19,  1'031'269, 825'408, 9},
    {"T3",          family::binomial,         200,    0,  0.124875, 8, 51,  683'569, 598'147, 1'038},
    {"T3L",         family::binomial,         200,    0,  0.200014, 5, 32,  347'761, 278'248, 500},
    {"T3XXL",       family::binomial,         20,     0,  0.499995, 2, 79,  1'155'369, 577'694, 3'039},
    // The paper's trees (Table I).
    {"T1-paper",    family::geometric_fixed,  4,      10, 0,        0, 19,  4'130'071, 3'305'118, 10},
    {"T1L-paper",   family::geometric_fixed,  4,      13, 0,        0, 29,  102'181'082, 81'746'377, 13},
    {"T1XXL-paper", family::geometric_fixed,  4,      15, 0,        0, 19,  0, 0, 0},
    {"T3-paper",    family::binomial,         2000,   0,  0.124875, 8, 42,  4'112'897, 3'599'034, 1'572},
    {"T3L-paper",   family::binomial,         2000,   0,  0.200014, 5, 7,   111'345'631, 89'076'904, 17'844},
    {"T3XXL-paper", family::binomial,         2000,   0,  0.499995, 2, 316, 0, 0, 0},
    // Check vectors from BENCHMARKS.md.
    {"T1-d7",       family::geometric_fixed,  4,      7,  0,        0, 19,  63'914, 51'124, 7},
    {"bin-20",      family::binomial,         20,     0,  0.124875, 8, 42,  6'213, 5'438, 67},
    {"linear",      family::geometric_linear, 4,      6,  0,        0, 0,   1'732, 1'050, 6},
};
// clang-format on

inline tree const &find(std::string const &s) {
  for (auto const &t : trees) {
    if (s == t.name) {
      return t;
    }
  }
  bench::unknown_size(problem_name, s);
}

/// The root: state = SHA1(16 zero bytes ‖ BE32(r)), height 0.
inline node root(tree const &t) {
  std::uint8_t msg[20] = {};
  detail::store_be32(msg + 16, static_cast<std::uint32_t>(t.r));
  return {sha1(msg, sizeof msg), 0};
}

/// Child i of `parent`: state = SHA1(parent.state ‖ BE32(i)), height + 1.
inline node child(node const &parent, int i) {
  std::uint8_t msg[24];
  std::memcpy(msg, parent.state.data(), 20);
  detail::store_be32(msg + 20, static_cast<std::uint32_t>(i));
  return {sha1(msg, sizeof msg), parent.height + 1};
}

/// u ∈ [0, 1) from bytes 16..19 of the node's own state, top bit cleared, over 2^31.
inline double draw(node const &n) {
  std::uint32_t const v = detail::load_be32(n.state.data() + 16) & 0x7FFFFFFFu;
  return static_cast<double>(v) / 2147483648.0;
}

/// The number of children of `n` in tree `t`.
inline int num_children(tree const &t, node const &n) {
  if (t.kind == family::binomial) {
    if (n.height == 0) {
      return static_cast<int>(std::floor(t.b0));
    }
    return draw(n) < t.q ? t.m : 0;
  }
  double b = 0;
  if (n.height == 0) {
    b = t.b0;
  } else if (t.kind == family::geometric_fixed) {
    b = n.height < t.d ? t.b0 : 0;
  } else { // linear shape: b = b0 · (1 − h/d)
    b = n.height < t.d ? t.b0 * (1.0 - static_cast<double>(n.height) / t.d) : 0;
  }
  if (b <= 0) {
    return 0;
  }
  double const p = 1.0 / (1.0 + b);
  int const k = static_cast<int>(std::floor(std::log(1.0 - draw(n)) / std::log(1.0 - p)));
  return k > 100 ? 100 : k;
}

inline std::string to_string(result const &r) {
  return "nodes=" + std::to_string(r.nodes) + ",leaves=" + std::to_string(r.leaves) +
         ",depth=" + std::to_string(r.depth);
}

inline bench::verdict check(result const &got, tree const &t) {
  std::string const answer = to_string(got);
  if (t.nodes == 0) {
    return {bench::verdict::unref, answer, ""};
  }
  bool const ok = got.nodes == t.nodes && got.leaves == t.leaves && got.depth == t.depth;
  return {ok ? bench::verdict::ok : bench::verdict::fail, answer,
          ok ? "" : "expected " + to_string({t.nodes, t.leaves, t.depth})};
}

/// What a node keeps for each child: the child's node and, after the join, its result.
struct slot {
  node n;
  result r;
};

/// The leaf result of `n`.
inline result leaf(node const &n) { return {1, 1, static_cast<std::uint64_t>(n.height)}; }

/// The result of an inner node `n` whose children's results are in `kids`.
template <typename Slots>
result combine(node const &n, Slots const &kids) {
  result out{1, 0, static_cast<std::uint64_t>(n.height)};
  for (auto const &s : kids) {
    out.add(s.r);
  }
  return out;
}

} // namespace uts
