// EXPECT: value type must be default-constructible
// sync_wait needs somewhere to put the root's value before the task runs.
#include "magpie/magpie.hpp"

struct no_default {
  explicit no_default(int v) : value(v) {}
  int value;
};

magpie::task<no_default> make(int v) { co_return no_default(v); }

int main() {
  magpie::inline_scheduler s;
  return magpie::sync_wait(s, make, 1).value;
}
