#pragma once
// bench/mpi/uts/rank_state.hpp — distributed UTS: what one rank holds (its pool of unexplored
// nodes) and the termination detector, shared by the magpie, OpenMP and oneTBB versions.
//
// The algorithm (the same in every version):
//   - Each rank holds a bounded LIFO pool of unexplored nodes; rank 0 starts with the root.
//   - A rank takes a batch (up to `batch_nodes` nodes from the top of its pool) and explores it
//     in parallel with its runtime: each batch node is expanded `batch_levels` levels deep, fork
//     per child as in bench/uts; the children of the last level are pushed back onto the pool
//     (the frontier) instead of being visited. A node is counted when it is visited, so a
//     frontier node is counted once, when a later batch (here or on a thief) visits it. If the
//     pool is full, the frontier is explored `batch_levels` further levels instead: the pool
//     never exceeds its capacity.
//   - A rank whose pool is empty and whose batch is over is *passive*. It sends a steal request
//     to one victim (round-robin over the other ranks, starting at rank+1; it stays with a victim
//     that gave it work) and waits for the reply: up to `max_share` nodes, half of the victim's
//     pool taken from the bottom (the oldest nodes, nearest the root), or none.
//   - Rank 0 sums the ranks' counts (MPI_Reduce) and checks them against the reference.
//
// Termination: Safra's algorithm (Dijkstra, EWD 998: "Shmuel Safra's version of termination
// detection"), on a ring 0 → 1 → … → N−1 → 0. The *basic* messages are the non-empty steal
// replies, the only messages that make a passive rank active; requests, empty replies, the token
// and DONE are control messages. Only an active rank sends a basic message (take_share is empty
// on an empty pool, and a rank with a non-empty pool or a running batch is active). Each rank
// keeps c = basic messages sent − received, and a colour, black from the receipt of a basic
// message until it next passes the token. Rank 0, passive, starts a probe: a white token with
// q = 0. Rank i ≠ 0 holds the token until it is passive, then passes it on with q += c_i,
// blackened if i is black, and whitens itself. Rank 0, passive, with the token back, ends the
// run if it and the token are white and q + c_0 = 0; else it starts a new probe. Why that is
// safe (EWD 998): Σ c_i is the number of basic messages in flight, and while a probe is out, one
// of these holds: (a) every rank the token has visited is passive and q = Σ of their c_i;
// (b) Σ of the unvisited ranks' c_i + q > 0; (c) an unvisited rank is black; (d) the token is
// black. (a) is broken only when a visited rank receives a basic message; that message was in
// flight, so Σ c_i > 0, which with (a) is (b); a receipt by a visited rank leaves (b) as it was;
// one by an unvisited rank may falsify (b) but blackens it (c), and the token, passing it, turns
// black (d); a send only raises a c_i. With the token back at a
// white rank 0, white, and q + c_0 = 0, (b)–(d) are false, so (a) holds for every rank: all are
// passive and nothing is in flight, and no rank can become active again. Rank 0 sends DONE.
// Then each rank waits for the reply to its last request and enters MPI_Ibarrier, answering
// requests ("no work") until it completes: no message of the run is left in flight, and the next
// repetition starts clean.
//
// Every member is guarded by one mutex: in the magpie version a task that answers thieves runs
// while the batch runs; in the others one thread touches it (the lock is then uncontended).

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

#include "uts/problem.hpp"

namespace mpi_uts {

/// What every version runs with: the same batches, shares and pool bound.
struct params {
  std::size_t batch_nodes = 32;        ///< nodes taken from the pool per batch
  int batch_levels = 4;                ///< levels a batch expands below each of its nodes
  std::size_t max_share = 512;         ///< nodes per steal reply at most
  std::size_t pool_capacity = 1 << 16; ///< nodes in a rank's pool at most (24 bytes each)
};

/// A control message (MPI_BYTE): steal request, token, DONE, or (magpie) the server's QUIT.
struct control {
  enum kind_t : std::int32_t { request, token, done, quit };
  std::int32_t kind = request;
  std::int32_t from = 0;
  std::int64_t count = 0; ///< token: Safra's q
  std::int32_t black = 0; ///< token: colour
  std::int32_t pad = 0;
};

/// What the caller must do after a termination step: nothing, send `msg` to `to`, or (rank 0)
/// send DONE to every other rank and stop.
struct step {
  enum kind_t : std::uint8_t { none, send, finish };
  kind_t what = none;
  int to = 0;
  control msg{};
};

/// One rank's pool of unexplored nodes and its part of Safra's algorithm (see the top).
class rank_state {
public:
  rank_state(int rank, int ranks, params const &p) : m_rank(rank), m_ranks(ranks), m_params(p) {
    m_pool.reserve(p.pool_capacity);
  }

  int rank() const noexcept { return m_rank; }
  int ranks() const noexcept { return m_ranks; }
  params const &parameters() const noexcept { return m_params; }

  /// Starts a repetition: rank 0 holds the root and the token. Call with no message in flight.
  void reset(uts::tree const &t) {
    std::lock_guard lock(m_mutex);
    m_pool.clear();
    if (m_rank == 0) {
      m_pool.push_back(uts::root(t));
    }
    m_in_batch = false;
    m_count = 0;
    m_black = false;
    m_has_token = m_rank == 0;
    m_probing = false;
    m_token = {};
    m_victim = m_ranks > 1 ? (m_rank + 1) % m_ranks : 0;
    m_steals = 0;
    m_done.store(false, std::memory_order_relaxed);
  }

  /// Explorer: moves up to batch_nodes nodes from the top of the pool into `out`; false if the
  /// pool is empty (the rank is then passive, unless a reply brings work).
  bool take_batch(std::vector<uts::node> &out) {
    std::lock_guard lock(m_mutex);
    std::size_t const n = std::min(m_params.batch_nodes, m_pool.size());
    out.assign(m_pool.end() - static_cast<std::ptrdiff_t>(n), m_pool.end());
    m_pool.resize(m_pool.size() - n);
    m_in_batch = n != 0;
    return n != 0;
  }

  /// Explorer: the batch is over.
  void end_batch() {
    std::lock_guard lock(m_mutex);
    m_in_batch = false;
  }

  /// Any worker during a batch: pushes the children in `kids` (a node's whole last level) onto
  /// the pool; false, pushing nothing, if they do not fit.
  bool try_push(std::span<uts::slot const> kids) {
    std::lock_guard lock(m_mutex);
    if (m_pool.size() + kids.size() > m_params.pool_capacity) {
      return false;
    }
    for (auto const &k : kids) {
      m_pool.push_back(k.n);
    }
    return true;
  }

  /// Victim: moves a share of the pool (half, from the bottom, at most max_share) into `out`;
  /// a non-empty share counts as a basic message sent.
  void take_share(std::vector<uts::node> &out) {
    std::lock_guard lock(m_mutex);
    std::size_t const n = std::min(m_params.max_share, m_pool.size() / 2);
    out.assign(m_pool.begin(), m_pool.begin() + static_cast<std::ptrdiff_t>(n));
    m_pool.erase(m_pool.begin(), m_pool.begin() + static_cast<std::ptrdiff_t>(n));
    m_count += n != 0 ? 1 : 0;
  }

  /// Thief: the reply to its request, of `n` nodes (none: try the next victim). A non-empty
  /// reply is a basic message received; it fits, since the pool was empty and n ≤ max_share.
  void receive(std::span<uts::node const> nodes) {
    std::lock_guard lock(m_mutex);
    if (nodes.empty()) {
      m_victim =
          (m_victim + 1) % m_ranks == m_rank ? (m_victim + 2) % m_ranks : (m_victim + 1) % m_ranks;
      return;
    }
    m_pool.insert(m_pool.end(), nodes.begin(), nodes.end());
    --m_count;
    m_black = true;
    ++m_steals;
  }

  /// Thief: whom to ask next.
  int victim() const {
    std::lock_guard lock(m_mutex);
    return m_victim;
  }

  /// A token arrived: keep it, and pass it on at once if the rank is passive.
  step on_token(control const &t) {
    std::lock_guard lock(m_mutex);
    m_has_token = true;
    m_token = t;
    return advance_locked();
  }

  /// The explorer found its pool empty: pass the token on (or, on rank 0, probe or finish).
  step advance_token() {
    std::lock_guard lock(m_mutex);
    return advance_locked();
  }

  /// DONE arrived (or rank 0 sent it).
  void set_done() noexcept {
    // release/acquire: nothing else is published by it; the flag only ends the loops.
    m_done.store(true, std::memory_order_release);
  }
  bool done() const noexcept { return m_done.load(std::memory_order_acquire); }

  /// Non-empty steal replies this rank received in this repetition.
  std::uint64_t steals() const {
    std::lock_guard lock(m_mutex);
    return m_steals;
  }

private:
  step advance_locked() {
    if (!m_has_token || m_in_batch || !m_pool.empty()) {
      return {};
    }
    int const next = (m_rank + 1) % m_ranks;
    if (m_rank != 0) { // forward: q += c_i, blacken if black, whiten
      control t = m_token;
      t.count += m_count;
      t.black = t.black != 0 || m_black ? 1 : 0;
      m_black = false;
      m_has_token = false;
      return {step::send, next, t};
    }
    if (m_probing && m_token.black == 0 && !m_black && m_token.count + m_count == 0) {
      m_has_token = false;
      return {step::finish, 0, {}};
    }
    if (m_ranks == 1) {
      m_has_token = false;
      return {step::finish, 0, {}};
    }
    m_probing = true; // a new probe: a white token with q = 0
    m_black = false;
    m_has_token = false;
    control t;
    t.kind = control::token;
    t.from = 0;
    return {step::send, next, t};
  }

  int m_rank;
  int m_ranks;
  params m_params;
  mutable std::mutex m_mutex;
  std::vector<uts::node> m_pool;
  bool m_in_batch = false;
  std::int64_t m_count = 0; ///< Safra: basic messages sent − received
  bool m_black = false;
  bool m_has_token = false;
  bool m_probing = false; ///< rank 0: a probe is out (the token held is one that came back)
  control m_token{};
  int m_victim = 0;
  std::uint64_t m_steals = 0;
  std::atomic<bool> m_done{false};
};

/// The part of a visit every version shares: fills `kids` with n's children and returns the
/// levels to visit them with; 0 when there is nothing to visit here (a leaf — `kids` is then
/// empty — or a node whose children went onto the pool). `levels` counts n's own level.
inline int expand(uts::tree const &t, uts::node const &n, int levels, rank_state &s,
                  std::vector<uts::slot> &kids) {
  int const k = uts::num_children(t, n);
  kids.resize(static_cast<std::size_t>(k));
  for (int i = 0; i < k; ++i) {
    kids[static_cast<std::size_t>(i)].n = uts::child(n, i);
  }
  if (k == 0) {
    return 0;
  }
  if (levels > 1) {
    return levels - 1;
  }
  // The last level: the children are the frontier, unless the pool is full.
  return s.try_push(kids) ? 0 : s.parameters().batch_levels;
}

/// The sum of a batch's results.
inline uts::result sum(std::span<uts::result const> rs) {
  uts::result out;
  for (auto const &r : rs) {
    out.add(r);
  }
  return out;
}

/// The result of a visited node once its visited children's results are in `kids`.
inline uts::result finish(uts::node const &n, std::vector<uts::slot> const &kids) {
  return kids.empty() ? uts::leaf(n) : uts::combine(n, kids);
}

} // namespace mpi_uts
