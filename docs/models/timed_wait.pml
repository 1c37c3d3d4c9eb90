/* docs/models/timed_wait.pml — a timed wait on an auto-reset magpie::event (include/magpie/sync/
 * detail/timed.hpp: timed_wait_awaitable; detail/timed_queue.hpp: timed_queue; event.hpp: pass_or_enqueue_timed,
 * take_out_expired, the destructor) against the reactor's timers (src/io/reactor.cpp: fire_timers, cancel; include/
 * magpie/io/detail/timer_heap.hpp: timeout_node). docs/protocols.md §9.8, "Timed waits".
 *
 * Two tasks wait on the event with a deadline. A waiter's await_suspend ("suspender") and the
 * task once resumed ("task", started by the wake: it may run on another worker while the
 * suspender is still returning) are separate processes. The suspender: fast path (flag set?
 * consume it, pass); else write its outcome "queued", then under the event's lock re-check the
 * flag (pass: the task never left), or queue itself, arm its deadline (under the shard lock,
 * nested in the event's), count itself in `timed`, unlock: the point of no return. The reactor:
 * at any moment after arming ("the deadline passes"), under the shard lock, pop the node and
 * claim it by exchange; if it won, outside the shard lock, take the event's lock, take the
 * waiter out of the queue (it must be there), count it out, mark it timed out, unlock, wake it.
 * The setter (one set()): under the event's lock, take the oldest waiter it can claim (a claimed
 * one is skipped and left queued); if none, publish the flag; unlock; wake the one it took. The
 * task: if the outcome is not "queued", return it; if it timed out, return false; else cancel
 * its timer (under the shard lock) and return true (or abandoned_wait); then its frame is gone.
 * With -DDTOR a destroyer replaces the setter: once every waiter is queued or done (a legal time
 * to destroy), under the lock it claims and takes every waiter it can (abandoned_wait), unlocks,
 * wakes them, then re-takes the lock until `timed` is 0, then frees the event.
 *
 * With -DPERMITS the primitive is a semaphore with no free permit (include/magpie/sync/detail/
 * permits.hpp, heir_queue.hpp: timed takes, docs/protocols.md §9.8): the flag is the count of
 * free permits (0 or 1 here), the setter is give(1) ("give"): under the lock it takes the oldest
 * waiter it may — an untimed one (a revoked heir, requeued untimed) at once, a timed one only if
 * it claims it — and makes it the *heir* (state handed; if its job is still in flight from a
 * revocation, that job resumes it, else its job is resubmitted), or, if it takes nobody, adds the
 * permit to the count. The heir's job (heir_run) exchanges the state to idle: revoked, it does
 * nothing (the waiter is queued again); else it forgets the heir under the lock and resumes the
 * task. A third task, the taker, takes once under the lock (try_take_or_revoke): a free permit,
 * else the heir's permit if it may revoke it (a semaphore: never a timed heir's) — the heir goes
 * back to the head of the queue, untimed — and gives up otherwise. With -DMUTEX as well the
 * primitive is a mutex: the taker may revoke a timed heir, and gives back what it took (unlock:
 * a give), which hands the lock to the revoked heir again.
 *
 * PROPERTIES (exhaustive, safety):
 *   1. Each waiter is woken at most once (assert in wake) and at least once (every waiter
 *      finishes, else spin reports an invalid end state).
 *   2. No lost or doubled set: at the end, waits that passed + the flag = 1 (one set).
 *   3. The reactor never touches a node whose frame is gone, nor a freed event.
 *   4. With DTOR, no wait passes (each is abandoned or times out).
 *
 * Variants (each must FAIL; tests/models/run_models.sh checks it):
 *   -DBUG_IGNORE_CLAIM   set() takes the oldest waiter without claiming it: a waiter whose
 *                        deadline won is woken twice (1)
 *   -DBUG_DROP_SET       set() stops at a waiter its deadline claimed, neither taking the next
 *                        one nor publishing the flag: the set is lost (2)
 *   -DBUG_OUTCOME_LATE   the suspender writes "queued" after its point of no return: the task,
 *                        woken by the set, reads the old outcome and returns false (2)
 *   -DBUG_NO_CANCEL      the task released by the set frees its frame without cancelling its
 *                        timer: the reactor pops a freed node (3)
 *   -DDTOR -DBUG_DTOR_NO_WAIT  the destructor frees the event without waiting for the reactor
 *                        to take out the waiters whose deadline won (3)
 *   -DPERMITS -DBUG_REVOKE_TIMED  a semaphore's taker revokes a timed heir: back at the head
 *                        with its claim spent, the waiter waits for a give that never comes (1:
 *                        it never finishes; spin reports an invalid end state)
 *   -DPERMITS -DMUTEX -DBUG_REQUEUE_TIMED  the revoked heir is requeued still marked timed: the
 *                        next give finds its claim spent, skips it as expired, and it waits
 *                        forever (1)
 * With PERMITS, property 2 counts the taker: waits that passed + the taker's take + the count = 1
 * (MUTEX: the taker gives back what it took, so waits that passed + the count = 1).
 *
 * With -DCV the primitive is a magpie::condition_variable (include/magpie/sync/
 * condition_variable.hpp: timed_awaitable, move_to_mutex; docs/protocols.md §9.8, "Timed waits:
 * the condition variable"), and the mutex its waiters hold is modelled by its owner and its FIFO
 * (its own protocol is §9.4's). Each waiter locks the mutex, queues on the cv and arms its
 * deadline under the cv's lock, then unlocks the mutex (the point of no return; no fast path: a
 * cv wait always waits). The setter is one notify_one, by a notifier that locks the mutex and
 * notifies before or after unlocking it: under the cv's lock it takes the oldest waiter it can
 * claim, then moves it to the mutex (the mutex free: it now holds it and is woken; else it is
 * queued there, and the unlock that hands it the mutex wakes it). The reactor, having won a
 * claim, takes its waiter out under the cv's lock and moves it to the mutex the same way. With
 * -DDTOR the destroyer moves the waiters it claims to the mutex, abandoned. Properties: 1 and 3
 * as above; every wait ends holding the mutex (asserted when the task runs); property 2 becomes
 * "waits notified + a notify that could claim nobody = 1" (DTOR: no wait is notified).
 *   -DCV -DBUG_CV_WAKE_DIRECT  the deadline's side wakes the task without moving it to the
 *                        mutex: the wait returns without the mutex (assertion in the task)
 *   -DCV -DBUG_IGNORE_CLAIM  the notify takes the oldest waiter without claiming it (1)
 *   -DCV -DDTOR -DBUG_DTOR_NO_WAIT  as for the event (3)
 */

#define W 2        /* waiters */
#define NONE 9
#define UNDECIDED 0
#define QUEUED 1
#define PASSED 2
#define TIMED_OUT 1

bool ev_lock;
bool flag;
byte q[W];         /* FIFO of waiter ids, q[0] the oldest */
byte qlen;
byte timed;        /* timed waiters in the queue */
bool shard_lock;
bool in_heap[W];
bool claimed[W];
byte result[W];    /* the node's m_result: TIMED_OUT once the reactor took it out */
byte outcome[W];   /* the awaitable's m_outcome */
bool abandoned[W];
byte woken[W];
bool frame_gone[W];
bool ready[W];     /* queued, or finished without waiting: the event may be destroyed */
bool event_freed;
bool set_done;     /* the setter (or destroyer) has finished */
byte finished;
byte passes;

#ifdef CV
#define OUTSIDE 8  /* the notifier, holding the mutex */
byte owner = NONE; /* the mutex's holder */
byte mq[W];        /* the mutex's FIFO */
byte mqlen;
bool nobody;       /* the notify could claim no waiter */
#endif

#ifdef PERMITS
#define IDLE 0
#define HANDED 1
#define REVOKED 2
byte heir = NONE;  /* the heir (heir_queue::m_heir) */
byte heir_state[W];
bool has_deadline[W]; /* waiter::m_has_deadline: queued timed (cleared when requeued revoked) */
bool taker_took;
bool taker_done;
#endif

inline lock(l) { atomic { l == 0 -> l = 1 } }
inline unlock(l) { l = 0 }

/* Under the event's lock: unlink waiter w (asserting it is queued); `u` is the caller's scratch. */
inline unlink(w) {
  d_step {
    u = 0;
    do
    :: u < qlen && q[u] != w -> u++
    :: else -> break
    od;
    assert(u < qlen);
    do
    :: u + 1 < qlen -> q[u] = q[u + 1]; u++
    :: else -> break
    od;
    qlen--;
    q[qlen] = 0;
    u = 0
  }
}

inline wake(w) {
  atomic {
    assert(woken[w] == 0);
    woken[w]++;
    run task(w)
  }
}

#ifdef CV
/* The mutex's unlock by its holder: hands it to the oldest waiter queued there (woken), or frees
 * it. Atomic: the mutex's own protocol is §9.4's. */
inline mutex_unlock() {
  atomic {
    if
    :: mqlen > 0 ->
      owner = mq[0];
      mq[0] = mq[1];
      mq[1] = 0;
      mqlen--;
      wake(owner)
    :: else -> owner = NONE
    fi
  }
}

/* move_to_mutex: take_or_enqueue on the waiter's behalf, then hand_to if the mutex was free. */
inline move_to_mutex(w) {
  atomic {
    if
    :: owner == NONE -> owner = w; wake(w)
    :: else -> mq[mqlen] = w; mqlen++
    fi
  }
}
#endif

#ifdef PERMITS
/* heir_run: the resumption job of a waiter handed a permit as the heir. */
proctype heir_job(byte i) {
  byte s;
  atomic { s = heir_state[i]; heir_state[i] = IDLE }; /* the CAS loop to idle */
  if
  :: s == REVOKED -> skip /* queued again: a later give resumes it */
  :: else ->
    lock(ev_lock);
    if
    :: heir == i -> heir = NONE /* forget_heir */
    :: else -> skip
    fi;
    unlock(ev_lock);
    wake(i)
  fi
}

/* give(1), from outside the lock; uses the caller's locals k, u, w, taken, resubmit. */
inline give_one() {
  lock(ev_lock);
  k = 0;
  taken = NONE;
  do
  :: k < qlen ->
    w = q[k];
    if
    :: !has_deadline[w] -> skip /* untimed (a revoked heir): taken without a claim */
    :: else ->
#ifdef BUG_IGNORE_CLAIM
      claimed[w] = 1;
#else
      if
      :: atomic { !claimed[w] -> claimed[w] = 1 } -> skip
      :: atomic { claimed[w] -> skip };
#ifdef BUG_DROP_SET
        taken = W; /* gives up: "somebody was there" */
        break;
#endif
        k++;
        goto next
      fi;
#endif
      timed--
    fi;
    unlink(w);
    taken = w;
    break;
next:
    skip
  :: else -> break
  od;
  resubmit = 0;
  if
  :: taken == NONE -> flag = 1
  :: taken < W -> /* make_heir (there is none: the taker gives only after the heir's job) */
    atomic {
      if
      :: heir_state[taken] == REVOKED -> heir_state[taken] = HANDED /* its job resumes it */
      :: else -> heir_state[taken] = HANDED; resubmit = 1
      fi
    };
    heir = taken
  :: else -> skip
  fi;
  unlock(ev_lock);
  if
  :: resubmit -> run heir_job(taken)
  :: else -> skip
  fi
}

/* A task's one take (try_take_or_revoke), under the lock; gives up if it cannot take. MUTEX:
 * gives back what it took (unlock). */
proctype taker() {
  byte h;
  byte k;
  byte u;
  byte w;
  byte taken;
  bool resubmit;
  lock(ev_lock);
  if
  :: atomic { flag -> flag = 0; taker_took = 1 } /* a CAS: a fast-path waiter may race it */
  :: else ->
    h = heir;
    if
#if defined(MUTEX) || defined(BUG_REVOKE_TIMED)
    :: h != NONE -> /* may revoke a timed heir */
#else
    :: h != NONE && !has_deadline[h] -> /* never a timed heir (none is untimed here) */
#endif
      atomic {
        if
        :: heir_state[h] == HANDED -> heir_state[h] = REVOKED; taker_took = 1
        :: else -> skip /* its job has begun: it owns the permit */
        fi
      }
    :: else -> skip
    fi;
    if
    :: taker_took -> /* the heir goes back to the head of the queue */
      d_step {
        u = qlen;
        do
        :: u > 0 -> q[u] = q[u - 1]; u--
        :: else -> break
        od;
        q[0] = h;
        qlen++;
        u = 0
      }
#ifndef BUG_REQUEUE_TIMED
      has_deadline[h] = 0; /* its claim is spent: requeued untimed */
#endif
      heir = NONE
    :: else -> skip
    fi
  fi;
  unlock(ev_lock);
#ifdef MUTEX
  if
  :: taker_took -> give_one() /* unlock */
  :: else -> skip
  fi;
#endif
  taker_done = 1
}
#endif

proctype task(byte i) {
  bool passed = 0;
#ifdef CV
  assert(owner == i); /* every wait ends holding the mutex */
#endif
  if
  :: outcome[i] != QUEUED -> passed = (outcome[i] == PASSED)
  :: else ->
    if
    :: result[i] == TIMED_OUT -> skip
    :: else ->
#ifndef BUG_NO_CANCEL
      lock(shard_lock);
      in_heap[i] = 0;
      unlock(shard_lock);
#endif
      passed = !abandoned[i]
    fi
  fi;
#ifdef CV
  mutex_unlock(); /* the guard, after the wait */
#endif
  atomic {
    frame_gone[i] = 1;
    passes = passes + passed;
    finished++
  }
}

proctype suspender(byte i) {
#ifdef CV
  atomic { owner == NONE -> owner = i }; /* the waiter's lock (its own wait not modelled) */
  goto slow;
#endif
  /* await_ready: the flag (automatic: consumed by CAS) */
  atomic {
    if
    :: flag -> flag = 0; outcome[i] = PASSED; ready[i] = 1; passes++; frame_gone[i] = 1; finished++; goto done
    :: else -> skip
    fi
  }
slow:
#ifndef BUG_OUTCOME_LATE
  outcome[i] = QUEUED;
#endif
  lock(ev_lock);
  if
  :: atomic { flag -> flag = 0 } /* try_pass's CAS: a fast-path waiter may race it */
    unlock(ev_lock);
    atomic { outcome[i] = PASSED; ready[i] = 1; passes++; frame_gone[i] = 1; finished++ };
    goto done
  :: else ->
    q[qlen] = i;
    qlen++;
#ifdef PERMITS
    has_deadline[i] = 1;
#endif
    lock(shard_lock);
    in_heap[i] = 1;
    unlock(shard_lock);
    timed++;
#ifdef CV
    atomic { unlock(ev_lock); ready[i] = 1 };
    mutex_unlock() /* the point of no return */
#else
    atomic { unlock(ev_lock); ready[i] = 1 } /* the point of no return */
#endif
  fi;
#ifdef BUG_OUTCOME_LATE
  outcome[i] = QUEUED;
#endif
done:
  skip
}

proctype reactor() {
  byte n = NONE;
  byte u;
  bool won;
end:
  do
  :: finished == W -> break
  :: atomic { shard_lock == 0 && (in_heap[0] || in_heap[1]) -> shard_lock = 1 };
    if
    :: in_heap[0] -> n = 0
    :: in_heap[1] -> n = 1
    :: else -> n = NONE /* cancelled meanwhile */
    fi;
    if
    :: n != NONE ->
      assert(!frame_gone[n]);
      in_heap[n] = 0;
      atomic { won = !claimed[n]; claimed[n] = 1 } /* the exchange */
    :: else -> won = 0
    fi;
    unlock(shard_lock);
    if
    :: won ->
      assert(!event_freed);
      lock(ev_lock);
      assert(!event_freed);
      unlink(n);
      timed--;
      result[n] = TIMED_OUT;
      unlock(ev_lock);
#if defined(CV) && !defined(BUG_CV_WAKE_DIRECT)
      move_to_mutex(n)
#else
      wake(n)
#endif
    :: else -> skip
    fi;
    n = NONE
  od
}

#if defined(CV) && !defined(DTOR)
/* notify_one under the cv's lock: the oldest waiter it can claim, or nobody. */
inline notify_one() {
  lock(ev_lock);
  do
  :: k < qlen ->
    w = q[k];
#ifdef BUG_IGNORE_CLAIM
    claimed[w] = 1;
#else
    if
    :: atomic { !claimed[w] -> claimed[w] = 1 } -> skip
    :: atomic { claimed[w] -> skip }; k++; goto cv_next
    fi;
#endif
    unlink(w);
    timed--;
    taken = w;
    break;
#ifndef BUG_IGNORE_CLAIM
cv_next:
#endif
    skip
  :: else -> break
  od;
  nobody = (taken == NONE);
  unlock(ev_lock);
  if
  :: taken < W -> move_to_mutex(taken)
  :: else -> skip
  fi
}

proctype setter() {
  byte k = 0;
  byte u;
  byte taken = NONE;
  byte w;
  atomic { owner == NONE -> owner = OUTSIDE };
  if
  :: true -> notify_one(); mutex_unlock() /* notified under the mutex */
  :: true -> mutex_unlock(); notify_one() /* after unlocking it */
  fi;
  set_done = 1
}
#elif defined(PERMITS)
proctype setter() {
  byte k;
  byte u;
  byte w;
  byte taken;
  bool resubmit;
  give_one();
  set_done = 1
}
#elif !defined(DTOR)
proctype setter() {
  byte k = 0;
  byte u;
  byte taken = NONE;
  byte w;
  lock(ev_lock);
  do
  :: k < qlen ->
    w = q[k];
#ifdef BUG_IGNORE_CLAIM
    claimed[w] = 1;
    if :: true -> skip fi;
#else
    if
    :: atomic { !claimed[w] -> claimed[w] = 1 } -> skip
    :: atomic { claimed[w] -> skip };
#ifdef BUG_DROP_SET
      taken = W; /* gives up: "somebody was there" */
      break;
#endif
      k++;
      goto next
    fi;
#endif
    unlink(w);
    timed--;
    taken = w;
    break;
next:
    skip
  :: else -> break
  od;
  if
  :: taken == NONE -> flag = 1
  :: else -> skip
  fi;
  unlock(ev_lock);
  if
  :: taken < W -> wake(taken)
  :: else -> skip
  fi;
  set_done = 1
}
#endif
#if defined(DTOR) && !defined(PERMITS)
proctype destroyer() {
  byte k = 0;
  byte u;
  byte w;
  byte took[W];
  byte ntook = 0;
  ready[0] && ready[1];
  lock(ev_lock);
  do
  :: k < qlen ->
    w = q[k];
    if
    :: atomic { !claimed[w] -> claimed[w] = 1 } ->
      unlink(w);
      timed--;
      abandoned[w] = 1;
      took[ntook] = w;
      ntook++
    :: atomic { claimed[w] -> skip }; k++
    fi
  :: else -> break
  od;
  unlock(ev_lock);
  k = 0;
  do
#ifdef CV
  :: k < ntook -> move_to_mutex(took[k]); k++
#else
  :: k < ntook -> wake(took[k]); k++
#endif
  :: else -> break
  od;
#ifndef BUG_DTOR_NO_WAIT
  do
  :: lock(ev_lock);
    if
    :: timed == 0 -> unlock(ev_lock); break
    :: else -> unlock(ev_lock)
    fi
  od;
#endif
  event_freed = 1;
  set_done = 1
}
#endif

init {
  atomic {
    run suspender(0);
    run suspender(1);
    run reactor();
#ifndef DTOR
    run setter();
#else
    run destroyer();
#endif
#ifdef PERMITS
    run taker();
#endif
  }
  finished == W && set_done;
#if defined(CV) && !defined(DTOR)
  assert(passes + nobody == 1 && owner == NONE && mqlen == 0);
#elif defined(CV)
  assert(passes == 0 && owner == NONE && mqlen == 0);
#elif defined(PERMITS) && defined(MUTEX)
  taker_done;
  assert(passes + flag == 1);
#elif defined(PERMITS)
  taker_done;
  assert(passes + taker_took + flag == 1);
#elif !defined(DTOR)
  assert(passes + flag == 1);
#else
  assert(passes == 0);
#endif
}
