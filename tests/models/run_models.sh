#!/usr/bin/env bash
# tests/models/run_models.sh — model-checks magpie's protocols with spin (docs/models/*.pml).
#
#   tests/models/run_models.sh [MODELS_DIR [WORK_DIR]]
#   MAGPIE_MODEL_SHARD=K/N tests/models/run_models.sh ...   # only every Nth check from the Kth (1-based)
#
# For each model: `spin -a`, compile pan with gcc, run it exhaustively, and fail on any error
# (assertion violation, invalid end state = deadlock / lost wake-up, acceptance cycle for LTL
# properties under weak fairness, or an incomplete search). Then, for each deliberately weakened
# variant (-DBUG_...), check that spin REJECTS it: a model that cannot catch a bug proves little.
# Prints one line per check with states and time; exits non-zero if any check went the wrong way.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
models=${1:-$here/../../docs/models}
models=$(cd "$models" && pwd)
work=${2:-$(mktemp -d)}
mkdir -p "$work"
command -v spin >/dev/null || { echo "run_models.sh: spin is not installed (apt-get install spin)" >&2; exit 1; }
cc=${CC:-gcc}

failures=0
passed=0
# A shard runs the checks whose position (1, 2, ...) is K modulo N (ctest runs the shards side by side).
shard=${MAGPIE_MODEL_SHARD:-1/1}
shard_k=${shard%/*} shard_n=${shard#*/}
position=0

# The checks that explore half a million states or more (seconds of search): their verifier is
# compiled with -O2, for a faster search. The others explore fewer states, and compiling pan.c
# (14,000 lines) costs more than their search: with -O2 it took 11 s on a loaded 2-core machine,
# without optimisation 2 s, so they are compiled without it. The search and its verdict are the
# same either way.
optimised=" deque deque.grows sleep sleep.liveness sleep.guest sleep.guest.liveness sleep.guest.BUG_GUEST_NO_WAKE sleep.guest.BUG_ASLEEP_COUNTS sleep.host mutex_heir mutex_heir.K1 mutex_heir.sem channel "

# check NAME MODEL EXPECT MODE [SPIN_DEFINES...]
#   EXPECT: pass | fail      MODE: safety | ltl:NAME
check() {
  local name=$1 model=$2 expect=$3 mode=$4
  shift 4
  position=$((position + 1))
  if (((position - shard_k) % shard_n != 0)); then return; fi
  local dir="$work/$name"
  rm -rf "$dir" && mkdir -p "$dir"
  cp "$models/$model" "$dir/"
  local cflags=(-O0 -w -DVECTORSZ=2048) run=(-m2000000)
  if [[ $optimised == *" $name "* ]]; then cflags[0]=-O2; fi
  if [ "$mode" = safety ]; then
    cflags+=(-DSAFETY -DNOCLAIM)
  else
    run+=(-a -f -N "${mode#ltl:}")
  fi
  local start end out verdict errors states
  start=$(date +%s.%N)
  if ! (cd "$dir" && spin -a "$@" "$model" >spin.log 2>&1); then
    echo "FAIL  $name: spin -a failed:"; sed 's/^/      /' "$dir/spin.log"; failures=$((failures + 1)); return
  fi
  if ! (cd "$dir" && $cc "${cflags[@]}" -o pan pan.c >cc.log 2>&1); then
    echo "FAIL  $name: compiling pan failed:"; sed 's/^/      /' "$dir/cc.log"; failures=$((failures + 1)); return
  fi
  (cd "$dir" && ./pan "${run[@]}" >pan.log 2>&1) || true
  end=$(date +%s.%N)
  out="$dir/pan.log"
  errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$out" | tail -1)
  states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' "$out" | tail -1)
  local secs
  secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
  if [ -z "$errors" ]; then
    echo "FAIL  $name: pan did not report a result:"; sed 's/^/      /' "$out"; failures=$((failures + 1)); return
  fi
  if [ "$errors" = 0 ]; then
    if grep -q "Search not completed\|max search depth too small" "$out"; then verdict=incomplete; else verdict=pass; fi
  else
    verdict=fail
  fi
  local why
  why=$(grep -m1 -o "assertion violated.*\|invalid end state.*\|acceptance cycle.*\|non-progress cycle.*" "$out" || true)
  if [ "$verdict" = "$expect" ]; then
    passed=$((passed + 1))
    if [ "$expect" = pass ]; then
      printf "ok    %-34s %-9s %10s states  %6ss  property holds\n" "$name" "$mode" "$states" "$secs"
    else
      printf "ok    %-34s %-9s %10s states  %6ss  bug caught: %s\n" "$name" "$mode" "$states" "$secs" "$why"
    fi
  else
    failures=$((failures + 1))
    printf "FAIL  %-34s %-9s expected %s, got %s %s\n" "$name" "$mode" "$expect" "$verdict" "$why"
    sed 's/^/      /' "$out" | head -30
  fi
}

echo "magpie protocol models ($models), spin $(spin -V | sed -n 's/Spin Version \([^ ]*\).*/\1/p')"

# (a) the Chase–Lev deque, across growth: every item taken exactly once
check deque                   deque.pml pass safety
check deque.grows             deque.pml fail safety -DREACH_GROWTH
check deque.BUG_POP_NO_CAS    deque.pml fail safety -DBUG_POP_NO_CAS
check deque.BUG_STEAL_NO_CAS  deque.pml fail safety -DBUG_STEAL_NO_CAS

# (b) the join counter and the stack hand-off
check join                    join.pml  pass safety
check join.BUG_RELEASE_LATE   join.pml  fail safety -DBUG_RELEASE_LATE
check join.BUG_SHARE          join.pml  fail safety -DBUG_SHARE

# (c) the lazy pool's sleep/wake protocol
check sleep                   sleep.pml pass safety
check sleep.liveness          sleep.pml pass ltl:all_work_done
check sleep.BUG_NO_RECHECK    sleep.pml fail safety -DBUG_NO_RECHECK
check sleep.BUG_NO_LAST_THIEF sleep.pml fail safety -DBUG_NO_LAST_THIEF
check sleep.BUG_WORD_LATE    sleep.pml fail safety -DBUG_WORD_LATE
check sleep.BUG_NO_RECHECK.liveness sleep.pml fail ltl:all_work_done -DBUG_NO_RECHECK
check sleep.BUG_ASLEEP_COUNTS sleep.pml fail safety -DBUG_ASLEEP_COUNTS
check sleep.guest.BUG_ASLEEP_COUNTS sleep.pml fail safety -DGUEST -DBUG_ASLEEP_COUNTS
check sleep.guest             sleep.pml pass safety -DGUEST
check sleep.guest.liveness    sleep.pml pass ltl:all_work_done -DGUEST
check sleep.guest.BUG_GUEST_NO_WAKE sleep.pml fail safety -DGUEST -DBUG_GUEST_NO_WAKE
#     a plain thread that hosts roots on a guest slot: it pushes, then wakes a worker if need be
check sleep.host              sleep.pml pass safety -DHOST
check sleep.host.liveness     sleep.pml pass ltl:all_work_done -DHOST
check sleep.host.BUG_HOST_NO_WAKE sleep.pml fail safety -DHOST -DBUG_HOST_NO_WAKE
check sleep.host.BUG_HOST_CHECK_FIRST sleep.pml fail safety -DHOST -DBUG_HOST_CHECK_FIRST

# (d) magpie::mutex's direct hand-off (sync/detail/permits.hpp)
check mutex                      mutex.pml pass safety
check mutex.BUG_RELEASE_FIRST    mutex.pml fail safety -DBUG_RELEASE_FIRST
check mutex.BUG_NO_WAITERS_BIT   mutex.pml fail safety -DBUG_NO_WAITERS_BIT
check mutex.BUG_FAST_IGNORES_LOCK mutex.pml fail safety -DBUG_FAST_IGNORES_LOCK
#     and its revocable hand-off: a locker may take the mutex from an heir whose resumption
#     job has not started (the heir goes back to the front of the queue), at most K times per wait
check mutex_heir                      mutex_heir.pml pass safety
check mutex_heir.K1                   mutex_heir.pml pass safety -DK=1
check mutex_heir.BUG_REVOKE_NO_CAS    mutex_heir.pml fail safety -DBUG_REVOKE_NO_CAS
check mutex_heir.BUG_HEIR_NOT_CLEARED mutex_heir.pml fail safety -DBUG_HEIR_NOT_CLEARED
check mutex_heir.BUG_RESUBMIT_ALWAYS  mutex_heir.pml fail safety -DBUG_RESUBMIT_ALWAYS
check mutex_heir.BUG_NO_REVOKE_HOLD   mutex_heir.pml fail safety -DBUG_NO_REVOKE_HOLD
check mutex_heir.BUG_EXHAUSTED_HEIR_UNTRACKED mutex_heir.pml fail safety -DBUG_EXHAUSTED_HEIR_UNTRACKED
#     and magpie::semaphore's (two permits): a release that pops a waiter while another heir is
#     pending hands it its permit for good (plain hand-off); four tasks, task 0 runs two rounds
sem=(-DPERMITS=2 -DN=4 -DROUNDS=1 -DROUNDS0=2)
check mutex_heir.sem                  mutex_heir.pml pass safety "${sem[@]}"
check mutex_heir.BUG_SEM_ALWAYS_HEIR  mutex_heir.pml fail safety "${sem[@]}" -DBUG_SEM_ALWAYS_HEIR
check mutex_heir.BUG_SEM_NO_COUNT_CHECK mutex_heir.pml fail safety "${sem[@]}" -DBUG_SEM_NO_COUNT_CHECK
# (d) suspension: a resume that arrives before the suspension has finished (the phase CAS), and
#     waiting on a primitive (park, then one CAS into the event's word or enqueue under the lock;
#     set() takes the lone waiter by one CAS, or publishes and unlocks at once)
check suspend                          suspend.pml pass safety
check suspend.BUG_RESUBMIT_NO_CAS      suspend.pml fail safety -DBUG_RESUBMIT_NO_CAS
check suspend.BUG_STORE_NOT_CAS        suspend.pml fail safety -DBUG_STORE_NOT_CAS
check waiter                           waiter.pml  pass safety
check waiter.BUG_ENQUEUE_BEFORE_PARK   waiter.pml  fail safety -DBUG_ENQUEUE_BEFORE_PARK
check waiter.BUG_NO_RECHECK            waiter.pml  fail safety -DBUG_NO_RECHECK
check waiter.BUG_PUBLISH_THEN_UNLOCK   waiter.pml  fail safety -DBUG_PUBLISH_THEN_UNLOCK
check waiter.BUG_SET_IGNORES_QUEUED    waiter.pml  fail safety -DBUG_SET_IGNORES_QUEUED
check waiter.BUG_SOLO_DROPPED          waiter.pml  fail safety -DBUG_SOLO_DROPPED
check waiter.auto                      waiter.pml  pass safety -DAUTO
check waiter.auto.BUG_NO_RECHECK       waiter.pml  fail safety -DAUTO -DBUG_NO_RECHECK
check waiter.auto.BUG_SET_IGNORES_QUEUED waiter.pml fail safety -DAUTO -DBUG_SET_IGNORES_QUEUED
check waiter.auto.BUG_SOLO_DROPPED     waiter.pml  fail safety -DAUTO -DBUG_SOLO_DROPPED
#     a timed wait on an auto-reset event (and, -DPERMITS, a timed take of a semaphore or, with
#     -DMUTEX, of a mutex, with a racing taker): the release and the deadline race to claim it
check timed_wait                       timed_wait.pml pass safety
check timed_wait.BUG_IGNORE_CLAIM      timed_wait.pml fail safety -DBUG_IGNORE_CLAIM
check timed_wait.BUG_DROP_SET          timed_wait.pml fail safety -DBUG_DROP_SET
check timed_wait.BUG_OUTCOME_LATE      timed_wait.pml fail safety -DBUG_OUTCOME_LATE
check timed_wait.BUG_NO_CANCEL         timed_wait.pml fail safety -DBUG_NO_CANCEL
check timed_wait.dtor                  timed_wait.pml pass safety -DDTOR
check timed_wait.dtor.BUG_DTOR_NO_WAIT timed_wait.pml fail safety -DDTOR -DBUG_DTOR_NO_WAIT
check timed_wait.permits               timed_wait.pml pass safety -DPERMITS
check timed_wait.permits.BUG_REVOKE_TIMED timed_wait.pml fail safety -DPERMITS -DBUG_REVOKE_TIMED
check timed_wait.permits.BUG_IGNORE_CLAIM timed_wait.pml fail safety -DPERMITS -DBUG_IGNORE_CLAIM
check timed_wait.mutex                 timed_wait.pml pass safety -DPERMITS -DMUTEX
check timed_wait.mutex.BUG_REQUEUE_TIMED timed_wait.pml fail safety -DPERMITS -DMUTEX -DBUG_REQUEUE_TIMED
check timed_wait.cv                    timed_wait.pml pass safety -DCV
check timed_wait.cv.BUG_CV_WAKE_DIRECT timed_wait.pml fail safety -DCV -DBUG_CV_WAKE_DIRECT
check timed_wait.cv.BUG_IGNORE_CLAIM   timed_wait.pml fail safety -DCV -DBUG_IGNORE_CLAIM
check timed_wait.cv.dtor               timed_wait.pml pass safety -DCV -DDTOR
check timed_wait.cv.dtor.BUG_DTOR_NO_WAIT timed_wait.pml fail safety -DCV -DDTOR -DBUG_DTOR_NO_WAIT
#     a task's timed wait for a future: the completer and the deadline race for the lock-free word
check future_wait                      future_wait.pml pass safety
check future_wait.BUG_NO_WAIT          future_wait.pml fail safety -DBUG_NO_WAIT
check future_wait.BUG_GIVE_UP_PENDING  future_wait.pml fail safety -DBUG_GIVE_UP_PENDING
check future_wait.BUG_WITHDRAW_PENDING future_wait.pml fail safety -DBUG_WITHDRAW_PENDING

# (e) the reactor's sleep against a timer being armed (docs/protocols.md §10)
check reactor                 reactor.pml pass safety
check reactor.BUG_NO_RECHECK  reactor.pml fail safety -DBUG_NO_RECHECK
check reactor.BUG_NO_POKE     reactor.pml fail safety -DBUG_NO_POKE

# (f) the buffered channel: lock-free ring, registration against the pump, close in the tail word
check channel                       channel.pml pass safety
check channel.counted               channel.pml pass safety -DCOUNTED
check channel.BUG_NO_RECHECK        channel.pml fail safety -DBUG_NO_RECHECK
check channel.BUG_NO_PUMP           channel.pml fail safety -DCOUNTED -DBUG_NO_PUMP
check channel.BUG_SEPARATE_CLOSED   channel.pml fail safety -DBUG_SEPARATE_CLOSED
#     its timed receives: give first, then settle by the deadline node's claim
check channel_timed                      channel_timed.pml pass safety
check channel_timed.BUG_CLAIM_FIRST      channel_timed.pml fail safety -DBUG_CLAIM_FIRST
check channel_timed.BUG_IGNORE_CLAIM     channel_timed.pml fail safety -DBUG_IGNORE_CLAIM
check channel_timed.BUG_EXPIRED_EMPTY    channel_timed.pml fail safety -DBUG_EXPIRED_EMPTY
check channel_timed.BUG_NO_CANCEL        channel_timed.pml fail safety -DBUG_NO_CANCEL
check channel_timed.dtor                 channel_timed.pml pass safety -DDTOR
check channel_timed.dtor.BUG_DTOR_NO_WAIT channel_timed.pml fail safety -DDTOR -DBUG_DTOR_NO_WAIT
#     the shared_mutex's timed locks: the grant skips leaving writers, leaving grants again
check shared_mutex_timed                  shared_mutex_timed.pml pass safety
check shared_mutex_timed.BUG_NO_REGRANT   shared_mutex_timed.pml fail safety -DBUG_NO_REGRANT
check shared_mutex_timed.BUG_IGNORE_CLAIM shared_mutex_timed.pml fail safety -DBUG_IGNORE_CLAIM

echo "${passed} passed, ${failures} failed"
[ "$failures" = 0 ]
