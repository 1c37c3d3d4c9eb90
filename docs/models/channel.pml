/* docs/models/channel.pml — the buffered magpie::channel (include/magpie/sync/detail/
 * channel_ring.hpp: push, pop; channel_buffered.hpp: the registration, the pump; channel.hpp:
 * close; docs/protocols.md §9.11): a lock-free ring of CAP cells with per-cell turn numbers for
 * sends and receives that do not wait, a lock for those that do (registration: count, then
 * push/pop again), the pump (after a push or pop that sees the other side's count), and close
 * (the closed bit lives in the tail word, then a pump).
 *
 * Two senders send VALUES (1) values each (sender s: VALUES·s + 1 …) with the awaiting send (fast
 * path unless senders wait, else the locked slow path); a receiver receives until std::nullopt
 * (the waits behind other receivers are not covered: two receivers exhaust this machine); a
 * closer closes at any moment. With -DCOUNTED there is no closer and the receiver stops after
 * every value: a wake-up lost until a close would otherwise hide behind the close's pump. Every step of the ring is a separate atomic step: the read of the
 * tail word, the read of a cell's turn, the CAS, the move, the publication. Spin explores the
 * interleavings under sequential consistency; the C++ code gets the same order for the
 * registration/pump Dekker from seq_cst CASes, loads and fences (protocols §9.11).
 *
 * PROPERTIES (exhaustive, safety):
 *   1. No lost wake-up: every process ends (a receiver only with "closed and drained", a waiting
 *      sender or receiver only once released): no invalid end state.
 *   2. Each value is received at most once, and at the end exactly the values whose sends
 *      reported success were received (none stranded in the ring by a close, none lost).
 *   3. A receive moves out only a published value; a send moves into a free cell only.
 *
 * Variants (each must FAIL; tests/models/run_models.sh checks it):
 *   -DBUG_NO_RECHECK      a receive registers and queues without popping again: lost wake-up (1)
 *   -DBUG_NO_PUMP         a push that does not wait never looks for waiting receivers (1;
 *                         with -DCOUNTED)
 *   -DBUG_SEPARATE_CLOSED close() sets a flag beside the tail, which a send checks before its
 *                         CAS: a value sent after the receivers were told "drained" (2)
 */

#define CAP 1
#define NS 2
#define NR 1 /* two receivers: beyond what an exhaustive search here finishes in minutes */
#ifndef VALUES
#define VALUES 1  /* per sender */
#endif
#define NV (NS * VALUES + 1) /* values 1 .. NS·VALUES */
#define NONE 0

byte tail = 0;    /* next position a send claims */
bit closed = 0;   /* the tail word's closed bit (BUG_SEPARATE_CLOSED: a separate flag) */
byte head = 0;    /* next position a receive claims */
byte turn[CAP];   /* 2p: free for p; 2p+1: holds p's value */
byte cell[CAP];

bit lock = 0;
byte nsend = 0;   /* waiting_senders */
byte nrecv = 0;   /* waiting_receivers */
bit squeued[NS];  /* in the senders' FIFO (lowest index first: order is not checked here) */
bit rqueued[NR];
byte sslot[NS];   /* a queued sender's value, NONE once sent */
byte rslot[NR];   /* a queued receiver's result */
bit srel[NS];     /* released */
bit rrel[NR];

byte got[NV];     /* receptions per value */
bit sent_ok[NV];  /* the send of this value reported success */
byte ended = 0;   /* processes finished */

inline acquire_lock() { atomic { lock == 0 -> lock = 1 } }

/* push(v) -> res: 0 sent, 1 full, 2 closed */
/* Locals of push, pop and pump_with_lock_held, declared by every process that uses them (inlines
 * expand in place). */
#define RING_LOCALS byte t, q, h, hh, qq, tt, pi, pr, pv; bit cc, progress

inline push(v, res) {
  do
  :: atomic { t = tail; q = closed };
     if
     :: q -> res = 2; break
     :: else -> skip
     fi;
     q = turn[t % CAP];
     if
     :: q == 2 * t ->
#ifdef BUG_SEPARATE_CLOSED
       atomic { if :: tail == t -> tail++; q = 1 :: else -> q = 0 fi };
#else
       atomic { if :: tail == t && !closed -> tail++; q = 1 :: else -> q = 0 fi };
#endif
       if
       :: q ->
         assert(turn[t % CAP] == 2 * t); /* property 3 */
         cell[t % CAP] = v;
         turn[t % CAP] = 2 * t + 1;
         res = 0; break
       :: else -> skip /* retry */
       fi
     :: q < 2 * t ->
       h = head;
       if
       :: t - h >= CAP -> res = 1; break
       :: else -> skip /* a receive is moving the old value out: retry */
       fi
     :: else -> skip
     fi
  od
}

/* pop(out, res): res 0 got (value in out), 1 empty, 2 empty and closed */
inline pop(out, res) {
  do
  :: hh = head;
     qq = turn[hh % CAP];
     if
     :: qq == 2 * hh + 1 ->
       atomic { if :: head == hh -> head++; qq = 1 :: else -> qq = 0 fi };
       if
       :: qq ->
         assert(turn[hh % CAP] == 2 * hh + 1); /* property 3 */
         out = cell[hh % CAP];
         cell[hh % CAP] = NONE;
         turn[hh % CAP] = 2 * (hh + CAP);
         res = 0; break
       :: else -> skip
       fi
     :: qq < 2 * hh + 1 ->
       atomic { tt = tail; cc = closed };
       if
       :: tt == hh -> if :: cc -> res = 2 :: else -> res = 1 fi; break
       :: else -> skip /* a send is moving its value in: retry */
       fi
     :: else -> skip
     fi
  od
}

/* Under the lock: serve queued receivers and senders while possible; once closed and empty,
 * release every queued receiver with nothing. */
inline pump_with_lock_held() {
  progress = 1;
  do
  :: progress ->
    progress = 0;
    pi = 0;
    do
    :: pi < NR && rqueued[pi] ->
      pop(pv, pr);
      if
      :: pr == 0 -> rslot[pi] = pv; rqueued[pi] = 0; nrecv--; rrel[pi] = 1; progress = 1; pi++
      :: pr == 2 ->
        pi = 0;
        do
        :: pi < NR -> if :: rqueued[pi] -> rqueued[pi] = 0; rrel[pi] = 1 :: else -> skip fi; pi++
        :: else -> break
        od;
        nrecv = 0; break
      :: else -> break
      fi
    :: pi < NR && !rqueued[pi] -> pi++
    :: else -> break
    od;
    pi = 0;
    do
    :: pi < NS && squeued[pi] ->
      push(sslot[pi], pr);
      if
      :: pr == 0 -> sslot[pi] = NONE; squeued[pi] = 0; nsend--; srel[pi] = 1; progress = 1; pi++
      :: else -> break
      fi
    :: pi < NS && !squeued[pi] -> pi++
    :: else -> break
    od
  :: else -> break
  od
}

inline pump_taking_lock() { acquire_lock(); pump_with_lock_held(); lock = 0 }

proctype sender(byte s) {
  byte k, v, res;
  bit anyq;
  RING_LOCALS;
  for (k : 1 .. VALUES) {
    v = VALUES * s + k;
    if
    :: nsend != 0 -> res = 1
    :: else ->
      push(v, res);
      if
      :: res == 0 ->
#ifndef BUG_NO_PUMP
        if :: nrecv != 0 -> pump_taking_lock() :: else -> skip fi
#endif
      :: else -> skip
      fi
    fi;
    if
    :: res == 1 -> /* slow path */
      acquire_lock();
      if
      :: closed -> res = 2; lock = 0
      :: else ->
        nsend++;
        anyq = squeued[0] || squeued[1];
        if
        :: !anyq -> push(v, res)
        :: else -> res = 1
        fi;
        if
        :: res == 0 ->
          nsend--;
          if :: nrecv != 0 -> pump_with_lock_held() :: else -> skip fi;
          lock = 0
        :: else ->
          sslot[s] = v; squeued[s] = 1; lock = 0;
          srel[s] == 1; /* wait to be released */
          srel[s] = 0;
          if :: sslot[s] == NONE -> res = 0 :: else -> res = 2 fi
        fi
      fi
    :: else -> skip
    fi;
    if
    :: res == 0 -> sent_ok[v] = 1
    :: else -> skip
    fi
  }
  ended++
}

proctype receiver(byte r) {
  byte v, res, received = 0;
  bit anyq;
  RING_LOCALS;
  do
  :: v = NONE;
    if
    :: nrecv != 0 -> res = 1
    :: else ->
      pop(v, res);
      if
      :: res == 0 -> if :: nsend != 0 -> pump_taking_lock() :: else -> skip fi
      :: else -> skip
      fi
    fi;
    if
    :: res == 1 -> /* slow path */
      acquire_lock();
      nrecv++;
      anyq = rqueued[0];
      if
      :: anyq -> res = 1
      :: else ->
#ifdef BUG_NO_RECHECK
        res = 1
#else
        pop(v, res)
#endif
      fi;
      if
      :: res == 0 ->
        nrecv--;
        if :: nsend != 0 -> pump_with_lock_held() :: else -> skip fi;
        lock = 0
      :: res == 2 -> nrecv--; lock = 0
      :: else ->
        rslot[r] = NONE; rqueued[r] = 1; lock = 0;
        rrel[r] == 1;
        rrel[r] = 0;
        v = rslot[r];
        if :: v != NONE -> res = 0 :: else -> res = 2 fi
      fi
    :: else -> skip
    fi;
    if
    :: res == 0 -> got[v]++; assert(got[v] == 1); /* property 2: at most once */
       received++;
#ifdef COUNTED
       if :: received == NS * VALUES -> break :: else -> skip fi
#endif
    :: else -> break /* closed and drained */
    fi
  od;
  ended++
}

proctype closer() {
  byte i;
  RING_LOCALS;
  acquire_lock();
  closed = 1; /* fetch_or on the tail word */
  i = 0;
  do
  :: i < NS -> if :: squeued[i] -> squeued[i] = 0; srel[i] = 1 :: else -> skip fi; i++
  :: else -> break
  od;
  nsend = 0;
  pump_with_lock_held();
  lock = 0;
  ended++
}

init {
  byte i;
  atomic {
    for (i : 0 .. CAP - 1) { turn[i] = 2 * i }
    run sender(0); run sender(1); run receiver(0);
#ifndef COUNTED
    run closer()
#endif
  }
#ifdef COUNTED
  ended == NS + NR;
#else
  ended == NS + NR + 1;
#endif
  for (i : 1 .. NV - 1) {
    assert(got[i] == sent_ok[i]) /* property 2: exactly the sent values */
  }
}
