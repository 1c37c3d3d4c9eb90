/* docs/models/sleep.pml — the lazy pool's sleep/wake protocol (src/pool/sleep.cpp: pool::run,
 * idle, wake, wake_one, become_active, become_thief, work_visible; src/pool/find_work.cpp:
 * run_jobs, try_steal, run_hosted; src/pool/in_flight.cpp: submit_to; src/pool/guest.cpp:
 * pool::run_root_here, pool::host_root; src/pool/pool.cpp: ~pool).
 *
 * PROPERTIES (exhaustive):
 *   1. No lost wake-up for submissions (safety: no invalid end state): no worker sleeps forever
 *      while a job is queued for it. A job goes to one specific worker's queue; only that worker
 *      can run it.
 *   2. A thief while work runs (safety: no invalid end state): while a worker is active, some
 *      worker is awake to steal, so stealable work never waits forever. The model makes this
 *      observable: job 0 is "parallel" — its worker pushes a stealable item and then waits,
 *      active, until another worker has stolen and run it (it never pops it back). If every
 *      other worker could be asleep while it waits, the system would block.
 *   3. Liveness (LTL, under weak fairness): every job and the item eventually complete,
 *      <> (done == JOBS + 1), and then the pool shuts down with every worker stopped.
 *
 * Scope: W workers; a submitter thread submits JOBS jobs, each to a worker it picks
 * nondeterministically (pool::submit_to); then it waits for the work to finish and destroys the
 * pool (stop + wake everyone, as ~pool does). Counters and sleep words are seq_cst in the code and
 * every access is one step here (an SC model). A worker's sleep word (awake / asleep / notified)
 * and its futex are modelled explicitly: wait(asleep) checks the word and enqueues the thread in
 * one step (the kernel's futex_wait), then blocks until a notify; a notify wakes the worker only
 * if it is enqueued at that moment (a notify sent earlier is lost, which is why the word must have
 * changed before it). Spurious wake-ups only re-check the word and are not modelled. The spin/yield rounds before a worker tries to sleep are
 * abstracted: an idle worker may retry at once or attempt to sleep, in any interleaving. Victim
 * selection (uniform random in the code) is abstracted to "some non-empty deque if any": a thief
 * that keeps looking finds the work with probability 1.
 *
 * Variants (each must FAIL; tests/models/run_models.sh checks it):
 *   -DBUG_NO_RECHECK     a would-be sleeper does not re-check for work after registering
 *                        (the classic lost wake-up)
 *   -DBUG_NO_LAST_THIEF  the last thief goes to sleep although a worker is active (both checks
 *                        of the rule removed: before leaving the thieves, and in the re-check)
 *   -DBUG_WORD_LATE      a would-be sleeper stores `asleep` in its word only after its re-check
                        (a waker between the two finds the word `awake` and skips it)
 *
 *   -DBUG_ASLEEP_COUNTS  a sleeper's `asleep` word is taken for a thief on its way (the test of
 *                        the word reads "not awake" instead of "notified")
 *
 * A thief on its way: a worker that becomes active as the last thief, a guest that finds no
 * thief, and a host after its push wake a sleeper only if no worker's word holds `notified`
 * (pool::thief_on_its_way): a notified worker will count itself a thief, and a second wake-up
 * would bring one no sooner (on a VM each costs the waker ~10 µs). The woken worker counts
 * itself a thief before its word leaves `notified`, so between the two it is counted twice,
 * never zero times.
 *
 * -DGUEST: a caller that runs its own root (pool::run_root_here) instead of submitting jobs. It
 * counts itself active, wakes a worker if no thief is awake, pushes a stealable continuation
 * on its own deque and waits, active, until a worker has stolen and run it (the root's child
 * needs its sibling, as in tests/sched/caller_runs_test.cpp). Workers steal from its deque and
 * see it in work_visible. Properties 1 to 3 as above, with the guest's item as the work: no
 * state in which the guest waits for a thief while every worker is blocked, and the guest's root
 * eventually completes. Variant:
 *   -DGUEST -DBUG_GUEST_NO_WAKE   the guest does not wake a worker when no thief is awake (must
 *                                 FAIL: every worker may be asleep when the guest starts)
 *
 * -DHOST: a plain thread that hosts roots on a guest slot (pool::host_root) instead of submitting
 * jobs. It is no worker and never counts as active: it pushes H roots on the slot's deque, one
 * after the other, and after each push (ordered before its loads by a full barrier in the code;
 * here the steps simply follow) wakes a worker if some worker sleeps, no thief is awake and none
 * is on its way. It never runs a root itself (the worst case: it waits for their side effects)
 * and waits until the workers have stolen and run all H (find_work.cpp: run_hosted), then
 * destroys the pool (the model's init plays both the host and the pool's owner). Workers steal
 * from the slot's deque and see it in work_visible. Properties 1 and 3 as above, with the hosted
 * roots as the work: no state in which the host waits while every worker sleeps with a root on
 * its deque, and every root eventually completes. H = 1 by default (1.9 million states); -DH=2,
 * where a push may find a worker active on the first root, holds too but explores 16 million
 * states (safety, 1.3 GB) and 4.5 million (liveness), too many for every CI run: check it by
 * hand after changing host_root. Variants:
 *   -DHOST -DBUG_HOST_NO_WAKE     the host never wakes a worker after its pushes (must FAIL:
 *                                 every worker may be asleep when it pushes)
 *   -DHOST -DBUG_HOST_CHECK_FIRST the host looks for sleepers before its push instead of after
 *                                 (must FAIL: a worker that registers and re-checks between the
 *                                 look and the push sleeps through it, the classic lost wake-up)
 */

#define W 2
#if defined(GUEST) && defined(HOST)
#error "GUEST and HOST are separate variants"
#endif
#ifdef GUEST
#define JOBS 0
#define DONE_ALL 2 /* the guest's stolen item, then the guest itself */
#elif defined(HOST)
#ifndef H
#define H 1        /* roots the host pushes (-DH=2: see the header) */
#endif
#define JOBS 0
#define DONE_ALL H /* the hosted roots, each stolen and run by a worker */
#else
#define JOBS 2
#define DONE_ALL (JOBS + 1)
#endif

byte n_active = 0;   /* pool::m_active */
byte thieves = W;  /* pool::m_thieves: every worker starts as a thief */
byte sleepers = 0; /* pool::m_sleepers */
bit stop = 0;      /* pool::m_stop */
byte word[W];      /* worker::sleep_word: 0 awake, 1 asleep, 2 notified */
bit waiting[W];    /* the worker is enqueued on its word's futex (a notify now wakes it) */
bit woken[W];      /* a notify arrived while it was enqueued */
byte queue[W];     /* jobs in worker::queue */
byte deq[W];       /* stealable items in worker::ctx.tasks() */
byte done = 0;     /* jobs and items completed */
bit parallel_started = 0;
bit item_done = 0; /* the parallel job's item was stolen and run */
byte exited = 0;
#ifdef GUEST
byte gdeq = 0;            /* stealable items on the guest's deque */
bit guest_item_done = 0;  /* a worker stole and ran the guest's continuation */
#endif
#ifdef HOST
byte hdeq = 0;            /* roots on the host's slot deque, pushed and not yet stolen */
#endif

#define AWAKE 0
#define ASLEEP 1
#define NOTIFIED 2

/* futex wake: wakes the worker only if it is enqueued on its word right now. */
inline notify(w) {
  if
  :: waiting[w] -> woken[w] = 1
  :: else -> skip
  fi
}

/* pool::notify_if_asleep: CAS the word asleep -> notified; on success, notify it. */
inline notify_if_asleep(w, ok) {
  atomic {
    if
    :: word[w] == ASLEEP -> word[w] = NOTIFIED; ok = 1
    :: else -> ok = 0
    fi
  };
  if
  :: ok -> notify(w)
  :: else -> skip
  fi
}

/* pool::thief_on_its_way: some worker's word holds `notified` (one load per word). */
inline thief_on_its_way(on_way) {
  on_way = 0;
  k = 0;
  do
#ifdef BUG_ASLEEP_COUNTS
  :: k < W && word[k] != AWAKE -> on_way = 1; break
  :: k < W && word[k] == AWAKE -> k++
#else
  :: k < W && word[k] == NOTIFIED -> on_way = 1; break
  :: k < W && word[k] != NOTIFIED -> k++
#endif
  :: k == W -> break
  od
}

/* pool::wake_one: the first worker whose CAS succeeds. */
inline wake_one() {
  if
  :: sleepers == 0 -> skip
  :: else ->
    k = 0;
    do
    :: k < W ->
      notify_if_asleep(k, ok);
      if
      :: ok -> break
      :: else -> k++
      fi
    :: k == W -> break
    od
  fi
}

/* pool::wake(index) */
inline wake(index) {
  if
  :: sleepers == 0 -> skip
  :: else -> notify_if_asleep(index, ok)
  fi
}

inline become_active() {
  n_active++;
  atomic { old = thieves; thieves-- };
  if
  :: old == 1 ->
    thief_on_its_way(on_way);
    if
    :: !on_way -> wake_one() /* we were the last thief, and none is on its way */
    :: else -> skip
    fi
  :: else -> skip
  fi
}

inline become_thief() {
  thieves++;
  n_active--
}

proctype worker(byte me) {
  byte old, n, v, k;
  bit needed, visible, ok, on_way;

  do
  :: /* pool::run_jobs: take everything queued for me */
    atomic { n = queue[me]; queue[me] = 0 };
    if
    :: n > 0 ->
      become_active();
      do
      :: n > 0 ->
        /* the first job to run is the parallel one: it pushes a stealable item and waits,
           active, until a thief has run it (it never pops it back itself) */
        if
        :: atomic { !parallel_started -> parallel_started = 1; deq[me] = 1 };
          (item_done)
        :: else -> skip
        fi;
        done++;
        n--
      :: else -> break
      od;
      become_thief()
    :: else ->
      /* pool::try_steal: take an item from some other worker's deque */
      atomic {
        v = W;
        k = 0;
        do
        :: k < W && k != me && deq[k] > 0 -> v = k; deq[k]--; break
        :: k < W && (k == me || deq[k] == 0) -> k++
        :: k == W -> break
        od;
#ifdef GUEST
        if
        :: v == W && gdeq > 0 -> gdeq--; v = W + 1 /* the guest's deque is a victim too */
        :: else -> skip
        fi
#endif
#ifdef HOST
        if
        :: v == W && hdeq > 0 -> hdeq--; v = W + 2 /* run_hosted: the slot's oldest root */
        :: else -> skip
        fi
#endif
      };
      if
      :: v < W ->
        become_active();
        item_done = 1; /* run the stolen item */
        done++;
        become_thief()
#ifdef GUEST
      :: v == W + 1 ->
        become_active();
        guest_item_done = 1; /* run the guest's stolen continuation */
        done++;
        become_thief()
#endif
#ifdef HOST
      :: v == W + 2 ->
        become_active(); /* run_batch activates, as for any stolen work */
        done++;          /* run the hosted root */
        become_thief()
#endif
      :: else ->
        if
        :: stop -> break
        :: else ->
          /* pool::idle, after its spin/yield rounds (or retry at once) */
          if
          :: skip /* keep looking */
          :: atomic { old = thieves; thieves-- };
#ifndef BUG_NO_LAST_THIEF
            if
            :: old == 1 && n_active > 0 -> thieves++ /* the last thief stays while work runs */
            :: else ->
#endif
#ifndef BUG_WORD_LATE
              word[me] = ASLEEP;
#endif
              sleepers++;
#ifdef BUG_NO_RECHECK
              needed = 0;
              visible = 0;
#else
#ifdef BUG_NO_LAST_THIEF
              needed = 0;
#else
              needed = (thieves == 0 && n_active > 0);
#endif
              visible = (queue[me] > 0);
              k = 0;
              do /* work_visible: own queue, or any deque */
              :: k < W && deq[k] > 0 -> visible = 1; break
              :: k < W && deq[k] == 0 -> k++
              :: k == W -> break
              od;
#ifdef GUEST
              visible = visible || gdeq > 0; /* work_visible looks at the guests' deques */
#endif
#ifdef HOST
              visible = visible || hdeq > 0; /* ... and at the roots the guest slots host */
#endif
#endif
#ifdef BUG_WORD_LATE
              word[me] = ASLEEP;
#endif
              if
              :: !needed && !visible && !stop ->
                /* while (word == asleep) word.wait(asleep) */
                do
                :: word[me] != ASLEEP -> break
                :: atomic { word[me] == ASLEEP -> waiting[me] = 1 }; /* futex_wait: check, enqueue */
end_sleep:        (woken[me]);
                  atomic { woken[me] = 0; waiting[me] = 0 }
                od
              :: else -> skip
              fi;
              sleepers--;
              thieves++;       /* a thief again first, */
              word[me] = AWAKE /* then no longer on its way */
#ifndef BUG_NO_LAST_THIEF
            fi
#endif
          fi
        fi
      fi
    fi
  od;
  exited++
}

#ifdef GUEST
/* pool::run_root_here on a lazy pool of W >= 2 workers */
proctype guest() {
  byte k;
  bit ok, on_way;
  n_active++;
#ifndef BUG_GUEST_NO_WAKE
  if
  :: thieves == 0 ->
    thief_on_its_way(on_way);
    if
    :: !on_way -> wake_one() /* no thief awake or on its way: wake one */
    :: else -> skip
    fi
  :: else -> skip
  fi;
#endif
  gdeq = 1;           /* the root forks: its continuation is stealable */
  (guest_item_done);  /* the guest runs the child, which waits for its sibling */
  n_active--;
  done++
}
#endif

#ifdef HOST
/* pool::host_root's look after a push: wake a worker if some worker sleeps, no thief is awake,
   and none is on its way (one load each, in this order) */
inline host_wake_check() {
  if
  :: sleepers != 0 ->
    if
    :: thieves == 0 ->
      thief_on_its_way(on_way);
      if
      :: !on_way -> wake_one()
      :: else -> skip
      fi
    :: else -> skip
    fi
  :: else -> skip
  fi
}

/* a plain thread hosts H roots on its guest slot (open_host, host_root ... close_host); it is
   the pool's owner too (init), so its wait below is the sync_wait before ~pool */
inline host_roots() {
  i = 0;
  do
  :: i < H ->
#ifdef BUG_HOST_CHECK_FIRST
    host_wake_check();
#endif
    hdeq++; /* push_reserved: the root is stealable */
#if !defined(BUG_HOST_NO_WAKE) && !defined(BUG_HOST_CHECK_FIRST)
    host_wake_check();
#endif
    i++
  :: else -> break
  od
}
#endif

init {
  byte i, k, target;
  bit ok;
#ifdef HOST
  bit on_way;
#endif
  atomic {
    i = 0;
    do
    :: i < W -> run worker(i); i++
    :: else -> break
    od
  };
#ifdef GUEST
  run guest();
#endif
#ifdef HOST
  host_roots(); /* it never runs them itself: it waits below for their side effects */
#endif
  /* the submitter: pool::submit_root / submit_to */
  i = 0;
  do
  :: i < JOBS ->
    target = 0;
    do /* any worker (pool::choose_worker is a hint-driven heuristic) */
    :: target + 1 < W -> target++
    :: break
    od;
    queue[target]++; /* job_queue::push, seq_cst */
    wake(target);
    i++
  :: else -> break
  od;
  /* sync_wait: wait for the work (jobs + the stolen item; or the hosted roots) */
  (done == DONE_ALL);
  /* ~pool: stop, then wake every sleeper */
  stop = 1;
  k = 0;
  do
  :: k < W -> notify_if_asleep(k, ok); k++
  :: else -> break
  od;
  (exited == W);
  assert(n_active == 0 && thieves == W && sleepers == 0)
}

ltl all_work_done { <> (done == DONE_ALL) }
