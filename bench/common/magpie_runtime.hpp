#pragma once
// bench/common/magpie_runtime.hpp — a magpie pool (lazy or busy) chosen by --pool.

#include <memory>
#include <string>
#include <utility>

#include "common/harness.hpp"
#include "magpie/magpie.hpp"

namespace bench {

class magpie_runtime {
public:
  explicit magpie_runtime(options const &o)
      : m_name(std::string(o.star ? "magpie*-" : "magpie-") + o.pool) {
    if (o.pool == "busy") {
      m_pool = std::make_unique<magpie::busy_pool>(o.workers);
    } else {
      m_pool = std::make_unique<magpie::lazy_pool>(o.workers);
    }
  }

  std::string const &name() const noexcept { return m_name; }

  /// sync_wait on the pool.
  template <typename Fn, typename... Args>
  auto run(Fn &&fn, Args &&...args) {
    return magpie::sync_wait(*m_pool, std::forward<Fn>(fn), std::forward<Args>(args)...);
  }

private:
  std::string m_name;
  std::unique_ptr<magpie::pool> m_pool;
};

} // namespace bench
