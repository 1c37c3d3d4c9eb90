// magpie/sched/registry.hpp: the list of live pools that diagnostics read, and the parked-task
// bookkeeping of trace::track_parked.

#include "magpie/sched/registry.hpp"

#include <cstddef>
#include <memory>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "magpie/core/ext.hpp"
#include "magpie/core/frame.hpp"
#include "magpie/core/stack.hpp"
#include "magpie/sched/pool.hpp"

// Coroutine frames (GCC and Clang ABI) begin with the resume and destroy function pointers; the
// promise, whose first base is frame_base, follows (at the promise's alignment, 16 at most).
static_assert(alignof(magpie::core::frame_base) <= 2 * sizeof(void *));
// tools/gdb/magpie.py reads these structs by offset (layout version 2, 64-bit): keep in step.
static_assert(sizeof(void *) != 8 ||
              (offsetof(magpie_debug_info, pools) == 48 &&
               offsetof(magpie_debug_info, parked) == 56 &&
               offsetof(magpie_debug_info, parked_count) == 64 &&
               offsetof(magpie_debug_info, tracking) == 72 &&
               offsetof(magpie_debug_info, anchor_caller) == 76 &&
               offsetof(magpie_debug_pool, worker) == 24 &&
               offsetof(magpie_debug_pool, executor) == 32 &&
               offsetof(magpie_debug_pool, callers) == 40 && sizeof(magpie_debug_worker) == 24 &&
               sizeof(magpie_debug_parked) == 16));

extern "C" {
magpie_debug_info magpie_debug = {
    2,
    2 * sizeof(void *),
    offsetof(magpie::core::frame_base, m_handle),
    offsetof(magpie::core::frame_base, m_parent),
    offsetof(magpie::core::frame_base, m_ctx),
    offsetof(magpie::core::frame_base, m_kind),
    sizeof(magpie::core::frame_base),
    static_cast<std::uint32_t>(magpie::core::frame_kind::root),
    sizeof(magpie::core::stacklet),
    magpie::core::stacklet::debug_prev_offset(),
    magpie::core::stacklet::debug_saved_sp_offset(),
    magpie::core::stacklet::alignment,
    nullptr,
    nullptr,
    0,
    0,
    static_cast<std::uint32_t>(magpie::core::root_block::debug_caller_offset()),
};
}

namespace magpie::sched::registry {

namespace {

struct entry : magpie_debug_pool {
  std::vector<magpie_debug_worker> views;
};

std::mutex &list_mutex() {
  static std::mutex m; // guards magpie_debug.pools and every entry's `next`
  return m;
}

/// The parked-task list of track_parked: a vector (what the debugger reads) and an index.
struct parked_list {
  std::mutex mutex; // guards everything here and magpie_debug's parked fields
  std::size_t users = 0;
  std::vector<magpie_debug_parked> tasks;
  std::unordered_map<void const *, std::size_t> index; // frame → its slot in `tasks`
  std::uint64_t lost = 0;

  void publish() { // with `mutex` held
    magpie_debug.parked = tasks.data();
    magpie_debug.parked_count = tasks.size();
    magpie_debug.tracking = users != 0 ? 1 : 0;
  }
};

parked_list &parked() {
  static parked_list *list = new parked_list; // never destroyed: hooks may run until exit
  return *list;
}

void on_parked(core::frame_base const &task, core::executor *home) noexcept {
  parked_list &p = parked();
  std::lock_guard lock(p.mutex);
  if (p.users == 0) {
    return; // a hook call that raced with the last stop
  }
  try {
    p.tasks.push_back({&task, home});
    try {
      p.index.emplace(&task, p.tasks.size() - 1);
    } catch (...) {
      p.tasks.pop_back();
      throw;
    }
  } catch (std::bad_alloc const &) {
    ++p.lost;
  }
  p.publish();
}

void on_resumed(core::frame_base const &task) noexcept {
  parked_list &p = parked();
  std::lock_guard lock(p.mutex);
  auto const at = p.index.find(&task);
  if (at == p.index.end()) {
    return;
  }
  std::size_t const slot = at->second;
  p.index.erase(at);
  if (slot + 1 != p.tasks.size()) { // the last one fills the hole
    p.tasks[slot] = p.tasks.back();
    p.index.find(p.tasks[slot].frame)->second = slot;
  }
  p.tasks.pop_back();
  p.publish();
}

constexpr core::ext::park_hooks hooks{&on_parked, &on_resumed};

} // namespace

void add(pool const &p) {
  auto e = std::make_unique<entry>();
  e->pool = &p;
  e->executor = static_cast<core::executor const *>(&p);
  e->workers = p.size();
  e->callers = detail::pool_access::guest_slots(p);
  e->views.reserve(p.size() + e->callers);
  for (std::size_t i = 0; i < p.size() + e->callers; ++i) {
    core::stack const &s = p.worker_context(i).stack();
    e->views.push_back({&p.worker_context(i), reinterpret_cast<void *const *>(s.debug_top()),
                        reinterpret_cast<void *const *>(s.debug_sp())});
  }
  e->worker = e->views.data();
  std::lock_guard lock(list_mutex());
  e->next = magpie_debug.pools;
  magpie_debug.pools = e.release();
}

void remove(pool const &p) noexcept {
  entry *gone = nullptr;
  {
    std::lock_guard lock(list_mutex());
    for (magpie_debug_pool **at = &magpie_debug.pools; *at != nullptr; at = &(*at)->next) {
      if ((*at)->pool == &p) {
        gone = static_cast<entry *>(*at);
        *at = gone->next;
        break;
      }
    }
  }
  delete gone;
}

void track_parked(bool on) noexcept {
  parked_list &p = parked();
  std::lock_guard lock(p.mutex);
  if (on) {
    if (p.users++ == 0) {
      p.tasks.clear();
      p.index.clear();
      p.lost = 0;
      (void)core::ext::set_park_hooks(&hooks);
    }
  } else if (p.users != 0 && --p.users == 0) {
    (void)core::ext::set_park_hooks(nullptr);
    p.tasks.clear();
    p.index.clear();
  }
  p.publish();
}

bool visit_parked(void const *home, void (*visit)(core::frame_base const *f, void *arg),
                  void *arg) {
  parked_list &p = parked();
  std::lock_guard lock(p.mutex);
  if (p.users == 0) {
    return false;
  }
  for (magpie_debug_parked const &t : p.tasks) {
    if (home == nullptr || t.home == home) {
      visit(static_cast<core::frame_base const *>(t.frame), arg);
    }
  }
  return true;
}

std::uint64_t parked_lost() noexcept {
  parked_list &p = parked();
  std::lock_guard lock(p.mutex);
  return p.lost;
}

} // namespace magpie::sched::registry
