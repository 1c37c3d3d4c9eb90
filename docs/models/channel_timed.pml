/* docs/models/channel_timed.pml — timed receives on a buffered magpie::channel (include/magpie/
 * sync/detail/channel_timed.hpp: timed_receive_awaitable; channel_waiters.hpp: channel_queue::pop
 * (timed_queue.hpp: pop_unclaimed, claim_for_take); channel_buffered.hpp: receive_slow,
 * pump_taking_lock, pump_with_lock_held; channel.hpp: expired_receive, the destructor) against
 * the reactor's timers (src/io/reactor.cpp: fire_timers, cancel). docs/protocols.md §9.11,
 * "Timed sends and receives". (Timed sends are the mirror image: a sender's value pushed into the
 * ring is what a receiver's value is here.)
 *
 * Two tasks receive with a deadline from an empty ring. A receiver's await_suspend ("receiver")
 * and the task once woken ("task", started by the wake) are separate processes. The receiver:
 * fast path (a lock-free pop); else under the channel's lock it counts itself waiting and, unless
 * others already wait (FIFO: then it queues behind them), pops again (the registration); still
 * nothing: it sets its phase "queued", queues, arms its deadline (the shard lock nested in the
 * channel's), counts itself timed, and unlocks: the point of no return. One sender pushes one
 * value (lock-free) and, if it sees receivers waiting, pumps: under the lock, for the oldest
 * waiting receiver, it pops a value into the receiver's slot (give), stops if there is none, then
 * unlinks it and settles it: claims its node (an exchange) — won: it releases it after the
 * unlock; lost: it moves it to the expiring list. A fast receiver pops once, lock-free, racing
 * the pump for the value (the fast path's look at the waiting count is only a hint). The
 * reactor, at any moment after arming, pops a node under the shard lock and claims it; if it
 * won, outside the shard lock it takes the channel's lock, takes the waiter out of the waiting
 * FIFO (the count drops) or the expiring list, decides its status from its slot (a value:
 * received, else empty), unlocks, and wakes it. The task: woken by the channel, it cancels its
 * timer (under the shard lock) and reports received (or abandoned); woken by the deadline, it
 * reports what the reactor decided; then its frame is gone.
 * With -DDTOR a destroyer runs once the sender and the fast receiver are done and each receiver
 * has queued or finished (a legal time to destroy the channel): under the lock it takes every
 * waiting receiver, settling each as the pump does (won: released with abandoned_wait), unlocks,
 * wakes those, then takes the lock again and again until no timed waiter is left, and frees the
 * channel.
 *
 * PROPERTIES (exhaustive, safety):
 *   1. Each receiver is woken at most once (assert in wake) and every receiver finishes (checked
 *      when nothing can move any more: else a wait was lost).
 *   2. No value lost or duplicated: receivers that report received + the fast receiver's value
 *      + what is left in the ring = 1, and a receiver reports received exactly when its slot
 *      holds the value.
 *   3. The reactor never touches a node whose frame is gone, nor a freed channel.
 *
 * Variants (each must FAIL; tests/models/run_models.sh checks it):
 *   -DBUG_CLAIM_FIRST    the pump claims the oldest receiver before popping a value for it, as
 *                        §9.8's primitives do: when the fast receiver took the value in between,
 *                        the claimed receiver is left waiting with its deadline disowned, and
 *                        nothing wakes it (1)
 *   -DBUG_IGNORE_CLAIM   the pump releases a receiver without claiming it: for one whose
 *                        deadline claimed it, the deadline's side finds it in neither list (in
 *                        the code: an assertion, or a second wake of a task that has gone on)
 *   -DBUG_EXPIRED_EMPTY  the deadline's side reports empty without looking at the slot: a value
 *                        given to a receiver as its deadline passed is lost (2)
 *   -DBUG_NO_CANCEL      the task woken by the channel frees its frame without cancelling its
 *                        timer: the reactor pops a freed node (3)
 *   -DDTOR -DBUG_DTOR_NO_WAIT  the destructor frees the channel without waiting for the
 *                        deadlines' sides to take out the receivers they claimed (3)
 */

#define W 2        /* timed receivers */
#define NONE 9
#define PENDING 0
#define RECEIVED 1
#define EMPTY 2
#define ABANDONED 3

bool lock;         /* the channel's lock_word */
byte buf;          /* values in the ring */
byte count;        /* waiting_receivers: the waiting FIFO plus registering receivers */
byte q[W];         /* the waiting FIFO of receiver ids, q[0] the oldest */
byte qlen;
bool expiring[W];  /* in the expiring list */
byte timed;        /* timed receivers whose deadline's side may still take them out */
bool shard;        /* the reactor shard's lock */
bool in_heap[W];
bool claimed[W];   /* the node's m_claimed */
bool slot[W];      /* the receiver's std::optional holds the value */
bool by_deadline[W]; /* the node's m_result is timed_out: the reactor decided */
byte status[W];
byte woken[W];
bool frame_gone[W];
bool ready[W];     /* queued, or finished without waiting */
bool sender_done;
bool fast_done;
bool freed;        /* the channel is gone (DTOR) */
bool fast_got;
byte finished;

inline lock_()   { atomic { !lock -> lock = true } }
inline unlock_() { lock = false }

/* Unlinks receiver `r` from the waiting FIFO if it is there; `was` says whether it was. */
inline unlink(r, was) {
  was = false;
  if
  :: qlen > 0 && q[0] == r -> q[0] = q[1]; q[1] = NONE; qlen--; was = true
  :: qlen > 1 && q[1] == r -> q[1] = NONE; qlen--; was = true
  :: else
  fi
}

proctype task(byte id) {
  if
  :: by_deadline[id] -> skip /* status set by the deadline's side */
  :: else ->
#ifndef BUG_NO_CANCEL
     atomic { !shard -> shard = true };
     in_heap[id] = false; /* cancel_timer: erase it if it is still pending */
     shard = false;
#endif
     if
     :: status[id] == ABANDONED -> assert(!slot[id])
     :: else -> assert(slot[id]); status[id] = RECEIVED
     fi
  fi;
  assert(status[id] != PENDING);
  frame_gone[id] = true;
  finished++
}

inline wake(r) {
  woken[r]++;
  assert(woken[r] == 1);
  run task(r)
}

proctype receiver(byte id) {
  /* fast path: a lock-free pop */
  atomic { if :: buf > 0 -> buf--; slot[id] = true :: else fi };
  if
  :: slot[id] -> status[id] = RECEIVED; goto done
  :: else
  fi;
  lock_();
  count++;
  if
  :: qlen == 0 -> atomic { if :: buf > 0 -> buf--; slot[id] = true :: else fi } /* registration */
  :: else /* others wait: queue behind them */
  fi;
  if
  :: slot[id] -> count--; unlock_(); status[id] = RECEIVED; goto done
  :: else
  fi;
  q[qlen] = id; qlen++;
  atomic { !shard -> shard = true }; in_heap[id] = true; shard = false; /* arm, nested */
  timed++;
  ready[id] = true;
  unlock_(); /* point of no return */
  goto gone;
done:
  ready[id] = true;
  frame_gone[id] = true;
  finished++;
gone:
  skip
}

/* Gives the oldest waiting receivers what the ring holds, settling each; releases after. */
inline pump_taking_lock() {
  lock_();
  do
  :: qlen > 0 ->
     r = q[0];
#ifdef BUG_CLAIM_FIRST
     atomic { won = !claimed[r]; claimed[r] = true };
     if
     :: !won -> break /* (its deadline's side takes it out) */
     :: else
     fi;
     atomic { if :: buf > 0 -> buf--; slot[r] = true; gave = true :: else -> gave = false fi };
     if
     :: !gave -> break /* claimed, nothing to give: left waiting */
     :: else
     fi;
     unlink(r, was); count--; timed--;
     rel[nrel] = r; nrel++
#else
     atomic { if :: buf > 0 -> buf--; slot[r] = true; gave = true :: else -> gave = false fi };
     if
     :: !gave -> break
     :: else
     fi;
     unlink(r, was); count--;
#ifdef BUG_IGNORE_CLAIM
     won = true;
#else
     atomic { won = !claimed[r]; claimed[r] = true };
#endif
     if
     :: won -> timed--; rel[nrel] = r; nrel++
     :: else -> expiring[r] = true
     fi
#endif
  :: else -> break
  od;
  unlock_();
  if
  :: nrel > 0 -> wake(rel[0])
  :: else
  fi;
  if
  :: nrel > 1 -> wake(rel[1])
  :: else
  fi
}

proctype sender() {
  byte r; bool gave; bool won; bool was; byte rel[W]; byte nrel = 0;
  buf++; /* the push (capacity 1, one value: there is room) */
  if
  :: count != 0 -> pump_taking_lock()
  :: else
  fi;
  sender_done = true
}

proctype fast_receiver() {
  atomic { if :: buf > 0 -> buf--; fast_got = true :: else fi };
  fast_done = true
}

inline fire(r) {
  in_heap[r] = false;
  atomic { won = !claimed[r]; claimed[r] = true };
  shard = false;
  if
  :: won ->
     assert(!frame_gone[r]);
     assert(!freed);
     lock_();
     unlink(r, was);
     if
     :: was -> count--
     :: else -> assert(expiring[r]); expiring[r] = false
     fi;
     timed--;
#ifdef BUG_EXPIRED_EMPTY
     status[r] = EMPTY;
#else
     if
     :: slot[r] -> status[r] = RECEIVED
     :: else -> status[r] = EMPTY
     fi;
#endif
     unlock_(); /* the last touch of the channel */
     by_deadline[r] = true;
     wake(r)
  :: else /* the channel's side claimed it: touch it no more */
  fi
}

proctype reactor() {
  bool won; bool was;
end_r:
  do
  :: atomic { !shard && in_heap[0] -> shard = true; assert(!frame_gone[0]) }; fire(0)
  :: atomic { !shard && in_heap[1] -> shard = true; assert(!frame_gone[1]) }; fire(1)
  od
}

#ifdef DTOR
proctype destroyer() {
  byte r; bool won; bool was; byte rel[W]; byte nrel = 0;
  sender_done && fast_done && ready[0] && ready[1];
  lock_();
  do
  :: qlen > 0 ->
     r = q[0];
     unlink(r, was); count--;
     atomic { won = !claimed[r]; claimed[r] = true };
     if
     :: won -> timed--; status[r] = ABANDONED; rel[nrel] = r; nrel++
     :: else -> expiring[r] = true
     fi
  :: else -> break
  od;
  unlock_();
  if
  :: nrel > 0 -> wake(rel[0])
  :: else
  fi;
  if
  :: nrel > 1 -> wake(rel[1])
  :: else
  fi;
#ifndef BUG_DTOR_NO_WAIT
  do
  :: lock_();
     if
     :: timed == 0 -> unlock_(); break
     :: else -> unlock_()
     fi
  od;
#endif
  freed = true
}
#endif

/* When nothing can move any more: every wait ended, and the value went exactly one way. */
proctype watcher() {
  timeout ->
  assert(finished == W);
  assert((status[0] == RECEIVED) + (status[1] == RECEIVED) + fast_got + buf == 1);
  assert((status[0] == RECEIVED) == slot[0] && (status[1] == RECEIVED) == slot[1])
}

init {
  q[0] = NONE; q[1] = NONE;
  atomic {
    run receiver(0);
    run receiver(1);
    run sender();
    run fast_receiver();
    run reactor();
#ifdef DTOR
    run destroyer();
#endif
    run watcher()
  }
}
