/* docs/models/future_wait.pml — a task's timed wait for a future (include/magpie/sync/future.hpp:
 * future_timed_awaitable, future_state::withdraw, future_state::finished) against the reactor's
 * timers (src/io/reactor.cpp: fire_timers, cancel; include/magpie/io/detail/timer_heap.hpp:
 * timeout_node). docs/protocols.md §9.1, "Timed waits".
 *
 * A future has one reader and no lock: its word (pending, done, or the waiting task's waiter)
 * decides who wakes the task — the completer's exchange of `done`, or the deadline's side's CAS of
 * the waiter back to `pending` (withdraw), whichever takes the waiter out first. The timeout
 * node's claim decides who touches the node last: the reactor claims it as it pops it (under the
 * shard lock); the task claims it when the completer woke it, or when its enqueue found the
 * result ready after arming, and then cancels the timer (under the shard lock, which orders a
 * reactor that popped the node and lost). If the reactor claimed it first, its side (on_deadline)
 * runs outside the shard lock, and the task waits for its last store (m_deadline_done) before the
 * frame can go.
 *
 * One task reads one future with up to K timed waits in a row (a wait that times out is followed
 * by the next, as `while (co_await f.await_for(d) == timeout)`); each wait's awaitable is a
 * separate node. A wait's suspender (await_suspend, parked): fast path (word done? ready); else
 * write its outcome "queued", arm its deadline, CAS the word to its waiter unless done — the point
 * of no return — or, the word done, end the timer and continue as ready without leaving. The
 * reactor, once a node is armed, may pop it at any moment. The completer completes the future at
 * any moment, or never. The task, once woken: if its node says timed out, the wait returns
 * timeout (and the next wait begins); else it ends the timer and returns ready; then the
 * awaitable is gone.
 *
 * PROPERTIES (exhaustive, safety):
 *   1. Each wait is woken at most once (assert in wake) and at least once: the task finishes
 *      (init waits for it, else spin reports an invalid end state).
 *   2. A wait returns ready only if the future is done (asserted as the co_await returns).
 *   3. Nobody touches a wait's node or waiter after its awaitable is gone.
 *
 * Variants (each must FAIL; tests/models/run_models.sh checks it):
 *   -DBUG_NO_WAIT          the task whose claim the reactor won does not wait for on_deadline to
 *                          be done: the reactor touches a node that is gone (3)
 *   -DBUG_GIVE_UP_PENDING  withdraw, finding the word still pending (the task armed and has not
 *                          queued yet), gives up instead of waiting for the CAS: the timeout is
 *                          lost, and a future that never completes leaves the task asleep (1)
 *   -DBUG_WITHDRAW_PENDING withdraw takes a pending word as the waiter's and wakes the task: the
 *                          task, not yet queued, queues and is woken again (1)
 */

#define K 2           /* timed waits in a row */
#define PENDING 0
#define DONE 1        /* the word of waiter k is 2 + k */
#define QUEUED 1
#define PASSED 2
#define READY 1
#define TIMEOUT 2
#define TIMED_OUT 1

byte word = PENDING;
bool in_heap[K];
bool claimed[K];
byte result[K];       /* the node's m_result: TIMED_OUT if the deadline's side woke the task */
byte outcome[K];      /* the awaitable's m_outcome */
bool deadline_done[K];
byte woken[K];
bool frame_gone[K];
bool ended;           /* the task has finished its waits */

inline wake(k) {
  atomic {
    assert(woken[k] == 0);
    woken[k]++;
    run resumed(k)
  }
}

/* The task's side, not woken by the deadline: claim; cancel if won, else wait for on_deadline. */
inline end_timer(k) {
  atomic {
    assert(!frame_gone[k]);
    if
    :: !claimed[k] -> claimed[k] = 1; won = 1
    :: else -> won = 0
    fi
  }
  if
  :: won -> atomic { in_heap[k] = 0 } /* cancel_timer: under the shard lock */
  :: else ->
#ifndef BUG_NO_WAIT
    deadline_done[k] == 1
#else
    skip
#endif
  fi
}

/* The co_await returns `st`: the awaitable goes; a timeout is followed by the next wait. */
inline finish(k, st) {
  atomic {
    assert(st != READY || word == DONE);
    frame_gone[k] = 1;
    if
    :: st == TIMEOUT && k + 1 < K -> run suspender(k + 1)
    :: else -> ended = 1
    fi
  }
}

proctype suspender(byte k) {
  bool won;
  bool queued;
  if
  :: word == DONE -> finish(k, READY) /* try_now: ready, no suspension */
  :: else ->
    outcome[k] = QUEUED;
    atomic { in_heap[k] = 1; run reactor(k) } /* arm_timer */
    atomic {                                  /* try_enqueue: CAS unless done */
      if
      :: word != DONE -> word = 2 + k; queued = 1
      :: else -> queued = 0
      fi
    }
    if
    :: queued -> skip /* the point of no return: touch nothing more */
    :: else ->
      outcome[k] = PASSED;
      end_timer(k);
      finish(k, READY) /* resume_here: the task never left */
    fi
  fi
}

proctype resumed(byte k) {
  bool won;
  assert(outcome[k] == QUEUED);
  if
  :: result[k] == TIMED_OUT -> finish(k, TIMEOUT)
  :: else -> end_timer(k); finish(k, READY)
  fi
}

proctype reactor(byte k) {
  bool won;
  byte cur;
end_idle:
  atomic { /* fire_timers: pop and claim, under the shard lock */
    in_heap[k] ->
    in_heap[k] = 0;
    assert(!frame_gone[k]);
    if
    :: !claimed[k] -> claimed[k] = 1; won = 1
    :: else -> won = 0
    fi
  }
  if
  :: won -> /* on_deadline, outside the shard lock: withdraw */
    do
    :: atomic {
        assert(!frame_gone[k]);
        cur = word;
#ifdef BUG_WITHDRAW_PENDING
        if
        :: cur == PENDING -> cur = 2 + k
        :: else -> skip
        fi;
#endif
        if
        :: cur == 2 + k -> word = PENDING
        :: else -> skip
        fi
      }
      if
      :: cur == 2 + k || cur == DONE -> break
      :: else ->
#ifdef BUG_GIVE_UP_PENDING
        break
#else
        skip /* armed, not yet queued: wait for the task's CAS */
#endif
      fi
    od;
    if
    :: cur == 2 + k ->
      atomic { assert(!frame_gone[k]); result[k] = TIMED_OUT; wake(k) }
    :: else ->
      atomic { assert(!frame_gone[k]); deadline_done[k] = 1 } /* the last touch */
    fi
  :: else -> skip
  fi
}

proctype completer() {
  byte old;
  if
  :: skip /* the future never completes while the task waits */
  :: atomic {
      old = word;
      word = DONE;
      if
      :: old >= 2 -> wake(old - 2)
      :: else -> skip
      fi
    }
  fi
}

init {
  atomic {
    run completer();
    run suspender(0)
  }
  ended == 1
}
