#pragma once
// magpie/core/deque.hpp — the Chase–Lev work-stealing deque with a growable ring.
//
// One owner pushes and pops at the bottom; any number of thieves steal from the top. The owner's
// operations live on `deque<T>`; thieves see only `deque<T>::thief`, which can do nothing but
// steal. The protocol and its proof sketch are in docs/protocols.md ("The deque").
//
// Memory orders follow Lê, Pop, Cohen and Zappa Nardelli (PPoPP 2013). Their two seq_cst fences
// become seq_cst operations on `bottom` and `top` (which ThreadSanitizer models, unlike fences),
// or, opt-in on Linux, an asymmetric pair (detail/fence.hpp: a compiler barrier in the owner's
// pop, a membarrier in the rare steal that finds work).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "magpie/core/config.hpp"
#include "magpie/core/detail/fence.hpp"

namespace magpie::core {

/// The outcome of a steal attempt: nothing there, a race lost to another thief or to the owner,
/// or the stolen item.
enum class steal_status : std::uint8_t { empty, lost, success };

/// What a steal attempt returns: its outcome and, on success, the stolen item.
template <typename T>
struct steal_result {
  steal_status status; ///< whether the steal took an item (see steal_status)
  T value;             ///< meaningful only when status == success

  /// True if the steal took an item.
  explicit operator bool() const noexcept { return status == steal_status::success; }
};

/// A Chase–Lev work-stealing deque of trivially copyable items (a worker's stealable
/// continuations). The owner thread pushes and pops at the bottom; thieves steal from the top
/// through a deque::thief. Push is amortised O(1) (the ring doubles when full; old rings live until
/// the deque dies); pop and steal are O(1) and lock-free.
template <typename T>
class deque {
  static_assert(
      std::is_trivially_copyable_v<T> && std::atomic<T>::is_always_lock_free,
      "deque items are copied by racing threads: they must be small and trivially copyable");

  struct ring {
    explicit ring(std::int64_t capacity)
        : m_mask(capacity - 1), m_slots(std::make_unique<std::atomic<T>[]>(capacity)) {}

    std::int64_t capacity() const noexcept { return m_mask + 1; }

    // Slots are atomics accessed relaxed: the edges that order them are on `bottom` (push to
    // steal) and on `top` (a steal's CAS before the owner reuses the slot).
    void put(std::int64_t i, T x) noexcept {
      m_slots[i & m_mask].store(x, std::memory_order_relaxed);
    }
    T get(std::int64_t i) const noexcept {
      return m_slots[i & m_mask].load(std::memory_order_relaxed);
    }

    std::int64_t m_mask;
    std::unique_ptr<std::atomic<T>[]> m_slots;
  };

public:
  /// The view of a deque that other workers get: it can only steal.
  class thief {
  public:
    /// Wraps `d`, which must outlive this view.
    explicit thief(deque &d) noexcept : m_deque(&d) {}
    /// Any thread: steals the oldest item (see deque::steal).
    steal_result<T> steal() const noexcept { return m_deque->steal(); }
    /// Any thread: a hint (see deque::empty).
    bool empty() const noexcept { return m_deque->empty(); }

  private:
    deque *m_deque;
  };

  /// An empty deque whose ring starts with `capacity` slots (a positive power of two, checked).
  explicit deque(std::int64_t capacity = 256) {
    MAGPIE_CHECK(capacity > 0 && (capacity & (capacity - 1)) == 0,
                 "deque capacity must be a positive power of two");
    m_rings.push_back(std::make_unique<ring>(capacity));
    m_ring.store(m_rings.back().get(), std::memory_order_relaxed); // before sharing: no edge
  }

  deque(deque const &) = delete;
  deque &operator=(deque const &) = delete;

  /// Owner only. Pushes `x` at the bottom; grows the ring when full (may throw std::bad_alloc).
  void push(T x) {
    reserve_one(); // the only step that can throw
    push_reserved(x);
  }

  /// The outcome of pop(): `ok` is false when the deque was empty or a thief took the last item.
  struct pop_result {
    bool ok; ///< true if `value` holds the popped item
    T value; ///< the popped item (meaningful only when `ok`)
    /// True if an item was popped.
    explicit operator bool() const noexcept { return ok; }
  };

  /// Owner only. Makes room for one push_reserved(); may throw std::bad_alloc.
  MAGPIE_FORCEINLINE void reserve_one() {
    std::int64_t const b = m_bottom.load(std::memory_order_relaxed); // only the owner writes it
    if (b - m_top_cache >= m_ring.load(std::memory_order_relaxed)->capacity()) [[unlikely]] {
      // acquire: pairs with a thief's successful CAS on `top`, so its read of the slot is done
      // before we overwrite it.
      m_top_cache = m_top.load(std::memory_order_acquire);
      ring *r = m_ring.load(std::memory_order_relaxed); // only the owner writes it
      if (b - m_top_cache >= r->capacity()) {
        grow(r, m_top_cache, b);
      }
    }
  }

  /// Owner only. A push after reserve_one(), with no owner operation in between: cannot fail.
  MAGPIE_FORCEINLINE void push_reserved(T x) noexcept {
    std::int64_t const b = m_bottom.load(std::memory_order_relaxed); // only the owner writes it
    m_ring.load(std::memory_order_relaxed)->put(b, x);               // only the owner writes it
    // release: publishes the slot and the pushed frame's state to a thief that reads `bottom`.
    m_bottom.store(b + 1, std::memory_order_release);
  }

  /// Owner only. Pops from the bottom.
  MAGPIE_FORCEINLINE pop_result pop() noexcept {
    std::int64_t const b = m_bottom.load(std::memory_order_relaxed) - 1; // only the owner writes it
    ring *r = m_ring.load(std::memory_order_relaxed);                    // only the owner writes it
#if MAGPIE_ASYMMETRIC_FENCES
    // Store bottom, then load top, with a barrier between that pairs with the heavy fence in
    // steal(): a thief that read the old bottom has already moved top where we see it.
    m_bottom.store(b, std::memory_order_relaxed);
    detail::light_fence();
    std::int64_t const t = m_top.load(std::memory_order_relaxed); // ordered by the fence pair
#else
    // seq_cst: the store of the reserved bottom and the load of top below are both in the single
    // total order, so a thief that read the old bottom has already moved top where we see it.
    m_bottom.store(b, std::memory_order_seq_cst);
    std::int64_t const t = m_top.load(std::memory_order_seq_cst);
#endif
    if (t < b) [[likely]] { // more than one item: no thief can reach index b
      return {true, r->get(b)};
    }
    pop_result out{false, T{}};
    if (t == b) { // the last item: race the thieves for it on `top`
      // seq_cst CAS: totally ordered with the thieves' CASes; success means no thief took it.
      std::int64_t expected = t;
      if (m_top.compare_exchange_strong(expected, t + 1, std::memory_order_seq_cst,
                                        std::memory_order_relaxed)) {
        out = {true, r->get(b)};
      }
      m_top_cache = t + 1;
    }
    m_bottom.store(b + 1, std::memory_order_relaxed); // restore: the deque is empty, top == b + 1
    return out;
  }

  /// Owner only. True if the deque is empty for certain: only the owner moves bottom and top only
  /// grows, so a top seen at or past bottom (however stale) stays there until the owner pushes.
  /// A pop() would find nothing; checking first skips its store–load barrier. False may be stale.
  bool owner_sees_empty() const noexcept {
    return m_top.load(std::memory_order_relaxed) >= // a stale top is smaller: never a false "empty"
           m_bottom.load(std::memory_order_relaxed); // only the owner writes it
  }

  /// Owner only. The newest item as last seen, or T{} if the deque looks empty. A thief may take
  /// it at any moment: compare it, never dereference it (pop it first).
  T newest() const noexcept {
    if (owner_sees_empty()) {
      return T{};
    }
    std::int64_t const b = m_bottom.load(std::memory_order_relaxed); // only the owner writes it
    return m_ring.load(std::memory_order_relaxed)->get(b - 1);       // only the owner writes slots
  }

  /// Owner only. Pops the `n` newest items at once into out[0..n), newest first, if no thief can
  /// reach any of them (then true); otherwise pops nothing (false: use pop()). One store–load
  /// barrier for all n (docs/protocols.md §1, "Popping several").
  bool pop_newest(std::int64_t n, T *out) noexcept {
    std::int64_t const old_bottom = m_bottom.load(std::memory_order_relaxed); // owner only
    std::int64_t const b = old_bottom - n;
    ring *r = m_ring.load(std::memory_order_relaxed); // only the owner writes it
#if MAGPIE_ASYMMETRIC_FENCES
    m_bottom.store(b, std::memory_order_relaxed);
    detail::light_fence(); // as in pop()
    std::int64_t const t = m_top.load(std::memory_order_relaxed);
#else
    // seq_cst: as in pop(); a thief that read the old bottom read top no later than we do, so it
    // can only take an index <= t < b.
    m_bottom.store(b, std::memory_order_seq_cst);
    std::int64_t const t = m_top.load(std::memory_order_seq_cst);
#endif
    if (t < b) {
      for (std::int64_t k = 0; k < n; ++k) {
        out[k] = r->get(old_bottom - 1 - k);
      }
      return true;
    }
    // release: items remain; a thief that reads this bottom must see their slots (a relaxed
    // store would not continue the pushes' release sequence).
    m_bottom.store(old_bottom, std::memory_order_release);
    return false;
  }

  /// Any thread. Steals from the top.
  steal_result<T> steal() noexcept {
#if MAGPIE_ASYMMETRIC_FENCES
    // acquire: pairs with the CAS of the thief that last moved top (its slot read is done).
    std::int64_t t = m_top.load(std::memory_order_acquire);
    // A cheap look first: the heavy fence interrupts every running thread, so pay for it only
    // when there seems to be something to take. An "empty" here is a hint, like any steal's.
    if (t >= m_bottom.load(std::memory_order_relaxed)) {
      return {steal_status::empty, T{}};
    }
    detail::heavy_fence(); // pairs with the owner's light fence in pop()
    // acquire: pairs with push's release store of bottom (the slot and the frame behind it).
    std::int64_t const b = m_bottom.load(std::memory_order_acquire);
#else
    // seq_cst loads, top before bottom: pairs with the owner's seq_cst store of bottom in pop().
    std::int64_t t = m_top.load(std::memory_order_seq_cst);
    std::int64_t const b = m_bottom.load(std::memory_order_seq_cst); // also acquire: see push()
#endif
    if (t >= b) {
      return {steal_status::empty, T{}};
    }
    // acquire: pairs with the release in grow(), so the copied slots are visible.
    ring *r = m_ring.load(std::memory_order_acquire);
    T x = r->get(t);
    // seq_cst CAS on top: claims index t against other thieves and the owner's last-item pop.
    if (!m_top.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                       std::memory_order_relaxed)) {
      return {steal_status::lost, T{}};
    }
    return {steal_status::success, x};
  }

  /// Any thread; a hint only (exact for the owner when no thief is active).
  bool empty() const noexcept { return size() <= 0; }
  /// Any thread; a hint only: items pushed and not yet popped or stolen, as last seen.
  std::int64_t size() const noexcept {
    std::int64_t const b = m_bottom.load(std::memory_order_seq_cst); // a hint: see empty()
    std::int64_t const t = m_top.load(std::memory_order_seq_cst);
    return b - t;
  }

  /// Current ring capacity (owner only; for tests).
  std::int64_t capacity() const noexcept {
    return m_ring.load(std::memory_order_relaxed)->capacity();
  }

private:
  MAGPIE_NOINLINE ring *grow(ring *old, std::int64_t t, std::int64_t b) {
    auto fresh = std::make_unique<ring>(2 * old->capacity());
    for (std::int64_t i = t; i < b; ++i) {
      fresh->put(i, old->get(i));
    }
    ring *r = fresh.get();
    m_rings.push_back(std::move(fresh)); // old rings stay alive: a slow thief may still read one
    // release: publishes the copied slots to thieves that acquire `m_ring`.
    m_ring.store(r, std::memory_order_release);
    return r;
  }

  alignas(64) std::atomic<std::int64_t> m_top{0};
  alignas(64) std::atomic<std::int64_t> m_bottom{0};
  std::atomic<ring *> m_ring{nullptr};
  std::int64_t m_top_cache = 0;               // owner's lower bound on top
  std::vector<std::unique_ptr<ring>> m_rings; // owner only; freed with the deque
};

} // namespace magpie::core
