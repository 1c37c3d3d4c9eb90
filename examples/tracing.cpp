// Counters and timelines: what the workers did while fib ran, as a table, as JSON and as a
// Chrome/Perfetto trace.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

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

int main() {
  magpie::lazy_pool pool(2);
  std::filesystem::path const file = std::filesystem::temp_directory_path() / "magpie_fib.json";
  // [session]
  long r = 0;
  {
    magpie::trace::session timeline(pool); // every worker records into its own ring
    r = magpie::sync_wait(pool, fib, 27);
    timeline.to_file(file.string()); // stops recording, writes the trace-event JSON
  }                                  // open the file in ui.perfetto.dev or chrome://tracing
  // [session]
  // [counters]
  magpie::trace::counter_snapshot const c = magpie::trace::counters(pool); // any thread, any time
  std::cerr << c.to_table();            // one row per worker, then the totals
  std::string const json = c.to_json(); // {"workers":[{...}],"total":{...},...}
  // [counters]
  std::printf("fib(27) = %ld\n", r);
  std::printf("roots submitted: %llu, started: %llu\n",
              static_cast<unsigned long long>(c.roots_submitted),
              static_cast<unsigned long long>(c.total.roots));
  std::printf("rows: %zu, a stack on each worker: %s\n", c.workers.size(),
              c.total.stacklets >= c.workers.size() && c.total.stack_peak > 0 ? "yes" : "no");
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  bool const ok = text.str().find("\"traceEvents\"") != std::string::npos &&
                  json.find("\"total\"") != std::string::npos;
  std::printf("trace written: %s\n", ok ? "yes" : "no");
  std::filesystem::remove(file);
  return r == 196418 && ok && c.total.roots == 1 ? 0 : 1;
}
