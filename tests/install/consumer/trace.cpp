// Only the observability layer's umbrella header: magpie::dump of a pool that it brings in.
#include <string>

#include <magpie/trace.hpp>

bool use_trace() {
  magpie::lazy_pool pool(2);
  std::string const text = magpie::dump(pool);
  return !text.empty();
}
