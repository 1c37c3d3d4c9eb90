// EXPECT: magpie::spawn: fn must be an async function
#include "magpie/magpie.hpp"

int plain(int x) { return x; }

int main() {
  magpie::lazy_pool pool(1);
  auto f = magpie::spawn(pool, plain, 1);
  return 0;
}
