// CONTROL: must compile. The same includes and idioms as the failing cases, used correctly: if
// this file stopped compiling, the failing cases would fail for the wrong reason. It also holds
// every argument form that fork must keep accepting (see the fork_* cases for the rejected ones).
#include <memory>
#include <utility>
#include <vector>

#include "magpie/magpie.hpp"

magpie::task<long> fib(int n) {
  if (n < 2) {
    co_return n;
  }
  long a = 0;
  long b = 0;
  co_await magpie::fork(&a, fib, n - 1);
  co_await magpie::call(&b, fib, n - 2);
  co_await magpie::join();
  co_return a + b;
}

magpie::task<void> consume(std::unique_ptr<int> p) {
  (void)p;
  co_return;
}

magpie::task<long> by_ref(int const &x) { co_return x; }
magpie::task<long> by_rvalue_ref(std::vector<int> &&v) { co_return static_cast<long>(v.size()); }

struct base {
  long value = 1;
};
struct derived : base {};
magpie::task<long> read_base(base const &b) { co_return b.value; }

struct counter {
  long base = 40;
  magpie::task<long> add(int k) const { co_return base + k; }
};

magpie::task<int> uses_move_only(int) {
  auto p = std::make_unique<int>(1);
  co_await magpie::call(consume, std::move(p)); // a move-only argument, moved
  auto buf = co_await magpie::stack_alloc<double>(8);
  (void)buf;
  co_return 0;
}

magpie::task<long> accepted_forms(int i) {
  long r[12] = {};
  int local = i;
  derived d;
  counter c;
  std::vector<int> v(3);
  long const base_value = 2;
  auto with_captures = [base_value](int k) -> magpie::task<long> { co_return base_value + k; };
  auto generic = [](auto const &x) -> magpie::task<long> { co_return x; };
  co_await magpie::fork(&r[0], fib, i + 1);       // a temporary to a by-value parameter
  co_await magpie::fork(&r[1], by_ref, local);    // a reference to a local that outlives the join
  co_await magpie::fork(&r[2], read_base, d);     // derived lvalue to a base reference: direct
  co_await magpie::fork(&r[3], with_captures, i); // a named closure that outlives the join
  co_await magpie::fork(
      &r[4], [](int k) -> magpie::task<long> { co_return k; }, i + 1); // no captures: no state
  co_await magpie::fork(&r[5], &counter::add, c, i);  // member function on an lvalue object
  co_await magpie::fork(&r[6], &counter::add, &c, i); // ... or through a pointer
  co_await magpie::fork(&r[7], generic, local);       // generic lambda, lvalue argument
  co_await magpie::join();
  co_await magpie::call(&r[8], by_ref, i + 1000); // call: temporaries live long enough
  co_await magpie::call(&r[9], by_rvalue_ref, std::vector<int>(3));
  co_await magpie::call(
      &r[10], [i](int k) -> magpie::task<long> { co_return i + k; }, 1);
  co_await magpie::call(&r[11], by_rvalue_ref, std::move(v));
  long sum = 0;
  for (long x : r) {
    sum += x;
  }
  co_return sum;
}

int main() {
  magpie::inline_scheduler s;
  long const r = magpie::sync_wait(s, fib, 10);
  return r == 55 && magpie::sync_wait(s, uses_move_only, 0) == 0 &&
                 magpie::sync_wait(s, accepted_forms, 1) > 0
             ? 0
             : 1;
}
