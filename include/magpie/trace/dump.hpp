#pragma once
// magpie/trace/dump.hpp — async backtraces: what each worker of a pool is running right now, as
// a chain of tasks (the running one, the task that waits for it, and so on up to the root), and
// the tasks parked on waiting primitives, timers or resume_on.
//
//   magpie::trace::track_parked parked;   // optional: list parked tasks too (costs parks a lock)
//   ...
//   magpie::trace::dump(pool, std::cerr); // from any thread, e.g. when the program looks stuck
//
// How a chain is found, at no cost to the running program: a worker's running task is the
// topmost task frame on its segmented stack (frames are allocated there, last in first out); the
// chain follows each frame's link to its parent. Each frame is named by symbolising its
// coroutine's resume function (trace::symbolize): the program must keep its symbol table (not
// stripped); no -rdynamic and no debug information are needed.
//
// What is safe. The dump reads the workers' stacks while they may be running, as a debugger
// would, without synchronising with them: it is exact for workers that are blocked or stuck (the
// case it is for: a hung program, the stall watchdog, a signal), and a best-effort snapshot for
// workers running at full speed — a chain may then be cut short, or include a frame that has
// just finished, and in the worst case the read may touch a stack segment the worker is freeing.
// Do not call it in a loop on a pool running at full speed. Parked tasks are exact: their list is
// read under the lock their resumption takes.

#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

#include "magpie/sched/pool.hpp"

namespace magpie::trace {

/// One task in a chain.
struct task_frame {
  void const *frame = nullptr;  ///< the task's coroutine frame
  void const *resume = nullptr; ///< its resume function (the coroutine's code)
  std::string function;         ///< the symbolised resume function (see symbolize)
  bool root = false;            ///< the chain's root task (started by sync_wait, spawn, a group)
};

/// What one worker is running: its chain, innermost (the running task) first.
struct worker_chain {
  std::size_t worker = 0;        ///< the worker's index in its pool (or the caller's slot)
  std::vector<task_frame> chain; ///< empty: the worker runs no task
  bool caller = false;           ///< a thread that runs its own root (pool::run_root_here)
};

/// A snapshot of a pool's tasks (see dump()).
struct task_dump {
  /// One per worker, by index; then one per caller that runs a root in the pool right now.
  std::vector<worker_chain> workers;
  bool parked_tracked = false;                 ///< a track_parked was alive: `parked` is filled
  std::vector<std::vector<task_frame>> parked; ///< each parked task's chain, innermost first
  /// The text dump() prints: per worker its chain ("#0 function  [frame 0x…]"), then the
  /// parked tasks' chains (or a line saying that parked tasks are not tracked).
  std::string to_string() const;
};

/// The chains of `pool`'s workers and of its parked tasks. Any thread, including the pool's own
/// workers (a worker sees its own chain exactly). See the file comment for what may race.
task_dump snapshot(sched::pool const &pool);
/// Writes snapshot(pool).to_string() to `out`.
void dump(sched::pool const &pool, std::ostream &out);
/// snapshot(pool).to_string().
std::string dump(sched::pool const &pool);

/// The function whose code contains `code` (a coroutine's resume function, from dladdr and the
/// module's ELF symbol table), demangled and with the compiler's coroutine suffix removed:
/// "fib(int)" for GCC's "fib(int) [clone .actor]" or Clang's "fib(int) [clone .resume]".
/// Where no symbol is found (a stripped binary): "module+0xoffset", or the raw address.
std::string symbolize(void const *code);

/// While at least one track_parked is alive, every task parked in any pool (on a mutex, an event,
/// a future, a channel, a timer, resume_on ...) is recorded until it is resumed, so that dumps
/// (and the gdb extension) list them. Cost while alive: a short global lock per park and per
/// resumption; none on fork, call or join; while none is alive, one load and a branch per park
/// and resumption. Tasks parked before the first one was created are not listed. Any thread;
/// instances may nest and overlap.
class track_parked {
public:
  track_parked() noexcept;
  track_parked(track_parked const &) = delete;
  track_parked &operator=(track_parked const &) = delete;
  /// Stops the recording once no other track_parked is alive.
  ~track_parked();
};

} // namespace magpie::trace
