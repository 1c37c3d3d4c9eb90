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

/// The ring size for `n` events: n rounded up to a power of two (at least 1).
std::size_t ring_capacity(std::size_t n) {
  if (n > std::size_t{1} << 40) {
    throw std::length_error("magpie::trace::session: events_per_worker too large");
  }
  return std::bit_ceil(std::max<std::size_t>(n, 1));
}

} // namespace

session::session(sched::pool &pool, std::size_t events_per_worker)
    : m_pool(&pool), m_capacity(ring_capacity(events_per_worker)), m_start_ticks(0),
      m_rings(pool.workers()) {
  clock_pair const start = read_clocks();
  m_start = start.time;
  m_start_ticks = start.ticks;
  for (ring &r : m_rings) {
    r.events = std::make_unique<record[]>(m_capacity);
  }
  m_recorder.owner = this;
  m_recorder.m_record = &session::on_event;
  // A timeline has no use for joins that did not wait (join_suspend shows the others): not
  // reported, they cost the worker nothing (one event in five on fib).
  m_recorder.m_wants = core::every_event & ~core::event_bit(core::event::join);
  // exchange_observer publishes the rings to the workers (its seq_cst exchange, which their
  // seq_cst load in context::observed acquires).
  if (!m_pool->replace_observer(nullptr, &m_recorder)) {
    throw std::logic_error("magpie::trace::session: the pool is already observed (another "
                           "session, or pool::count_tasks(true))");
  }
  m_on = true;
}

session::~session() { stop(); }

void session::stop() noexcept {
  if (m_on) {
    // Returns once no worker is inside on_event: their ring writes happen-before our reads.
    (void)m_pool->exchange_observer(nullptr);
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
  session &s = *static_cast<recorder &>(self).owner;
  ring &r = s.m_rings[worker.index()]; // only this worker writes its ring
  r.events[r.next & (s.m_capacity - 1)] = record{ticks(), e, static_cast<std::uint32_t>(arg)};
  ++r.next;
}

std::uint64_t session::recorded() const noexcept {
  std::uint64_t n = 0;
  for (ring const &r : m_rings) {
    n += r.next;
  }
  return n;
}

std::uint64_t session::dropped() const noexcept {
  std::uint64_t n = 0;
  for (ring const &r : m_rings) {
    n += r.next > m_capacity ? r.next - m_capacity : 0;
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
    std::uint64_t const kept = r.next < m_capacity ? r.next : m_capacity;
    worker_writer writer(out, first, w);
    for (std::uint64_t i = r.next - kept; i < r.next; ++i) {
      session::record const &e = r.events[i & (m_capacity - 1)];
      writer.event(e, to_ns(e.ticks));
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
