/*
 * credit.pml - the credit protocol between the coin mech and coinmechd, for the spin
 * model checker.
 *
 * It models the serial protocol version 2 (docs/PROTOCOL.md, "Part two"), the ledger rules
 * (docs/LEDGER.md) and the daemon's state machine as the code has them now:
 *   Sources/CoinMechCore/DecidingCore.swift        (handle, tick, committed, settle)
 *   Sources/CoinMechCore/DeviceSequenceTracker.swift (classify, powerUp)
 *   Sources/CoinMechCore/EpochBook.swift           (session, record, epoch(ofBoot:))
 *   Sources/CoinMechCore/PendingCoins.swift        (add, settle, queried, askAllNow, unaskable)
 *   Sources/CoinMechSources/SerialMech.swift       (connectIfDue: $CMH on every connect)
 *   Sources/CoinMechLedger/LedgerWriter.swift      (resolve: pending -> settled, once)
 *   Sources/CoinMechLedger/LedgerQueries.swift     (sourceState, boots, pendingCoins at start)
 * and the mech as Simulators/CoinSimCore/MechSimulator.swift plays it.
 *
 * With -DFIXED it models the proposed fixed design instead (see "FIXED" below and README.md).
 *
 * ---------------------------------------------------------------------------------------
 * Processes
 *   Mech    the coin mech: insertions, readings, deadline, gate, cash box, journal, power
 *           cycles (MechSimulator: playInsertion, decided, storeCoinsInFlight, answerQuery,
 *           powerCycle, expireDeadlines)
 *   Daemon  coinmechd: DecidingCore.step(.mech) and step(.tick), the ledger commit, restart
 *   Env     the cable: unplug (both directions' bytes in transit are lost) and plug in again
 *   Monitor the end-state properties, checked when the whole system is quiescent (timeout)
 *
 * The line: two FIFO channels (a serial line does not reorder).  A sentence may be lost
 * (budget LOSSES, shared by both directions).  Mech -> host, a lost sentence arrives as a
 * garbled one (GARB: the host's FrameParser counts a bad checksum or a truncated sentence);
 * host -> mech, it simply vanishes (the mech ignores garbage).  While the host does not have
 * the port open, what the mech writes is lost.
 *
 * Time.  Untimed: every interleaving is allowed, except where the real timings make an
 * order certain.  Those are the following assumptions:
 *  T1 (confirmation window, 1 s)  The daemon's timer (DecidingCore.tick) fires only when the
 *     line is quiet: both channels empty and no coin waiting for its answer or falling at the
 *     mech.  The window (1 s) and the session wait (2 s) are far longer than a sentence's
 *     transit (15 ms), the mech's deadline (50 ms) and a coin's fall (~120 ms).  So a query
 *     or the end of the session wait never overtakes an answer that is on its way.
 *  T2 (power-off, 300 ms in MechSimulator) A power cycle is one step; host -> mech sentences
 *     in transit during it are lost (the mech is off).  An answer $CMD only reaches the mech
 *     within the deadline of the reading it answers (DecidingCore plans answers by the mech's
 *     clock and withdraws accepts that would be late), so an answer never reaches the coin of
 *     a later boot: a $CMD carries, as a ghost field, the boot of the reading it answers, and
 *     the mech drops it if it is not its current boot.
 *  T3 Commit-before-answer (LEDGER.md): a reading's decision and its ledger commit are one
 *     step; the daemon may crash after the commit and before the answer.
 *
 * Durable and volatile daemon state.  The ledger (durable) is: the decisions (epoch, devseq,
 * measurement, state), the current epoch (table sources) and the boot of each epoch (table
 * epochs).  The tracker's epoch, last devseq and recent measurements are exactly what
 * Ledger.sourceState restores (the current epoch's decisions), so they are derived from the
 * ledger here.  Volatile: connected, the session wait, the unanswered query counts.
 *
 * Simplifications (all on the safe side for what is checked, or irrelevant to money):
 *  - every coin is a good coin: the chain accepts every reading (rejects only remove paths);
 *  - the ledger never fails (ledger errors inhibit the mech, see LEDGER.md);
 *  - no exact duplicates (same devseq, same figures): they are answered again, recorded once;
 *  - a repeated reading with different figures (a 1-byte XOR checksum letting a corrupted copy
 *    through, or re-measuring firmware) is sent only while the coin waits for its answer,
 *    right behind the original (RESENDS);
 *  - the journal keeps the current and the previous session (the protocol's minimum);
 *  - PendingCoins.maximumUnansweredQueries is 5 in the code, MAXQ (2) here: the give-up takes
 *    MAXQ lost exchanges instead of 5; the logic is the same.
 *
 * Initial state: the mech is in boot 1, devseq 0, connected; the ledger has epoch 1 = boot 1
 * (the first connect's $CMS,SESSION,1 was recorded); no coin yet.
 *
 * ---------------------------------------------------------------------------------------
 * Bounds (per check; each can be overridden with -DNAME=value):
 *   NC coins inserted, REBOOTS mech power cycles, UNPLUGS cable pulls, RESTARTS daemon
 *   restarts, LOSSES lost sentences, RESENDS repeated readings with other figures,
 *   CMCLOST confirmations the mech never sends, AWAY coins inserted while the host is away,
 *   BOUNCE (0/1) whether an accepted coin may bounce.
 *
 *   check          NC REBOOTS UNPLUGS RESTARTS LOSSES RESENDS CMCLOST AWAY  property
 *   -DWINDOW2       1    1       1       0       0      0       0      0    P5
 *   -DWINDOW2R      2    1       1       0       0      0       0      1    P3
 *   -DWINDOW3       1    0       0       0       1      1       0      0    P1
 *   -DWINDOW3B      2    1       1       0       1      1       0      0    P2
 *   -DLATE          1    0       0       0       2      0       1      0    P4
 *   (none): full    2    1       1       1       2      1       1      1    all
 *   MAXQ = 2 everywhere; BOUNCE = 1 (an accepted coin may bounce) everywhere.
 *
 * Properties
 *   P1 no coin credited twice                (assert at every credit, and at the end)
 *   P2 no credit for a coin not in the cash box (assert at every credit)
 *   P3 at the end, every coin in the cash box is credited or listed unconfirmed
 *   P4 at the end, every coin in the cash box whose journal entry (still kept by the mech)
 *      says stored is credited: late evidence is not ignored
 *   P5 at the end, every coin whose "stored" ($CMC S or $CMJ S) reached the daemon is
 *      credited, unless its journal entry is gone meanwhile (two power-ups later): the mech's
 *      word is not dropped or applied to the wrong coin while it could still be used
 * The code before 0.5.0 is checked against the property of the window (-DWINDOW2 ...), or all of
 * them without a window; -DFIXED checks all of them.
 */

/* ---------------------------------------------------------------- configuration */

#if defined(WINDOW2)
#define E_NC 1
#define E_REBOOTS 1
#define E_UNPLUGS 1
#define E_RESTARTS 0
#define E_LOSSES 0
#define E_RESENDS 0
#define E_CMCLOST 0
#define E_AWAY 0
#define E_PROP_P5
#elif defined(WINDOW2R)
#define E_NC 2
#define E_REBOOTS 1
#define E_UNPLUGS 1
#define E_RESTARTS 0
#define E_LOSSES 0
#define E_RESENDS 0
#define E_CMCLOST 0
#define E_AWAY 1
#define E_PROP_P3
#elif defined(WINDOW3B)
#define E_NC 2
#define E_REBOOTS 1
#define E_UNPLUGS 1
#define E_RESTARTS 0
#define E_LOSSES 1
#define E_RESENDS 1
#define E_CMCLOST 0
#define E_AWAY 0
#define E_PROP_P2
#elif defined(WINDOW3)
#define E_NC 1
#define E_REBOOTS 0
#define E_UNPLUGS 0
#define E_RESTARTS 0
#define E_LOSSES 1
#define E_RESENDS 1
#define E_CMCLOST 0
#define E_AWAY 0
#define E_PROP_P1
#elif defined(LATE)
#define E_NC 1
#define E_REBOOTS 0
#define E_UNPLUGS 0
#define E_RESTARTS 0
#define E_LOSSES 2
#define E_RESENDS 0
#define E_CMCLOST 1
#define E_AWAY 0
#define E_PROP_P4
#else
#define E_NC 2
#define E_REBOOTS 1
#define E_UNPLUGS 1
#define E_RESTARTS 1
#define E_LOSSES 2
#define E_RESENDS 1
#define E_CMCLOST 1
#define E_AWAY 1
#endif

#ifndef NC
#define NC E_NC
#endif
#ifndef REBOOTS
#define REBOOTS E_REBOOTS
#endif
#ifndef UNPLUGS
#define UNPLUGS E_UNPLUGS
#endif
#ifndef RESTARTS
#define RESTARTS E_RESTARTS
#endif
#ifndef LOSSES
#define LOSSES E_LOSSES
#endif
#ifndef RESENDS
#define RESENDS E_RESENDS
#endif
#ifndef CMCLOST
#define CMCLOST E_CMCLOST
#endif
#ifndef AWAY
#define AWAY E_AWAY
#endif
#ifndef BOUNCE
#define BOUNCE 1
#endif
#ifndef MAXQ
#define MAXQ 2          /* PendingCoins.maximumUnansweredQueries (5 in the code) */
#endif

/* Which properties are asserted: all of them with -DFIXED, with -DALLPROPS, or for the code before 0.5.0's
   code without a window; otherwise the window's own. */
#if defined(CHECK_P1) || defined(CHECK_P2) || defined(CHECK_P3) || defined(CHECK_P4) || defined(CHECK_P5)
/* chosen on the command line (-DCHECK_P2 ...): only those */
#elif defined(FIXED) || defined(ALLPROPS) || !(defined(E_PROP_P1) || defined(E_PROP_P2) || defined(E_PROP_P3) || defined(E_PROP_P4) || defined(E_PROP_P5))
#define CHECK_P1
#define CHECK_P2
#define CHECK_P3
#define CHECK_P4
#define CHECK_P5
#else
#ifdef E_PROP_P1
#define CHECK_P1
#endif
#ifdef E_PROP_P2
#define CHECK_P2
#endif
#ifdef E_PROP_P3
#define CHECK_P3
#endif
#ifdef E_PROP_P4
#define CHECK_P4
#endif
#ifdef E_PROP_P5
#define CHECK_P5
#endif
#endif

#define ND    (NC + RESENDS)   /* decisions on the ledger, at most */
#define MAXE  8                /* epochs 1 .. MAXE-1 (index 0 unused) */
#ifndef CAP
#define CAP   (2*NC + 4)               /* channel capacity (asserted never to be exceeded) */
#endif
#define RBOUND 6               /* FIXED: queries about one unconfirmed coin (loop detector) */

/* a coin at the mech (ground truth) */
#define C_NOT    0     /* not inserted yet */
#define C_AWAIT  1     /* reading sent, waiting for the answer (deadline running) */
#define C_INFL   2     /* accepted: between the gate and the cash box */
#define C_STORED 3     /* in the cash box */
#define C_RET    4     /* given back to the customer */

/* a journal entry / the fate in $CMC and $CMJ */
#define F_NONE 0
#define F_S    1
#define F_R    2
#define F_U    3

/* a decision on the ledger (events.state) */
#define D_NONE 0
#define D_PEND 1       /* pending */
#define D_CRED 2       /* credited */
#define D_RET  3       /* returned */
#define D_UNC  4       /* unconfirmed (final) */
#define D_UNCA 5       /* FIXED: unconfirmed, still asked about; a later S credits it */

#define NOTHING 255

mtype = {
  READ,   /* $CMR,<devseq>,<figures>      a: devseq  b: figures (0 original, 1 other)  c: coin (ghost) */
  CONF,   /* $CMC,<devseq>,S|R            a: devseq  b: fate                           c: coin (ghost) */
  JOUR,   /* $CMJ,<boot>,<devseq>,S|R|U   a: boot    b: devseq                         c: fate */
  PWUP,   /* $CMS,POWERUP,<boot>          a: boot */
  SESS,   /* $CMS,SESSION,<boot>          a: boot */
  GARB,   /* a sentence the host's parser rejects (bad checksum, truncated) */
  DEC,    /* $CMD,<devseq>,A|R            a: devseq  b: 1 accept / 0 return            c: boot of the reading (ghost, T2) */
  QRY,    /* $CMQ,<boot>,<devseq>         a: boot    b: devseq */
  HELLO   /* $CMH */
};

chan m2h = [CAP] of { mtype, byte, byte, byte };   /* mech -> host */
chan h2m = [CAP] of { mtype, byte, byte, byte };   /* host -> mech */

/* ---------------------------------------------------------------- the mech (ground truth) */
byte mboot = 1;                 /* MechSimulator.boot */
byte mseq = 0;                  /* MechSimulator.devseq */
byte inserted = 0;
byte cboot[NC];                 /* coin c is (cboot[c], cseq[c]) in the mech's own numbering */
byte cseq[NC];
byte cst[NC];                   /* C_... */
byte jf[NC];                    /* its journal entry F_... (MechSimulator.journal) */
bit  cexp[NC];                  /* returned by the deadline; a late accept gets $CMC,R once */
byte nbusy = 0;                 /* coins in C_AWAIT or C_INFL (for T1) */

/* ---------------------------------------------------------------- the daemon */
/* durable: the ledger */
byte lep = 1;                   /* sources.epoch = DeviceSequenceTracker.epoch */
byte lboot[MAXE];               /* epochs.boot = EpochBook.boots (0: unknown) */
byte ndec = 0;
byte dep[ND];                   /* decision: epoch */
byte dseq[ND];                  /*           device_seq */
bit  dmeas[ND];                 /*           the figures */
byte dst[ND];                   /*           state D_... */
byte dcoin[ND];                 /*           the physical coin it was read from (ghost) */
/* volatile */
bool dconn = true;              /* DecidingCore.connected (and SerialMech has the port open) */
bool awaitS = false;            /* DecidingCore.awaitingSessionSince != nil; FIXED: session not confirmed */
byte dq[ND];                    /* PendingCoins.Coin.unansweredQueries */
byte npend = 0;                 /* decisions in D_PEND (derived, for guards) */
byte nunca = 0;                 /* decisions in D_UNCA (FIXED) */

/* ---------------------------------------------------------------- the world */
bool link = true;               /* the cable is plugged in */
byte reboots = REBOOTS;
byte unplugs = UNPLUGS;
byte restarts = RESTARTS;
byte losses = LOSSES;
byte resends = RESENDS;
byte cmclost = CMCLOST;
byte away = AWAY;

/* ghost: what the properties look at */
byte credits[NC];               /* credited decisions per physical coin */
bit  heard[NC];                 /* the daemon received "stored" about the coin ($CMC S, $CMJ S) */
byte dr[ND];                    /* FIXED: queries about an unconfirmed coin */

/* named so that a violation names its property */
byte p1_no_coin_credited_twice = 1;
byte p2_credit_only_for_a_coin_in_the_cash_box = 1;
byte p3_every_stored_coin_credited_or_unconfirmed = 1;
byte p4_journal_says_stored_so_credited = 1;
byte p5_stored_heard_by_daemon_so_credited = 1;
byte model_bound_ok = 1;
byte fixed_no_boot_conflict = 1;
byte witness = 1;               /* -DWITNESS_CREDIT, -DWITNESS_LATE: sanity checks, expected to fail */

/* ---------------------------------------------------------------- the line */

/* The mech writes a sentence (MechSimulator.send / enqueue / deliverOutgoing). */
inline m_send(m_send_t, m_send_a, m_send_b, m_send_c) {
  if
  :: dconn ->
       model_bound_ok = nfull(m2h); assert(model_bound_ok);
       if
       :: losses > 0 -> losses--; m2h!GARB,0,0,0;      /* garbled on the line */
          printf("MSC: LINE mech->host sentence %e garbled\n", m_send_t)
       :: true -> m2h!m_send_t,m_send_a,m_send_b,m_send_c
       fi
  :: else -> skip                                      /* nobody has the port open: lost */
  fi
}

/* The daemon writes a sentence (SerialMech.answer / query / askSession). */
inline h_send(h_send_t, h_send_a, h_send_b, h_send_c) {
  if
  :: losses > 0 -> losses--;                           /* lost or garbled: the mech hears nothing */
     printf("MSC: LINE host->mech sentence %e lost\n", h_send_t)
  :: true -> model_bound_ok = nfull(h2m); assert(model_bound_ok); h2m!h_send_t,h_send_a,h_send_b,h_send_c
  fi
}

inline flush_m2h() {
  do
  :: nempty(m2h) -> m2h?_,_,_,_
  :: empty(m2h) -> break
  od
}

inline flush_h2m() {
  do
  :: nempty(h2m) -> h2m?_,_,_,_
  :: empty(h2m) -> break
  od
}

/* ================================================================ the mech */

/* coin (b, d) of the mech, or NOTHING */
inline m_find(m_find_b, m_find_d, m_find_r) {
  m_find_r = NOTHING;
  for (k : 0 .. NC-1) {
    if
    :: cst[k] != C_NOT && cboot[k] == m_find_b && cseq[k] == m_find_d -> m_find_r = k
    :: else -> skip
    fi
  }
  k = 0
}

/* A coin goes in (MechSimulator.playInsertion, sendReading). */
inline m_insert() {
  c = inserted; inserted++;
  mseq++; cboot[c] = mboot; cseq[c] = mseq;
  if
  :: dconn ->
       cst[c] = C_AWAIT; nbusy++;
       printf("MSC: MECH coin %d inserted: boot %d devseq %d; $CMR,%d\n", c, mboot, mseq, mseq);
       m_send(READ, mseq, 0, c)
  :: else ->
       /* nobody listens: no answer comes, the deadline returns it (journal R) */
       cst[c] = C_RET; jf[c] = F_R;
       printf("MSC: MECH coin %d inserted while the host is away: boot %d devseq %d, returned\n", c, mboot, mseq)
  fi
}

/* The answer's deadline passes (MechSimulator.expireDeadlines). */
inline m_expire(m_expire_c) {
  cst[m_expire_c] = C_RET; jf[m_expire_c] = F_R; cexp[m_expire_c] = 1; nbusy--;
  printf("MSC: MECH coin %d (devseq %d): no answer in time, returned\n", m_expire_c, cseq[m_expire_c])
}

/* The coin reaches the cash box or bounces (MechSimulator.storeCoinsInFlight). */
inline m_land(m_land_c) {
  nbusy--;
  if
  :: cst[m_land_c] = C_STORED; jf[m_land_c] = F_S;
     if
     :: cmclost > 0 -> cmclost--;
        printf("MSC: MECH coin %d (boot %d devseq %d) stored; its $CMC is never sent\n", m_land_c, cboot[m_land_c], cseq[m_land_c])
     :: true ->
        printf("MSC: MECH coin %d (boot %d devseq %d) stored: $CMC,%d,S\n", m_land_c, cboot[m_land_c], cseq[m_land_c], cseq[m_land_c]);
        m_send(CONF, cseq[m_land_c], F_S, m_land_c)
     fi
  :: BOUNCE -> cst[m_land_c] = C_RET; jf[m_land_c] = F_R;
     printf("MSC: MECH coin %d (boot %d devseq %d) bounced: $CMC,%d,R\n", m_land_c, cboot[m_land_c], cseq[m_land_c], cseq[m_land_c]);
     m_send(CONF, cseq[m_land_c], F_R, m_land_c)
  fi
}

/* Power lost and back (MechSimulator.powerCycle + powerBackOn). */
inline m_power_cycle() {
  reboots--;
  for (k : 0 .. NC-1) {
    if
    :: cst[k] == C_AWAIT -> cst[k] = C_RET; jf[k] = F_R; cexp[k] = 0; nbusy--
    :: cst[k] == C_INFL ->
         /* between the gate and the cash box: it ends where chance puts it, no record */
         jf[k] = F_U; nbusy--;
         if
         :: cst[k] = C_STORED; printf("MSC: MECH power lost: coin %d fell into the cash box (journal U)\n", k)
         :: cst[k] = C_RET;    printf("MSC: MECH power lost: coin %d came back (journal U)\n", k)
         fi
    :: else -> skip
    fi
  }
  k = 0;
  flush_h2m();                  /* T2: sentences arriving while it is off are lost */
  mboot++; mseq = 0;
  printf("MSC: MECH power cycle: now boot %d; $CMS,POWERUP,%d\n", mboot, mboot);
  m_send(PWUP, mboot, 0, 0)
}

/* What the mech does with a sentence from the host (MechSimulator.readFromHost). */
inline m_receive() {
  h2m?t,a,b,c;
  if
  :: t == DEC ->
       /* MechSimulator.decided */
       if
       :: c != mboot -> skip    /* T2: the answer of a reading of an earlier boot */
       :: else ->
            m_find(mboot, a, r);
            if
            :: r == NOTHING -> skip
            :: r != NOTHING && cst[r] == C_AWAIT && b == 1 ->
                 cst[r] = C_INFL;
                 printf("MSC: MECH $CMD,%d,A: coin %d falls\n", a, r)
            :: r != NOTHING && cst[r] == C_AWAIT && b == 0 ->
                 cst[r] = C_RET; jf[r] = F_R; nbusy--;
                 printf("MSC: MECH $CMD,%d,R: coin %d returned\n", a, r)
            :: r != NOTHING && cst[r] != C_AWAIT && cexp[r] == 1 ->
                 /* the first answer after the deadline: an accept is confirmed returned */
                 cexp[r] = 0;
                 if
                 :: b == 1 -> m_send(CONF, a, F_R, r)
                 :: else -> skip
                 fi
            :: else -> skip     /* an answer for a coin already decided: ignored */
            fi
       fi
  :: t == QRY ->
       /* MechSimulator.answerQuery: the journal of the current and the previous session */
       m_find(a, b, r);
       if
       :: r != NOTHING && a == mboot && (cst[r] == C_AWAIT || cst[r] == C_INFL) -> skip   /* still on its way */
       :: r != NOTHING && a + 1 >= mboot && !(a == mboot && (cst[r] == C_AWAIT || cst[r] == C_INFL)) ->
            printf("MSC: MECH $CMQ,%d,%d -> $CMJ,%d,%d,%d (1 S, 2 R, 3 U)\n", a, b, a, b, jf[r]);
            m_send(JOUR, a, b, jf[r])
       :: else ->
            printf("MSC: MECH $CMQ,%d,%d -> $CMJ,%d,%d,U (no record)\n", a, b, a, b);
            m_send(JOUR, a, b, F_U)
       fi
  :: t == HELLO ->
       printf("MSC: MECH $CMH -> $CMS,SESSION,%d\n", mboot);
       m_send(SESS, mboot, 0, 0)
  :: else -> skip
  fi
}

proctype Mech() {
  byte k, c, r, a, b;
  mtype t;
end_mech:
  do
  :: atomic { inserted < NC && dconn -> m_insert(); c = 0 }
  :: atomic { away > 0 && !dconn && inserted < NC -> away--; m_insert(); c = 0 }
#if NC >= 1
  :: atomic { cst[0] == C_AWAIT -> m_expire(0) }
  :: atomic { cst[0] == C_INFL -> m_land(0) }
  :: atomic { resends > 0 && cst[0] == C_AWAIT -> resends--;
              printf("MSC: MECH repeats the reading of coin 0 with other figures: $CMR,%d\n", cseq[0]);
              m_send(READ, cseq[0], 1, 0) }
#endif
#if NC >= 2
  :: atomic { cst[1] == C_AWAIT -> m_expire(1) }
  :: atomic { cst[1] == C_INFL -> m_land(1) }
  :: atomic { resends > 0 && cst[1] == C_AWAIT -> resends--;
              printf("MSC: MECH repeats the reading of coin 1 with other figures: $CMR,%d\n", cseq[1]);
              m_send(READ, cseq[1], 1, 1) }
#endif
#if NC >= 3
  :: atomic { cst[2] == C_AWAIT -> m_expire(2) }
  :: atomic { cst[2] == C_INFL -> m_land(2) }
  :: atomic { resends > 0 && cst[2] == C_AWAIT -> resends--;
              printf("MSC: MECH repeats the reading of coin 2 with other figures: $CMR,%d\n", cseq[2]);
              m_send(READ, cseq[2], 1, 2) }
#endif
  :: atomic { reboots > 0 -> m_power_cycle() }
  :: atomic { nempty(h2m) -> m_receive(); t = 0; a = 0; b = 0; c = 0; r = 0 }
  od
}

/* ================================================================ the cable */

proctype Env() {
end_env:
  do
  :: atomic { unplugs > 0 && link -> unplugs--; link = false;
       /* SerialMech.readEvents -> disconnect; DecidingCore .lost: connected = false,
          awaitingSessionSince = nil.  Bytes in transit both ways are lost. */
       dconn = false; awaitS = false;
       flush_m2h(); flush_h2m();
       printf("MSC: CABLE unplugged\n") }
  :: atomic { !link -> link = true; printf("MSC: CABLE plugged in again\n") }
  od
}

/* ================================================================ the daemon */

/* decision of (epoch e, devseq d) on the ledger, or NOTHING (the unique index events_reading) */
inline d_find(d_find_e, d_find_d, d_find_r) {
  d_find_r = NOTHING;
  for (k : 0 .. ND-1) {
    if
    :: k < ndec && dep[k] == d_find_e && dseq[k] == d_find_d -> d_find_r = k
    :: else -> skip
    fi
  }
  k = 0
}

/* DeviceSequenceTracker.lastSeq: the highest devseq decided in epoch e (0: nil) */
inline d_last(d_last_e, d_last_r) {
  d_last_r = 0;
  for (k : 0 .. ND-1) {
    if
    :: k < ndec && dep[k] == d_last_e && dseq[k] > d_last_r -> d_last_r = dseq[k]
    :: else -> skip
    fi
  }
  k = 0
}

/* the coin the mech means by (b, d): ghost, for P5 only */
inline g_heard(g_heard_b, g_heard_d) {
  for (k : 0 .. NC-1) {
    if
    :: cst[k] != C_NOT && cboot[k] == g_heard_b && cseq[k] == g_heard_d -> heard[k] = 1
    :: else -> skip
    fi
  }
  k = 0
}

/* PendingCoins.settle + LedgerWriter.resolve: pending -> settled, in one transaction, once
   (UPDATE ... WHERE state = 'pending'; unique index on ref_seq). */
inline d_settle(d_settle_i, d_settle_s) {
#ifdef WITNESS_LATE
  /* sanity: a late "stored" does credit an unconfirmed coin (expected to be violated) */
  witness = !(d_settle_s == D_CRED && dst[d_settle_i] == D_UNCA); assert(witness);
#endif
  model_bound_ok = (dst[d_settle_i] == D_PEND || dst[d_settle_i] == D_UNCA); assert(model_bound_ok);
  if
  :: dst[d_settle_i] == D_PEND -> npend--
  :: else -> nunca--
  fi;
  dst[d_settle_i] = d_settle_s;
  if
  :: d_settle_s == D_UNCA -> nunca++
  :: else -> skip
  fi;
  if
  :: d_settle_s == D_CRED ->
       credits[dcoin[d_settle_i]]++;
       printf("MSC: DAEMON credits decision %d (epoch %d devseq %d) = coin %d\n", d_settle_i, dep[d_settle_i], dseq[d_settle_i], dcoin[d_settle_i]);
#ifdef CHECK_P1
       p1_no_coin_credited_twice = (credits[dcoin[d_settle_i]] <= 1);
       assert(p1_no_coin_credited_twice);
#endif
#ifdef CHECK_P2
       p2_credit_only_for_a_coin_in_the_cash_box = (cst[dcoin[d_settle_i]] == C_STORED);
       assert(p2_credit_only_for_a_coin_in_the_cash_box);
#endif
       skip
  :: d_settle_s == D_RET -> printf("MSC: DAEMON settles decision %d (epoch %d devseq %d) as returned\n", d_settle_i, dep[d_settle_i], dseq[d_settle_i])
  :: d_settle_s == D_UNC || d_settle_s == D_UNCA -> printf("MSC: DAEMON settles decision %d (epoch %d devseq %d) as unconfirmed\n", d_settle_i, dep[d_settle_i], dseq[d_settle_i])
  fi
}

/* A new epoch (DeviceSequenceTracker.powerUp, EpochBook.record; occurrence mech_power_up
   or mech_session, committed with the batch). */
inline d_new_epoch(d_new_epoch_b) {
  lep++;
  model_bound_ok = (lep < MAXE); assert(model_bound_ok);
  lboot[lep] = d_new_epoch_b;
  printf("MSC: DAEMON new epoch %d, boot %d (0: unknown)\n", lep, d_new_epoch_b)
}

/* The decision is committed, then answered (DecidingCore.handle -> .commit -> committed ->
   answerAll; PendingCoins.add).  T3: the daemon may die between commit and answer. */
inline d_accept(d_accept_d, d_accept_m, d_accept_c) {
  model_bound_ok = (ndec < ND); assert(model_bound_ok);
  dep[ndec] = lep; dseq[ndec] = d_accept_d; dmeas[ndec] = d_accept_m; dcoin[ndec] = d_accept_c; dst[ndec] = D_PEND; dq[ndec] = 0;
  ndec++; npend++;
  printf("MSC: DAEMON decision %d: epoch %d devseq %d (coin %d) accepted, pending; $CMD,%d,A\n", ndec-1, lep, d_accept_d, d_accept_c, d_accept_d);
  if
  :: restarts > 0 -> d_restart()          /* killed after the commit, before the answer */
  :: true -> h_send(DEC, d_accept_d, 1, cboot[d_accept_c])
  fi
}

/* The daemon restarts (coinmechd killed and started again; DecidingLoop reads
   Ledger.sourceState, boots and pendingCoins back).  The ledger stays; what it had read
   from the tty and its volatile state are lost. */
inline d_restart() {
  restarts--;
  dconn = false; awaitS = false;
  for (k : 0 .. ND-1) { dq[k] = 0 }
  k = 0;
  flush_m2h();
  printf("MSC: DAEMON restarts\n")
}

#ifndef FIXED
/* ---------------------------------------------------------------- the code before 0.5.0 */

/* DecidingCore.handle, case .reading: DeviceSequenceTracker.classify, then decide. */
inline d_reading(d_reading_d, d_reading_m, d_reading_c) {
  d_find(lep, d_reading_d, r);
  d_last(lep, e);
  if
  :: r != NOTHING && dmeas[r] == d_reading_m -> skip    /* duplicate: not modelled (no exact repeats) */
  :: else ->
       if
       :: r != NOTHING || (e > 0 && d_reading_d <= e) ->
            /* .impliedPowerUp: numbers went back, or a known number with other figures */
            printf("MSC: DAEMON $CMR,%d: implied power-up\n", d_reading_d);
            d_new_epoch(0);
            h_send(HELLO, 0, 0, 0)           /* outputs.append(.askSession) */
       :: else -> skip                        /* .new: in the current epoch, even while awaiting the session */
       fi;
       d_accept(d_reading_d, d_reading_m, d_reading_c)
  fi
}

/* case .confirmation: matched against the tracker's current epoch */
inline d_confirmation(d_confirmation_d, d_confirmation_f, d_confirmation_c) {
  if :: d_confirmation_f == F_S -> heard[d_confirmation_c] = 1 :: else -> skip fi;
  d_find(lep, d_confirmation_d, r);
  if
  :: r != NOTHING && dst[r] == D_PEND ->
       if
       :: d_confirmation_f == F_S -> d_settle(r, D_CRED)
       :: else -> d_settle(r, D_RET)
       fi
  :: else -> printf("MSC: DAEMON $CMC,%d dropped: no pending coin (epoch %d, devseq %d)\n", d_confirmation_d, lep, d_confirmation_d)
  fi
}

/* case .journal: EpochBook.epoch(ofBoot:) is the latest epoch with that boot */
inline d_journal(d_journal_b, d_journal_d, d_journal_f) {
  if :: d_journal_f == F_S -> g_heard(d_journal_b, d_journal_d) :: else -> skip fi;
  e = 0;
  for (k : 1 .. MAXE-1) {
    if :: lboot[k] == d_journal_b -> e = k :: else -> skip fi
  }
  k = 0;
  r = NOTHING;
  if :: e > 0 -> d_find(e, d_journal_d, r) :: else -> skip fi;
  if
  :: r != NOTHING && dst[r] == D_PEND ->
       if
       :: d_journal_f == F_S -> d_settle(r, D_CRED)
       :: d_journal_f == F_R -> d_settle(r, D_RET)
       :: else -> d_settle(r, D_UNC)
       fi
  :: else -> printf("MSC: DAEMON $CMJ,%d,%d dropped: no pending coin in epoch %d\n", d_journal_b, d_journal_d, e)
  fi
}

/* case .powerUp */
inline d_powerup(d_powerup_b) {
  if
  :: lboot[lep] == d_powerup_b -> skip                  /* late announcement of the session already known */
  :: else -> d_new_epoch(d_powerup_b)
  fi
}

/* case .session: EpochBook.session -> same / assigned / newEpoch; then askAllNow and
   unaskable coins settled as unconfirmed. */
inline d_session(d_session_b) {
  if
  :: lboot[lep] == d_session_b -> skip
  :: lboot[lep] == 0 -> lboot[lep] = d_session_b; printf("MSC: DAEMON epoch %d is boot %d\n", lep, d_session_b)
  :: else -> printf("MSC: DAEMON $CMS,SESSION,%d: the mech powered up while away\n", d_session_b); d_new_epoch(d_session_b)
  fi;
  awaitS = false;
  for (i : 0 .. ND-1) {
    if
    :: i < ndec && dst[i] == D_PEND ->
         dq[i] = 0;
         if
         :: lboot[dep[i]] == 0 -> d_settle(i, D_UNC)   /* PendingCoins.unaskable */
         :: else -> skip
         fi
    :: else -> skip
    fi
  }
  i = 0
}

inline d_garbled() { skip }                   /* case .protocolError: counted, nothing else */

/* DecidingCore.tick: the end of the session wait, then the due queries. */
inline d_tick() {
  if
  :: awaitS -> awaitS = false;                /* "the mech did not name its session" */
       for (i : 0 .. ND-1) { dq[i] = 0 }      /* pending.askAllNow */
       i = 0;
       printf("MSC: DAEMON session wait over: asking by the boots on record\n")
  :: else -> skip
  fi;
  for (i : 0 .. ND-1) {
    if
    :: i < ndec && dst[i] == D_PEND ->
         if
         :: lboot[dep[i]] == 0 -> d_settle(i, D_UNC)          /* unaskable */
         :: lboot[dep[i]] != 0 && dq[i] >= MAXQ -> d_settle(i, D_UNC)   /* PendingCoins.queried gives up */
         :: lboot[dep[i]] != 0 && dq[i] < MAXQ -> dq[i]++;
              printf("MSC: DAEMON $CMQ,%d,%d (decision %d)\n", lboot[dep[i]], dseq[i], i);
              h_send(QRY, lboot[dep[i]], dseq[i], 0)
         fi
    :: else -> skip
    fi
  }
  i = 0
}

#define TICK_GUARD (dconn && npend > 0 && len(m2h) == 0 && len(h2m) == 0 && nbusy == 0)

#else
/* ---------------------------------------------------------------- FIXED: the proposed design
 *  F1 A reading while the mech's session is not confirmed (after a connect, after a garbled
 *     sentence, after a suspicious reading) is answered "return" and not recorded.  $CMC
 *     (which names no boot) is ignored meanwhile; the journal will settle the coin.
 *  F2 A reading whose number went back, or repeats a known number with other figures, is no
 *     implied power-up: it is answered "return", and the daemon asks the session ($CMH).
 *     Only a boot number from the mech ($CMS,POWERUP or SESSION) starts an epoch; a boot
 *     number some epoch already has is refused as a conflict (no new epoch, session stays
 *     unconfirmed).  So every coin is keyed by the mech's own (boot, devseq).
 *  F3 Unconfirmed coins whose journal entry may still exist are asked about again (each
 *     window, after each connect); a later "stored" credits them (D_UNCA -> D_CRED, once).
 *  F4 A garbled sentence from the mech (the parser's error count) makes the session
 *     unconfirmed: $CMH again.  (Needed for F1/F2 to hold when $CMS,POWERUP is the sentence
 *     that was lost; see README.md.)
 */

/* Ablations, to show each rule is needed: -DFIXED_NO_F1, -DFIXED_NO_F3, -DFIXED_NO_F4. */
#ifdef FIXED_NO_F1
#define F1_HOLD false
#else
#define F1_HOLD awaitS
#endif

inline d_reading(d_reading_d, d_reading_m, d_reading_c) {
  if
  :: F1_HOLD ->                                           /* F1 */
       printf("MSC: DAEMON $CMR,%d while the session is unconfirmed: $CMD,%d,R\n", d_reading_d, d_reading_d);
       h_send(DEC, d_reading_d, 0, cboot[d_reading_c])
  :: else ->
       d_find(lep, d_reading_d, r);
       d_last(lep, e);
       if
       :: r != NOTHING && dmeas[r] == d_reading_m -> skip          /* duplicate: not modelled */
       :: r != NOTHING || (e > 0 && d_reading_d <= e) ->           /* F2 */
            printf("MSC: DAEMON $CMR,%d looks like a power-up: $CMD,%d,R and $CMH\n", d_reading_d, d_reading_d);
            h_send(DEC, d_reading_d, 0, cboot[d_reading_c]);
            awaitS = true;
            h_send(HELLO, 0, 0, 0)
       :: else ->
            model_bound_ok = (lboot[lep] != 0); assert(model_bound_ok);
            d_accept(d_reading_d, d_reading_m, d_reading_c)
       fi
  fi
}

inline d_confirmation(d_confirmation_d, d_confirmation_f, d_confirmation_c) {
  if :: d_confirmation_f == F_S -> heard[d_confirmation_c] = 1 :: else -> skip fi;
  if
  :: F1_HOLD -> printf("MSC: DAEMON $CMC,%d ignored: session unconfirmed\n", d_confirmation_d)   /* F1 */
  :: else ->
       d_find(lep, d_confirmation_d, r);
       if
       :: r != NOTHING && (dst[r] == D_PEND || dst[r] == D_UNCA) ->
            if
            :: d_confirmation_f == F_S -> d_settle(r, D_CRED)
            :: else -> d_settle(r, D_RET)
            fi
       :: else -> skip
       fi
  fi
}

/* keyed by (boot, devseq): boots are unique per epoch (F2) */
inline d_journal(d_journal_b, d_journal_d, d_journal_f) {
  if :: d_journal_f == F_S -> g_heard(d_journal_b, d_journal_d) :: else -> skip fi;
  r = NOTHING;
  for (i : 0 .. ND-1) {
    if
    :: i < ndec && lboot[dep[i]] == d_journal_b && dseq[i] == d_journal_d && (dst[i] == D_PEND || dst[i] == D_UNCA) -> r = i
    :: else -> skip
    fi
  }
  i = 0;
  if
  :: r != NOTHING ->
       if
       :: d_journal_f == F_S -> d_settle(r, D_CRED)                 /* F3: also an unconfirmed coin */
       :: d_journal_f == F_R -> d_settle(r, D_RET)
       :: else -> d_settle(r, D_UNC)                      /* no record: stop asking */
       fi
  :: else -> skip
  fi
}

/* POWERUP and SESSION both name the mech's current boot (F2) */
inline d_named(d_named_b) {
  e = 0;
  for (k : 1 .. MAXE-1) {
    if :: lboot[k] == d_named_b -> e = k :: else -> skip fi
  }
  k = 0;
  if
  :: lboot[lep] == d_named_b -> awaitS = false
  :: lboot[lep] != d_named_b && e != 0 ->
       /* refused: no epoch, the session stays unconfirmed (the mech's boots only grow,
          so this cannot happen in the model: asserted) */
       printf("MSC: DAEMON boot %d is epoch %d's already: conflict, refused\n", d_named_b, e);
       awaitS = true;
       fixed_no_boot_conflict = false; assert(fixed_no_boot_conflict)
  :: lboot[lep] == 0 && e == 0 -> lboot[lep] = d_named_b; awaitS = false
  :: lboot[lep] != 0 && lboot[lep] != d_named_b && e == 0 -> d_new_epoch(d_named_b); awaitS = false
  fi;
  for (i : 0 .. ND-1) { dq[i] = 0 }                       /* askAllNow */
  i = 0
}

inline d_powerup(d_powerup_b) { d_named(d_powerup_b) }
inline d_session(d_session_b) { d_named(d_session_b) }

inline d_garbled() {                                      /* F4 */
#ifndef FIXED_NO_F4
  awaitS = true;
  h_send(HELLO, 0, 0, 0)
#else
  skip
#endif
}

inline d_tick() {
  if
  :: awaitS -> h_send(HELLO, 0, 0, 0)                     /* ask again: no guessing */
  :: else -> skip
  fi;
  for (i : 0 .. ND-1) {
    if
#ifndef FIXED_NO_F3
    :: i < ndec && dst[i] == D_PEND && dq[i] >= MAXQ -> d_settle(i, D_UNCA)   /* listed unconfirmed, still asked */
#else
    :: i < ndec && dst[i] == D_PEND && dq[i] >= MAXQ -> d_settle(i, D_UNC)
#endif
    :: i < ndec && dst[i] == D_PEND && dq[i] < MAXQ -> dq[i]++;
         model_bound_ok = (lboot[dep[i]] != 0); assert(model_bound_ok);
         h_send(QRY, lboot[dep[i]], dseq[i], 0)
    :: i < ndec && dst[i] == D_UNCA ->                    /* F3 */
         dr[i]++; model_bound_ok = (dr[i] < RBOUND); assert(model_bound_ok);
         h_send(QRY, lboot[dep[i]], dseq[i], 0)
    :: else -> skip
    fi
  }
  i = 0
}

#define TICK_GUARD (dconn && (npend > 0 || nunca > 0 || awaitS) && len(m2h) == 0 && len(h2m) == 0 && nbusy == 0)
#endif

/* One sentence from the mech, with what it commits (DecidingCore.handle). */
inline d_receive() {
  m2h?t,a,b,c;
  if
  :: t == READ -> d_reading(a, b, c)
  :: t == CONF -> d_confirmation(a, b, c)
  :: t == JOUR -> d_journal(a, b, c)
  :: t == PWUP -> d_powerup(a)
  :: t == SESS -> d_session(a)
  :: t == GARB -> d_garbled()
  :: else -> skip
  fi
}

proctype Daemon() {
  byte k, i, r, e, a, b, c;
  mtype t;
end_daemon:
  do
  :: atomic { !dconn && link ->
       /* SerialMech.connectIfDue: open, $CMH; DecidingCore .connected: the session wait */
       dconn = true; awaitS = true;
       printf("MSC: DAEMON connected: $CMH\n");
       h_send(HELLO, 0, 0, 0) }
  :: atomic { nempty(m2h) -> d_receive(); t = 0; a = 0; b = 0; c = 0; r = 0; e = 0 }
  :: atomic { TICK_GUARD -> d_tick(); r = 0; e = 0 }
  :: atomic { restarts > 0 -> d_restart() }
  od
}

/* ================================================================ the end state */

proctype Monitor() {
  byte c, i;
  bool credited, accounted;
  timeout ->                    /* nothing can move any more: the run is over */
  atomic {
    for (c : 0 .. NC-1) {
      credited = false; accounted = false;
      for (i : 0 .. ND-1) {
        if
        :: i < ndec && dcoin[i] == c && dst[i] == D_CRED -> credited = true; accounted = true
        :: i < ndec && dcoin[i] == c && (dst[i] == D_UNC || dst[i] == D_UNCA) -> accounted = true
        :: else -> skip
        fi
      }
      printf("MSC: END coin %d: state %d (3 stored, 4 returned) boot %d devseq %d journal %d (1 S, 2 R, 3 U); credited %d times\n",
             c, cst[c], cboot[c], cseq[c], jf[c], credits[c]);
#ifdef CHECK_P1
      p1_no_coin_credited_twice = (credits[c] <= 1);
      assert(p1_no_coin_credited_twice);
#endif
#ifdef WITNESS_CREDIT
      /* sanity: some run ends with a coin credited (expected to be violated) */
      witness = !credited; assert(witness);
#endif
#ifdef CHECK_P3
      p3_every_stored_coin_credited_or_unconfirmed = (cst[c] != C_STORED || accounted);
      assert(p3_every_stored_coin_credited_or_unconfirmed);
#endif
#ifdef CHECK_P4
      p4_journal_says_stored_so_credited = (cst[c] != C_STORED || jf[c] != F_S || cboot[c] + 1 < mboot || credited);
      assert(p4_journal_says_stored_so_credited);
#endif
#ifdef CHECK_P5
      p5_stored_heard_by_daemon_so_credited = (!heard[c] || cboot[c] + 1 < mboot || credited);
      assert(p5_stored_heard_by_daemon_so_credited);
#endif
      skip
    }
  }
}

init {
  atomic {
    lboot[1] = 1;               /* epoch 1 is boot 1 (the first connect's SESSION) */
    run Mech(); run Env(); run Daemon(); run Monitor()
  }
}
