/* docs/models/mutex_heir.pml — magpie::mutex's revocable hand-off (the "heir" protocol): the
 * direct hand-off of docs/models/mutex.pml (docs/protocols.md §9.4), where a handed-off waiter
 * whose resumption job has not started yet may be revoked by a task that locks: the locker takes
 * the mutex and the heir goes back to the FRONT of the queue (no lock convoy behind a waiter that
 * is not even running). A waiter is revoked at most K times per wait, then handed irrevocably.
 *
 * PROPERTIES (exhaustive):
 *   1. Mutual exclusion: at most one task is in its critical section (assert in cs()).
 *   2. No lost wake-up: every task finishes all its rounds (safety: no invalid end state). The
 *      only valid end states are the finished tasks and the job processes idle at `end_idle`.
 *   3. Hold balance (holds[t] counts the executor holds attributed to t): never negative (asserted
 *      at every decrement); a task resumes with none (asserted at every resumption, and when it
 *      parks it has none from an earlier wait); a parked task with no job in flight and no
 *      resubmission pending holds exactly one (asserted where such a task is observed: the
 *      unlocker popping a non-revoked waiter, and a job that ends on REVOKED). At the end all are 0.
 *   4. The waiter's frame is alive wherever another party touches it: the revoker's and the
 *      unlocker's reads/CASes/stores of state[h], the resubmission, and the job all assert
 *      !running[h] (h has not resumed). The job clears `heir` under the internal lock before it
 *      resumes its task, so a locker that finds heir == h under the lock touches a parked task.
 *      A job never finds its task IDLE (no job without a hand-off, at most one job in flight:
 *      asserted job[w] == 0 before queuing one).
 *   5. Bounded unfairness: revs[t] <= K (asserted at every revocation).
 *   6. The word is consistent whenever the internal lock is released: waiters bit <=> queue
 *      non-empty => count == 0; and a pending heir => count == 0. A fast take happens only with
 *      nobody queued and no heir; a slow unlock finds no heir (the owner of a revocable hand-off
 *      is the heir, who clears it, or its revoker, who cleared it).
 *   7. FIFO except the revoked heir: each wait gets a ticket when it first queues; the waiters
 *      handed the mutex are popped in non-decreasing ticket order (a revoked heir is popped again
 *      with the same ticket), and a revoked heir has the ticket of the last pop (it is the waiter
 *      just handed the mutex, put back at the front).
 *   8. The destructor knows every job that will touch the mutex: a job that finds its task handed
 *      finds heir == w under the internal lock (asserted), also after the last revocation the
 *      bound allows (then the heir is irrevocable but still registered). The destructor fails
 *      only `heir` and the queued waiters, so an unregistered pending hand-off would reach the
 *      freed mutex in its job.
 *
 * Scope: N = 3 tasks x ROUNDS = 2 lock/unlock rounds, K = 2 (tests/models/run_models.sh also
 * runs -DK=1). K = 2 is needed for coverage: a HANDED_HELD heir exists only after a revocation
 * (an unlocker re-hands a REVOKED waiter whose job is still queued), so with K = 1 that re-hand-off
 * is always irrevocable and the revocation of a HANDED_HELD heir is unreachable; K = 2 reaches it,
 * and a second revocation of the same wait. The word is its three fields as in mutex.pml (lk, wb,
 * count); a CAS on the word or on state[t] is one atomic step, everything else one step per
 * access (sequentially consistent). Each task has its own job process (`job_of(t)`) that runs the
 * task's resumption job some time after it was queued (job[t] = 1): the executor's queue and
 * workers are abstracted to "any time later" (sleep.pml covers the pool's side). A task that
 * queues itself waits until its job resumes it (running[t] = 1).
 *   Holds: the executor counts holds per executor, not per task; holds[t] is a ghost that
 * attributes them to tasks. `resubmit` queues the job and then ends one hold; the model does both
 * in one step (the hold passes to the queued job), because the per-task count would otherwise
 * show the unhold trailing the task's resumption, which is harmless (the unhold touches only the
 * executor, which the hold keeps alive). A resubmission that an unlocker has decided under the
 * lock but not done yet is `pend[t]` (a ghost: it owns one hold).
 *   revs[t] is reset when t resumes, in the job's critical section under the internal lock (the
 * spec: "written only under lk").
 *   Destruction of the mutex (FAILED / FAILED_HELD) is left out (argued in §9.4).
 *   The code also tries the revocation before the locker parks (permits::try_revoke, reached
 * when the fast take fails and a relaxed read of m_heir names someone): the same decision under
 * the internal lock as the revoker path here, made before the locker has taken its own hold,
 * which concerns only the locker; and only a task of the heir's own executor revokes (the
 * model has one executor).
 *
 * Variants (each must FAIL; tests/models/run_models.sh checks it):
 *   -DBUG_REVOKE_NO_CAS     the revoker writes REVOKED with a plain store after reading HANDED: the
 *                           heir's job may have started in between (two owners; the first symptom
 *                           spin meets: the job, having won, finds `heir` cleared by the revoker)
 *   -DBUG_HEIR_NOT_CLEARED  the job does not clear `heir` before resuming its task: a later locker
 *                           reads the state of a task that has resumed (property 4)
 *   -DBUG_RESUBMIT_ALWAYS   unlock resubmits even when its CAS REVOKED -> HANDED_HELD succeeded:
 *                           two jobs in flight for one task (job[w] == 0 fails, or, first in spin's
 *                           search, the still-queued job has already resumed the task when the
 *                           extra resubmission touches it: property 4)
 *   -DBUG_NO_REVOKE_HOLD    the revoker takes no hold for a HANDED heir: the task is parked again
 *                           without a hold (property 3)
 *   -DBUG_EXHAUSTED_HEIR_UNTRACKED  a hand-off after the K-th revocation does not set `heir` (the
 *                           first version of the code did; a destroyed mutex was then touched by
 *                           the job): property 8
 */

#define N 3
#define ROUNDS 2
#ifndef K
#define K 2
#endif
#define NONE 255

/* The checks that a pending heir never coexists with a free mutex or an unlock (property 6) are
 * off in -DBUG_HEIR_NOT_CLEARED, so that the run shows the consequence spelled out in property 4:
 * a locker touching the state of a task that has resumed. */
#ifdef BUG_HEIR_NOT_CLEARED
#define HEIR_IS(x) true
#else
#define HEIR_IS(x) (heir == (x))
#endif

/* state[t] */
#define IDLE 0
#define HANDED 1
#define HANDED_HELD 2
#define REVOKED 3

bit lk = 0;        /* the lock_word's lock bit */
bit wb = 0;        /* waiters bit */
byte count = 1;    /* free permits: 1 = unlocked, 0 = held */
byte q[N];         /* the waiter queue (task ids): pop at the front, push at either end */
byte qhead = 0;
byte qlen = 0;
byte heir = NONE;  /* the waiter last handed the mutex while revocable (guarded by lk) */
byte state[N];     /* the waiter's atomic state (IDLE = 0 initially), CAS only */
byte revs[N];      /* revocations in the current wait (written under lk) */
bit job[N];        /* the task's resumption job is queued in the executor */
short holds[N];    /* ghost: executor holds attributed to the task */
bit pend[N];       /* ghost: an unlocker decided to resubmit the task, not done yet */
bit running[N];    /* ghost: the task runs (not parked); set to 1 in init */
byte ticket[N];    /* ghost: the ticket of the task's current wait (FIFO check) */
byte next_ticket = 1;
byte last_served = 0;
byte in_cs = 0;
byte finished = 0;

inline internal_lock() { atomic { lk == 0 -> lk = 1 } }

/* Checked whenever the internal lock is released (property 6). */
inline internal_unlock() {
  atomic {
    assert((wb == 1) == (qlen > 0));
    assert(qlen == 0 || count == 0);
    assert(HEIR_IS(NONE) || count == 0);
    lk = 0
  }
}

inline unhold(t) {
  holds[t]--;
  assert(holds[t] >= 0)
}

inline cs() {
  in_cs++;
  assert(in_cs == 1);
  in_cs--
}

/* The resumption job of task w (detail/waiter.hpp: the waiter's job), queued by a resubmission. */
proctype job_of(byte w) {
  byte s;
  bit ok;
end_idle:
  do
  :: job[w] == 1 ->
    job[w] = 0; /* a worker pops the job: it runs */
    do
    :: atomic { assert(running[w] == 0); s = state[w] };
       if
       :: s == REVOKED ->
         atomic {
           assert(running[w] == 0);
           if
           :: state[w] == REVOKED -> state[w] = IDLE; ok = 1
           :: else -> ok = 0
           fi;
           /* property 3: parked again, no job in flight, no resubmission pending: the revoker's
            * hold (a pending resubmission would have had to queue this job first) */
           if :: ok -> assert(holds[w] == 1 && pend[w] == 0 && job[w] == 0) :: else -> skip fi
         };
         if
         :: ok -> break /* done: the task stays parked in the queue */
         :: else -> skip
         fi
       :: s == HANDED || s == HANDED_HELD ->
         atomic {
           assert(running[w] == 0);
           if
           :: state[w] == s -> state[w] = IDLE; ok = 1
           :: else -> ok = 0
           fi
         };
         if
         :: ok ->
           internal_lock();
           assert(heir == w); /* property 8 */
#ifndef BUG_HEIR_NOT_CLEARED
           if
           :: heir == w -> heir = NONE
           :: else -> skip
           fi;
#endif
           revs[w] = 0; /* a new wait starts fresh */
           internal_unlock();
           if
           :: s == HANDED_HELD -> unhold(w)
           :: else -> skip
           fi;
           atomic { assert(holds[w] == 0); running[w] = 1 }; /* resume w: it holds the mutex */
           break
         :: else -> skip /* retry: the revoker or the unlocker changed the state first */
         fi
       :: else -> assert(false) /* IDLE: a job without a hand-off */
       fi
    od
  od
}

proctype task(byte me) {
  byte r = 0;
  bit took;
  bit ok;
  bit resub;
  byte h;
  byte s;
  byte w;
  do
  :: r == ROUNDS -> break
  :: r < ROUNDS ->
    /* ---- lock: the fast path (unchanged) ------------------------------------------------- */
    took = 0;
    atomic {
      if
      :: lk == 0 && count >= 1 -> count--; took = 1; assert(qlen == 0 && HEIR_IS(NONE))
      :: else -> skip
      fi
    }
    if
    :: took == 0 ->
      /* hold, park (the ghost: from here on the task's frame is only kept, not run) */
      atomic { assert(holds[me] == 0); holds[me]++; running[me] = 0 };
      internal_lock();
      if
      :: count >= 1 ->
        assert(qlen == 0 && HEIR_IS(NONE)); /* no barging */
        count--;
        internal_unlock();
        unhold(me);
        running[me] = 1; /* resume_here */
        took = 1
      :: else -> skip
      fi;
      if
      :: took == 0 && heir != NONE && revs[heir] < K ->
        /* revoke the heir if its job has not started */
        h = heir;
        atomic { assert(running[h] == 0); s = state[h] }; /* load */
        assert(s != REVOKED);
#ifndef BUG_NO_REVOKE_HOLD
        if
        :: s == HANDED -> holds[h]++ /* it will be parked again: its hold */
        :: else -> skip
        fi;
#endif
#ifdef BUG_REVOKE_NO_CAS
        atomic {
          assert(running[h] == 0);
          if
          :: s == HANDED || s == HANDED_HELD -> state[h] = REVOKED; ok = 1
          :: else -> ok = 0
          fi
        };
#else
        atomic {
          assert(running[h] == 0);
          if
          :: (s == HANDED || s == HANDED_HELD) && state[h] == s -> state[h] = REVOKED; ok = 1
          :: else -> ok = 0
          fi
        };
#endif
        if
        :: ok ->
          revs[h]++;
          assert(revs[h] <= K);        /* property 5 */
          heir = NONE;
          assert(ticket[h] == last_served); /* property 7: the waiter just handed the mutex */
          qhead = (qhead + N - 1) % N; /* back at the FRONT of the queue */
          q[qhead] = h;
          qlen++;
          wb = 1;
          internal_unlock();
          /* t holds the mutex (count stays 0) */
          unhold(me);
          running[me] = 1;             /* resume_here */
          took = 1
        :: else ->
#ifndef BUG_NO_REVOKE_HOLD
          if
          :: s == HANDED -> unhold(h)  /* undo */
          :: else -> skip
          fi
#else
          skip
#endif
        fi
      :: else -> skip
      fi;
      if
      :: took == 0 ->
        /* enqueue at the back (as before), then wait to be resumed */
        ticket[me] = next_ticket; /* ghost */
        next_ticket++;
        q[(qhead + qlen) % N] = me;
        qlen++;
        wb = 1;
        internal_unlock();
        /* point of no return: the job resumes the task, holding the mutex */
        running[me] == 1
      :: else -> skip
      fi
    :: else -> skip
    fi;
    assert(holds[me] == 0 && revs[me] == 0 && state[me] == IDLE);
    cs();
    /* ---- unlock ----------------------------------------------------------------------------- */
    took = 0;
    atomic {
      if
      :: lk == 0 && wb == 0 -> assert(count == 0 && HEIR_IS(NONE)); count = 1; took = 1
      :: else -> skip
      fi
    }
    if
    :: took == 0 ->
      internal_lock();
      assert(count == 0);    /* unlock of a held mutex */
      assert(HEIR_IS(NONE));  /* the owner is not a pending heir */
      if
      :: qlen > 0 ->         /* hand off to the oldest waiter; count stays 0 */
        w = q[qhead];
        qhead = (qhead + 1) % N;
        qlen--;
        assert(ticket[w] >= last_served); /* property 7 */
        last_served = ticket[w];
        if
        :: qlen == 0 -> wb = 0
        :: else -> skip
        fi;
#ifdef BUG_EXHAUSTED_HEIR_UNTRACKED
        if
        :: revs[w] < K -> heir = w
        :: else -> skip
        fi;
#else
        heir = w; /* irrevocable once revs[w] == K (the revoker checks), but registered */
#endif
        atomic {
          assert(running[w] == 0);
          if
          :: state[w] == REVOKED -> state[w] = HANDED_HELD; resub = 0 /* its job is still queued */
          :: else -> resub = 1
          fi
        };
        if
        :: resub ->
          /* it was IDLE: no job in flight, parked with its one hold */
          atomic {
            assert(running[w] == 0);
            assert(holds[w] == 1 && job[w] == 0 && pend[w] == 0); /* property 3 */
            state[w] = HANDED;
            pend[w] = 1
          }
        :: else -> skip
        fi;
#ifdef BUG_RESUBMIT_ALWAYS
        resub = 1;
        pend[w] = 1;
#endif
        internal_unlock();
        if
        :: resub ->          /* resubmit, after the last touch of the mutex */
          atomic {
            assert(running[w] == 0);
            assert(job[w] == 0);   /* at most one job in flight */
            job[w] = 1;
            pend[w] = 0;
            holds[w]--;            /* resubmit ends the hold (it passes to the queued job) */
            assert(holds[w] >= 0)
          }
        :: else -> skip
        fi
      :: else ->
        count = 1;
        internal_unlock()
      fi
    :: else -> skip
    fi;
    r++
  od;
  finished++
}

init {
  byte i;
  atomic {
    for (i : 0 .. N - 1) { running[i] = 1 }
    for (i : 0 .. N - 1) { run task(i); run job_of(i) }
  }
  finished == N;
  assert(count == 1 && qlen == 0 && wb == 0 && lk == 0 && HEIR_IS(NONE));
  for (i : 0 .. N - 1) {
    assert(holds[i] == 0 && job[i] == 0 && pend[i] == 0 && state[i] == IDLE && revs[i] == 0)
  }
}
