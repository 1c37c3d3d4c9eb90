#pragma once
// bench/uts/sha1.hpp — SHA-1 (FIPS 180-4), written for UTS: portable C++, no intrinsics, so that
// every runtime and compiler hashes at the same cost. UTS hashes 20- and 24-byte messages (one
// block); the general form is kept for the test vectors.

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace uts {

using digest = std::array<std::uint8_t, 20>;

namespace detail {

constexpr std::uint32_t rotl(std::uint32_t x, int k) noexcept { return (x << k) | (x >> (32 - k)); }

inline std::uint32_t load_be32(std::uint8_t const *p) noexcept {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         p[3];
}

inline void store_be32(std::uint8_t *p, std::uint32_t v) noexcept {
  p[0] = static_cast<std::uint8_t>(v >> 24);
  p[1] = static_cast<std::uint8_t>(v >> 16);
  p[2] = static_cast<std::uint8_t>(v >> 8);
  p[3] = static_cast<std::uint8_t>(v);
}

/// One 64-byte block into the state h.
inline void compress(std::uint32_t h[5], std::uint8_t const *block) noexcept {
  std::uint32_t w[80];
  for (int t = 0; t < 16; ++t) {
    w[t] = load_be32(block + 4 * t);
  }
  for (int t = 16; t < 80; ++t) {
    w[t] = rotl(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
  }
  std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
  // Four branch-free loops of 20 rounds, one per round function.
  auto round = [&](std::uint32_t f, std::uint32_t k, std::uint32_t wt) {
    std::uint32_t const tmp = rotl(a, 5) + f + e + k + wt;
    e = d;
    d = c;
    c = rotl(b, 30);
    b = a;
    a = tmp;
  };
  for (int t = 0; t < 20; ++t) {
    round((b & c) | (~b & d), 0x5A827999u, w[t]);
  }
  for (int t = 20; t < 40; ++t) {
    round(b ^ c ^ d, 0x6ED9EBA1u, w[t]);
  }
  for (int t = 40; t < 60; ++t) {
    round((b & c) | (b & d) | (c & d), 0x8F1BBCDCu, w[t]);
  }
  for (int t = 60; t < 80; ++t) {
    round(b ^ c ^ d, 0xCA62C1D6u, w[t]);
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
}

} // namespace detail

/// SHA-1 of `len` bytes at `msg`.
inline digest sha1(void const *msg, std::size_t len) noexcept {
  std::uint32_t h[5] = {0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u};
  auto const *p = static_cast<std::uint8_t const *>(msg);
  std::size_t left = len;
  while (left >= 64) {
    detail::compress(h, p);
    p += 64;
    left -= 64;
  }
  // Padding: 0x80, zeros, then the bit length as a big-endian 64-bit number.
  std::uint8_t tail[128] = {};
  std::memcpy(tail, p, left);
  tail[left] = 0x80;
  std::size_t const blocks = left + 1 + 8 <= 64 ? 1 : 2;
  std::uint64_t const bits = static_cast<std::uint64_t>(len) * 8;
  for (int i = 0; i < 8; ++i) {
    tail[blocks * 64 - 1 - i] = static_cast<std::uint8_t>(bits >> (8 * i));
  }
  for (std::size_t b = 0; b < blocks; ++b) {
    detail::compress(h, tail + 64 * b);
  }
  digest out;
  for (int i = 0; i < 5; ++i) {
    detail::store_be32(out.data() + 4 * i, h[i]);
  }
  return out;
}

} // namespace uts
