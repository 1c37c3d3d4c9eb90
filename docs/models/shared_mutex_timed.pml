/* docs/models/shared_mutex_timed.pml — a timed writer on a magpie::shared_mutex held by a
 * reader (include/magpie/sync/shared_mutex.hpp: grant_locked, take_out_timed, take_locked, the
 * fast paths; detail/timed_queue.hpp: timed_queue, the claim) against the reactor's timer.
 * docs/protocols.md §9.5, "Timed locks".
 *
 * A reader H holds the lock at the start and leaves at any moment (unlock_shared: the fast path
 * if no waiters bit, else under the lock, granting). A writer W locks with a deadline: it finds a
 * reader in, so under the lock it queues (tagged a writer), arms its deadline, sets the waiters
 * bit and unlocks. A second reader R arrives at any moment: the fast path (no writer, no waiters
 * bit: counted in), else under the lock take_locked (the same test) or it queues. The reactor,
 * once W's deadline is armed, claims W's node at any moment and, if it won, takes W out under the
 * lock and grants again (take_out_timed), then wakes W (timed out). A grant (a release, or the
 * take-out) scans the queue oldest first: a writer whose deadline claimed it is skipped; any other
 * writer stops the scan if readers hold the lock or were taken, else it is claimed (skipped if
 * the claim fails) and taken alone; a reader is taken. Those granted are counted in under the
 * lock and woken after it. A woken waiter holding the lock runs its section and unlocks (the
 * writer's unlock: fast path if nothing is queued, else under the lock, granting). Hand-offs are
 * for good here: the writer's revocable hand-off is mutex_heir.pml's.
 *
 * PROPERTIES (exhaustive, safety):
 *   1. Exclusion: a writer is never in its section with anyone else in theirs.
 *   2. Every waiter is woken at most once (assert) and everyone finishes: W with the lock or
 *      timed out, H, and R inside its section (checked when nothing can move any more).
 *   3. The word is consistent whenever the lock is free: waiters bit ⇔ queue non-empty.
 *
 * Variants (each must FAIL; tests/models/run_models.sh checks it):
 *   -DBUG_NO_REGRANT     the take-out only removes W and fixes the waiters bit, granting nobody:
 *                        R, queued behind W (or behind a leaving W on a free lock), is never let
 *                        in (2)
 *   -DBUG_IGNORE_CLAIM   the grant takes W without claiming it: W whose deadline won is woken
 *                        twice, or granted and timed out at once (1 or 2)
 */

#define NONE 0
#define W 1
#define R 2

bool lk;            /* the word's lock bit */
bool wbit;          /* waiters bit */
bool wr;            /* a writer holds it */
byte rd;            /* readers holding it */
byte q[2];          /* the FIFO, q[0] the oldest */
byte qlen;
bool armed;         /* W's node in the timer heap */
bool claimed;       /* W's node m_claimed */
bool w_timed_out;
byte woken[3];
bool granted[3];
byte in_w;          /* writers in their section */
byte in_r;          /* readers in their section */
bool w_done; bool h_done; bool r_done;

inline lock_()   { atomic { !lk -> lk = true } }
inline unlock_() { assert((qlen > 0) == wbit); lk = false }

inline remove_at(i) {
  if
  :: i == 0 -> q[0] = q[1]; q[1] = NONE
  :: else -> q[1] = NONE
  fi;
  qlen--
}

inline wake(x) {
  woken[x]++;
  assert(woken[x] == 1)
}

/* Under the lock: grant_locked, then the release's unlock and wakes. */
inline grant() {
  g_took_w = false; g_readers = 0; g_i = 0; g_n = 0;
  if
  :: wr -> skip
  :: else ->
     do
     :: g_i < qlen && !g_took_w ->
        if
        :: q[g_i] == W ->
           if
           :: claimed -> g_i++ /* leaving: skip it */
           :: else ->
              if
              :: rd > 0 || g_readers > 0 -> break
              :: else ->
#ifdef BUG_IGNORE_CLAIM
                 g_won = true;
#else
                 atomic { g_won = !claimed; claimed = true };
#endif
                 if
                 :: g_won -> g_took_w = true; g_got[g_n] = W; g_n++; remove_at(g_i)
                 :: else -> g_i++
                 fi
              fi
           fi
        :: else -> /* a reader */
           g_readers++; g_got[g_n] = R; g_n++; remove_at(g_i)
        fi
     :: else -> break
     od;
     if
     :: g_took_w -> wr = true
     :: else -> rd = rd + g_readers
     fi
  fi;
  wbit = qlen > 0;
  unlock_();
  if
  :: g_n > 0 -> granted[g_got[0]] = true; wake(g_got[0])
  :: else
  fi;
  if
  :: g_n > 1 -> granted[g_got[1]] = true; wake(g_got[1])
  :: else
  fi
}

proctype holder() {
  bool g_took_w; byte g_readers; byte g_i; byte g_n; byte g_got[2]; bool g_won;
  if
  :: atomic { !lk && !wbit -> rd-- } /* fast path */
  :: atomic { !lk && wbit -> lk = true }; rd--; grant()
  fi;
  h_done = true
}

proctype writer() {
  bool g_took_w; byte g_readers; byte g_i; byte g_n; byte g_got[2]; bool g_won;
  lock_();
  if
  :: !wr && rd == 0 && !wbit -> wr = true; unlock_(); goto section /* take_locked */
  :: else
  fi;
  q[qlen] = W; qlen++; wbit = true; armed = true;
  unlock_(); /* point of no return */
  (granted[W] || w_timed_out);
  if
  :: w_timed_out -> assert(!granted[W]); goto done
  :: else -> atomic { armed = false } /* cancel_timer */
  fi;
section:
  in_w++;
  assert(in_r == 0 && in_w == 1);
  in_w--;
  if
  :: atomic { !lk && !wbit -> wr = false } /* unlock's fast path */
  :: atomic { !lk && wbit -> lk = true }; wr = false; grant()
  fi;
done:
  w_done = true
}

proctype reader() {
  bool g_took_w; byte g_readers; byte g_i; byte g_n; byte g_got[2]; bool g_won;
  if
  :: atomic { !lk && !wbit && !wr -> rd++ }; goto section /* fast path */
  :: atomic { !lk && (wbit || wr) -> lk = true } ->
     if
     :: !wr && !wbit -> rd++; unlock_(); goto section /* take_locked */
     :: else -> q[qlen] = R; qlen++; wbit = true; unlock_()
     fi
  fi;
  granted[R];
section:
  in_r++;
  assert(in_w == 0);
  in_r--;
  if
  :: atomic { !lk && !wbit -> rd-- }
  :: atomic { !lk && wbit -> lk = true }; rd--; grant()
  fi;
  r_done = true
}

proctype reactor() {
  bool won; byte i;
  bool g_took_w; byte g_readers; byte g_i; byte g_n; byte g_got[2]; bool g_won;
end_r:
  atomic { armed -> armed = false; won = !claimed; claimed = true };
  if
  :: won ->
     lock_();
     if
     :: q[0] == W -> i = 0
     :: else -> assert(q[1] == W); i = 1
     fi;
     remove_at(i);
#ifdef BUG_NO_REGRANT
     wbit = qlen > 0;
     unlock_();
#else
     grant();
#endif
     w_timed_out = true;
     wake(W)
  :: else
  fi
}

proctype watcher() {
  timeout ->
  assert(w_done && h_done && r_done)
}

init {
  rd = 1; /* H holds it */
  q[0] = NONE; q[1] = NONE;
  atomic {
    run holder();
    run writer();
    run reader();
    run reactor();
    run watcher()
  }
}
