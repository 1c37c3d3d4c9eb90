#pragma once
// bench/mpi/summa/problem.hpp — distributed matrix multiplication C = A·B by SUMMA (van de Geijn
// and Watts, 1997) over MPI, with each rank's local product done by one of the suite's runtimes.
// What is shared by the three versions (magpie.cpp, omp.cpp, tbb.cpp) lives here: the sizes, the
// process grid, the data, the communication of a panel, the local kernel's decomposition, the
// check and the result line. A version only says how a panel's product is forked and how the
// broadcast of the next panel overlaps it.
//
// Data: n×n row-major floats on an r×c process grid (p = r·c ranks, the most nearly square
// factorisation, r ≤ c). Rank (i, j) holds the blocks (i, j) of A, B and C: n/r rows × n/c
// columns each, generated from global indices with the shared-memory matmul's formulas
// (matmul_problem::a_at / b_at: values 0..3), so no rank ever holds a whole matrix. Every partial
// sum is an integer below 2^24: the float result is exact in any order and is checked bit for bit.
//
// Algorithm: for each panel k of `panel` columns of A (rows of B), the rank column that owns the
// columns broadcasts them along each process row (MPI_Ibcast on the row communicator), the rank
// row that owns the rows of B broadcasts them along each process column (strided MPI datatypes,
// straight from the owners' blocks: no packing), and every rank does C_local += A_panel ·
// B_panel. The panels
// go to two alternating buffers, so the broadcasts of panel k+1 are posted before the product of
// panel k starts (double buffering) and are complete before panel k+1's product.
//
// Local kernel: the product of a panel is split recursively in halves of C (the longer side
// first) down to `tile`×`tile` blocks of C; a leaf runs matmul_problem::base_case (16×16×16)
// over its block and the whole panel depth. The same decomposition and grain in every version.
//
// Check (every repetition): each rank compares the sum of its block of C with the exact integer
// Σ_k (Σ_{i in block} A[i][k]) · (Σ_{j in block} B[k][j]) and 64 sampled entries with exact
// integer dot products; rank 0 adds the ranks' sums (the answer) and expected sums, and counts
// the mismatches. ok means answer == expected and no sampled entry differs.

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/harness.hpp"
#include "matmul/problem.hpp"

namespace summa_problem {

inline constexpr char const *name = "summa";
inline constexpr std::size_t tile = 64; ///< a leaf task's block of C is at most tile × tile

struct size {
  char const *name;
  std::size_t n;     ///< the matrices are n × n
  std::size_t panel; ///< columns of A (rows of B) broadcast per step
};

inline constexpr size sizes[] = {
    {"small", 256, 64},
    {"default", 1024, 128},
    {"paper", 4096, 256},
};

/// The most nearly square factorisation p = rows × cols with rows ≤ cols.
inline void grid_shape(int p, int *rows, int *cols) {
  int r = 1;
  for (int d = 1; d * d <= p; ++d) {
    if (p % d == 0) {
      r = d;
    }
  }
  *rows = r;
  *cols = p / r;
}

/// C[rows × cols] += A[rows × depth] · B[depth × cols], all three with row stride `ld`.
struct block {
  float const *a;
  float const *b;
  float *c;
  std::size_t rows, cols, depth, ld;
};

/// A leaf: base-case blocks over the leaf's part of C and the whole panel depth.
inline void leaf(block const &x) {
  std::size_t const s = matmul_problem::base;
  for (std::size_t i = 0; i < x.rows; i += s) {
    for (std::size_t j = 0; j < x.cols; j += s) {
      for (std::size_t k = 0; k < x.depth; k += s) {
        matmul_problem::base_case(x.a + i * x.ld + k, x.b + k * x.ld + j, x.c + i * x.ld + j, x.ld,
                                  true);
      }
    }
  }
}

/// Splits `x` into two halves of C (the longer side, at a multiple of the base case) and returns
/// true; or, if `x` is a leaf (at most tile × tile), computes it here and returns false. A
/// version forks the product of one half and calls the other's.
inline bool split_or_compute(block const &x, block *first, block *second) {
  if (x.rows <= tile && x.cols <= tile) {
    leaf(x);
    return false;
  }
  *first = x;
  *second = x;
  if (x.rows >= x.cols) {
    std::size_t const h = x.rows / 2 / matmul_problem::base * matmul_problem::base;
    first->rows = h;
    second->rows = x.rows - h;
    second->a += h * x.ld;
    second->c += h * x.ld;
  } else {
    std::size_t const h = x.cols / 2 / matmul_problem::base * matmul_problem::base;
    first->cols = h;
    second->cols = x.cols - h;
    second->b += h;
    second->c += h;
  }
  return true;
}

/// One rank's share of the problem: its place on the grid, its blocks and the panel buffers.
class distributed {
public:
  distributed(size const &z, MPI_Comm world) : m_z(z) {
    MPI_Comm_rank(world, &m_rank);
    MPI_Comm_size(world, &m_ranks);
    grid_shape(m_ranks, &m_rows, &m_cols);
    m_row = m_rank / m_cols;
    m_col = m_rank % m_cols;
    m_mb = z.n / static_cast<std::size_t>(m_rows);
    m_nb = z.n / static_cast<std::size_t>(m_cols);
    std::size_t const b = matmul_problem::base;
    if (z.n % static_cast<std::size_t>(m_rows) != 0 ||
        z.n % static_cast<std::size_t>(m_cols) != 0 || m_mb % z.panel != 0 || m_nb % z.panel != 0 ||
        z.panel % b != 0 || m_mb % b != 0 || m_nb % b != 0) {
      if (m_rank == 0) {
        std::fprintf(stderr,
                     "summa: size %s (n = %zu, panel %zu) does not divide over a %d×%d grid: the "
                     "panel must divide n/%d and n/%d, and all three must be multiples of %zu; "
                     "run on another number of ranks\n",
                     z.name, z.n, z.panel, m_rows, m_cols, m_rows, m_cols, b);
      }
      MPI_Abort(world, 2);
    }
    MPI_Comm_split(world, m_row, m_col, &m_row_comm); // rank in it = m_col
    MPI_Comm_split(world, m_col, m_row, &m_col_comm); // rank in it = m_row
    // Rows are padded by one base block: a power-of-two row stride would map a base case's 16
    // rows of B to a few cache sets, and the one-rank baseline (the longest rows) would pay most.
    m_ld = m_nb + b;
    // The panels, in a block or in a buffer alike: A's is mb rows of `panel` floats, B's `panel`
    // rows of nb floats, both with row stride ld.
    MPI_Type_vector(static_cast<int>(m_mb), static_cast<int>(z.panel), static_cast<int>(m_ld),
                    MPI_FLOAT, &m_a_panel_type);
    MPI_Type_commit(&m_a_panel_type);
    MPI_Type_vector(static_cast<int>(z.panel), static_cast<int>(m_nb), static_cast<int>(m_ld),
                    MPI_FLOAT, &m_b_panel_type);
    MPI_Type_commit(&m_b_panel_type);
    std::size_t const cells = m_mb * m_ld;
    m_a.reset(new float[cells]);
    m_b.reset(new float[cells]);
    m_c.reset(new float[cells]);
    for (std::size_t i = 0; i < m_mb; ++i) {
      for (std::size_t j = 0; j < m_nb; ++j) {
        m_a[i * m_ld + j] = static_cast<float>(matmul_problem::a_at(z.n, row0() + i, col0() + j));
        m_b[i * m_ld + j] = static_cast<float>(matmul_problem::b_at(z.n, row0() + i, col0() + j));
      }
    }
    for (int s = 0; s < 2; ++s) { // touched only on ranks that receive panels
      m_a_buf[s].reset(new float[m_mb * m_ld]);
      m_b_buf[s].reset(new float[z.panel * m_ld]);
    }
  }
  distributed(distributed const &) = delete;
  distributed &operator=(distributed const &) = delete;
  ~distributed() {
    MPI_Type_free(&m_a_panel_type);
    MPI_Type_free(&m_b_panel_type);
    MPI_Comm_free(&m_row_comm);
    MPI_Comm_free(&m_col_comm);
  }

  int rank() const noexcept { return m_rank; }
  int ranks() const noexcept { return m_ranks; }
  int grid_rows() const noexcept { return m_rows; }
  int grid_cols() const noexcept { return m_cols; }
  int panels() const noexcept { return static_cast<int>(m_z.n / m_z.panel); }

  /// Starts the two broadcasts of panel k (row communicator first, then column, on every rank
  /// in the same order) into r[0] and r[1]. The owner sends from its own blocks; the others
  /// receive into buffer k % 2, which the product of panel k − 1 must no longer be reading.
  void post(int k, MPI_Request r[2]) {
    // magpie::mpi::environment sets MPI_ERRORS_RETURN (inherited by the split communicators):
    // a broadcast that fails to start must not go unnoticed.
    if (MPI_Ibcast(a_panel(k), 1, m_a_panel_type, a_owner(k), m_row_comm, &r[0]) != MPI_SUCCESS ||
        MPI_Ibcast(b_panel(k), 1, m_b_panel_type, b_owner(k), m_col_comm, &r[1]) != MPI_SUCCESS) {
      std::fprintf(stderr, "summa: rank %d could not start the broadcasts of panel %d\n", m_rank,
                   k);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
  }

  /// The product of panel k (its broadcasts complete) as one block of work.
  block product(int k) const {
    return {a_panel(k), b_panel(k), m_c.get(), m_mb, m_nb, m_z.panel, m_ld};
  }

  /// Zeroes C before a repetition (every panel adds to it).
  void clear() { std::fill(m_c.get(), m_c.get() + m_mb * m_ld, 0.0f); }

  /// This rank's part of the check: {sum of the block of C, its exact value, sampled entries
  /// that differ}. All integers, exact in a double (n = 4096: sums below 2^40).
  struct part {
    double sum, expected, mismatches;
  };
  part check() const {
    std::size_t const n = m_z.n;
    double sum = 0;
    for (std::size_t i = 0; i < m_mb; ++i) {
      for (std::size_t j = 0; j < m_nb; ++j) {
        sum += m_c[i * m_ld + j];
      }
    }
    std::int64_t want = 0;
    for (std::size_t k = 0; k < n; ++k) {
      std::int64_t col = 0;
      std::int64_t row = 0;
      for (std::size_t i = 0; i < m_mb; ++i) {
        col += matmul_problem::a_at(n, row0() + i, k);
      }
      for (std::size_t j = 0; j < m_nb; ++j) {
        row += matmul_problem::b_at(n, k, col0() + j);
      }
      want += col * row;
    }
    double bad = 0;
    std::uint64_t x = 42 + static_cast<std::uint64_t>(m_rank);
    for (int t = 0; t < 64; ++t) {
      std::size_t i = 0;
      std::size_t j = 0;
      if (t < 4) { // the block's corners
        i = (t & 1) ? m_mb - 1 : 0;
        j = (t & 2) ? m_nb - 1 : 0;
      } else {
        i = bench::splitmix64(x) % m_mb;
        j = bench::splitmix64(x) % m_nb;
      }
      std::int64_t dot = 0;
      for (std::size_t k = 0; k < n; ++k) {
        dot += matmul_problem::a_at(n, row0() + i, k) * matmul_problem::b_at(n, k, col0() + j);
      }
      if (m_c[i * m_ld + j] != static_cast<float>(dot)) {
        bad += 1;
      }
    }
    return {sum, static_cast<double>(want), bad};
  }

private:
  /// The rank in its process row (column) that owns panel k of A (of B).
  int a_owner(int k) const noexcept {
    return static_cast<int>(static_cast<std::size_t>(k) * m_z.panel / m_nb);
  }
  int b_owner(int k) const noexcept {
    return static_cast<int>(static_cast<std::size_t>(k) * m_z.panel / m_mb);
  }
  /// Where panel k of A (of B) lies on this rank: in its own block if it owns it, else in the
  /// buffer k % 2.
  float *a_panel(int k) const noexcept {
    std::size_t const first = static_cast<std::size_t>(k) * m_z.panel; // a global column
    return a_owner(k) == m_col ? m_a.get() + first % m_nb : m_a_buf[k % 2].get();
  }
  float *b_panel(int k) const noexcept {
    std::size_t const first = static_cast<std::size_t>(k) * m_z.panel; // a global row
    return b_owner(k) == m_row ? m_b.get() + first % m_mb * m_ld : m_b_buf[k % 2].get();
  }
  std::size_t row0() const noexcept { return static_cast<std::size_t>(m_row) * m_mb; }
  std::size_t col0() const noexcept { return static_cast<std::size_t>(m_col) * m_nb; }

  size m_z;
  int m_rank = 0, m_ranks = 1, m_rows = 1, m_cols = 1, m_row = 0, m_col = 0;
  std::size_t m_mb = 0, m_nb = 0; ///< this rank's block: mb rows × nb columns
  std::size_t m_ld = 0;           ///< the row stride of the blocks and the buffers
  MPI_Comm m_row_comm = MPI_COMM_NULL, m_col_comm = MPI_COMM_NULL;
  MPI_Datatype m_a_panel_type = MPI_DATATYPE_NULL, m_b_panel_type = MPI_DATATYPE_NULL;
  std::unique_ptr<float[]> m_a, m_b, m_c;
  std::unique_ptr<float[]> m_a_buf[2], m_b_buf[2]; ///< panels received, k % 2
};

/// MPI for the peers, whose MPI calls all come from the main thread outside parallel regions:
/// MPI_Init_thread(MPI_THREAD_FUNNELED) here, MPI_Finalize when it goes (after the runtime).
struct funneled_mpi {
  funneled_mpi(int &argc, char **&argv) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  }
  funneled_mpi(funneled_mpi const &) = delete;
  funneled_mpi &operator=(funneled_mpi const &) = delete;
  ~funneled_mpi() { MPI_Finalize(); }
};

/// One multiplication as the peers do it (their threads block on MPI): the calling thread posts
/// panel k+1's broadcasts, runs `compute(d.product(k))` (the runtime's parallel region), then
/// MPI_Waitall's them. MPI progresses the broadcasts when it is called: here, at the wait.
template <typename Compute>
void multiply_then_wait(distributed &d, Compute &&compute) {
  MPI_Request next[2];
  d.post(0, next);
  MPI_Waitall(2, next, MPI_STATUSES_IGNORE);
  for (int k = 0; k < d.panels(); ++k) {
    if (k + 1 < d.panels()) {
      d.post(k + 1, next);
    }
    compute(d.product(k));
    if (k + 1 < d.panels()) {
      MPI_Waitall(2, next, MPI_STATUSES_IGNORE);
    }
  }
}

inline std::string json_numbers(std::vector<double> const &v, char const *format) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    char buf[48];
    std::snprintf(buf, sizeof buf, format, v[i]);
    out += (i == 0 ? "" : ", ") + std::string(buf);
  }
  return out + "]";
}

/// The whole benchmark, around `rep(d)` — one multiplication by the version, called on every
/// rank — with MPI already initialised: `--warmup` untimed and `--reps` timed repetitions, each
/// between two barriers (rank 0's clock) and checked; then the result line on rank 0. Returns
/// the exit status (0 only if every repetition was right on every rank).
template <typename Rep>
int run(bench::options const &o, char const *version, Rep &&rep) {
  size const &z = bench::find_named(sizes, o.size, name);
  distributed d(z, MPI_COMM_WORLD);
  if (d.rank() == 0) {
    std::printf("summa %s: n = %zu, panel %zu, %d ranks (%d×%d grid) × %u workers, %s\n", z.name,
                z.n, z.panel, d.ranks(), d.grid_rows(), d.grid_cols(), o.workers, version);
  }
  std::vector<double> seconds;
  bool ok = true;
  double answer = 0;
  double expected = 0;
  for (int r = 0; r < o.warmup + o.reps; ++r) {
    d.clear();
    MPI_Barrier(MPI_COMM_WORLD);
    auto const t0 = std::chrono::steady_clock::now();
    rep(d);
    MPI_Barrier(MPI_COMM_WORLD);
    double const s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    distributed::part const mine = d.check();
    distributed::part all{};
    MPI_Reduce(&mine, &all, 3, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (d.rank() == 0) {
      bool const right = all.sum == all.expected && all.mismatches == 0;
      std::printf("rep %d%s: %.6f s, sum of C %.0f (expected %.0f), %.0f sampled entries wrong: "
                  "%s\n",
                  r, r < o.warmup ? " (warm-up)" : "", s, all.sum, all.expected, all.mismatches,
                  right ? "ok" : "WRONG");
      ok = ok && right;
      answer = all.sum;
      expected = all.expected;
    }
    if (r >= o.warmup) {
      seconds.push_back(s);
    }
  }
  double const rss = static_cast<double>(bench::peak_rss_kib());
  std::vector<double> rss_all(static_cast<std::size_t>(d.ranks()));
  MPI_Gather(&rss, 1, MPI_DOUBLE, rss_all.data(), 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  int failed = ok ? 0 : 1;
  MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (d.rank() == 0) {
    std::vector<double> sorted = seconds;
    std::sort(sorted.begin(), sorted.end());
    double const median = sorted[sorted.size() / 2];
    double const n = static_cast<double>(z.n);
    double const gflops = 2 * n * n * n / median / 1e9;
    std::printf("median %.6f s, %.2f GFLOP/s, peak RSS per rank (KiB) %s: %s\n", median, gflops,
                json_numbers(rss_all, "%.0f").c_str(), ok ? "ok" : "FAILED");
    std::printf("RESULT {\"problem\":\"summa\",\"size\":%s,\"version\":%s,\"ranks\":%d,"
                "\"workers\":%u,\"seconds\":%s,\"seconds_median\":%.9g,\"answer\":%.0f,"
                "\"expected\":%.0f,\"ok\":%s,\"peak_rss_kb\":%s,\"gflops\":%.6g}\n",
                bench::json_string(z.name).c_str(), bench::json_string(version).c_str(), d.ranks(),
                o.workers, json_numbers(seconds, "%.9g").c_str(), median, answer, expected,
                ok ? "true" : "false", json_numbers(rss_all, "%.0f").c_str(), gflops);
    std::fflush(stdout);
  }
  return failed;
}

} // namespace summa_problem
