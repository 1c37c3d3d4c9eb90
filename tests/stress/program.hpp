#pragma once
// tests/stress/program.hpp — seeded random fork–join programs and their serial projection.
//
// A program is a seed and a few global knobs. Everything about a node — leaf or inner, how many
// scopes and children, fork or call for each child, stack allocations and their sizes, where it
// throws, whether a join catches, where it moves itself with resume_on — is a pure function of
// (seed, path), where `path` is a hash of the node's position in the tree. So the same shape can be
// evaluated twice: once by a plain recursive function (the serial projection, `evaluate`), once as
// magpie tasks on any scheduler (`run`), and the results compared exactly.
//
// Semantics (both evaluations implement exactly this):
//  * A leaf counts itself, then either throws tracked_error(path) or returns mix(path).
//  * An inner node runs, in order: an optional throw ("before"); a stack array freed before the
//    first fork ("pre"); an optional stack array that lives across every scope ("span", checked
//    for corruption after the last join); 1..3 scopes; an optional stack array after the joins
//    ("post"); an optional throw ("after"). A scope spawns its children in order (each by fork or
//    call), may throw itself before child j or after the last child ("inside", with children still
//    outstanding), and ends with a join. A child's exception does not stop the parent: it is stored
//    and rethrown by the scope's join, after all the scope's children ran (magpie's rule; a call's
//    exception is deferred to the join just like a fork's). A join may catch tracked_error: the
//    scope then contributes a constant instead of its children's values.
//  * The value of an inner node folds its children's values, scope by scope, in child order.
//  * A node is *executed* iff the serial order reaches it; the program throws iff an executed
//    node's exception is not caught. Which exception arrives among several may differ between
//    schedulers; it must be one of the `candidates` (the throwing nodes whose exception could
//    propagate to the root), and exactly one must arrive.
//  * resume_on (pools only) moves a node to worker hash % P and is checked to land there. It does
//    not change values.
//  * A scope may be *guarded*: the node allocates a stack array, spawns the scope's children and
//    throws tracked_error(guard_id) itself, inside `try`, and catches it (checking its identity and
//    the array's contents) either before the join (children outstanding: the array is unwound
//    while the continuation may be stolen) or after it (the join is inside the `try`). The guard
//    adds guard_value + the array's sum; in the first form only the children before the throw run.
//  * A child may be reached through an *edge* that does not change values: directly; through
//    `via_adapter`, a plain function with trivially destructible parameters returning the task of
//    `adapted`, a coroutine whose parameters (a vector of tracked values, a tracked value) need
//    destroying; or through `ref_child`, whose reference parameters are bound to locals of the
//    parent that outlive the join, and which reads them after it forked and joined the node.
//
// One restriction the generator respects, because of a documented limitation of the library
// (README, docs/protocols.md §4; reproduced by known_bugs_test.cpp): a node that throws inside a
// scope keeps everything its children write (their return slots) in its parameters, which live
// until the frame dies; its block-scope locals are destroyed by the unwinding while children may
// still run. For the same reason `ref_child` edges appear only in scopes the node cannot leave by
// an exception before their join (no uncaught throw inside them, no injected faults). Earlier
// versions of the generator had three more restrictions, each lifted when the library fixed the bug
// this suite found: resume_on only from tasks reached through `call` edges, then only with at most
// one forked ancestor; and no stack array alive across a scope that throws.

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/lifetime.hpp"
#include "magpie/magpie.hpp"

namespace magpie::stress {

using lifetime::tracked;
using lifetime::tracked_error;

inline constexpr std::uint64_t mix(std::uint64_t x) noexcept { // splitmix64 finaliser
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

/// A small deterministic stream of random numbers derived from one hash.
class shape_rng {
public:
  explicit constexpr shape_rng(std::uint64_t h) noexcept : m_state(h) {}
  constexpr std::uint64_t next() noexcept { return m_state = mix(m_state); }
  constexpr unsigned below(unsigned n) noexcept { return static_cast<unsigned>(next() % n); }
  constexpr bool percent(unsigned p) noexcept { return below(100) < p; }

private:
  std::uint64_t m_state;
};

inline constexpr int max_children = 4;
inline constexpr int max_scopes = 3;

/// The program-wide knobs, themselves derived from the seed (see make_program).
struct program {
  std::uint64_t seed = 0;
  int max_depth = 6;
  int fanout = 3;          ///< children per scope: 1..fanout
  unsigned leaf_pct = 30;  ///< chance that a non-spine inner position is a leaf
  unsigned fork_pct = 70;  ///< chance that a child is forked (else called)
  unsigned throw_pct = 0;  ///< per throw site
  unsigned catch_pct = 30; ///< chance that a join catches
  unsigned alloc_pct = 30; ///< per stack-array site
  unsigned big_alloc_pct = 2;
  unsigned resume_pct = 0; ///< per resume_on site (pools only)
  unsigned leaf_work = 0; ///< a leaf burns up to this many iterations (gives thieves time to steal)
  bool spine = false;     ///< deep program: child 0 of scope 0 never becomes a leaf early
  bool spanning_arrays = true; ///< allow "span" arrays
  unsigned guard_pct = 0;      ///< per scope: the node catches its own exception inside it
  unsigned ref_pct = 0;        ///< per child: through ref_child (reference parameters)
  unsigned adapter_pct = 0;    ///< per child: through via_adapter (off unless asked for)
};

/// Draws a program's knobs from its seed: bushy trees, deep spines, with or without faults.
/// `with_adapters` adds via_adapter edges (see stress_test.cpp, Adapters*).
inline program make_program(std::uint64_t seed, bool with_resume, bool with_adapters = false) {
  shape_rng r(mix(seed ^ 0x5EEDULL));
  program p;
  p.seed = seed;
  p.spine = r.percent(20);
  if (p.spine) {
    p.max_depth = 20 + static_cast<int>(r.below(400));
    p.fanout = 1 + static_cast<int>(r.below(2));
    p.leaf_pct = 100; // everything but the spine is a leaf
  } else {
    p.max_depth = 1 + static_cast<int>(r.below(9));
    p.fanout = 1 + static_cast<int>(r.below(max_children));
    p.leaf_pct = 25 + r.below(40);
  }
  p.fork_pct = r.below(101);
  p.throw_pct = r.percent(50) ? 0 : 1 + r.below(4);
  p.catch_pct = r.below(60);
  p.alloc_pct = r.below(60);
  p.big_alloc_pct = p.spine ? 0 : r.below(4);
  p.resume_pct = with_resume ? r.below(25) : 0;
  unsigned const work[] = {0, 0, 300, 3000};
  p.leaf_work = work[r.below(4)];
  // The later shapes draw from their own stream: the knobs above stay what they were per seed.
  shape_rng r2(mix(seed ^ 0x5EED2ULL));
  p.guard_pct = r2.percent(60) ? 10 + r2.below(50) : 0;
  p.ref_pct = r2.percent(60) ? 10 + r2.below(50) : 0;
  p.adapter_pct = with_adapters ? 10 + r2.below(60) : 0;
  return p;
}

/// Everything a node decides, from (program, path, depth).
enum class guard_kind : std::uint8_t {
  none,
  before_join, ///< try { array; children; throw } catch { check } join
  after_join,  ///< try { array; children; join; throw } catch { check }
};

struct node_shape {
  struct scope {
    int children = 0;
    std::uint8_t forked = 0; ///< bit i: child i is forked
    int throw_at = -1;       ///< throw before child throw_at (== children: after the last child)
    bool catches = false;
    bool resume_after = false;
    std::size_t resume_target = 0; ///< a hash; the worker is resume_target % P
    guard_kind guard = guard_kind::none;
    int guard_throw_at = 0;       ///< before_join: the guard throws before child guard_throw_at
    std::size_t guard_len = 0;    ///< the guarded stack array's length
    std::uint8_t via_adapter = 0; ///< bit i: child i is reached through via_adapter
    std::uint8_t by_ref = 0;      ///< bit i: child i is reached through ref_child

    /// Children spawned: a before_join guard stops at its throw.
    int spawned() const noexcept {
      return guard == guard_kind::before_join ? guard_throw_at : children;
    }
  };

  bool leaf = false;
  bool throws_leaf = false;
  unsigned work = 0; ///< iterations a leaf burns before it returns or throws
  bool throw_before = false;
  bool throw_after = false;
  bool resume_first = false;
  std::size_t resume_target = 0;
  std::size_t pre = 0, span = 0, post = 0; ///< stack-array lengths (uint64 elements)
  int scopes = 0;
  std::array<scope, max_scopes> scope_list{};
};

inline std::uint64_t child_path(std::uint64_t path, int scope, int child) noexcept {
  return mix(path ^ (0x100ULL * static_cast<std::uint64_t>(scope + 1) +
                     static_cast<std::uint64_t>(child)));
}

inline std::size_t array_length(shape_rng &r, program const &p) {
  if (!r.percent(p.alloc_pct)) {
    return 0;
  }
  if (r.percent(p.big_alloc_pct)) {
    return 1000 + r.below(24000); // 8–200 KB: forces new, larger stacklets
  }
  return r.below(64);
}

inline node_shape shape_of(program const &p, std::uint64_t path, int depth, bool on_spine) {
  shape_rng r(mix(path ^ p.seed));
  node_shape s;
  bool const can_be_leaf = depth > 0 && !(p.spine && on_spine);
  if (depth >= p.max_depth || (can_be_leaf && r.percent(p.leaf_pct))) {
    s.leaf = true;
    s.throws_leaf = r.percent(p.throw_pct * 2);
    s.work = p.leaf_work != 0 ? r.below(p.leaf_work) : 0;
    return s;
  }
  s.throw_before = r.percent(p.throw_pct);
  s.throw_after = r.percent(p.throw_pct);
  s.resume_first = r.percent(p.resume_pct);
  s.resume_target = static_cast<std::size_t>(r.next() >> 8);
  s.pre = array_length(r, p);
  s.post = array_length(r, p);
  s.scopes = r.percent(25) ? 2 + static_cast<int>(r.below(max_scopes - 1)) : 1;
  for (int k = 0; k < s.scopes; ++k) {
    auto &sc = s.scope_list[static_cast<std::size_t>(k)];
    sc.children = 1 + static_cast<int>(r.below(static_cast<unsigned>(p.fanout)));
    for (int i = 0; i < sc.children; ++i) {
      if (r.percent(p.fork_pct)) {
        sc.forked = static_cast<std::uint8_t>(sc.forked | (1u << i));
      }
    }
    if (r.percent(p.throw_pct)) {
      sc.throw_at = static_cast<int>(r.below(static_cast<unsigned>(sc.children + 1)));
    }
    sc.catches = r.percent(p.catch_pct);
    sc.resume_after = r.percent(p.resume_pct);
    sc.resume_target = static_cast<std::size_t>(r.next() >> 8);
  }
  // A stack array alive across the scopes: if the node throws inside a scope whose continuation
  // was stolen, the library must defer freeing it until the task has its chain back.
  std::size_t const span = array_length(r, p);
  s.span = p.spanning_arrays ? span : 0;
  // Guards and edges draw from their own stream: the shape above stays what it was per seed.
  shape_rng r2(mix(path ^ p.seed ^ 0x6A4DULL));
  for (int k = 0; k < s.scopes; ++k) {
    auto &sc = s.scope_list[static_cast<std::size_t>(k)];
    if (r2.percent(p.guard_pct)) {
      sc.guard = r2.percent(50) ? guard_kind::before_join : guard_kind::after_join;
      sc.guard_throw_at = static_cast<int>(r2.below(static_cast<unsigned>(sc.children + 1)));
      sc.guard_len = 1 + array_length(r2, p);
      sc.throw_at = -1; // the scope's only throw of the node's own is the guarded one
    }
    for (int i = 0; i < sc.children; ++i) {
      if (r2.percent(p.adapter_pct)) {
        sc.via_adapter = static_cast<std::uint8_t>(sc.via_adapter | (1u << i));
      } else if (sc.throw_at < 0 && r2.percent(p.ref_pct)) { // see "One restriction" above
        sc.by_ref = static_cast<std::uint8_t>(sc.by_ref | (1u << i));
      }
    }
  }
  return s;
}

inline std::uint64_t array_value(std::uint64_t path, std::size_t i) noexcept {
  return mix(path + 3 * i + 1);
}
inline constexpr std::uint64_t fold_k = 0x100000001B3ULL;
inline std::uint64_t caught_value(std::uint64_t path, int scope) noexcept {
  return mix(path ^ 0xC0FFEEULL ^ static_cast<std::uint64_t>(scope));
}
/// The id of the exception a guarded scope throws and catches itself (never a candidate).
inline std::uint64_t guard_id(std::uint64_t path, int scope) noexcept {
  return mix(path ^ 0x6A4D000ULL ^ static_cast<std::uint64_t>(scope));
}
inline std::uint64_t guard_value(std::uint64_t path, int scope) noexcept {
  return mix(guard_id(path, scope) + 1);
}
/// What a ref_child's reference parameters must read.
inline std::uint64_t key_of(std::uint64_t path) noexcept { return mix(path ^ 0x4EF5ULL); }

// ---------------------------------------------------------------------------------------------
// The serial projection.

struct expectation {
  bool throws = false;
  std::uint64_t value = 0;
  std::set<std::uint64_t> candidates; ///< nodes whose exception may reach the root
  std::uint64_t nodes = 0;            ///< executed nodes
  std::uint64_t leaves = 0;           ///< executed leaves
};

namespace detail {

struct serial_result {
  bool throws;
  std::uint64_t value;
};

struct too_big {};

inline serial_result evaluate(program const &p, std::uint64_t path, int depth, bool on_spine,
                              expectation &e, std::uint64_t &budget) {
  if (budget-- == 0) {
    throw too_big{};
  }
  node_shape const s = shape_of(p, path, depth, on_spine);
  ++e.nodes;
  if (s.leaf) {
    ++e.leaves;
    if (s.throws_leaf) {
      e.candidates.insert(path);
      return {true, 0};
    }
    return {false, mix(path)};
  }
  if (s.throw_before) {
    e.candidates.insert(path);
    return {true, 0};
  }
  std::uint64_t v = mix(path);
  for (std::size_t i = 0; i < s.pre; ++i) {
    v += array_value(path, i);
  }
  for (int k = 0; k < s.scopes; ++k) {
    auto const &sc = s.scope_list[static_cast<std::size_t>(k)];
    std::set<std::uint64_t> scope_candidates;
    bool child_threw = false;
    std::uint64_t folded = 0;
    int const spawned = sc.spawned();
    for (int i = 0; i <= spawned; ++i) {
      if (sc.throw_at == i) { // the node itself throws; outstanding children still finish
        e.candidates.insert(scope_candidates.begin(), scope_candidates.end());
        e.candidates.insert(path);
        return {true, 0};
      }
      if (i == spawned) {
        break;
      }
      expectation sub;
      serial_result const c =
          evaluate(p, child_path(path, k, i), depth + 1, on_spine && k == 0 && i == 0, sub, budget);
      e.nodes += sub.nodes;
      e.leaves += sub.leaves;
      if (c.throws) {
        child_threw = true;
        scope_candidates.insert(sub.candidates.begin(), sub.candidates.end());
      } else {
        folded = folded * fold_k + c.value;
      }
    }
    if (child_threw) {
      if (!sc.catches) {
        e.candidates.insert(scope_candidates.begin(), scope_candidates.end());
        return {true, 0};
      }
      v = v * fold_k + caught_value(path, k);
    } else {
      v = v * fold_k + folded;
    }
    if (sc.guard != guard_kind::none) { // its own exception, caught; the array's sum
      v = v * fold_k + guard_value(path, k);
      for (std::size_t i = 0; i < sc.guard_len; ++i) {
        v += array_value(guard_id(path, k), i);
      }
    }
  }
  for (std::size_t i = 0; i < s.span; ++i) {
    v += array_value(path ^ 1, i);
  }
  for (std::size_t i = 0; i < s.post; ++i) {
    v += array_value(path ^ 2, i);
  }
  if (s.throw_after) {
    e.candidates.insert(path);
    return {true, 0};
  }
  return {false, v};
}

} // namespace detail

inline std::uint64_t root_path(program const &p) noexcept {
  return mix(p.seed * 0x2545F4914F6CDD1DULL + 7);
}

/// The serial projection of `p`: what every scheduler must compute. Returns false (and leaves
/// `e` unspecified) if the program executes more than `max_nodes` nodes: the caller skips it.
inline bool evaluate(program const &p, expectation &e, std::uint64_t max_nodes) {
  e = expectation{};
  detail::serial_result r{};
  try {
    r = detail::evaluate(p, root_path(p), 0, true, e, max_nodes);
  } catch (detail::too_big const &) {
    return false;
  }
  e.throws = r.throws;
  e.value = r.value;
  if (!e.throws) {
    e.candidates.clear();
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// The same program as magpie tasks.

/// Shared by every task of one run: counters the checks compare with the projection.
struct run_env {
  program const *prog = nullptr;
  magpie::pool *pool = nullptr; ///< resume_on target (null for the inline scheduler)
  std::atomic<std::uint64_t> nodes{0};
  std::atomic<std::uint64_t> leaves{0};
  std::atomic<std::uint64_t> resumes{0};
  std::atomic<std::uint64_t> guards{0};   ///< own exceptions caught inside a scope
  std::atomic<std::uint64_t> adapters{0}; ///< children reached through via_adapter
  std::atomic<std::uint64_t> refs{0};     ///< children reached through ref_child
  std::atomic<std::uint64_t> errors{0};   ///< integrity failures seen inside tasks
  std::atomic<char const *> first_error{nullptr};

  void fail(char const *what) noexcept {
    errors.fetch_add(1, std::memory_order_relaxed);
    char const *expected = nullptr;
    first_error.compare_exchange_strong(expected, what);
  }
};

/// Burns `iters` iterations that the optimiser cannot remove.
inline void burn(unsigned iters) noexcept {
  std::uint64_t x = iters;
  for (unsigned i = 0; i < iters; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    asm volatile("" : "+r"(x));
  }
}

using value_t = tracked<std::uint64_t>;
/// Where a node's children write their values: a parameter of the node, so it lives until the
/// node's frame is destroyed (after every child finished), even if the body throws inside a scope.
/// Four named members, not an array: GCC 12 cannot put an array-typed temporary of a co_await
/// expression into a coroutine frame ("array used as initializer"). And not an aggregate: GCC 12
/// destroys an aggregate-initialised temporary of a co_await expression twice (see
/// lifetime_test.cpp, AggregateTemporaryArgumentIsDestroyedOnce).
struct slot_array {
  slot_array() noexcept {} // NOLINT: user-provided on purpose (see above)
  value_t s0, s1, s2, s3;
  value_t &operator[](std::size_t i) noexcept {
    return i == 0 ? s0 : i == 1 ? s1 : i == 2 ? s2 : s3;
  }
};
static_assert(max_children == 4);

inline magpie::task<value_t> node(run_env *env, std::uint64_t path, int depth, bool on_spine,
                                  int forks_on_path, value_t token, slot_array slots);

/// The coroutine behind via_adapter: its parameters need destroying (a vector of tracked values
/// and a tracked value; the driver's live count proves each was destroyed exactly once). Runs
/// the node as a call; the node's exception reaches our join and goes on from there.
inline magpie::task<value_t> adapted(run_env *env, std::uint64_t path, int depth, bool on_spine,
                                     int forks_on_path, std::vector<value_t> ballast, value_t tag) {
  env->adapters.fetch_add(1, std::memory_order_relaxed);
  if (ballast.size() != 1 + path % 5 || ballast.back().value() != mix(path) ||
      tag.value() != key_of(path)) {
    env->fail("an adapter's coroutine received corrupted parameters");
  }
  value_t r{0};
  co_await magpie::call(&r, node, env, path, depth, on_spine, forks_on_path, value_t{path},
                        slot_array{});
  co_await magpie::join();
  co_return r;
}

/// A plain function, not a coroutine: its parameters are trivially destructible, the parameters
/// of the coroutine whose task it returns are not (an adapter).
inline magpie::task<value_t> via_adapter(run_env *env, std::uint64_t path, int depth, bool on_spine,
                                         int forks_on_path) {
  return adapted(env, path, depth, on_spine, forks_on_path,
                 std::vector<value_t>(1 + path % 5, value_t{mix(path)}), value_t{key_of(path)});
}

/// A child whose reference parameters are bound to locals of its parent that outlive the join.
/// It forks and joins the node first (meanwhile the parent's continuation may be stolen and run
/// on), then reads them.
inline magpie::task<value_t> ref_child(run_env *env, std::uint64_t path, int depth, bool on_spine,
                                       int forks_on_path, value_t const &key,
                                       std::uint64_t const &want) {
  env->refs.fetch_add(1, std::memory_order_relaxed);
  value_t r{0};
  co_await magpie::fork(&r, node, env, path, depth, on_spine, forks_on_path + 1, value_t{path},
                        slot_array{});
  std::exception_ptr failure;
  try {
    co_await magpie::join();
  } catch (...) {
    failure = std::current_exception();
  }
  if (want != key_of(path) || key.value() != want) {
    env->fail("a reference parameter bound to a local of the parent read a wrong value");
  }
  if (failure) {
    std::rethrow_exception(failure);
  }
  co_return r;
}

/// Folds a scope's children into `v` (or the constant of a join that caught).
inline std::uint64_t fold_scope(std::uint64_t v, bool caught, slot_array &slots, int spawned,
                                std::uint64_t path, int k) {
  if (caught) {
    return v * fold_k + caught_value(path, k);
  }
  std::uint64_t folded = 0;
  for (int i = 0; i < spawned; ++i) {
    folded = folded * fold_k + slots[static_cast<std::size_t>(i)].value();
  }
  return v * fold_k + folded;
}

/// One node. `token` carries the node's own path (an argument checked on arrival); `slots` is
/// the return-value storage for its children.
inline magpie::task<value_t> node(run_env *env, std::uint64_t path, int depth, bool on_spine,
                                  int forks_on_path, value_t token, slot_array slots) {
  if (token.value() != path) {
    env->fail("a task argument arrived corrupted");
  }
  program const &p = *env->prog;
  node_shape const s = shape_of(p, path, depth, on_spine);
  env->nodes.fetch_add(1, std::memory_order_relaxed);
  if (s.leaf) {
    env->leaves.fetch_add(1, std::memory_order_relaxed);
    burn(s.work);
    if (s.throws_leaf) {
      throw tracked_error(path);
    }
    co_return mix(path);
  }
  if (s.throw_before) {
    throw tracked_error(path);
  }
  std::size_t const workers = env->pool != nullptr ? env->pool->size() : 0;
  (void)forks_on_path; // kept for debugging: how deep below forks a resume_on happens
  if (s.resume_first && workers != 0) {
    std::size_t const target = s.resume_target % workers;
    co_await magpie::resume_on(*env->pool, target);
    env->resumes.fetch_add(1, std::memory_order_relaxed);
    if (magpie::this_worker_index() != static_cast<std::ptrdiff_t>(target)) {
      env->fail("resume_on did not land on the requested worker");
    }
  }
  std::uint64_t v = mix(path);
  if (s.pre != 0) { // freed before the first fork
    auto a = co_await magpie::stack_alloc<std::uint64_t>(s.pre);
    for (std::size_t i = 0; i < s.pre; ++i) {
      a[i] = array_value(path, i);
    }
    for (std::size_t i = 0; i < s.pre; ++i) {
      v += a[i];
    }
  }
  auto span = co_await magpie::stack_alloc<std::uint64_t>(s.span); // lives across the scopes
  for (std::size_t i = 0; i < s.span; ++i) {
    span[i] = array_value(path ^ 1, i);
  }
  slot_array keys;                                 // ref_child's parameters: locals that
  std::array<std::uint64_t, max_children> wants{}; // outlive every join of this node
  for (int k = 0; k < s.scopes; ++k) {
    auto const &sc = s.scope_list[static_cast<std::size_t>(k)];
    int const spawned = sc.spawned();
    std::uint64_t const gid = guard_id(path, k);
    std::uint64_t guard_sum = 0;
    try {
      // A guarded scope's array: allocated before its first fork, unwound by our own throw below,
      // before the join (children outstanding, continuation perhaps stolen) or after it.
      auto guarded = co_await magpie::stack_alloc<std::uint64_t>(
          sc.guard != guard_kind::none ? sc.guard_len : 0);
      for (std::size_t i = 0; i < guarded.size(); ++i) {
        guarded[i] = array_value(gid, i);
      }
      for (int i = 0; i <= spawned; ++i) {
        if (sc.throw_at == i) {
          throw tracked_error(path);
        }
        if (i == spawned) {
          break;
        }
        std::uint64_t const cp = child_path(path, k, i);
        bool const spine_child = on_spine && k == 0 && i == 0;
        value_t *slot = &slots[static_cast<std::size_t>(i)];
        bool const forked = ((sc.forked >> i) & 1u) != 0;
        int const forks = forks_on_path + (forked ? 1 : 0);
        if ((sc.via_adapter >> i) & 1u) {
          if (forked) {
            co_await magpie::fork(slot, via_adapter, env, cp, depth + 1, spine_child, forks);
          } else {
            co_await magpie::call(slot, via_adapter, env, cp, depth + 1, spine_child, forks);
          }
        } else if ((sc.by_ref >> i) & 1u) {
          keys[static_cast<std::size_t>(i)] = value_t{key_of(cp)};
          wants[static_cast<std::size_t>(i)] = key_of(cp);
          if (forked) {
            co_await magpie::fork(slot, ref_child, env, cp, depth + 1, spine_child, forks,
                                  keys[static_cast<std::size_t>(i)],
                                  wants[static_cast<std::size_t>(i)]);
          } else {
            co_await magpie::call(slot, ref_child, env, cp, depth + 1, spine_child, forks,
                                  keys[static_cast<std::size_t>(i)],
                                  wants[static_cast<std::size_t>(i)]);
          }
        } else if (forked) {
          co_await magpie::fork(slot, node, env, cp, depth + 1, spine_child, forks, value_t{cp},
                                slot_array{});
        } else {
          co_await magpie::call(slot, node, env, cp, depth + 1, spine_child, forks, value_t{cp},
                                slot_array{});
        }
      }
      if (sc.guard != guard_kind::before_join) {
        bool caught = false;
        if (sc.catches) {
          try {
            co_await magpie::join();
          } catch (tracked_error const &) {
            caught = true;
          }
        } else {
          co_await magpie::join();
        }
        v = fold_scope(v, caught, slots, spawned, path, k);
      }
      if (sc.guard == guard_kind::after_join) {
        // An array allocated after the join, above the guarded one: it must not overlap it (a
        // deferred free done at the wrong time resets the stack below live arrays).
        auto above = co_await magpie::stack_alloc<std::uint64_t>(64 + sc.guard_len);
        if (above.data() < guarded.end() && guarded.data() < above.end()) {
          env->fail("a stack_array allocated after a join overlaps a live one");
        }
        for (std::size_t i = 0; i < above.size(); ++i) {
          above[i] = ~array_value(gid, i);
        }
      }
      if (sc.guard != guard_kind::none) {
        for (std::size_t i = 0; i < guarded.size(); ++i) {
          if (guarded[i] != array_value(gid, i)) {
            env->fail("a guarded stack_array was overwritten while children ran");
            break;
          }
          guard_sum += guarded[i];
        }
        throw tracked_error(gid);
      }
    } catch (tracked_error const &e) {
      if (sc.guard == guard_kind::none || e.id() != gid) {
        if (sc.guard == guard_kind::before_join) { // children's exceptions wait for the join
          env->fail("a scope caught an exception that was not its own before its join");
        }
        throw;
      }
      env->guards.fetch_add(1, std::memory_order_relaxed);
    }
    if (sc.guard == guard_kind::before_join) {
      bool caught = false;
      if (sc.catches) {
        try {
          co_await magpie::join();
        } catch (tracked_error const &) {
          caught = true;
        }
      } else {
        co_await magpie::join();
      }
      v = fold_scope(v, caught, slots, spawned, path, k);
    }
    if (sc.guard != guard_kind::none) {
      v = v * fold_k + guard_value(path, k) + guard_sum;
    }
    if (sc.resume_after && workers != 0) {
      std::size_t const target = sc.resume_target % workers;
      co_await magpie::resume_on(*env->pool, target);
      env->resumes.fetch_add(1, std::memory_order_relaxed);
      if (magpie::this_worker_index() != static_cast<std::ptrdiff_t>(target)) {
        env->fail("resume_on did not land on the requested worker");
      }
    }
  }
  for (std::size_t i = 0; i < s.span; ++i) { // the children ran above this array: intact?
    if (span[i] != array_value(path ^ 1, i)) {
      env->fail("a stack_array was overwritten while children ran");
      break;
    }
    v += span[i];
  }
  if (s.post != 0) {
    auto a = co_await magpie::stack_alloc<std::uint64_t>(s.post);
    for (std::size_t i = 0; i < s.post; ++i) {
      a[i] = array_value(path ^ 2, i);
    }
    for (std::size_t i = 0; i < s.post; ++i) {
      v += a[i];
    }
  }
  if (s.throw_after) {
    throw tracked_error(path);
  }
  co_return v;
}

/// What one run of a program produced.
struct outcome {
  bool threw = false;
  bool threw_tracked = false;   ///< the exception was a tracked_error
  bool threw_bad_alloc = false; ///< the exception was std::bad_alloc (injected)
  std::uint64_t error_id = 0;
  std::string other_exception; ///< what() of any other exception
  std::uint64_t value = 0;
  std::uint64_t nodes = 0, leaves = 0, resumes = 0, integrity_errors = 0;
  std::uint64_t guards = 0, adapters = 0, refs = 0;
  char const *first_integrity_error = nullptr;
};

/// Runs `p` on scheduler `s` (a pool if `pool` is non-null, for resume_on).
template <typename Scheduler>
outcome run(Scheduler &s, magpie::pool *pool, program const &p) {
  run_env env;
  env.prog = &p;
  env.pool = pool;
  outcome out;
  std::uint64_t const rp = root_path(p);
  try {
    value_t v = magpie::sync_wait(s, node, &env, rp, 0, true, 0, value_t{rp}, slot_array{});
    out.value = v.value();
  } catch (tracked_error const &e) {
    out.threw = out.threw_tracked = true;
    out.error_id = e.id();
  } catch (std::bad_alloc const &) {
    out.threw = out.threw_bad_alloc = true;
  } catch (std::exception const &e) {
    out.threw = true;
    out.other_exception = e.what();
  } catch (...) {
    out.threw = true;
    out.other_exception = "(not a std::exception)";
  }
  out.nodes = env.nodes.load();
  out.leaves = env.leaves.load();
  out.resumes = env.resumes.load();
  out.guards = env.guards.load();
  out.adapters = env.adapters.load();
  out.refs = env.refs.load();
  out.integrity_errors = env.errors.load();
  out.first_integrity_error = env.first_error.load();
  return out;
}

/// Compares a run with the projection; returns an empty string if they agree. With `faults`,
/// an injected std::bad_alloc may replace the outcome (and then the counts may differ).
inline std::string check(expectation const &e, outcome const &o, bool faults) {
  auto fmt = [](char const *what, std::uint64_t got, std::uint64_t want) {
    return std::string(what) + ": got " + std::to_string(got) + ", expected " +
           std::to_string(want);
  };
  if (o.integrity_errors != 0) {
    return std::string("integrity: ") + (o.first_integrity_error ? o.first_integrity_error : "?");
  }
  if (!o.other_exception.empty()) {
    return "unexpected exception: " + o.other_exception;
  }
  if (o.threw_bad_alloc) {
    return faults ? std::string() : "std::bad_alloc without injected faults";
  }
  if (!faults || !e.throws || !o.threw) {
    // With faults, a run may still complete: then it must be exact. Counts are exact without
    // faults.
    if (!faults) {
      if (o.nodes != e.nodes) {
        return fmt("executed nodes", o.nodes, e.nodes);
      }
      if (o.leaves != e.leaves) {
        return fmt("executed leaves", o.leaves, e.leaves);
      }
    }
  }
  if (o.threw != e.throws) {
    return e.throws ? "expected an exception, got a value" : "expected a value, got an exception";
  }
  if (o.threw) {
    if (e.candidates.count(o.error_id) == 0) {
      return "the exception came from node " + std::to_string(o.error_id) +
             ", which cannot propagate to the root";
    }
    return {};
  }
  if (o.value != e.value) {
    return fmt("value", o.value, e.value);
  }
  return {};
}

} // namespace magpie::stress
