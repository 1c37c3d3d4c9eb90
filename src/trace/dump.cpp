// magpie/trace/dump.hpp: the chains of tasks a pool's workers run, and its parked tasks.

#include "magpie/trace/dump.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ostream>

#include "magpie/core/context.hpp"
#include "magpie/core/frame.hpp"
#include "magpie/core/stack.hpp"
#include "magpie/sched/registry.hpp"
#include "peek.hpp"

namespace magpie::trace {

namespace {

using core::frame_base;

constexpr std::size_t max_chain = 4096; // deeper chains are cut (a cycle in torn data)
constexpr std::size_t promise_offset = 2 * sizeof(void *); // see src/registry.cpp

using detail::peek;
using detail::peek_byte;

template <typename T>
T *field(void const *base, std::size_t offset) noexcept {
  return reinterpret_cast<T *>(peek(static_cast<std::byte const *>(base) + offset));
}

/// The frame_base of the coroutine frame that may begin at `p`, if what is there looks like a
/// live task frame run by `ctx`: its handle points back at `p`, its resume function is set (a
/// finished frame's is null), and its kind is valid.
frame_base const *frame_at(std::byte const *p, core::context const *ctx) noexcept {
  auto const *f = reinterpret_cast<frame_base const *>(p + promise_offset);
  if (peek(p) == 0 || field<void>(f, offsetof(frame_base, m_handle)) != p) {
    return nullptr;
  }
  if (peek_byte(reinterpret_cast<std::byte const *>(f) + offsetof(frame_base, m_kind)) > 2) {
    return nullptr;
  }
  if (field<core::context const>(f, offsetof(frame_base, m_ctx)) != ctx) {
    return nullptr;
  }
  return f;
}

/// The topmost task frame on `ctx`'s stack: the task the worker is running (or null).
frame_base const *running_task(core::context const &ctx) noexcept {
  core::stack const &s = ctx.stack();
  auto *top = reinterpret_cast<core::stacklet *>(peek(s.debug_top()));
  auto const *sp = reinterpret_cast<std::byte const *>(peek(s.debug_sp()));
  constexpr std::size_t step = core::stacklet::alignment;
  std::size_t const need = promise_offset + sizeof(frame_base);
  for (core::stacklet *seg = top; seg != nullptr;) {
    std::byte const *const lo = seg->base();
    std::byte const *const hi =
        seg == top
            ? sp
            : reinterpret_cast<std::byte const *>(peek(reinterpret_cast<std::byte const *>(seg) +
                                                       core::stacklet::debug_saved_sp_offset()));
    if (hi < lo || static_cast<std::size_t>(hi - lo) > (std::size_t{1} << 40)) {
      return nullptr; // torn: the worker moved on while we read
    }
    if (static_cast<std::size_t>(hi - lo) >= need) {
      // Frames start at multiples of `step` from the segment's base; the topmost first.
      for (std::size_t k = static_cast<std::size_t>(hi - lo - need) / step + 1; k-- > 0;) {
        if (frame_base const *f = frame_at(lo + k * step, &ctx)) {
          return f;
        }
      }
    }
    seg = reinterpret_cast<core::stacklet *>(
        peek(reinterpret_cast<std::byte const *>(seg) + core::stacklet::debug_prev_offset()));
  }
  return nullptr;
}

/// The chain from `f` up its parents to its root, innermost first, not yet symbolised.
std::vector<task_frame> chain_of(frame_base const *f) {
  std::vector<task_frame> chain;
  while (f != nullptr && chain.size() < max_chain) {
    task_frame t;
    t.frame = field<void const>(f, offsetof(frame_base, m_handle));
    t.resume = t.frame != nullptr ? reinterpret_cast<void const *>(peek(t.frame)) : nullptr;
    auto const kind = static_cast<core::frame_kind>(
        peek_byte(reinterpret_cast<std::byte const *>(f) + offsetof(frame_base, m_kind)));
    t.root = kind == core::frame_kind::root;
    chain.push_back(std::move(t));
    if (kind != core::frame_kind::forked && kind != core::frame_kind::called) {
      break; // a root (its parent is the root_block of whoever waits), or torn data
    }
    f = field<frame_base const>(f, offsetof(frame_base, m_parent));
    if (f != nullptr && field<frame_base const>(f, offsetof(frame_base, m_parent)) == nullptr) {
      // A called task whose parent has no parent: with_stop's anchor (core/scope.hpp), whose
      // handle is the awaiting task's. The chain goes on from that task (root_block::m_caller).
      f = field<frame_base const>(f, core::root_block::debug_caller_offset());
    }
  }
  return chain;
}

void name_frames(std::vector<task_frame> &chain) {
  for (task_frame &t : chain) {
    t.function = t.resume != nullptr ? symbolize(t.resume) : "(finished)";
  }
}

void append_chain(std::string &out, std::vector<task_frame> const &chain, char const *indent) {
  std::size_t i = 0;
  for (task_frame const &t : chain) {
    char head[64];
    std::snprintf(head, sizeof head, "%s#%zu ", indent, i++);
    out += head;
    out += t.function;
    char tail[64];
    std::snprintf(tail, sizeof tail, "  [frame %p]%s\n", t.frame, t.root ? " (root)" : "");
    out += tail;
  }
}

} // namespace

task_dump snapshot(sched::pool const &pool) {
  task_dump d;
  d.workers.resize(pool.size());
  for (std::size_t i = 0; i < pool.size(); ++i) {
    d.workers[i].worker = i;
    d.workers[i].chain = chain_of(running_task(pool.worker_context(i)));
  }
  // Callers that run their own roots: only the slots in use (a free slot's stack is empty).
  for (std::size_t k = 0; k < sched::detail::pool_access::guest_slots(pool); ++k) {
    if (auto chain = chain_of(running_task(pool.worker_context(pool.size() + k))); !chain.empty()) {
      d.workers.push_back({k, std::move(chain), true});
    }
  }
  // Parked chains are read under the registry's lock: none of them can be resumed meanwhile.
  struct collect {
    static void visit(frame_base const *f, void *self) {
      static_cast<task_dump *>(self)->parked.push_back(chain_of(f));
    }
  };
  d.parked_tracked = sched::registry::visit_parked(static_cast<core::executor const *>(&pool),
                                                   &collect::visit, &d);
  for (worker_chain &w : d.workers) {
    name_frames(w.chain);
  }
  for (auto &chain : d.parked) {
    name_frames(chain);
  }
  return d;
}

std::string task_dump::to_string() const {
  auto const callers =
      std::ranges::count_if(workers, [](worker_chain const &w) { return w.caller; });
  std::string out =
      "magpie task dump: " + std::to_string(workers.size() - static_cast<std::size_t>(callers)) +
      " worker(s)\n";
  for (worker_chain const &w : workers) {
    out += (w.caller ? "caller " : "worker ") + std::to_string(w.worker);
    out += w.chain.empty() ? ": no task\n" : ":\n";
    append_chain(out, w.chain, "  ");
  }
  if (!parked_tracked) {
    out += "parked tasks: not tracked (create a magpie::trace::track_parked to list them)\n";
  } else {
    out += "parked tasks: " + std::to_string(parked.size()) + "\n";
    std::size_t i = 0;
    for (auto const &chain : parked) {
      out += "parked " + std::to_string(i++) + ":\n";
      append_chain(out, chain, "  ");
    }
  }
  return out;
}

void dump(sched::pool const &pool, std::ostream &out) { out << snapshot(pool).to_string(); }

std::string dump(sched::pool const &pool) { return snapshot(pool).to_string(); }

track_parked::track_parked() noexcept { sched::registry::track_parked(true); }
track_parked::~track_parked() { sched::registry::track_parked(false); }

} // namespace magpie::trace
