/* docs/models/deque.pml — the Chase–Lev deque of include/magpie/core/deque.hpp, across growth.
 *
 * PROPERTY (safety, exhaustive): every pushed item is taken exactly once — by the owner's pop or
 * by one thief's steal — and no thief ever takes a slot that holds no live item, while the ring
 * grows under the thieves' feet.
 *
 * Scope: one owner pushes items 1..N_ITEMS, interleaving pops nondeterministically, then pops
 * until the deque is empty; two thieves steal concurrently. The ring starts with capacity 2, so
 * the third item in flight forces grow() (capacity 4); old rings stay readable (as in the code).
 * Each shared-memory access is one Promela step; spin explores every interleaving, i.e. the model
 * is sequentially consistent. That matches the code's seq_cst operations on top and bottom (the
 * accesses the proof rests on, see docs/protocols.md §1); the relaxed slot accesses and the
 * release/acquire on the ring pointer are modelled as SC, so the model does not check that those
 * weaker orders suffice (ThreadSanitizer and the stress suite cover them).
 *
 * Mapping to the code: see docs/models/README.md.
 *
 * Variants (each must FAIL; tests/models/run_models.sh checks it):
 *   -DBUG_POP_NO_CAS    the owner takes the last item without racing the thieves on top
 *   -DBUG_STEAL_NO_CAS  a thief claims its index with a plain store instead of a CAS
 *   -DREACH_GROWTH      not a bug: fails iff grow() is reachable (shows growth is covered)
 */

#define N_ITEMS 3
#define CAP0 2
#define CAP1 4

int top = 0;             /* deque::m_top */
int bottom = 0;          /* deque::m_bottom */
bit ring = 0;            /* deque::m_ring: 0 = the first ring (CAP0), 1 = the grown one (CAP1) */
byte ring0[CAP0];        /* slots of the first ring (0 = never written) */
byte ring1[CAP1];        /* slots of the grown ring */
byte taken[N_ITEMS + 1]; /* how many times item i was taken */
bit owner_done = 0;
byte thieves_done = 0;

inline cap(r, c) {
  if
  :: r == 0 -> c = CAP0
  :: else -> c = CAP1
  fi
}

inline put(r, i, x) {
  if
  :: r == 0 -> ring0[i % CAP0] = x
  :: else -> ring1[i % CAP1] = x
  fi
}

inline get(r, i, x) {
  if
  :: r == 0 -> x = ring0[i % CAP0]
  :: else -> x = ring1[i % CAP1]
  fi
}

inline take(x) {
  assert(x >= 1 && x <= N_ITEMS); /* a real item, not an empty or stale slot */
  taken[x]++;
  assert(taken[x] == 1)           /* never taken twice */
}

/* deque::grow: copy the live indices [t, b) into the larger ring, then publish it. */
inline grow(t, b) {
  assert(ring == 0); /* N_ITEMS <= CAP1: one growth suffices */
#ifdef REACH_GROWTH
  assert(false); /* sanity variant: growth is reachable, so the model does exercise it */
#endif
  k = t;
  do
  :: k < b -> ring1[k % CAP1] = ring0[k % CAP0]; k++
  :: else -> break
  od;
  ring = 1 /* release store of m_ring */
}

/* deque::pop; sets ok if it took an item */
inline pop() {
  b = bottom - 1;
  r = ring;
  bottom = b; /* seq_cst store */
  t = top;    /* seq_cst load */
  ok = 0;
  if
  :: t < b -> get(r, b, x); take(x); ok = 1 /* more than one item: no thief can reach b */
  :: t == b -> /* the last item: race the thieves for it */
#ifdef BUG_POP_NO_CAS
    get(r, b, x); take(x); ok = 1; top = t + 1;
#else
    atomic { /* seq_cst CAS on top */
      if
      :: top == t -> top = t + 1; ok = 1
      :: else -> skip
      fi
    };
    if
    :: ok -> get(r, b, x); take(x)
    :: else -> skip
    fi;
#endif
    top_cache = t + 1;
    bottom = b + 1
  :: t > b -> bottom = b + 1 /* empty: restore */
  fi
}

/* deque::push(x) (push_reserved after reserve_one is the same sequence) */
inline push(y) {
  b = bottom;
  r = ring;
  cap(r, c);
  if
  :: b - top_cache >= c ->
    top_cache = top; /* acquire reload of top */
    if
    :: b - top_cache >= c -> grow(top_cache, b); r = ring
    :: else -> skip
    fi
  :: else -> skip
  fi;
  put(r, b, y);
  bottom = b + 1 /* release: publishes the slot */
}

proctype owner() {
  int b, t, c, k, top_cache = 0;
  byte x, next = 1, r;
  bit ok;

  do /* push every item, with pops interleaved anywhere */
  :: next <= N_ITEMS -> push(next); next++
  :: next <= N_ITEMS -> pop()
  :: next > N_ITEMS -> break
  od;
  do /* then pop until empty */
  :: pop();
    if
    :: ok -> skip
    :: else -> break
    fi
  od;
  owner_done = 1
}

proctype thief() {
  int t, b;
  byte x, r;
  bit ok;

end_steal:
  do
  :: owner_done -> break
  :: !owner_done ->
    /* deque::steal */
    t = top;    /* seq_cst load, top first */
    b = bottom; /* then bottom */
    if
    :: t < b ->
      r = ring; /* acquire */
      get(r, t, x);
#ifdef BUG_STEAL_NO_CAS
      top = t + 1; ok = 1;
#else
      atomic { /* seq_cst CAS on top */
        if
        :: top == t -> top = t + 1; ok = 1
        :: else -> ok = 0
        fi
      };
#endif
      if
      :: ok -> take(x)
      :: else -> skip
      fi
    :: else -> skip /* empty */
    fi
  od;
  thieves_done++
}

init {
  atomic {
    run owner();
    run thief();
    run thief();
  }
  (owner_done && thieves_done == 2);
  /* every item taken exactly once */
  assert(taken[1] == 1 && taken[2] == 1 && taken[3] == 1)
}
