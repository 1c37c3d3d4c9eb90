// Tasks that update one map under a magpie::mutex, held back until a magpie::event is set. All
// eight tasks wait on the event at once on a two-worker pool: a waiting task holds no worker.
#include <chrono>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "magpie/magpie.hpp"

// [task]
struct word_counts {
  magpie::mutex lock;
  std::map<std::string, int> counts; // guarded by `lock`
};

magpie::task<void> count_words(magpie::event *go, word_counts *shared, std::string line) {
  co_await go->wait(); // suspends until go->set(); the worker runs other tasks meanwhile
  std::map<std::string, int> mine;
  std::istringstream words(line);
  for (std::string w; words >> w;) {
    ++mine[w];
  }
  auto guard = co_await shared->lock.scoped_lock(); // suspends while another task holds it
  for (auto const &[word, n] : mine) {
    shared->counts[word] += n;
  }
} // `guard` unlocks here, also if an exception leaves
// [task]

int main() {
  std::vector<std::string> const lines = {"the cat sat",     "the dog sat",     "a cat ran",
                                          "the cat ran",     "a dog sat still", "the end",
                                          "a cat and a dog", "the dog ran"};
  magpie::lazy_pool pool(2);
  magpie::event go;
  word_counts shared;
  magpie::task_group group(pool);
  for (std::string const &line : lines) {
    group.spawn(count_words, &go, &shared, line);
  }
  while (go.waiting() < lines.size()) { // every task reaches its wait
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::printf("%zu tasks wait on the event, on %zu workers\n", go.waiting(), pool.size());
  go.set();
  group.wait();

  std::map<std::string, int> serial;
  for (std::string const &line : lines) {
    std::istringstream words(line);
    for (std::string w; words >> w;) {
      ++serial[w];
    }
  }
  for (auto const &[word, n] : shared.counts) {
    std::printf("%s %d\n", word.c_str(), n);
  }
  bool const ok = shared.counts == serial;
  std::printf("same as a serial count: %s\n", ok ? "yes" : "NO");
  return ok ? 0 : 1;
}
