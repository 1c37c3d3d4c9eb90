/* docs/models/reactor.pml — the reactor's sleep against a timer being armed (docs/protocols.md §10).
 *
 * ARM: a worker pushes a timer with deadline D into a shard, stores the shard's earliest (seq_cst)
 * and, if D is earlier than m_armed (the time the reactor will wake by), lowers m_armed with a
 * CAS and pokes the eventfd. REACTOR: publishes m_armed = the earliest it saw, re-reads the
 * shard (Dekker), and sleeps until its deadline or a poke. Time is abstract: the reactor's sleep
 * ends by itself only at the deadline it chose; INF means "no timeout". Property: no invalid end
 * state — the reactor never blocks with no timeout while the armed timer is pending and no poke
 * is owed (that would be a timer that never fires); and the timer fires (asserted at the end).
 * Variants: BUG_NO_RECHECK (no re-read after publishing m_armed), BUG_NO_POKE (arm does not
 * compare with m_armed). */

#define INF 2
#define MINUS 0   /* "awake, will look" */

byte earliest = INF;   /* the shard's earliest deadline: INF or 1 (our timer) */
byte armed = MINUS;    /* m_armed */
bool poked = false;    /* the eventfd's counter */
bool fired = false;
bool arm_done = false;

active proctype arm() {
  byte cur;
  earliest = 1;                 /* seq_cst store under the shard lock */
  atomic { cur = armed;         /* seq_cst load + CAS lowering it */
#ifndef BUG_NO_POKE
    if
    :: 1 < cur -> armed = 1; poked = true
    :: else -> skip
    fi
#endif
  }
  arm_done = true
}

active proctype reactor() {
  byte next, again;
  do
  :: armed = MINUS;                           /* awake */
     if :: earliest == 1 -> fired = true; earliest = INF :: else -> skip fi;  /* fire timers */
     next = earliest;
     armed = next;                            /* publish (seq_cst) */
#ifndef BUG_NO_RECHECK
     again = earliest;                        /* re-read (seq_cst) */
     if :: again < next -> goto loop :: else -> skip fi;
#endif
     /* sleep: until the deadline (wakes by itself), or a poke */
     if
     :: next != INF -> skip                   /* the deadline ends the sleep */
     :: next == INF ->
        if
        :: poked -> poked = false             /* woken by the eventfd */
        :: arm_done && !poked && (fired || earliest != 1) -> break /* nothing pending: idle */
        fi                                    /* else blocked: a pending timer never fires */
     fi;
loop: skip
  od;
  assert(fired)
}
