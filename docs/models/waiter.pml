/* docs/models/waiter.pml — waiting on a primitive: the waiter skeleton (include/magpie/sync/
 * detail/waiter.hpp: wait_awaitable::await_suspend) with magpie::event (include/magpie/sync/
 * event.hpp: set, try_pass, pass_or_enqueue; detail/lock_word.hpp: unlock_with).
 *
 * Two tasks wait on one manual-reset event, each on its own worker (0 and 1); a setter thread
 * sets it; an executor worker (2) runs resubmitted tasks. A waiter: fast path (flag set? pass),
 * else hold + park (the task takes its worker's chain), then under the event's lock re-check the
 * flag: pass (resume_here: its own worker takes the chain back) or enqueue and unlock (point of
 * no return). The setter: lock, take every waiter, publish the flag and unlock IN ONE STEP (the
 * lock word), then wake each taken waiter (resubmit to the executor). Waiter 0, once it has passed
 * by any path, destroys the event (the "signal, then the waiter frees the event" pattern).
 *
 * PROPERTIES (exhaustive, safety):
 *   1. No lost wake-up: both waiters pass (the only valid end).
 *   2. Each waiter's task resumes exactly once, and whoever resumes it owns its chain (the task
 *      holds the chain when adopted: it parked before it could be woken).
 *   3. The setter never touches the event after waiter 0 could have destroyed it (the waiters'
 *      own accesses are not checked: destroying an event that others still wait on is a misuse).
 *
 * Variants (each must FAIL; tests/models/run_models.sh checks it):
 *   -DBUG_ENQUEUE_BEFORE_PARK  the waiter enqueues (and unlocks) before parking: the executor can
 *                              adopt the chain while the waiter's worker still holds it (2)
 *   -DBUG_NO_RECHECK           the waiter enqueues on the strength of its fast-path check, without
 *                              re-checking the flag under the lock: lost wake-up (1)
 *   -DBUG_PUBLISH_THEN_UNLOCK  set() publishes the flag, then unlocks in a second step: waiter 0
 *                              passes on its fast path and frees the event in between (3)
 */

#define N 2        /* waiters */
#define PARKED 9   /* chain owner: the parked task */

bit lock = 0;
bit flag = 0;
bit queue[N];      /* waiter i is in the event's FIFO */
bit woken[N];      /* resubmitted to the executor */
byte chain[N];     /* holder of waiter i's chain: its worker i, PARKED, or the executor (2) */
byte resumed[N];
bit passed[N];
bit destroyed = 0;

inline acquire_lock() { atomic { lock == 0 -> lock = 1 } }

inline event_access() { assert(destroyed == 0) } /* property 3 */

inline adopt(who, by) {
  assert(chain[who] == PARKED); /* property 2 */
  chain[who] = by;
  resumed[who]++;
  assert(resumed[who] == 1)
}

inline pass(who) {
  passed[who] = 1;
  if
  :: who == 0 -> destroyed = 1 /* waiter 0 frees the event as soon as its wait returns */
  :: else -> skip
  fi
}

proctype waiter(byte i) {
  bit seen;
  chain[i] = i;
  seen = flag; /* try_now: the fast path (acquire load) */
  if
  :: seen -> pass(i)
  :: else ->
#ifndef BUG_ENQUEUE_BEFORE_PARK
    chain[i] = PARKED; /* hold() + park() */
#endif
    acquire_lock();
#ifdef BUG_NO_RECHECK
    seen = 0;
#else
    seen = flag; /* pass_or_enqueue re-checks under the lock */
#endif
    if
    :: seen ->
      lock = 0;
#ifdef BUG_ENQUEUE_BEFORE_PARK
      chain[i] = PARKED;
#endif
      adopt(i, i); /* resume_here: never left */
      pass(i)
    :: else ->
      queue[i] = 1;
      lock = 0;
#ifdef BUG_ENQUEUE_BEFORE_PARK
      chain[i] = PARKED; /* too late: a setter may have woken us already */
#endif
      skip /* point of no return: continue_after(worker) */
    fi
  fi
}

proctype setter() {
  bit take[N];
  byte k;
  event_access();
  if
  :: flag -> goto out /* set() fast path: already set */
  :: else -> skip
  fi;
  acquire_lock();
  event_access();
  k = 0;
  do
  :: k < N -> take[k] = queue[k]; queue[k] = 0; k++
  :: else -> break
  od;
#ifdef BUG_PUBLISH_THEN_UNLOCK
  flag = 1;
  event_access();
  lock = 0;
#else
  atomic { event_access(); flag = 1; lock = 0 } /* lock_word::unlock_with: one CAS */
#endif
  k = 0;
  do /* release_all: touches the waiters, never the event */
  :: k < N -> if :: take[k] -> woken[k] = 1 :: else -> skip fi; k++
  :: else -> break
  od;
out:
  skip
}

proctype executor() {
  byte k;
end_exec:
  do
  :: atomic { woken[0] == 1 -> woken[0] = 0 }; adopt(0, 2); pass(0)
  :: atomic { woken[1] == 1 -> woken[1] = 0 }; adopt(1, 2); pass(1)
  od
}

init {
  atomic { run waiter(0); run waiter(1); run setter(); run executor() }
  passed[0] == 1 && passed[1] == 1 /* blocks forever (invalid end state) on a lost wake-up */
}
