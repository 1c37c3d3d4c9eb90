/* docs/models/mutex.pml — magpie::mutex's direct hand-off (include/magpie/sync/detail/permits.hpp:
 * try_take, take_or_enqueue, give; include/magpie/sync/mutex.hpp; detail/waiter.hpp's
 * wait_awaitable), docs/protocols.md §9.4.
 *
 * PROPERTIES (exhaustive):
 *   1. Mutual exclusion: at most one task is in its critical section (assert in cs()).
 *   2. No lost wake-up: every task finishes all its rounds (safety: no invalid end state — a
 *      task queued forever while nobody holds the mutex would be one).
 *   3. No barging: a lock that takes the mutex without queueing (the CAS fast path, or the
 *      decision under the internal lock) does so only while nobody is queued; and the waiter
 *      handed the mutex is the oldest in the queue (FIFO, by construction of the queue array).
 *   4. The word stays consistent whenever the internal lock is free: waiters bit <=> queue
 *      non-empty => count == 0 (asserted after every release of the internal lock).
 *
 * Scope: N tasks, each locking and unlocking ROUNDS times. The word is modelled as its three
 * fields (lk = the lock_word's lock bit, wb = waiters bit, count = free permits, 0 or 1); a CAS on
 * the word is one atomic step that compares all three. The queue is an array with head and
 * length. A task's suspension (hold, park) is abstracted: after take_or_enqueue returns false the
 * task waits until `woken[me]` (the resubmission that hand_to() performs); the executor's queue
 * is assumed correct (docs/models/sleep.pml covers the pool's side). Every access is one step
 * (sequentially consistent model; the code's release/acquire orders are argued in §9.4).
 *
 * Variants (each must FAIL; tests/models/run_models.sh checks it):
 *   -DBUG_RELEASE_FIRST  unlock frees the mutex (count = 1) before it dequeues and wakes a waiter:
 *                        a fast-path locker barges in and the woken waiter holds it too (the
 *                        word checks of properties 3 and 4 are off in this variant, so that spin
 *                        reports the consequence itself: two tasks in the critical section)
 *   -DBUG_NO_WAITERS_BIT the fast unlock ignores the waiters bit: it frees the mutex while a
 *                        waiter is queued, which then sleeps forever (lost wake-up)
 *   -DBUG_FAST_IGNORES_LOCK  the fast-path CAS does not require the internal lock to be free: it
 *                        races with a decision taken under the lock (two owners)
 */

#define N 3
#define ROUNDS 2

bit lk = 0;       /* the lock_word's lock bit */
bit wb = 0;       /* waiters bit */
byte count = 1;   /* free permits: 1 = unlocked, 0 = held */
byte q[N];        /* the waiter queue (task ids), FIFO */
byte qhead = 0;
byte qlen = 0;
bit woken[N];     /* the task's resubmission: it now holds the mutex */
byte in_cs = 0;
byte finished = 0;

inline internal_lock() { atomic { lk == 0 -> lk = 1 } }

/* Checked whenever the internal lock is released (property 4). */
inline internal_unlock() {
  atomic {
#ifndef BUG_RELEASE_FIRST /* off there, so that the run shows the consequence: two owners */
    assert((wb == 1) == (qlen > 0));
    assert(qlen == 0 || count == 0);
#endif
    lk = 0
  }
}

inline cs() {
  in_cs++;
  assert(in_cs == 1);
  in_cs--
}

proctype task(byte me) {
  byte r = 0;
  bit took;
  byte w;
  do
  :: r == ROUNDS -> break
  :: r < ROUNDS ->
    /* ---- lock: await_ready = try_take() -------------------------------------------------- */
    took = 0;
    atomic {
#ifdef BUG_FAST_IGNORES_LOCK
      if
      :: count >= 1 -> count--; took = 1; assert(qlen == 0)
      :: else -> skip
      fi
#else
      if
      :: lk == 0 && count >= 1 -> count--; took = 1;
#ifndef BUG_RELEASE_FIRST
        assert(qlen == 0)
#endif
      :: else -> skip
      fi
#endif
    }
    /* (try_take's own under-the-lock branch when lk is set is the same decision as below) */
    if
    :: took == 0 ->
      /* await_suspend: hold, park, then take_or_enqueue under the internal lock */
      internal_lock();
      if
      :: count >= 1 ->
#ifndef BUG_RELEASE_FIRST
        assert(qlen == 0); /* no barging: the mutex is free only while nobody waits */
#endif
        count--;
        internal_unlock()  /* taken: resume_here */
      :: else ->
        q[(qhead + qlen) % N] = me;
        qlen++;
        wb = 1;
        internal_unlock();
        /* point of no return: wait for the hand-off */
        woken[me] == 1;
        woken[me] = 0
      fi
    :: else -> skip
    fi;
    cs();
    /* ---- unlock: give(1) ------------------------------------------------------------------- */
#ifdef BUG_RELEASE_FIRST
    count++;
    internal_lock();
    if
    :: qlen > 0 ->
      w = q[qhead]; qhead = (qhead + 1) % N; qlen--;
      if :: qlen == 0 -> wb = 0 :: else -> skip fi;
      lk = 0;
      woken[w] = 1
    :: else -> lk = 0
    fi;
#else
    took = 0;
    atomic {
  #ifdef BUG_NO_WAITERS_BIT
      if
      :: lk == 0 -> assert(count == 0); count = 1; took = 1
      :: else -> skip
      fi
  #else
      if
      :: lk == 0 && wb == 0 -> assert(count == 0); count = 1; took = 1
      :: else -> skip
      fi
  #endif
    }
    if
    :: took == 0 ->
      internal_lock();
      assert(count == 0); /* the MAGPIE_CHECK: unlock of a held mutex */
      if
      :: qlen > 0 ->   /* direct hand-off to the oldest waiter; count stays 0 */
        w = q[qhead]; qhead = (qhead + 1) % N; qlen--;
        if :: qlen == 0 -> wb = 0 :: else -> skip fi;
        internal_unlock();
        woken[w] = 1   /* hand_to(w): after the last touch of the word */
      :: else ->
        count = 1;
        internal_unlock()
      fi
    :: else -> skip
    fi;
#endif
    r++
  od;
  finished++
}

init {
  byte i;
  atomic {
    for (i : 0 .. N - 1) { run task(i) }
  }
  finished == N;
#ifndef BUG_RELEASE_FIRST
  assert(count == 1 && qlen == 0 && wb == 0 && lk == 0)
#endif
}
