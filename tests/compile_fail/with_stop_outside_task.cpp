// EXPECT: magpie::with_stop can only be co_awaited inside a magpie::task coroutine
// co_await magpie::with_stop in a coroutine that is not a magpie task.
#include <coroutine>

#include "magpie/magpie.hpp"

struct plain_coroutine {
  struct promise_type {
    plain_coroutine get_return_object() { return {}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() {}
    void unhandled_exception() {}
  };
};

magpie::task<long> fib(int n) { co_return n; }

plain_coroutine not_a_task(magpie::stop_token t) {
  long r = 0;
  co_await magpie::with_stop(t, &r, fib, 3); // not inside a magpie::task
}

int main() { not_a_task({}); }
