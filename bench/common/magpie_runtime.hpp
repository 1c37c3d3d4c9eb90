#pragma once
// bench/common/magpie_runtime.hpp — a magpie pool (lazy or busy) chosen by --pool.

#include <cstdio>
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
    magpie::pool_options po(magpie::placement::parse(o.placement)); // throws on a bad name
    po.workers = o.workers;
    po.victims = magpie::sched::parse_victim_policy(o.victims);
    if (o.pool == "busy") {
      m_pool = std::make_unique<magpie::busy_pool>(po);
    } else {
      m_pool = std::make_unique<magpie::lazy_pool>(po);
    }
    if (o.placement != "unpinned") {
      std::fputs(m_pool->describe().c_str(), stderr); // where the workers run, for the log
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
