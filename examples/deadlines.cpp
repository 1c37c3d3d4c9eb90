// Waiting with a deadline (Linux): a task gives up on a future's result, on a lock, or on a
// channel, when its time is up — suspended meanwhile, its worker free — and then tries again or
// does something else.
#include <chrono>
#include <cstdio>
#include <future>
#include <thread>

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

// [channel]
// A worker that waits at most 20 ms at a time for a job; when none comes it is free to do
// something else (here it tells the producer once that it is idle), then waits again, until the
// channel is closed and drained.
magpie::task<int> worker(magpie::channel<int> *jobs, magpie::event *idle) {
  int done = 0;
  for (bool told = false;;) {
    magpie::receive_result<int> r = co_await jobs->receive_for(20ms);
    if (r.status == magpie::receive_status::closed) {
      co_return done;
    }
    if (r.status == magpie::receive_status::empty) { // 20 ms without a job
      if (!told) {
        std::printf("no job within 20 ms\n");
        idle->set();
        told = true;
      }
      continue;
    }
    std::printf("job %d\n", *r.value);
    ++done;
  }
}

// A send with a deadline (of a copy of `job`: send_for(std::move(v), d) moves from `v` only if
// it sends it).
magpie::task<int> offer(magpie::channel<int> *slot, int job) {
  magpie::send_status const s = co_await slot->send_for(job, 5ms);
  std::printf("%s, job %d\n", s == magpie::send_status::full ? "full for 5 ms: not sent" : "sent",
              job);
  co_return s == magpie::send_status::full ? job : -1;
}
// [channel]

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

  magpie::channel<int> jobs(4);
  magpie::event idle;
  std::thread producer([&] {
    idle.wait_blocking(); // once the worker has found no job for a while
    for (int j = 1; j <= 3; ++j) {
      (void)jobs.send_blocking(j);
    }
    jobs.close();
  });
  int const done = magpie::sync_wait(pool, worker, &jobs, &idle);
  producer.join();
  std::printf("closed after %d jobs\n", done);

  magpie::channel<int> slot(1);
  (void)slot.try_send(1); // full
  int const kept = magpie::sync_wait(pool, offer, &slot, 2);
  return answer == 42 && held && !first && second && done == 3 && kept == 2 ? 0 : 1;
}
