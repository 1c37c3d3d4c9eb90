// magpie/trace/session.hpp: per-worker rings filled through the core observer hook, exported as
// Chrome trace-event JSON.

#include "magpie/trace/session.hpp"

#include <algorithm>
#include <bit>
#include <fstream>
#include <ostream>
#include <stdexcept>

#include "magpie/core/context.hpp"

namespace magpie::trace {

namespace {

/// The session's clock (session.hpp): the time-stamp counter where the CPU has one, read
/// without serialising (an event's time may be off by the few instructions around it), else
/// steady_clock's nanoseconds. Either is mapped onto steady_clock at export.
std::uint64_t ticks() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_ia32_rdtsc();
#else
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
#endif
}

/// Both clocks at (nearly) one instant: steady_clock read between two counter reads, the pair
/// with the narrowest bracket of a few tries (a thread preempted between the reads of one try
/// would otherwise skew the mapping by the preemption: a 30 ms session read 28 ms under load).
struct clock_pair {
  std::chrono::steady_clock::time_point time;
  std::uint64_t ticks;
};
clock_pair read_clocks() noexcept {
  clock_pair best{};
  std::uint64_t best_width = ~std::uint64_t{0};
  for (int attempt = 0; attempt < 5; ++attempt) {
    std::uint64_t const before = ticks();
    auto const now = std::chrono::steady_clock::now();
    std::uint64_t const after = ticks();
    if (after >= before && after - before < best_width) {
      best_width = after - before;
      best = {now, before + (after - before) / 2};
    }
  }
  if (best_width == ~std::uint64_t{0}) { // the counter went backwards every time: take one
    best = {std::chrono::steady_clock::now(), ticks()};
  }
  return best;
}

/// timing::adaptive: a worker's stride stays within [1, max_stride] task events, and is halved
/// when two readings are more than reading_gap ticks apart, doubled when less than half that.
constexpr std::uint32_t max_stride = 64;
constexpr std::uint64_t reading_gap = 2048;

/// The ring size for `n` events: n rounded up to a power of two (at least 1).
std::size_t ring_capacity(std::size_t n) {
  if (n > std::size_t{1} << 40) {
    throw std::length_error("magpie::trace::session: events_per_worker too large");
  }
  return std::bit_ceil(std::max<std::size_t>(n, 1));
}

} // namespace

session::session(sched::pool &pool, std::size_t events_per_worker, timing clock)
    : m_pool(&pool), m_capacity(ring_capacity(events_per_worker)), m_start_ticks(0),
      m_rings(pool.size()) {
  clock_pair const start = read_clocks();
  m_start = start.time;
  m_start_ticks = start.ticks;
  for (ring &r : m_rings) {
    r.events = std::make_unique<record[]>(m_capacity);
    r.last_ticks = m_start_ticks;
  }
  m_recorder.rings = m_rings.data();
  m_recorder.mask = m_capacity - 1;
  m_recorder.max_stride = clock == timing::every_event ? 1 : max_stride;
  m_recorder.m_record = &session::on_event;
  // A timeline has no use for joins that did not wait (join_suspend shows the others): not
  // reported, they cost the worker nothing (one event in five on fib).
  m_recorder.m_wants = core::every_event & ~core::event_bit(core::event::join);
  // exchange_observer publishes the rings to the workers (its seq_cst exchange, which their
  // seq_cst load in context::observed acquires).
  if (!sched::detail::pool_access::replace_observer(*m_pool, nullptr, &m_recorder)) {
    throw std::logic_error("magpie::trace::session: the pool is already observed (another "
                           "session, or pool::count_tasks(true))");
  }
  m_on = true;
}

session::~session() { stop(); }

void session::stop() noexcept {
  if (m_on) {
    // Returns once no worker is inside on_event: their ring writes happen-before our reads.
    (void)sched::detail::pool_access::exchange_observer(*m_pool, nullptr);
    clock_pair const stop = read_clocks(); // after every event: the workers are done
    m_stop = stop.time;
    m_stop_ticks = stop.ticks;
    m_on = false;
  }
}

void session::on_event(core::observer &self, core::context &worker, core::event e,
                       std::uint64_t arg) noexcept {
  if (e == core::event::join) {
    return; // not wanted (m_wants), but possible while observers are exchanged
  }
  recorder const &rec = static_cast<recorder &>(self);
  ring &r = rec.rings[worker.index()]; // only this worker writes its ring
  bool const task_event =
      e == core::event::fork || e == core::event::call || e == core::event::task_end;
  bool const due = task_event && r.next >= r.read_at; // the stride's reading
  bool read = !task_event || due;
  // A span whose start read the clock reads it at its end too (and so does the end of a
  // strand's outermost span): spans of roots, steals and resumptions have exact times.
  // read_starts is a stack of bits, the innermost span's lowest (deeper than 64 spans, the
  // outermost fall off the top: then only depth's return to 0 reads for them).
  switch (e) {
  case core::event::fork:
  case core::event::call:
  case core::event::root:
  case core::event::steal:
  case core::event::resume:
    r.read_starts = (r.read_starts << 1) | std::uint64_t{read};
    ++r.depth;
    break;
  case core::event::task_end:
    r.depth -= r.depth != 0 ? 1 : 0;
    read = read || r.depth == 0 || (r.read_starts & 1) != 0;
    r.read_starts >>= 1;
    break;
  default: // the events that end every span (and sleep, ended by wake)
    r.depth = 0;
    r.read_starts = 0;
    break;
  }
  std::uint64_t t = 0;
  if (read) {
    t = ticks();
    if (due) { // adapt the stride to the time since the last reading
      std::uint64_t const gap = t - r.last_ticks;
      if (gap > reading_gap) {
        r.stride = std::max<std::uint32_t>(r.stride / 2, 1);
      } else if (gap < reading_gap / 2) {
        r.stride = std::min(r.stride * 2, rec.max_stride);
      }
    }
    r.last_ticks = t;
    r.read_at = r.next + r.stride;
    ++r.reads;
  }
  r.events[r.next & rec.mask] = record{t, e, static_cast<std::uint32_t>(arg)};
  ++r.next;
}

std::uint64_t session::first_exported(ring const &r) const noexcept {
  std::uint64_t i = r.next < m_capacity ? 0 : r.next - m_capacity;
  if (i != 0) { // wrapped: what precedes the oldest kept reading cannot be placed in time
    while (i < r.next && r.events[i & (m_capacity - 1)].ticks == 0) {
      ++i;
    }
  }
  return i;
}

std::uint64_t session::recorded() const noexcept {
  std::uint64_t n = 0;
  for (ring const &r : m_rings) {
    n += r.next;
  }
  return n;
}

std::uint64_t session::clock_reads() const noexcept {
  std::uint64_t n = 0;
  for (ring const &r : m_rings) {
    n += r.reads;
  }
  return n;
}

std::uint64_t session::dropped() const noexcept {
  std::uint64_t n = 0;
  for (ring const &r : m_rings) {
    n += first_exported(r);
  }
  return n;
}

namespace {

char const *span_name(core::event e) {
  switch (e) {
  case core::event::fork:
    return "fork";
  case core::event::call:
    return "call";
  case core::event::root:
    return "root";
  case core::event::steal:
    return "steal";
  case core::event::resume:
    return "resume";
  case core::event::sleep:
    return "sleep";
  default:
    return "?";
  }
}

/// Writes one worker's events as spans matched by construction: a per-worker stack of open
/// spans; the end of a strand (and a suspension, and sleep) closes every open one.
class worker_writer {
public:
  worker_writer(std::ostream &out, bool &first, std::size_t tid)
      : m_out(out), m_first(first), m_tid(tid) {}

  /// `ns`: r's time since the session started. Never before the worker's previous event: a
  /// worker that moved to another CPU may read a time-stamp counter a little behind.
  void event(session::record const &r, std::int64_t ns) {
    ns = std::max(ns, m_last);
    m_last = ns;
    switch (r.what) {
    case core::event::fork:
    case core::event::call:
    case core::event::root:
    case core::event::resume:
      begin(ns, span_name(r.what), -1);
      break;
    case core::event::steal:
      begin(ns, "steal", static_cast<std::int64_t>(r.arg));
      break;
    case core::event::task_end:
      if (m_open != 0) {
        end(ns);
      }
      break;
    case core::event::join_suspend:
    case core::event::park:
      close_all(ns);
      instant(ns, r.what == core::event::park ? "park" : "join_suspend");
      break;
    case core::event::strand_end:
      close_all(ns);
      break;
    case core::event::sleep:
      close_all(ns);
      begin(ns, "sleep", -1);
      break;
    case core::event::wake:
      close_all(ns);
      break;
    default:
      break;
    }
  }
  void finish() { close_all(m_last); }

private:
  void head(char ph, std::int64_t ns) {
    m_out << (m_first ? "\n" : ",\n");
    m_first = false;
    // ts in µs with ns precision
    m_out << "{\"ph\":\"" << ph << "\",\"pid\":1,\"tid\":" << m_tid << ",\"ts\":" << ns / 1000
          << '.' << static_cast<char>('0' + (ns / 100) % 10)
          << static_cast<char>('0' + (ns / 10) % 10) << static_cast<char>('0' + ns % 10);
  }
  void begin(std::int64_t ns, char const *name, std::int64_t victim) {
    head('B', ns);
    m_out << ",\"name\":\"" << name << '"';
    if (victim >= 0) {
      m_out << ",\"args\":{\"victim\":" << victim << '}';
    }
    m_out << '}';
    ++m_open;
  }
  void end(std::int64_t ns) {
    head('E', ns);
    m_out << '}';
    --m_open;
  }
  void instant(std::int64_t ns, char const *name) {
    head('i', ns);
    m_out << ",\"s\":\"t\",\"name\":\"" << name << "\"}";
  }
  void close_all(std::int64_t ns) {
    while (m_open != 0) {
      end(ns);
    }
  }

  std::ostream &m_out;
  bool &m_first;
  std::size_t m_tid;
  std::size_t m_open = 0;
  std::int64_t m_last = 0;
};

} // namespace

void session::write_json(std::ostream &out) {
  stop();
  // Ticks to nanoseconds since the start: the rate both clocks advanced at over the session.
  double const span_ns = std::chrono::duration<double, std::nano>(m_stop - m_start).count();
  double const span_ticks = static_cast<double>(m_stop_ticks - m_start_ticks);
  double const ns_per_tick = span_ticks > 0 ? span_ns / span_ticks : 0.0;
  auto const to_ns = [&](std::uint64_t t) -> std::int64_t {
    // A worker's counter may lag the starter's by a little: such events are put at 0.
    return t <= m_start_ticks
               ? 0
               : static_cast<std::int64_t>(static_cast<double>(t - m_start_ticks) * ns_per_tick);
  };
  out << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
  bool first = true;
  for (std::size_t w = 0; w < m_rings.size(); ++w) {
    out << (first ? "\n" : ",\n");
    first = false;
    out << R"({"ph":"M","pid":1,"tid":)" << w << R"(,"name":"thread_name","args":{"name":"worker )"
        << w << "\"}}";
  }
  for (std::size_t w = 0; w < m_rings.size(); ++w) {
    ring const &r = m_rings[w];
    auto const at = [&](std::uint64_t i) -> session::record const & {
      return r.events[i & (m_capacity - 1)];
    };
    worker_writer writer(out, first, w);
    // An event without a reading lies between the readings around it (before it: the latest one,
    // or the session's start for a ring that did not wrap; after it: the next one, or the stop):
    // placed evenly by position. `lo`: the reading before, as an index (one before the first
    // event for the start) and its time.
    std::uint64_t const begin = first_exported(r);
    bool const from_start = begin == r.next || at(begin).ticks == 0;
    std::int64_t lo = static_cast<std::int64_t>(begin) - (from_start ? 1 : 0);
    std::uint64_t lo_ticks = from_start ? m_start_ticks : at(begin).ticks;
    for (std::uint64_t i = begin; i < r.next;) {
      if (at(i).ticks != 0) {
        writer.event(at(i), to_ns(at(i).ticks));
        lo = static_cast<std::int64_t>(i);
        lo_ticks = at(i).ticks;
        ++i;
        continue;
      }
      std::uint64_t hi = i + 1;
      while (hi < r.next && at(hi).ticks == 0) {
        ++hi;
      }
      std::uint64_t const hi_ticks = hi < r.next ? at(hi).ticks : m_stop_ticks;
      // Readings on different CPUs may disagree a little (a worker can move): never go back.
      double const per_event = hi_ticks > lo_ticks
                                   ? static_cast<double>(hi_ticks - lo_ticks) /
                                         static_cast<double>(static_cast<std::int64_t>(hi) - lo)
                                   : 0.0;
      for (; i < hi; ++i) {
        double const offset = static_cast<double>(static_cast<std::int64_t>(i) - lo);
        writer.event(at(i), to_ns(lo_ticks + static_cast<std::uint64_t>(per_event * offset)));
      }
    }
    writer.finish();
  }
  out << "\n]}\n";
}

void session::to_file(std::string const &path) {
  std::ofstream file(path);
  if (!file) {
    throw std::runtime_error("magpie::trace::session: cannot open " + path);
  }
  write_json(file);
  if (!file) {
    throw std::runtime_error("magpie::trace::session: cannot write " + path);
  }
}

} // namespace magpie::trace
