/* docs/models/waiter.pml — waiting on a primitive: the waiter skeleton (include/magpie/sync/
 * detail/waiter.hpp: wait_awaitable::await_suspend) with magpie::event (include/magpie/sync/
 * event.hpp: set, try_pass, pass_or_enqueue; detail/lock_word.hpp: unlock_with).
 *
 * The event's word holds a lock bit, the flag, a "queue not empty" bit and the address of a lone
 * waiter; the model keeps them as four variables changed together in one atomic step wherever
 * the code changes the word by one CAS.
 *
 * Three tasks (automatic: two) wait on one event, each on its own worker (0, 1, 2); setter
 * threads set it; an executor worker (3) runs resubmitted tasks. A waiter: fast path (flag set? pass; automatic:
 * consume it), else hold + park (the task takes its worker's chain), then ONE CAS from "nothing"
 * (no lock, no flag, nobody queued, no lone waiter) to "me, alone in the word" (point of no
 * return), or else under the event's lock: re-check the flag (pass: resume_here, its own worker
 * takes the chain back), or move the lone waiter (if any) into the queue, queue itself, and
 * unlock with the queued bit set and no lone waiter (point of no return). A setter: flag set?
 * done. Else ONE CAS from "unlocked, nobody queued" that publishes the flag and takes the lone
 * waiter if there is one (automatic: a lone waiter consumes the set, the flag stays clear); or
 * else under the lock take every waiter (manual) or the oldest (automatic), publish the flag
 * (manual, or automatic with nobody taken), the queued bit, and unlock IN ONE STEP; then wake
 * the taken waiters (resubmit to the executor). Manual: one setter, and waiter 0, once it has
 * passed by any path, destroys the event (the "signal, then the waiter frees the event"
 * pattern): three waiters, so that two can fill the queue before waiter 0 arrives. Automatic
 * (-DAUTO): two waiters, two setters, nobody destroys the event.
 *
 * PROPERTIES (exhaustive, safety):
 *   1. No lost wake-up. Manual: every waiter passes (the only valid end). Automatic: when all
 *      is quiet, the flag is never set while a waiter still waits, some set took effect
 *      (passes + flag >= 1), and no set released two waiters (passes <= sets).
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
 *   -DBUG_SET_IGNORES_QUEUED   set()'s CAS publishes the flag while waiters are queued (it does
 *                              not look at the queued bit): they are never woken (1)
 *   -DBUG_SOLO_DROPPED         the second waiter queues itself but does not move the lone
 *                              waiter from the word into the queue: that one is lost (1)
 * The automatic event (-DAUTO) is checked with BUG_NO_RECHECK, BUG_SET_IGNORES_QUEUED and
 * BUG_SOLO_DROPPED too; BUG_PUBLISH_THEN_UNLOCK needs the manual event's destroying waiter 0 (a
 * waiter that arrives late passes on its fast path inside the setter's window).
 */

#define PARKED 9   /* chain owner: the parked task */
#ifdef AUTO
#define N 2        /* waiters */
#define ANY_QUEUED (queue[0] || queue[1])
#define SETTERS 2
#else
#define N 3        /* waiters */
#define ANY_QUEUED (queue[0] || queue[1] || queue[2])
#define SETTERS 1
#endif

/* the event's word */
bit lock = 0;
bit flag = 0;
bit queued = 0;    /* the queue is not empty */
byte solo = 0;     /* the lone waiter: 0 none, i + 1 waiter i */

bit queue[N];      /* waiter i is in the event's FIFO */
bit woken[N];      /* resubmitted to the executor */
byte chain[N];     /* holder of waiter i's chain: its worker i, PARKED, or the executor (3) */
byte resumed[N];
bit passed[N];
byte passes = 0;
byte sets_done = 0;
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
  passes++;
#ifndef AUTO
  if
  :: who == 0 -> destroyed = 1 /* waiter 0 frees the event as soon as its wait returns */
  :: else -> skip
  fi
#endif
}

/* try_pass: manual reads the flag; automatic consumes it by CAS */
inline try_pass(seen) {
#ifdef AUTO
  atomic { if :: flag -> flag = 0; seen = 1 :: else -> seen = 0 fi }
#else
  seen = flag
#endif
}

proctype waiter(byte i) {
  bit seen;
  bit alone;
  chain[i] = i;
  try_pass(seen); /* try_now: the fast path */
  if
  :: seen -> pass(i)
  :: else ->
#ifndef BUG_ENQUEUE_BEFORE_PARK
    chain[i] = PARKED; /* hold() + park() */
#endif
    /* pass_or_enqueue: one CAS from "nothing" into the word */
    atomic {
      if
      :: lock == 0 && flag == 0 && queued == 0 && solo == 0 -> solo = i + 1; alone = 1
      :: else -> alone = 0
      fi
    }
    if
    :: alone ->
#ifdef BUG_ENQUEUE_BEFORE_PARK
      chain[i] = PARKED; /* too late: a setter may have woken us already */
#endif
      skip /* point of no return: continue_after(worker) */
    :: else ->
      acquire_lock();
#ifdef BUG_NO_RECHECK
      seen = 0;
#else
      try_pass(seen); /* re-checked under the lock */
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
#ifndef BUG_SOLO_DROPPED
        if
        :: solo != 0 -> queue[solo - 1] = 1 /* the older one, first */
        :: else -> skip
        fi;
#endif
        queue[i] = 1;
        atomic { solo = 0; queued = 1; lock = 0 } /* unlock_with */
#ifdef BUG_ENQUEUE_BEFORE_PARK
        chain[i] = PARKED; /* too late: a setter may have woken us already */
#endif
        skip /* point of no return: continue_after(worker) */
      fi
    fi
  fi
}

proctype setter() {
  bit take[N];
  bit fast;
  bit any;
  byte k;
  byte lone;
  event_access();
  if
  :: flag -> goto out /* set() fast path: already set */
  :: else -> skip
  fi;
  /* one CAS from "unlocked, nobody queued": publish the flag, or take the lone waiter */
  atomic {
    if
#ifdef BUG_SET_IGNORES_QUEUED
    :: lock == 0 && flag == 0 ->
#else
    :: lock == 0 && flag == 0 && queued == 0 ->
#endif
      event_access();
      lone = solo;
      solo = 0;
#ifdef AUTO
      flag = (lone == 0);
#else
      flag = 1;
#endif
      fast = 1
    :: else -> fast = 0
    fi
  }
  if
  :: fast ->
    if
    :: lone != 0 -> woken[lone - 1] = 1 /* touches the waiter, never the event */
    :: else -> skip
    fi;
    goto out
  :: else -> skip
  fi;
  acquire_lock();
  event_access();
  any = 0;
  if
  :: solo != 0 -> take[solo - 1] = 1; any = 1 /* the lone waiter (the queue is empty) */
  :: else -> skip
  fi;
  k = 0;
  do
#ifdef AUTO
  :: k < N && any == 0 && queue[k] -> take[k] = 1; queue[k] = 0; any = 1; k++ /* one only */
  :: k < N && (any == 1 || queue[k] == 0) -> k++
#else
  :: k < N -> if :: queue[k] -> take[k] = 1; queue[k] = 0; any = 1 :: else -> skip fi; k++
#endif
  :: else -> break
  od;
#ifdef BUG_PUBLISH_THEN_UNLOCK
  flag = 1;
  event_access();
  solo = 0;
  queued = ANY_QUEUED;
  lock = 0;
#else
  atomic { /* lock_word::unlock_with: one CAS */
    event_access();
#ifdef AUTO
    flag = flag || (any == 0);
#else
    flag = 1;
#endif
    solo = 0;
    queued = ANY_QUEUED;
    lock = 0
  }
#endif
  k = 0;
  do /* release_all: touches the waiters, never the event */
  :: k < N -> if :: take[k] -> woken[k] = 1 :: else -> skip fi; k++
  :: else -> break
  od;
out:
  sets_done++
}

proctype executor() {
end_exec:
  do
  :: atomic { woken[0] == 1 -> woken[0] = 0 }; adopt(0, 3); pass(0)
  :: atomic { woken[1] == 1 -> woken[1] = 0 }; adopt(1, 3); pass(1)
#ifndef AUTO
  :: atomic { woken[2] == 1 -> woken[2] = 0 }; adopt(2, 3); pass(2)
#endif
  od
}

init {
  atomic {
    run waiter(0); run waiter(1); run executor();
#ifndef AUTO
    run waiter(2);
#endif
    run setter();
#ifdef AUTO
    run setter();
#endif
  }
#ifdef AUTO
  /* Quiet: every process done or blocked (the executor with nothing woken). */
  timeout;
  assert(sets_done == SETTERS);
  /* property 1: never a set flag with a waiter still waiting; nothing lost */
  assert(!(flag && passes < N));
  assert(passes + flag >= 1);
  assert(passes <= SETTERS)
#else
  passed[0] == 1 && passed[1] == 1 && passed[2] == 1 /* blocks forever (invalid end state) on a lost wake-up */
#endif
}
