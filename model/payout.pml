/*
 * payout.pml - money out, for the spin model checker: the payer, the line, the paying device
 * (an MDB changer's tube, or a ccTalk hopper), and the daemon that journals, dispenses,
 * settles and restarts (docs/LEDGER.md, "Payouts"; README.md, "Money out").
 *
 * With -DFIXED the daemon keeps the payout core's rules as the code has them now:
 *   Sources/CoinMechCore/PayoutCore.swift   (journal, dispense, count again, settle, read back,
 *                                            settle a payout left open, refill and float)
 *   Sources/CoinMechCore/PayoutRun.swift    (plan, dispensed, settle after a restart)
 *   Sources/CoinMechLedger/LedgerWriter+Payout.swift (a request id once, a step needs an open
 *                                            payout, settled once, a step's move counted once)
 *   Sources/CoinMechSources/CCTalkHopperBank+Payer.swift (the last step's hopper's account)
 * Without it, the shell that ran money out before PayoutCore (DecidingLoop+Payout): a count
 * short of its DISPENSE believed as it is, one device identity for the whole payout, and
 * refill and float without a request id.
 *
 * ---------------------------------------------------------------------------------------
 * One unit pays coins of one value. The payer asks for AMOUNT coins under one request id, and
 * asks again with it until it hears a settlement (ASKS times at most). A plan pays at most
 * STEPMAX coins a DISPENSE.
 *
 * The device, -DCHANGER (the default) or -DHOPPER:
 *   changer  counts its own coins (TUBE STATUS): a step paid its tube's fall. LAGS counts taken
 *            right after a DISPENSE read one coin high (a tube sensor not caught up yet).
 *   hopper   cannot count its coins: the ledger keeps its level, moved by the operator's refill
 *            (REFILLS: one coin loaded, then recorded) and by the hopper's own account of each
 *            step, which rides with the next journal write. Its event counter says after a
 *            crash whether the last step was taken, but only the hopper that took it can say.
 *            EXCHANGES: it is exchanged for another (its serial number changes, its counter
 *            starts from 0, it holds the same coins), between dispenses.
 * Either jams (JAMS): a DISPENSE pays one coin fewer than asked, and says so.
 *
 * The line: a DISPENSE may be lost (LOSSES; its reply lost instead is the same to the daemon:
 * it never sends a DISPENSE twice, and learns what it paid from the count or the counter).
 * The ledger: a commit may land and report a failure, or not land (FAILS); the daemon reads
 * the ledger back before it believes either (PayoutCore.readBack). The daemon may die after
 * any step (RESTARTS): what it held in memory is gone, the ledger and the device stay, and
 * the next start settles a payout left open from the held device before any coin moves.
 *
 * Time: untimed. A DISPENSE is one step of the device (it pays, or jams, at once): a death
 * "mid-dispense" is a death after it and before its count, which leaves the same evidence.
 *
 * Properties, checked once nothing can move (Monitor):
 *   p1_never_paid_twice          no journalled step's DISPENSE executed twice, and no coin
 *                                paid beyond what the journalled steps asked
 *   p2_every_coin_out_on_ledger  the coins that left are the coins the ledger's settlement
 *                                says were paid
 *   p3_owed_is_recorded          the payout is settled, and paid + owed is the amount (so
 *                                nothing beyond the amount was paid)
 *   p4_request_id_one_action     the ledger's level is the coins the hopper holds: a refill
 *                                counted once, each step's coins taken off once
 */

#ifndef AMOUNT
#define AMOUNT 3
#endif
#define STEPMAX 2
#define MAXSTEPS 4
#ifndef START_COINS
#define START_COINS 4
#endif
#ifndef RESTARTS
#define RESTARTS 1
#endif
#ifndef LOSSES
#define LOSSES 1
#endif
#ifndef FAILS
#define FAILS 1
#endif
#ifndef JAMS
#define JAMS 1
#endif
#ifndef LAGS
#define LAGS 0
#endif
#ifndef EXCHANGES
#define EXCHANGES 0
#endif
#ifndef REFILLS
#define REFILLS 0
#endif
#ifndef ASKS
#define ASKS 3
#endif
#ifndef HOPPER
#define CHANGER
#endif

/* ---- the device: the truth ---- */
byte coins = START_COINS;     /* coins in the unit */
byte paidOut;                 /* coins that left it (ghost) */
byte unit = 1;                /* which physical unit is there (its serial number) */
byte counter;                 /* a hopper's event counter: one more per DISPENSE taken */
byte lastPaid;                /* a hopper's own account of its last DISPENSE */
bool lagging;                 /* the next count reads one coin high */
byte executed[MAXSTEPS];      /* times each journalled step's DISPENSE was executed (ghost) */
byte tookStep[MAXSTEPS];      /* the unit that executed each step (ghost) */
bool held;                    /* a DISPENSE is journalled and not yet counted: no exchange */

/* ---- the ledger: durable ---- */
#define NONE 0
#define OPEN 1
#define SETTLED 2
byte lState;                  /* the payout under the request id */
byte lSteps;                  /* steps journalled */
byte lCount[MAXSTEPS];        /* coins each step asked */
byte lBefore;                 /* a changer's count just before the first step */
byte lMark[MAXSTEPS];         /* a hopper's counter just before each step */
byte lUnit[MAXSTEPS];         /* the hopper that was to pay each step */
byte lPayoutUnit;             /* the device when the payout was journalled */
byte lStepPaid[MAXSTEPS];     /* a hopper step's coins, as its move recorded them */
bool lCounted[MAXSTEPS];      /* a hopper step's move is on the ledger */
byte lPaid;                   /* the settlement: coins paid */
byte lOwed;                   /* and owed */
bool lCheckCash;              /* the settlement says what a step paid cannot be told */
byte lLevel = START_COINS;    /* a hopper's level (the operator counted it at the start) */
bool lRefill;                 /* the refill's request id is on the ledger */

/* ---- faults left ---- */
byte restartsLeft = RESTARTS;
byte lossesLeft = LOSSES;
byte failsLeft = FAILS;
byte jamsLeft = JAMS;
byte lagsLeft = LAGS;
byte exchangesLeft = EXCHANGES;
bool refillLoaded;            /* the operator has put the refill's coin into the hopper */
bool refillAnswered;          /* and heard that it is recorded */

/* ---- the payer ---- */
byte asks = ASKS;
bool heardSettled;
bool daemonDone;

/* ---- properties ---- */
bool p1_never_paid_twice = 1;
bool p2_every_coin_out_on_ledger = 1;
bool p3_owed_is_recorded = 1;
bool p4_request_id_one_action = 1;
bool witness = 1;             /* -DWITNESS_PAID: sanity, expected to fail */

/* A commit lands and reports success, lands and reports a failure, or does not land. */
#define OK 0
#define LANDED_FAILED 1
#define LOST 2
inline commitOutcome(o) {
  if
  :: o = OK
  :: failsLeft > 0 -> failsLeft--; o = LANDED_FAILED
  :: failsLeft > 0 -> failsLeft--; o = LOST
  fi
}

/* The daemon may die here: what it held in memory is gone. */
#define MAYBE_DIE if :: restartsLeft > 0 -> restartsLeft--; goto restart :: true -> skip fi

/* The device's count as the daemon reads it: a changer's tube (perhaps a coin high), or a
   hopper's level on the ledger. */
inline readCount(c) {
#ifdef CHANGER
  atomic { c = coins + (lagging -> 1 : 0); lagging = false }
#else
  c = lLevel
#endif
}

/* The device executes step `k`'s DISPENSE: pays its coins, or jams one short. */
inline execute(k) {
  atomic {
    executed[k]++;
    tookStep[k] = unit;
    counter++;
    paying = (lCount[k] < coins -> lCount[k] : coins);
    if
    :: jamsLeft > 0 && paying > 0 -> jamsLeft--; paying--; jammed = true
    :: true -> jammed = false
    fi;
    coins = coins - paying;
    paidOut = paidOut + paying;
    lastPaid = paying;
#ifdef CHANGER
    if :: lagsLeft > 0 && paying > 0 -> lagsLeft--; lagging = true :: true -> skip fi
#endif
  }
}

/* A hopper step's coins are recorded (its move), once: the ledger refuses a second. */
inline recordMove(k, coinsPaid) {
  if
  :: !lCounted[k] -> lCounted[k] = true; lStepPaid[k] = coinsPaid; lLevel = lLevel - coinsPaid
  :: else -> skip
  fi
}

/* What the ledger says the payout paid: a changer's settled figure, or a hopper's moves. */
inline recorded(sum) {
#ifdef CHANGER
  sum = paid
#else
  sum = 0; i = 0;
  do
  :: i < lSteps -> sum = sum + (lCounted[i] -> lStepPaid[i] : 0); i++
  :: else -> break
  od
#endif
}

proctype Daemon() {
  byte step, n, paid, now, c, o, paying, left, stepPaid, sum, i;
  bool jammed, believe;

restart:
  held = false; paid = 0; step = 0; stepPaid = 0; jammed = false;
  if
  :: lState == OPEN -> goto settleOpen
  :: else -> skip
  fi;

idle:
#ifdef HOPPER
  /* The operator's refill: asked until it hears it recorded. */
  if
  :: refillLoaded && !refillAnswered ->
     commitOutcome(o);
#ifdef FIXED
     /* Under its request id, once; read back after a failure. */
     if
     :: o != LOST && !lRefill -> lRefill = true; lLevel = lLevel + 1; refillAnswered = true
     :: o != LOST && lRefill -> refillAnswered = true
     :: o == LOST -> skip
     fi;
#else
     /* No request id: a commit that landed and reported a failure is asked again, and
        counted again. */
     if
     :: o != LOST -> lLevel = lLevel + 1; refillAnswered = (o == OK)
     :: o == LOST -> skip
     fi;
#endif
     MAYBE_DIE;
     goto idle
  :: else -> skip
  fi;
#endif
  if
  :: asks > 0 && !heardSettled -> asks--
  :: else ->
     /* Nothing more asked: done, unless the operator has loaded a refill meanwhile. */
     atomic {
       if
       :: refillLoaded && !refillAnswered -> skip
       :: else -> daemonDone = true
       fi
     };
     if
     :: daemonDone -> goto done
     :: else -> goto idle
     fi
  fi;
  /* A request id on the ledger is answered from it, never paid again. */
  if
  :: lState == SETTLED -> heardSettled = true; goto idle
  :: lState == OPEN -> goto idle
  :: lState == NONE -> skip
  fi;
  /* Held still and counted: the plan; nothing to pay from is a refusal, nothing journalled. */
  readCount(c);
  if
  :: c == 0 -> heardSettled = true; goto idle
  :: else -> skip
  fi;
  paid = 0; step = 0;
  n = (AMOUNT < STEPMAX -> AMOUNT : STEPMAX);
  n = (n < c -> n : c);
  held = true;
  /* The request and its first step commit together, before any coin moves. A failure is
     read back: not there, nothing was paid and the payer asks again. */
  commitOutcome(o);
  if
  :: o == LOST -> held = false; MAYBE_DIE; goto idle
  :: else ->
     atomic {
       lState = OPEN; lSteps = 1; lCount[0] = n; lBefore = c; lMark[0] = counter; lUnit[0] = unit; lPayoutUnit = unit
     }
  fi;
  MAYBE_DIE;

send:
  /* On the ledger (or read back there): the DISPENSE, sent once. */
  if
  :: lossesLeft > 0 -> lossesLeft--    /* lost on the line: not executed */
  :: true -> execute(step)
  fi;
  MAYBE_DIE;
  /* What it paid: the tube's fall, or the hopper's own account by its counter. */
#ifdef CHANGER
  readCount(now);
  stepPaid = (lBefore - paid > now -> lBefore - paid - now : 0);
#ifdef FIXED
  /* Short: counted again before it is believed (a jam or an empty tube does not say that
     the count is right). */
  if
  :: stepPaid < lCount[step] ->
     readCount(now);
     stepPaid = (lBefore - paid > now -> lBefore - paid - now : 0)
  :: else -> skip
  fi;
#endif
  stepPaid = (stepPaid < lCount[step] -> stepPaid : lCount[step]);
#else
  stepPaid = (counter == lMark[step] + 1 -> lastPaid : 0);
#endif
  held = false;
  paid = paid + stepPaid;
  MAYBE_DIE;
  /* The next step, or the settlement. A short step the device explains (a jam) plans the rest
     again; one it does not explain ends the payout with the rest owed. */
  left = AMOUNT - paid;
#ifdef CHANGER
  readCount(c);
#else
  c = lLevel - stepPaid;
#endif
  if
  :: left > 0 && step + 1 < MAXSTEPS && c > 0 && (stepPaid == lCount[step] || jammed) ->
     n = (left < STEPMAX -> left : STEPMAX);
     n = (n < c -> n : c);
     held = true;
     commitOutcome(o);
     if
     :: o == LOST -> held = false; goto settle    /* read back: not there: not sent, the rest owed */
     :: else ->
        atomic {
#ifdef HOPPER
          recordMove(step, stepPaid);              /* the last step's coins ride with it */
#endif
          step++;
          lSteps = step + 1; lCount[step] = n; lMark[step] = counter; lUnit[step] = unit
        }
     fi;
     MAYBE_DIE;
     goto send
  :: else -> skip
  fi;

settle:
  commitOutcome(o);
  if
  :: o == LOST -> MAYBE_DIE; goto settle   /* read back: not there: written again */
  :: else ->
     atomic {
#ifdef HOPPER
       recordMove(step, stepPaid);
#endif
       recorded(sum);
       lState = SETTLED; lPaid = sum; lOwed = (sum < AMOUNT -> AMOUNT - sum : 0); heardSettled = (o == OK)
     }
  fi;
  MAYBE_DIE;
  goto idle;

settleOpen:
  /* A payout left open: settled from the held device's own account; nothing sent again. */
  step = lSteps - 1;
#ifdef CHANGER
  /* Its tubes' fall from the first step's count, at most what the steps asked: from a count
     taken once it is held still, after the one its setup read. */
  readCount(now);
  readCount(now);
  paid = (lBefore > now -> lBefore - now : 0);
  left = 0; i = 0;
  do
  :: i < lSteps -> left = left + lCount[i]; i++
  :: else -> break
  od;
  paid = (paid < left -> paid : left);
#else
  /* The earlier steps' coins are on the ledger; the last step's hopper says what it paid, if
     it is the hopper that took it. */
  atomic {   /* the held hopper's serial number and counter, read together */
#ifdef FIXED
    believe = (unit == lUnit[step]);
#else
    believe = (unit == lPayoutUnit);
#endif
    if
    :: believe && counter == lMark[step] + 1 -> stepPaid = lastPaid
    :: believe && counter == lMark[step] -> stepPaid = 0
    :: else -> stepPaid = 0; lCheckCash = true    /* cannot be told: nothing paid, "check the cash" */
    fi
  };
#endif
  commitOutcome(o);
  if
  :: o == LOST -> MAYBE_DIE; goto settleOpen
  :: else ->
     atomic {
#ifdef HOPPER
       if :: stepPaid > 0 -> recordMove(step, stepPaid) :: else -> skip fi;
#endif
       recorded(sum);
       lState = SETTLED; lPaid = sum; lOwed = (sum < AMOUNT -> AMOUNT - sum : 0)
     }
  fi;
  MAYBE_DIE;
  goto idle;

done:
  skip
}

/* The world around: an exchanged hopper, an operator's refill. */
proctype Env() {
  do
  :: atomic { exchangesLeft > 0 && !held -> exchangesLeft--; unit++; counter = 0; lastPaid = 0 }
  :: atomic { REFILLS > 0 && !refillLoaded && !daemonDone -> refillLoaded = true; coins++ }
  :: break
  od
}

proctype Monitor() {
  byte i, asked;
  timeout ->
  asked = 0; i = 0;
  do
  :: i < MAXSTEPS ->
     p1_never_paid_twice = (executed[i] <= 1); assert(p1_never_paid_twice);
     asked = asked + (i < lSteps -> lCount[i] : 0); i++
  :: else -> break
  od;
  p1_never_paid_twice = (paidOut <= asked); assert(p1_never_paid_twice);
  if
  :: lState != NONE ->
     p3_owed_is_recorded = (lState == SETTLED && lPaid + lOwed == AMOUNT); assert(p3_owed_is_recorded);
     /* Exact, unless the settlement says to check the cash because the unit that took the
        last step is gone (exchanged while no daemon watched): then nothing else can tell. */
     p2_every_coin_out_on_ledger = (paidOut == lPaid || (lCheckCash && tookStep[lSteps - 1] != unit));
     assert(p2_every_coin_out_on_ledger)
  :: else ->
     p2_every_coin_out_on_ledger = (paidOut == 0); assert(p2_every_coin_out_on_ledger)
  fi;
#ifdef HOPPER
  /* Exact, unless the settlement says to check the cash (the unit that took the last step is
     gone): then the operator counts the hopper again. */
  p4_request_id_one_action = (lLevel == coins || (lCheckCash && lState != NONE && tookStep[lSteps - 1] != unit));
  assert(p4_request_id_one_action);
#endif
#ifdef WITNESS_PAID
  /* sanity: some run ends with the whole amount paid (expected to be violated) */
  witness = !(lState == SETTLED && lPaid == AMOUNT); assert(witness);
#endif
  skip
}

init {
  atomic { run Daemon(); run Env(); run Monitor() }
}
