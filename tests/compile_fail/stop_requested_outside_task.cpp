// EXPECT: this magpie question
// co_await magpie::this_task::stop_requested() in a coroutine that is not a magpie task.
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

plain_coroutine not_a_task() {
  bool const stopped = co_await magpie::this_task::stop_requested(); // not inside a magpie::task
  (void)stopped;
}

int main() { not_a_task(); }
