#pragma once
// magpie/src/pool/rng.hpp — the random generator with which a worker picks its victims.

#include <cstdint>

namespace magpie::sched::detail {

/// xoshiro128** style generator, small and fast enough for victim selection.
class rng {
public:
  explicit rng(std::uint64_t seed) noexcept {
    for (auto &s : m_s) { // splitmix64 to spread the seed
      seed += 0x9E3779B97F4A7C15ULL;
      std::uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
      s = static_cast<std::uint32_t>(z ^ (z >> 31)) | 1u;
    }
  }
  std::uint32_t operator()() noexcept {
    std::uint32_t const result = rotl(m_s[1] * 5, 7) * 9;
    std::uint32_t const t = m_s[1] << 9;
    m_s[2] ^= m_s[0];
    m_s[3] ^= m_s[1];
    m_s[1] ^= m_s[2];
    m_s[0] ^= m_s[3];
    m_s[2] ^= t;
    m_s[3] = rotl(m_s[3], 11);
    return result;
  }

private:
  static std::uint32_t rotl(std::uint32_t x, int k) noexcept { return (x << k) | (x >> (32 - k)); }
  std::uint32_t m_s[4];
};

} // namespace magpie::sched::detail
