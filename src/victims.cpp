// magpie/src/victims.cpp — building the victim tables (distances, weights, alias tables).

#include "magpie/sched/victims.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace magpie::sched {

std::string_view to_string(victim_policy p) noexcept {
  return p == victim_policy::weighted ? "weighted" : "uniform";
}

victim_policy parse_victim_policy(std::string_view text) {
  if (text == "uniform") {
    return victim_policy::uniform;
  }
  if (text == "weighted") {
    return victim_policy::weighted;
  }
  throw std::invalid_argument("magpie: unknown victim policy '" + std::string(text) +
                              "' (uniform, weighted)");
}

namespace {

/// Which levels separate some workers that every coarser meaningful level keeps together.
std::vector<std::size_t> meaningful_levels(topology const *topo,
                                           std::vector<long> const &worker_pu) {
  std::vector<std::size_t> levels;
  std::size_t const n = worker_pu.size();
  for (std::size_t l = 0; l < level_count; ++l) {
    bool separates = false;
    for (std::size_t a = 0; a < n && !separates; ++a) {
      for (std::size_t b = a + 1; b < n && !separates; ++b) {
        if (worker_pu[a] < 0 || worker_pu[b] < 0) {
          continue;
        }
        auto const &ga = topo->pu(static_cast<std::size_t>(worker_pu[a])).group;
        auto const &gb = topo->pu(static_cast<std::size_t>(worker_pu[b])).group;
        bool const together_above = std::all_of(levels.begin(), levels.end(),
                                                [&](std::size_t k) { return ga[k] == gb[k]; });
        separates = together_above && ga[l] != gb[l];
      }
    }
    if (separates) {
      levels.push_back(l);
    }
  }
  return levels;
}

} // namespace

victim_selector::victim_selector(victim_policy policy, topology const *topo,
                                 std::vector<long> const &worker_pu)
    : m_policy(policy), m_n(worker_pu.size()) {
  if (m_n == 0) {
    throw std::invalid_argument("magpie: a victim selector needs at least one worker");
  }
  std::size_t const n = m_n;
  std::vector<std::size_t> const levels = meaningful_levels(topo, worker_pu);
  m_distance.assign(n * n, 0);
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = 0; b < n; ++b) {
      if (a == b) {
        continue;
      }
      unsigned r = 0;
      if (worker_pu[a] >= 0 && worker_pu[b] >= 0) {
        auto const &ga = topo->pu(static_cast<std::size_t>(worker_pu[a])).group;
        auto const &gb = topo->pu(static_cast<std::size_t>(worker_pu[b])).group;
        for (std::size_t l : levels) {
          r += ga[l] != gb[l] ? 1 : 0;
        }
      }
      m_distance[a * n + b] = static_cast<std::uint8_t>(std::max(r, 1u));
    }
  }

  // Designed probabilities: 1/(n_ij r_ij²) normalised (uniform: 1/(n−1)).
  m_probability.assign(n * n, 0.0);
  for (std::size_t a = 0; a < n && n > 1; ++a) {
    std::vector<std::size_t> at_distance(level_count + 2, 0);
    for (std::size_t b = 0; b < n; ++b) {
      if (b != a) {
        ++at_distance[m_distance[a * n + b]];
      }
    }
    double total = 0;
    for (std::size_t b = 0; b < n; ++b) {
      if (b == a) {
        continue;
      }
      double w = 1.0;
      if (policy == victim_policy::weighted) {
        double const r = m_distance[a * n + b];
        w = 1.0 / (static_cast<double>(at_distance[m_distance[a * n + b]]) * r * r);
      }
      m_probability[a * n + b] = w;
      total += w;
    }
    for (std::size_t b = 0; b < n; ++b) {
      m_probability[a * n + b] /= total;
    }
  }

  m_alias.assign(n * n, cell{0, 0});
  if (policy == victim_policy::weighted && n > 1) {
    for (std::size_t a = 0; a < n; ++a) {
      build_alias(a);
    }
  }

  m_nearest.resize(n);
  for (std::size_t a = 0; a < n; ++a) {
    std::vector<std::size_t> &order = m_nearest[a];
    for (std::size_t k = 1; k < n; ++k) {
      order.push_back((a + k) % n);
    }
    // std::sort with a total order (not stable_sort, which allocates a buffer and silently does
    // without it when that fails): by distance, then by position after `a`.
    std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
      std::size_t const dx = m_distance[a * n + x];
      std::size_t const dy = m_distance[a * n + y];
      return dx != dy ? dx < dy : (x + n - a) % n < (y + n - a) % n;
    });
  }
}

void victim_selector::build_alias(std::size_t self) {
  // Vose's alias method: column j keeps probability mass p_j·n of its own (scaled to 2³²) and
  // gives the rest of its 1/n share to an alias whose mass is above 1/n.
  std::size_t const n = m_n;
  std::vector<double> scaled(n);
  std::vector<std::size_t> small;
  std::vector<std::size_t> large;
  for (std::size_t j = 0; j < n; ++j) {
    scaled[j] = m_probability[self * n + j] * static_cast<double>(n);
    (scaled[j] < 1.0 ? small : large).push_back(j);
  }
  constexpr double one = 4294967296.0; // 2³²
  auto threshold = [&](double p) {
    double const t = std::floor(p * one);
    return t >= one ? 0xFFFFFFFFu : static_cast<std::uint32_t>(std::max(t, 0.0));
  };
  while (!small.empty() && !large.empty()) {
    std::size_t const s = small.back();
    small.pop_back();
    std::size_t const l = large.back();
    m_alias[self * n + s] = {threshold(scaled[s]), static_cast<std::uint32_t>(l)};
    scaled[l] -= 1.0 - scaled[s];
    if (scaled[l] < 1.0) {
      large.pop_back();
      small.push_back(l);
    }
  }
  // Leftovers hold mass 1 up to rounding: they keep their column (self never does: its mass is 0
  // and it is always in `small` with a partner, unless every other mass rounds away).
  for (std::size_t j : large) {
    m_alias[self * n + j] = {0xFFFFFFFFu, static_cast<std::uint32_t>(j)};
  }
  for (std::size_t j : small) {
    std::size_t const fallback = (self + 1) % n;
    m_alias[self * n + j] = {j == self ? 0u : 0xFFFFFFFFu,
                             static_cast<std::uint32_t>(j == self ? fallback : j)};
  }
}

} // namespace magpie::sched
