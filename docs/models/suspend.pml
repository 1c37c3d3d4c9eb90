/* docs/models/suspend.pml — the suspension primitive's phase protocol
 * (include/magpie/sync/suspend.hpp: suspend_awaitable::await_suspend, suspension::resume).
 *
 * A task T suspends on worker 0: park (T takes the worker's chain), then fn runs on worker 0 and
 * publishes T's resume_handle; fn may go on touching T's frame after publishing (e.g. it is still
 * inside fn's lambda, whose captures live in the frame). A resumer thread R, as soon as it sees
 * the handle, calls resume(). Then worker 0 either hands T off (CAS in_fn -> fn_done succeeded:
 * point of no return, a resumer resubmits T to the executor, which worker 1 runs) or, if R's
 * CAS in_fn -> resumed_early got there first, takes T back at once (resume_here).
 *
 * PROPERTIES (exhaustive, safety):
 *   1. T is resumed exactly once (no lost wake-up: the only valid end has T finished; no double
 *      run: `runs` is asserted to be 1 when T runs).
 *   2. Nobody runs T while worker 0 still touches its frame (fn or await_suspend): asserted when
 *      T starts running.
 *   3. Whoever runs T owns T's chain: T's chain is held by T (not by worker 0) when adopted.
 *
 * Variants (each must FAIL; tests/models/run_models.sh checks it):
 *   -DBUG_RESUBMIT_NO_CAS  resume() resubmits at once without the phase CAS: T runs on worker 1
 *                          while fn still runs on worker 0 (property 2), or twice
 *   -DBUG_STORE_NOT_CAS    await_suspend stores fn_done instead of CAS: an early resume()
 *                          is overwritten and nobody resumes T (lost wake-up, invalid end state)
 */

#define IN_FN 0
#define FN_DONE 1
#define RESUMED_EARLY 2

#define W0 0
#define TASK 2 /* chain owner: held by the parked task */

byte phase = IN_FN;
bit published = 0;   /* the resume_handle is visible to the resumer */
bit queued = 0;      /* T resubmitted to the executor (worker 1's queue) */
byte chain = W0;     /* who holds T's chain: W0 (running T), TASK (parked), or 1 (worker 1) */
bit w0_touches = 0;  /* worker 0 is inside fn / await_suspend, touching T's frame */
byte runs = 0;       /* times T was resumed */
bit t_done = 0;

inline run_T(w) {
  assert(w0_touches == 0 || w == W0); /* property 2 */
  assert(chain == TASK);              /* property 3: adopt a chain the task holds */
  chain = w;
  runs++;
  assert(runs == 1);                  /* property 1: at most once */
  t_done = 1
}

proctype suspender() {
  byte expected;
  w0_touches = 1;
  chain = TASK; /* core::ext::park: the task takes the chain */
  published = 1; /* fn(resume_handle(this)) publishes it (e.g. into a waiter list) */
  skip;          /* fn goes on running after publishing (touching the frame) */
#ifdef BUG_STORE_NOT_CAS
  atomic { expected = phase; phase = FN_DONE; w0_touches = 0 };
  expected = IN_FN;
#else
  atomic { expected = phase; if :: phase == IN_FN -> phase = FN_DONE :: else -> skip fi;
           /* ghost: from a successful CAS on, await_suspend touches nothing of the frame */
           if :: expected == IN_FN -> w0_touches = 0 :: else -> skip fi };
#endif
  if
  :: expected == IN_FN -> w0_touches = 0 /* point of no return: continue_after(worker) */
  :: else -> w0_touches = 0; run_T(W0)   /* resumed early: resume_here on worker 0 */
  fi
}

proctype resumer() {
  byte seen;
  published == 1;
#ifdef BUG_RESUBMIT_NO_CAS
  queued = 1
#else
  /* suspension::resume: acquire load, then CAS in_fn -> resumed_early */
  seen = phase;
  if
  :: seen != FN_DONE ->
    atomic { seen = phase; if :: phase == IN_FN -> phase = RESUMED_EARLY :: else -> skip fi }
  :: else -> skip
  fi;
  if
  :: seen == IN_FN -> skip       /* the suspender takes the task back when fn returns */
  :: else -> queued = 1          /* executor::resubmit: point of no return */
  fi
#endif
}

proctype executor_worker() {
end_idle:
  queued == 1; /* idle unless T is resubmitted (a valid end: T may have been resumed early) */
  run_T(1)
}

init {
  atomic { run suspender(); run resumer(); run executor_worker() }
  t_done == 1; /* blocks forever (invalid end state) if T is never resumed */
  assert(runs == 1)
}
