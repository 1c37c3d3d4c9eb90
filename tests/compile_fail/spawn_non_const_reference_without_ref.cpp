// EXPECT: magpie::spawn: fn cannot be called with these arguments once they are decay-copied
#include "magpie/magpie.hpp"

magpie::task<void> bump(int &x) {
  ++x;
  co_return;
}

int main() {
  magpie::lazy_pool pool(1);
  int x = 0;
  auto f = magpie::spawn(pool, bump, x); // needs std::ref(x)
  return 0;
}
