#pragma once
// tests/algo/contract_support.hpp — values for checking the algorithms' contracts: a 2×2 matrix
// product modulo 10⁹ + 7 (associative, not commutative), comparisons of whole outputs, multiset
// equality (a permutation check), and `fragile`, a value whose move throws at a chosen call.

#include <algorithm>
#include <array>
#include <atomic>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/test_support.hpp"

namespace magpie::test {

/// `normal`, or `small` under a sanitizer, as a size.
inline std::size_t sized(int normal, int small) noexcept {
  return static_cast<std::size_t>(scaled(normal, small));
}

/// A 2×2 matrix of residues modulo 10⁹ + 7.
struct mat2 {
  std::array<std::uint64_t, 4> m{1, 0, 0, 1};
  friend bool operator==(mat2 const &, mat2 const &) = default;
};

/// The matrix product: associative, not commutative.
struct mat_mul {
  static constexpr std::uint64_t p = 1000000007;
  mat2 operator()(mat2 const &a, mat2 const &b) const noexcept {
    return {{(a.m[0] * b.m[0] + a.m[1] * b.m[2]) % p, (a.m[0] * b.m[1] + a.m[1] * b.m[3]) % p,
             (a.m[2] * b.m[0] + a.m[3] * b.m[2]) % p, (a.m[2] * b.m[1] + a.m[3] * b.m[3]) % p}};
  }
};

/// A transformation for transform_reduce: the transpose.
struct transposed {
  mat2 operator()(mat2 const &a) const noexcept { return {{a.m[0], a.m[2], a.m[1], a.m[3]}}; }
};

inline std::vector<mat2> random_matrices(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<mat2> v(n);
  for (auto &x : v) {
    for (auto &e : x.m) {
      e = g() % mat_mul::p;
    }
  }
  return v;
}

/// The first index where a and b differ, or their length if none does.
template <typename T>
std::size_t first_difference(std::vector<T> const &a, std::vector<T> const &b) {
  auto const [ia, ib] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  return static_cast<std::size_t>(ia - a.begin());
}

/// Whether a and b hold the same elements, counted with multiplicity (a is a permutation of b).
template <typename T>
bool same_elements(std::vector<T> a, std::vector<T> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return a == b;
}

inline std::int64_t sort_key(std::int64_t x) noexcept { return x; }
inline std::string const &sort_key(std::string const &x) noexcept { return x; }
inline long sort_key(tracked const &x) noexcept { return x.value(); }

/// A sortable value whose move constructor and move assignment throw at the k-th move counted
/// over all fragile values (once; throw_at(0): never), leaving both operands as they were. A
/// moved-from value has id −1, so a lost value shows as a missing id.
class fragile {
public:
  fragile() noexcept { live().fetch_add(1); }
  fragile(long key, long id) noexcept : m_key(key), m_id(id) { live().fetch_add(1); }
  fragile(fragile &&o) : m_key(o.m_key), m_id(o.m_id) {
    maybe_throw();
    o.m_id = -1;
    live().fetch_add(1);
  }
  fragile &operator=(fragile &&o) {
    maybe_throw();
    m_key = o.m_key;
    m_id = o.m_id;
    o.m_id = -1;
    return *this;
  }
  fragile(fragile const &) = delete;
  fragile &operator=(fragile const &) = delete;
  ~fragile() { live().fetch_sub(1); }

  /// Ordered by key alone.
  friend auto operator<=>(fragile const &a, fragile const &b) noexcept {
    return a.m_key <=> b.m_key;
  }
  friend bool operator==(fragile const &a, fragile const &b) noexcept { return a.m_key == b.m_key; }
  long id() const noexcept { return m_id; }

  static std::atomic<long> &live() noexcept {
    static std::atomic<long> n{0};
    return n;
  }
  /// Arms the k-th move from now to throw (0: disarms).
  static void throw_at(long k) noexcept {
    moves().store(0);
    armed().store(k);
  }

private:
  static std::atomic<long> &moves() noexcept {
    static std::atomic<long> n{0};
    return n;
  }
  static std::atomic<long> &armed() noexcept {
    static std::atomic<long> k{0};
    return k;
  }
  static void maybe_throw() {
    long const k = armed().load(std::memory_order_relaxed);
    if (k != 0 && moves().fetch_add(1, std::memory_order_relaxed) + 1 == k) {
      armed().store(0);
      throw std::runtime_error("fragile move");
    }
  }

  long m_key = 0;
  long m_id = -1;
};

inline std::vector<long> ids_of(std::vector<fragile> const &v) {
  std::vector<long> out;
  out.reserve(v.size());
  for (auto const &x : v) {
    out.push_back(x.id());
  }
  return out;
}

} // namespace magpie::test
