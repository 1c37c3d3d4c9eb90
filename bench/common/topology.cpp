// bench/common/topology.cpp — prints the machine's topology as magpie reads it (scripts/bench.sh
// shows it before the results): hwloc's tree if magpie was built with hwloc, else the flat CPUs.
#include <cstdio>

#include "magpie/magpie.hpp"

int main() {
  std::printf("%s%s\n", magpie::topology::machine().summary().c_str(),
              magpie::sched::have_hwloc() ? "" : " (magpie built without hwloc)");
  return 0;
}
