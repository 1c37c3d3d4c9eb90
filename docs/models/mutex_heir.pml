/* docs/models/mutex_heir.pml — the revocable hand-off (the "heir" protocol) of magpie::mutex and,
 * with -DPERMITS=2, of magpie::semaphore: the direct hand-off of docs/models/mutex.pml
 * (docs/protocols.md §9.4), where a handed-off waiter whose resumption job has not started yet
 * may be revoked by a task that locks: the locker takes the permit and the heir goes back to the
 * FRONT of the queue (no lock convoy behind a waiter that is not even running). A waiter is
 * revoked at most K times per wait, then handed irrevocably. "Lock" and "unlock" below are the
 * semaphore's acquire and release(1) when PERMITS > 1.
 *
 * With PERMITS > 1 there is at most one heir too: a release that pops a waiter while another heir
 * is pending (possible only with more than one permit: another holder released before the heir's
 * job started) hands it its permit for good, a *plain hand-off*: the waiter keeps IDLE and is
 * resubmitted with its ordinary resumption job, which resumes the task and touches nothing of the
 * semaphore (plain[w], a ghost, selects that job in job_of). A lock takes a free permit before it
 * considers a revocation. With PERMITS == 1 (the default) the model is the mutex model unchanged.
 *
 * PROPERTIES (exhaustive):
 *   1. Exclusion: at most PERMITS tasks are in their critical section (assert in cs()).
 *   2. No lost wake-up: every task finishes all its rounds (safety: no invalid end state). The
 *      only valid end states are the finished tasks and the job processes idle at `end_idle`.
 *      At the end all PERMITS permits are free.
 *   3. Hold balance (holds[t] counts the executor holds attributed to t): never negative (asserted
 *      at every decrement); a task resumes with none (asserted at every resumption, and when it
 *      parks it has none from an earlier wait); a parked task with no job in flight and no
 *      resubmission pending holds exactly one (asserted where such a task is observed: the
 *      unlocker popping a non-revoked waiter, and a job that ends on REVOKED). At the end all
 *      are 0.
 *   4. The waiter's frame is alive wherever another party touches it: the revoker's and the
 *      unlocker's reads/CASes/stores of state[h], the resubmission, and the job all assert
 *      !running[h] (h has not resumed). The job clears `heir` under the internal lock before it
 *      resumes its task, so a locker that finds heir == h under the lock touches a parked task.
 *      A heir's job never finds its task IDLE (no job without a hand-off), and there is at most
 *      one job in flight (asserted job[w] == 0 before queuing one). A plain hand-off finds its
 *      waiter IDLE and never revoked in this wait (state[w] == IDLE && revs[w] == 0: a revoked
 *      waiter is queued only at the head and only while there is no heir, so it is always popped
 *      as the heir), and its job finds it still IDLE.
 *   5. Bounded unfairness: revs[t] <= K (asserted at every revocation).
 *   6. The word is consistent whenever the internal lock is released: waiters bit <=> queue
 *      non-empty => count == 0. A fast take happens only with nobody queued. For the mutex also:
 *      a pending heir => count == 0, a fast take finds no heir, and a slow unlock finds no heir
 *      (the owner of a revocable hand-off is the heir, who clears it, or its revoker, who cleared
 *      it); with more permits a pending heir may coexist with free permits, a fast take and
 *      another holder's release, and only "the releaser is not the pending heir" is asserted.
 *   7. FIFO except the revoked heir: each wait gets a ticket when it first queues. Mutex: the
 *      waiters handed the mutex are popped in non-decreasing ticket order (a revoked heir is
 *      popped again with the same ticket), and a revoked heir has the ticket of the last pop (it
 *      is the waiter just handed the mutex, put back at the front). PERMITS > 1: a waiter popped
 *      for the first time in its wait (heir or plain hand-off) has a ticket above every earlier
 *      pop's; a revoked heir has been popped already (its ticket is at most the last pop's) and,
 *      popped again, is older than the last pop (plain hand-offs may have come in between).
 *   8. The destructor knows every job that will touch the mutex: a job that finds its task handed
 *      finds heir == w under the internal lock (asserted), also after the last revocation the
 *      bound allows (then the heir is irrevocable but still registered). The destructor fails
 *      only `heir` and the queued waiters, so an unregistered pending hand-off would reach the
 *      freed mutex in its job. (The plain resumption job touches nothing of the primitive.)
 *
 * Scope, mutex: N = 3 tasks x ROUNDS = 2 lock/unlock rounds, K = 2 (tests/models/run_models.sh
 * also runs -DK=1). K = 2 is needed for coverage: a HANDED_HELD heir exists only after a
 * revocation (an unlocker re-hands a REVOKED waiter whose job is still queued), so with K = 1 that
 * re-hand-off is always irrevocable and the revocation of a HANDED_HELD heir is unreachable; K = 2
 * reaches it, and a second revocation of the same wait.
 * Scope, semaphore (run_models.sh: -DPERMITS=2 -DN=4 -DROUNDS=1 -DROUNDS0=2, K = 2): a plain
 * hand-off needs both permits held, a heir pending and another waiter queued, so four tasks; task
 * 0 runs two rounds, the others one. Every task running two rounds (-DROUNDS=2) is out of reach
 * (even at K = 1 with -DCOLLAPSE: 3.3e8 states and 20 GB, unfinished); all tasks one round
 * (-DROUNDS=1, K = 1 or 2 alike) is 1.3 million states but never revokes a HANDED_HELD heir,
 * never revokes a wait twice, and never pops a revoked heir again after a plain hand-off; task
 * 0's second round reaches all three. Reached in this scope (checked with temporary failing
 * asserts): a plain hand-off, a revocation while another holder is in cs(), a fast take while a
 * heir is pending, a release that frees a permit while a heir is pending, the revocation of a
 * HANDED_HELD heir, a second revocation of one wait, and a revoked heir popped again after a
 * plain hand-off (its ticket below the last pop's).
 *   The word is its three fields as in mutex.pml (lk, wb, count); a CAS on the word or on
 * state[t] is one atomic step, everything else one step per access (sequentially consistent).
 * Each task has its own job process (`job_of(t)`) that runs the task's resumption job some time
 * after it was queued (job[t] = 1): the executor's queue and workers are abstracted to "any time
 * later" (sleep.pml covers the pool's side). A task that queues itself waits until its job
 * resumes it (running[t] = 1).
 *   Holds: the executor counts holds per executor, not per task; holds[t] is a ghost that
 * attributes them to tasks. `resubmit` queues the job and then ends one hold; the model does both
 * in one step (the hold passes to the queued job), because the per-task count would otherwise
 * show the unhold trailing the task's resumption, which is harmless (the unhold touches only the
 * executor, which the hold keeps alive). A resubmission that an unlocker has decided under the
 * lock but not done yet is `pend[t]` (a ghost: it owns one hold).
 *   revs[t] is reset when t resumes, in the job's critical section under the internal lock (the
 * spec: "written only under lk"); a plain hand-off's waiter was never revoked (revs[t] == 0).
 *   Destruction (FAILED / FAILED_HELD) is left out (argued in §9.4).
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
 *   With -DPERMITS=2 (the semaphore's scope):
 *   -DBUG_SEM_ALWAYS_HEIR   a release makes every popped waiter the heir, overwriting a pending
 *                           one: the earlier heir's job finds heir != w (property 8; the
 *                           destructor would not see that hand-off)
 *   -DBUG_SEM_NO_COUNT_CHECK  a lock tries the revocation before taking a free permit: the
 *                           revoked heir is queued while a permit is free (property 6)
 *   There is no variant for a plain hand-off of a REVOKED waiter: it is unreachable (property 4's
 *   assert on the plain path holds).
 */

#ifndef PERMITS
#define PERMITS 1  /* 1: magpie::mutex; more: magpie::semaphore */
#endif
#ifndef N
#define N 3
#endif
#ifndef ROUNDS
#define ROUNDS 2
#endif
#ifndef ROUNDS0
#define ROUNDS0 ROUNDS /* task 0's rounds (the others': ROUNDS) */
#endif
#define ROUNDS_OF(t) ((t) == 0 -> ROUNDS0 : ROUNDS)
#ifndef K
#define K 2
#endif
#define NONE 255

/* The checks that hold for the mutex only (PERMITS == 1): with more permits a pending heir may
 * coexist with free permits, with a fast take, and with another holder's release. */
#if PERMITS == 1
#define MUTEX_ONLY(x) (x)
#else
#define MUTEX_ONLY(x) true
#endif

/* Whether a popped waiter becomes the heir: always for the mutex (no other heir can be pending);
 * with more permits only while there is none (else it is handed its permit for good). */
#if PERMITS == 1 || defined(BUG_SEM_ALWAYS_HEIR)
#define MAY_BE_HEIR true
#else
#define MAY_BE_HEIR (heir == NONE)
#endif

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
byte count = PERMITS; /* free permits (the mutex: 1 = unlocked, 0 = held) */
byte q[N];         /* the waiter queue (task ids): pop at the front, push at either end */
byte qhead = 0;
byte qlen = 0;
byte heir = NONE;  /* the waiter handed a permit as the heir, until its job clears it (lk) */
byte state[N];     /* the waiter's atomic state (IDLE = 0 initially), CAS only */
byte revs[N];      /* revocations in the current wait (written under lk) */
bit job[N];        /* the task's resumption job is queued in the executor */
short holds[N];    /* ghost: executor holds attributed to the task */
bit pend[N];       /* ghost: an unlocker decided to resubmit the task, not done yet */
bit plain[N];      /* ghost: its queued job is the plain resumption (PERMITS > 1) */
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
    assert(MUTEX_ONLY(HEIR_IS(NONE) || count == 0));
    lk = 0
  }
}

inline unhold(t) {
  holds[t]--;
  assert(holds[t] >= 0)
}

inline cs() {
  in_cs++;
  assert(in_cs <= PERMITS);
  in_cs--
}

/* Under the internal lock, in a lock that has not taken yet: take a free permit if there is one
 * (then resume_here). */
inline take_free() {
  if
  :: took == 0 && count >= 1 ->
    assert(qlen == 0 && MUTEX_ONLY(HEIR_IS(NONE))); /* no barging */
    count--;
    internal_unlock();
    unhold(me);
    running[me] = 1; /* resume_here */
    took = 1
  :: else -> skip
  fi
}

/* The resumption job of task w, queued by a resubmission: heir_queue::heir_run for a heir, or
 * waiter::run (detail/waiter.hpp) for a plain hand-off. */
proctype job_of(byte w) {
  byte s;
  bit ok;
end_idle:
  do
  :: job[w] == 1 && plain[w] == 1 ->
    /* the plain resumption (detail/waiter.hpp: waiter::run), queued by a release that handed w
     * its permit for good while another heir was pending: it resumes the task and touches
     * nothing of the semaphore */
    job[w] = 0;
    atomic {
      assert(running[w] == 0 && state[w] == IDLE && revs[w] == 0);
      plain[w] = 0;
      assert(holds[w] == 0);
      running[w] = 1 /* resume w: it holds its permit */
    }
  :: job[w] == 1 && plain[w] == 0 ->
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
  :: r == ROUNDS_OF(me) -> break
  :: r < ROUNDS_OF(me) ->
    /* ---- lock: the fast path (unchanged) ------------------------------------------------- */
    took = 0;
    atomic {
      if
      :: lk == 0 && count >= 1 -> count--; took = 1; assert(qlen == 0 && MUTEX_ONLY(HEIR_IS(NONE)))
      :: else -> skip
      fi
    }
    if
    :: took == 0 ->
      /* hold, park (the ghost: from here on the task's frame is only kept, not run) */
      atomic { assert(holds[me] == 0); holds[me]++; running[me] = 0 };
      internal_lock();
#ifndef BUG_SEM_NO_COUNT_CHECK
      take_free();
#endif
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
#if PERMITS == 1
          assert(ticket[h] == last_served); /* property 7: the waiter just handed the mutex */
#else
          assert(ticket[h] <= last_served); /* property 7: a waiter handed a permit already */
#endif
          qhead = (qhead + N - 1) % N; /* back at the FRONT of the queue */
          q[qhead] = h;
          qlen++;
          wb = 1;
          internal_unlock();
          /* t holds the heir's permit (count unchanged) */
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
#ifdef BUG_SEM_NO_COUNT_CHECK
      take_free();
#endif
      if
      :: took == 0 ->
        /* enqueue at the back (as before), then wait to be resumed */
        ticket[me] = next_ticket; /* ghost */
        next_ticket++;
        q[(qhead + qlen) % N] = me;
        qlen++;
        wb = 1;
        internal_unlock();
        /* point of no return: the job resumes the task, holding its permit */
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
      :: lk == 0 && wb == 0 ->
        assert(count < PERMITS && MUTEX_ONLY(HEIR_IS(NONE))); count++; took = 1
      :: else -> skip
      fi
    }
    if
    :: took == 0 ->
      internal_lock();
      assert(count < PERMITS);            /* a release of a held permit */
      assert(MUTEX_ONLY(HEIR_IS(NONE)));  /* the owner is not a pending heir */
#if PERMITS > 1
      assert(heir != me);                 /* nor is the releaser */
#endif
      if
      :: qlen > 0 ->         /* hand off to the oldest waiter; count unchanged */
        w = q[qhead];
        qhead = (qhead + 1) % N;
        qlen--;
#if PERMITS == 1
        assert(ticket[w] >= last_served); /* property 7 */
        last_served = ticket[w];
#else
        atomic {             /* property 7 (ghost) */
          if
          :: revs[w] == 0 -> assert(ticket[w] > last_served); last_served = ticket[w]
          :: else -> assert(ticket[w] <= last_served) /* a revoked heir, popped again */
          fi
        }
#endif
        if
        :: qlen == 0 -> wb = 0
        :: else -> skip
        fi;
        if
#ifdef BUG_EXHAUSTED_HEIR_UNTRACKED
        :: atomic { MAY_BE_HEIR -> if :: revs[w] < K -> heir = w :: else -> skip fi };
#else
        :: atomic { MAY_BE_HEIR -> heir = w }; /* irrevocable once revs[w] == K (the revoker
                                                * checks), but registered */
#endif
          atomic {
            assert(running[w] == 0);
            if
            :: state[w] == REVOKED -> state[w] = HANDED_HELD; resub = 0 /* its job is queued */
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
          /* plain hand-off (PERMITS > 1): another heir is pending, so w is handed its permit for
           * good; it keeps IDLE (not revoked: a revoked waiter is queued only at the head, and
           * only while there is no heir), and its ordinary resumption job resumes it */
          atomic {
            assert(running[w] == 0);
            assert(state[w] == IDLE && revs[w] == 0);
            assert(holds[w] == 1 && job[w] == 0 && pend[w] == 0); /* property 3 */
            plain[w] = 1;
            pend[w] = 1
          };
          internal_unlock();
          atomic {             /* resubmit, after the last touch of the semaphore */
            assert(running[w] == 0);
            assert(job[w] == 0);   /* at most one job in flight */
            job[w] = 1;
            pend[w] = 0;
            holds[w]--;            /* the hold passes to the queued job */
            assert(holds[w] >= 0)
          }
        fi
      :: else ->
        count++;
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
  assert(count == PERMITS && qlen == 0 && wb == 0 && lk == 0 && HEIR_IS(NONE));
  for (i : 0 .. N - 1) {
    assert(holds[i] == 0 && job[i] == 0 && pend[i] == 0 && plain[i] == 0 && state[i] == IDLE &&
           revs[i] == 0)
  }
}
