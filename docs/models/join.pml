/* docs/models/join.pml — the split join counter and the stack hand-off of a stolen parent
 * (include/magpie/core/fork.hpp: join_awaitable, core/detail/transfer.hpp: final_transfer,
 * arrive_at_stolen_parent; src/pool/find_work.cpp: pool::try_steal).
 *
 * PROPERTY (safety + termination, exhaustive):
 *   1. the parent passes each join exactly once, and only after all K children of that scope
 *      have completed; the counter is back at J for the next scope;
 *   2. it is resumed by the last arriver only (the runner if the runner's fetch_sub is last, else
 *      the child whose fetch_sub brings the counter to zero), exactly once;
 *   3. whoever resumes it owns the chain that holds its frame: the chain is in the parent's
 *      m_stack (no worker holds it) when it is adopted, and it is the resumer's current chain
 *      when the parent continues — so frames stay FILO on one chain at a time;
 *   4. no chain is ever held by two workers at once, and every run terminates (no invalid end
 *      state: the parent is never left suspended with nobody to resume it).
 *
 * Scope: one parent task P with SCOPES fork–join scopes of K forked children (leaves) each, on W
 * workers.
 * Worker 0 starts P on the chain PC that holds P's frame. At each fork P's continuation goes on
 * its runner's deque (one slot: only P is ever there) and the child runs on that worker; idle
 * workers steal the continuation and continue P on their own chains. The deque itself is
 * verified by deque.pml; here a push, a pop and a steal are each one atomic step.
 *
 * Variants (each must FAIL; tests/models/run_models.sh checks it):
 *   -DBUG_RELEASE_LATE  a child hands the chain to the parent AFTER its fetch_sub (the code does
 *                       it before): the last arriver can adopt a chain another worker still uses
 *   -DBUG_SHARE         the runner arrives with J instead of J - steals: nobody is ever last
 */

#define K 3          /* children per scope */
#define SCOPES 2     /* fork-join scopes in P: the second one runs on a reset counter */
#define W 3          /* workers */
#define J 16         /* frame_base::join_init (any value > K works; 2^30 in the code) */
#define NONE 255
#define PARENT 254   /* "held by the parent task" (in P->m_stack) */

#define IDLE 0
#define RUN_PARENT 1
#define RUN_CHILD 2

byte joins = J;        /* P->m_joins */
byte steals = 0;       /* P->m_steals (runner only) */
byte forked = 0;       /* children P has forked (runner only) */
byte completed = 0;    /* children whose body has finished */
byte cont = NONE;      /* whose deque holds P's continuation */
byte pc = 0;           /* who holds chain PC (P's frame): a worker, or PARENT */
bit suspended = 0;     /* P is suspended at its join, waiting for the last arriver */
byte passed = 0;       /* times P continued past the join of the current scope */
byte scope = 0;        /* P's current scope */
bit p_done = 0;
byte running[W];       /* what each worker runs */

/* P continues past its join on worker `me` (properties 1 and 3). */
inline continue_after_join() {
  passed++;
  assert(passed == 1);
  assert(completed == K);
  assert(pc == me);
  if /* join_awaitable::await_resume: the sole owner resets the counter */
  :: steals != 0 -> steals = 0; joins = J
  :: else -> skip
  fi;
  assert(joins == J);
  if
  :: scope + 1 < SCOPES -> /* the next scope, on this worker */
    scope++; passed = 0; forked = 0; completed = 0; running[me] = RUN_PARENT
  :: else -> p_done = 1; running[me] = IDLE
  fi
}

/* ctx->adopt_stack(P->m_stack): the chain must be free (held by the parent), property 3/4. */
inline adopt() {
  assert(pc == PARENT);
  pc = me
}

proctype worker(byte me) {
  byte old, share;

end_loop:
  do
  :: running[me] == RUN_PARENT && forked < K ->
    /* fork: push P (release), run the child on this worker */
    atomic { forked++; cont = me; running[me] = RUN_CHILD }

  :: running[me] == RUN_PARENT && forked == K ->
    /* join_awaitable */
    if
    :: steals == 0 -> /* await_ready: nothing stolen, every child already ran here */
      continue_after_join()
    :: steals > 0 ->
      if
      :: joins == J - steals -> /* await_ready: acquire load shows every child arrived */
        adopt();
        continue_after_join()
      :: else ->
        /* await_suspend runs once P is suspended: a child may resume it as soon as the
           fetch_sub(J - steals) (acq_rel) below is done */
#ifdef BUG_SHARE
        share = J;
#else
        share = J - steals; /* read before the decrement: after it, P is not ours */
#endif
        suspended = 1;
        atomic { old = joins; joins = joins - share };
        if
        :: old == share ->
          suspended = 0; /* last: await_suspend returns false, P continues at once */
          adopt();
          continue_after_join()
        :: else ->
          /* point of no return: the last child resumes P; touch nothing */
          running[me] = IDLE
        fi
      fi
    fi

  :: running[me] == RUN_CHILD ->
    completed++; /* the child's body is done; now its final_transfer */
    atomic {
      if
      :: cont == me -> /* pop succeeded: our parent was not stolen, resume it here */
        cont = NONE; running[me] = RUN_PARENT
      :: else -> running[me] = IDLE /* pop failed: the parent was stolen */
      fi
    };
    if
    :: running[me] == IDLE ->
      /* arrive_at_stolen_parent */
#ifndef BUG_RELEASE_LATE
      if
      :: pc == me -> pc = PARENT /* release_stack() into P->m_stack, BEFORE the decrement */
      :: else -> skip
      fi;
#endif
      atomic { old = joins; joins-- }; /* fetch_sub(1), acq_rel */
#ifdef BUG_RELEASE_LATE
      if
      :: pc == me -> pc = PARENT
      :: else -> skip
      fi;
#endif
      if
      :: old == 1 -> /* last to arrive: P is suspended at its join and is ours */
        assert(suspended);
        suspended = 0;
        adopt();
        steals = 0;
        joins = J;
        continue_after_join()
      :: else -> skip /* point of no return: touch nothing */
      fi
    :: else -> skip
    fi

  :: atomic { /* pool::try_steal: an idle worker takes P's continuation from another deque */
      running[me] == IDLE && cont != NONE && cont != me ->
      cont = NONE; steals++; running[me] = RUN_PARENT
    }
  od
}

init {
  byte i;
  atomic {
    running[0] = RUN_PARENT; /* worker 0 runs P on chain PC */
    i = 0;
    do
    :: i < W -> run worker(i); i++
    :: else -> break
    od
  }
  p_done; /* blocks forever (an invalid end state) if P is never resumed */
  assert(passed == 1 && scope == SCOPES - 1)
}
