// Waiting with a deadline (Linux): a task gives up on a future's result, or on a lock, when its
// time is up — suspended meanwhile, its worker free — and then tries again or does something
// else.
#include <chrono>
#include <cstdio>
#include <future>

#include "magpie/magpie.hpp"

using namespace std::chrono_literals;

magpie::task<long> answer_when(magpie::event *go) {
  co_await go->wait();
  co_return 42;
}

char const *said(std::future_status s) {
  return s == std::future_status::ready ? "ready" : "timeout";
}

// [future]
// Wait for a spawned task's result for at most a while, without reading it: after a timeout
// the future is still ours, to wait for again, to read, or to let go (it detaches).
magpie::task<long> impatient_reader(magpie::pool *pool, magpie::event *go) {
  magpie::future<long> f = magpie::spawn(*pool, answer_when, go);
  std::future_status s = co_await f.await_for(20ms); // nobody has set `go`
  std::printf("after 20 ms: %s\n", said(s));
  go->set();
  s = co_await f.await_for(10s);
  std::printf("once `go` is set: %s\n", said(s));
  co_return co_await f;
}
// [future]

// [lock]
// A lock with a deadline: true means we hold it.
magpie::task<bool> lock_briefly(magpie::mutex *m) {
  bool const locked = co_await m->try_lock_for(5ms);
  if (locked) {
    m->unlock();
  }
  co_return locked;
}
// [lock]

int main() {
  magpie::lazy_pool pool(2);
  magpie::event go;
  long const answer = magpie::sync_wait(pool, impatient_reader, &pool, &go);
  std::printf("answer: %ld\n", answer);

  magpie::mutex m;
  bool const held = m.try_lock(); // this thread holds it for the first try
  bool const first = magpie::sync_wait(pool, lock_briefly, &m);
  m.unlock();
  bool const second = magpie::sync_wait(pool, lock_briefly, &m);
  std::printf("locked while held elsewhere: %s, once free: %s\n", first ? "yes" : "no",
              second ? "yes" : "no");
  return answer == 42 && held && !first && second ? 0 : 1;
}
