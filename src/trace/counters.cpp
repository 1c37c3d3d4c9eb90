// magpie/trace/counters.hpp: snapshots of a pool's counters, as a table and as JSON.

#include "magpie/trace/counters.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

namespace magpie::trace {

namespace {

/// The columns, in order: a name (the JSON key) and the field.
struct column {
  char const *name;
  std::uint64_t core::worker_stats::*field;
};

constexpr column columns[] = {
    {"forks", &core::worker_stats::forks},
    {"calls", &core::worker_stats::calls},
    {"tasks", &core::worker_stats::tasks},
    {"roots", &core::worker_stats::roots},
    {"steals", &core::worker_stats::steals},
    {"steal_fails", &core::worker_stats::steal_fails},
    {"join_suspends", &core::worker_stats::join_suspends},
    {"parks", &core::worker_stats::parks},
    {"jobs", &core::worker_stats::jobs},
    {"handoffs", &core::worker_stats::handoffs},
    {"sleeps", &core::worker_stats::sleeps},
    {"wakes", &core::worker_stats::wakes},
    {"stacklets", &core::worker_stats::stacklets},
    {"stack_peak", &core::worker_stats::stack_peak},
};

void add(core::worker_stats &into, core::worker_stats const &row) {
  for (column const &c : columns) {
    if (c.field == &core::worker_stats::stack_peak) {
      into.*c.field = std::max(into.*c.field, row.*c.field);
    } else {
      into.*c.field += row.*c.field;
    }
  }
}

void append_cell(std::string &out, char const *text, std::size_t width) {
  std::size_t const n = std::char_traits<char>::length(text);
  out.append(n < width ? width - n : 1, ' ');
  out += text;
}

void append_row(std::string &out, char const *label, core::worker_stats const &s,
                std::size_t const *widths) {
  append_cell(out, label, 6);
  std::size_t i = 0;
  for (column const &c : columns) {
    append_cell(out, std::to_string(s.*c.field).c_str(), widths[i++]);
  }
  out += '\n';
}

} // namespace

std::string to_json(core::worker_stats const &s) {
  std::string out = "{";
  bool first = true;
  for (column const &c : columns) {
    if (!first) {
      out += ',';
    }
    first = false;
    out += '"';
    out += c.name;
    out += "\":";
    out += std::to_string(s.*c.field);
  }
  out += '}';
  return out;
}

counter_snapshot counters(sched::pool const &pool) {
  counter_snapshot snap;
  snap.counting_tasks = pool.counting_tasks();
  snap.workers = pool.stats();
  // stats(): the workers, then the guest slots.
  snap.callers.assign(snap.workers.begin() + static_cast<std::ptrdiff_t>(pool.size()),
                      snap.workers.end());
  snap.workers.resize(pool.size());
  snap.roots_submitted = pool.roots_submitted();
  for (core::worker_stats const &row : snap.workers) {
    add(snap.total, row);
  }
  for (core::worker_stats const &row : snap.callers) {
    add(snap.total, row);
  }
  return snap;
}

std::string counter_snapshot::to_table() const {
  constexpr std::size_t n = sizeof(columns) / sizeof(columns[0]);
  std::size_t widths[n];
  for (std::size_t i = 0; i < n; ++i) { // wide enough for the name and the total
    widths[i] = 1 + std::max(std::char_traits<char>::length(columns[i].name),
                             std::to_string(total.*columns[i].field).size());
  }
  std::string out;
  append_cell(out, "worker", 6);
  for (std::size_t i = 0; i < n; ++i) {
    append_cell(out, columns[i].name, widths[i]);
  }
  out += '\n';
  for (std::size_t w = 0; w < workers.size(); ++w) {
    append_row(out, std::to_string(w).c_str(), workers[w], widths);
  }
  for (std::size_t c = 0; c < callers.size(); ++c) {
    std::string name = "c"; // (not "c" + to_string: GCC 12 warns, -Wrestrict, wrongly)
    name += std::to_string(c);
    append_row(out, name.c_str(), callers[c], widths);
  }
  append_row(out, "total", total, widths);
  if (!counting_tasks) {
    out += "(forks, calls and tasks are counted only in builds with MAGPIE_OBSERVE_TASKS, while "
           "pool::count_tasks(true) or a trace::session is on)\n";
  }
  return out;
}

std::string counter_snapshot::to_json() const {
  auto const append_rows = [](std::string &out, std::vector<core::worker_stats> const &rows) {
    out += '[';
    for (std::size_t r = 0; r < rows.size(); ++r) {
      if (r != 0) {
        out += ',';
      }
      out += trace::to_json(rows[r]);
    }
    out += ']';
  };
  std::string out = "{\"workers\":";
  append_rows(out, workers);
  if (!callers.empty()) {
    out += ",\"callers\":";
    append_rows(out, callers);
  }
  out += ",\"total\":";
  out += trace::to_json(total);
  out += ",\"roots_submitted\":";
  out += std::to_string(roots_submitted);
  out += ",\"counting_tasks\":";
  out += counting_tasks ? "true" : "false";
  out += '}';
  return out;
}

} // namespace magpie::trace
