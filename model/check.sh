#!/usr/bin/env bash
# Runs the spin checks of model/credit.pml (money in) and model/payout.pml (money out); see
# README.md.
#
#   model/check.sh            run every check; one line per check, then "N passed, N failed"
#   model/check.sh --trails   also rewrite model/counterexamples/*.trail.txt from the runs
#
# The code before 0.5.0, and the money-out shell before PayoutCore: spin MUST find each
# documented window (the check fails if it does not: those counterexamples document bugs of
# the code as it was).  -DFIXED: spin must find no error.  Everything is built and run in a temporary directory, removed at the end.
# Needs spin (Debian: apt-get install -y spin) and gcc.  Takes about a minute on 2 cores.

set -u -o pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
MODEL="$HERE/credit.pml"
WRITE_TRAILS=0
case "${1:-}" in
  --trails) WRITE_TRAILS=1 ;;
  "") ;;
  *) echo "usage: $0 [--trails]" >&2; exit 2 ;;
esac

if ! command -v spin >/dev/null 2>&1; then
  echo "check.sh: spin is not installed (Debian/Ubuntu: apt-get install -y spin); nothing was checked" >&2
  exit 2
fi
if ! command -v gcc >/dev/null 2>&1; then
  echo "check.sh: gcc is not installed (spin's verifiers are C programs); nothing was checked" >&2
  exit 2
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/coinmech-model.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

# Limits: bounded search, a few minutes of CPU at most (each run is far below).
# -O0 compiles in a second; the large run (fixed/full) is worth -O2's 10 s of compiling.
PAN_CFLAGS="-w -DSAFETY -DNOREDUCE -DCOLLAPSE -DMEMLIM=4096"
PAN_RUN="-m2000000 -w24"
PAN_TIMEOUT=600

passed=0
failed=0

# Trims `spin -t -p -s -r` output: the model's narration (with step and source line), the
# sentences sent and received, and the end (failed assertion, global state).
trim_trail() {
  awk '
    /^ *MSC: / { sub(/^ *MSC: /, ""); pending = $0; next }
    /^ *[0-9]+:\tproc / {
      step = $1; sub(/:$/, "", step)
      proc = $4; gsub(/[()]/, "", proc); sub(/:[0-9]+$/, "", proc)
      where = $5
      if (pending != "" && $0 ~ /\[printf\(/) {
        printf("%5s  %-7s %-16s %s\n", step, proc, where, pending); pending = ""; next
      }
      if ($0 ~ / (Send|Recv) /) {
        line = $0; sub(/^.* (Send|Recv) /, "", line); kind = ($0 ~ / Send /) ? "Send" : "Recv"
        gsub(/\t/, " ", line)
        printf("%5s  %-7s %-16s   %s %s\n", step, proc, where, kind, line); next
      }
      next
    }
    /^spin: / { print; next }
    /^#processes/ { globals = 1; print; next }
    globals && /^\t\t/ { line = $0; sub(/^\t\t/, "    ", line); print line; next }
    globals && /^ *[0-9]+:\tproc / { globals = 0 }
  '
}

# header text of each counterexample file
trail_header() {
  case "$1" in
    window2) cat <<'EOF'
# Window 2 (the code before 0.5.0): a reading before the session message lands in the old epoch.
#
# check:    spin -a -DWINDOW2 credit.pml   (bounds: 1 coin, 1 mech power cycle, 1 cable pull,
#           no lost sentence); property P5: a "stored" that reached the daemon ends credited.
# What happens: the cable is pulled; the mech powers up before the daemon has the port open
# again (boot 2; its POWERUP goes to nobody).  On reconnect the daemon says $CMH and waits for the session, but a reading
# that arrives first is decided in the current epoch 1 = boot 1 (DecidingCore.handle,
# case .reading: the session wait holds only queries; DeviceSequenceTracker.classify says
# .new because epoch 1 has no reading with devseq >= 1).  $CMS,SESSION,2 then starts
# epoch 2 (EpochBook.session -> .newEpoch).  The coin's $CMC,1,S is matched against epoch 2
# (case .confirmation uses tracker.epoch) and dropped.  The query names boot 1 ($CMQ,1,1),
# the journal has no such coin (U), and a coin that is in the cash box ends unconfirmed.
# See window2-returned.trail.txt for the same window ending "returned" (money lost).
EOF
      ;;
    window2-returned) cat <<'EOF'
# Window 2, worse ending (the code before 0.5.0): a coin in the cash box settled as RETURNED.
#
# check:    spin -a -DWINDOW2R credit.pml  (bounds: 2 coins, 1 power cycle, 1 cable pull,
#           1 coin inserted while the host is away); property P3: every coin in the cash box
#           ends credited or listed unconfirmed.
# What happens: as in window 2, but while the host was away a coin was inserted in boot 1
# (devseq 1; nobody answered it, the mech returned it: journal R).  The coin of boot 2,
# devseq 1, read before $CMS,SESSION, is recorded as epoch 1 (= boot 1) devseq 1; its $CMC,1,S
# is dropped (matched against epoch 2), the query $CMQ,1,1 reaches boot 1's journal, which answers
# R for the other coin, and the stored coin is settled "returned": not credited, and not
# listed as unconfirmed either.  The customer paid; nothing on the ledger says so.
EOF
      ;;
    window3) cat <<'EOF'
# Window 3 (the code before 0.5.0): one false implied power-up; one coin credited twice.
#
# check:    spin -a -DWINDOW3 credit.pml   (bounds: 1 coin, 1 repeated reading with other
#           figures, 1 lost sentence); property P1: no coin credited twice.
# What happens: the mech sends coin 1's reading, then the same devseq with other figures
# (a 1-byte XOR checksum letting a corrupted copy through, or re-measuring firmware).
# DeviceSequenceTracker.classify calls it .impliedPowerUp: epoch 2, boot unknown, and the copy
# is decided and accepted as a second coin.  The daemon asks $CMH (.askSession), but that
# sentence is lost (the "delayed session reply"), so epoch 2 never gets a boot.  The mech's
# $CMC,1,S is matched against the tracker's epoch 2 and credits the copy; the original
# (epoch 1) is queried with boot 1, the journal says S, EpochBook.epoch(ofBoot: 1) is
# epoch 1, and the original is credited too.  One coin in the cash box, two credits.
EOF
      ;;
    window3-phantom) cat <<'EOF'
# Window 3, second form (the code before 0.5.0): a credit for a coin that was given back.
#
# check:    spin -a -DWINDOW3B credit.pml  (bounds: 2 coins, 1 repeated reading, 1 power
#           cycle, 1 cable pull, 1 lost sentence); property P2: no credit for a coin that is
#           not in the cash box.
# What happens: the false implied power-up of window 3 leaves epoch 2 (a copy of coin 0 of
# boot 1) with no boot.  The cable is pulled (both answers are lost, the mech returns coin 0
# at its deadline) and the mech powers up before the daemon reopens the port (boot 2).  At the
# reconnect $CMS,SESSION,2 finds epoch 2 without a boot and ASSIGNS it boot 2
# (EpochBook.session -> .assigned), although epoch 2 holds a coin of boot 1.  Coin 1 of
# boot 2 (devseq 1) is read, goes to a third epoch, is accepted and stored.  The query about
# the copy, $CMQ,2,1, is answered by boot 2's journal about coin 1 (S): the copy of coin 0 is
# credited, though coin 0 was returned to its customer.  One coin in the cash box, credited
# twice under two identities (once as coin 0's copy, once as coin 1).
EOF
      ;;
    payout-lag) cat <<'EOF'
# Money out, the shell before PayoutCore: a tube count short of its DISPENSE believed as it is.
#
# check:    spin -a -DLAGS=1 payout.pml     (a changer; bounds: 1 count read a coin high after a
#           DISPENSE, 1 jam, 1 lost DISPENSE, 1 failed commit, 1 daemon restart); property P3:
#           the payout is settled and paid + owed is its amount.
# What happens: a DISPENSE jams one coin short and the count read right after it lags one more
# coin behind, so the step looks as if it paid nothing.  A jam explains a short step, so the rest
# is planned again from the same tube: the next steps ask for coins the first already paid.  The
# changer pays more than the amount, and the settlement (the tubes' fall, after a restart) says
# so.  Fixed: a count short of its DISPENSE is counted again before it is believed
# (PayoutCore, "recounting").
EOF
      ;;
    payout-refill) cat <<'EOF'
# Money out, the shell before PayoutCore: a refill without a request id counted twice.
#
# check:    spin -a -DHOPPER -DREFILLS=1 payout.pml   (hoppers; bounds: 1 refill, 1 failed commit,
#           1 restart); property P4: the ledger's level is the coins the hopper holds.
# What happens: the operator loads a coin and records the refill; its commit lands but reports a
# failure, so the operator is told it was not recorded and asks again.  Without a request id the
# second ask is a new refill: the level rises twice for one coin.  Fixed: refill and float
# require a request id, and a repeat is answered from the ledger (PayoutCore, inventory).
EOF
      ;;
    payout-exchange) cat <<'EOF'
# Money out, the shell before PayoutCore: a hopper exchanged mid-payout makes its own step unknown.
#
# check:    spin -a -DHOPPER -DEXCHANGES=1 payout.pml (hoppers; bounds: 1 exchange, 1 restart, 1 jam,
#           1 lost DISPENSE, 1 failed commit); property P2: the coins that left are the coins the
#           settlement says were paid, unless the hopper that paid is gone.
# What happens: a step is paid and counted; between it and the next step the hopper is exchanged
# for another (the daemon reads the new one's serial number).  The next step is paid by the new
# hopper, and the daemon dies before counting it.  The next start asks the hopper there what the
# last step paid, but the journal names the hoppers of the payout's start: the new hopper is "not
# the one that paid", its step counts as nothing paid, and coins that left are off the ledger
# although the hopper that paid them is right there.  Fixed: each step is journalled with the
# hopper that was to pay it (payout_steps.device), and only that one must answer.
EOF
      ;;
    late-evidence) cat <<'EOF'
# Late evidence (the code before 0.5.0): "unconfirmed" is final, even when the mech knows.
#
# check:    spin -a -DLATE credit.pml      (bounds: 1 coin, 2 lost sentences, 1 confirmation
#           the mech never sends; MAXQ = 2 unanswered queries, 5 in the code); property P4:
#           a coin the mech's journal (still) says stored ends credited.
# What happens: the coin is stored, its $CMC is lost, the daemon's queries are lost twice
# (PendingCoins.queried gives up after maximumUnansweredQueries), the coin is settled
# unconfirmed, and nothing asks again: the journal's S is never heard.  Independent of the
# windows: it needs only lost sentences.
EOF
      ;;
  esac
}

# run NAME EXPECT DEFINES...
#   EXPECT: "pass"            no error, complete search
#           "fail:<assert>"   spin must report "assertion violated <assert>"
run() {
  local name="$1" expect="$2"; shift 2
  local defs="$*"
  local dir="$WORK/$(echo "$name" | tr '/' '_')"
  local file
  file="$(basename "$MODEL")"
  mkdir -p "$dir"
  cp "$MODEL" "$dir/$file"
  local result detail
  if ! (cd "$dir" && spin -a $defs "$file" >spin.out 2>&1); then
    result=FAIL; detail="spin could not generate the verifier: $(head -c 300 "$dir/spin.out" | tr '\n' ' ')"
  elif ! (cd "$dir" && gcc "${OPT:--O0}" $PAN_CFLAGS -o pan pan.c >gcc.out 2>&1); then
    result=FAIL; detail="gcc failed: $(head -c 300 "$dir/gcc.out" | tr '\n' ' ')"
  else
    (cd "$dir" && timeout "$PAN_TIMEOUT" nice -n 10 ./pan $PAN_RUN >pan.out 2>&1)
    local states secs errors violated
    states="$(awk '/states, stored/ { print $1; exit }' "$dir/pan.out")"
    secs="$(awk '/elapsed time/ { print $4; exit }' "$dir/pan.out")"
    errors="$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$dir/pan.out" | head -1)"
    violated="$(sed -n 's/.*assertion violated \([A-Za-z0-9_]*\).*/\1/p' "$dir/pan.out" | head -1)"
    local stats="${states:-?} states, ${secs:-?} s"
    if [ -z "$errors" ]; then
      result=FAIL; detail="pan did not finish (timeout or crash): $(tail -c 300 "$dir/pan.out" | tr '\n' ' ')"
    elif grep -q "max search depth too small\|reached -DMEMLIM bound\|out of memory" "$dir/pan.out"; then
      result=FAIL; detail="search incomplete (depth or memory bound): $stats"
    elif [ "$expect" = pass ]; then
      if [ "$errors" = 0 ]; then
        result=PASS; detail="no error: $stats"
      else
        result=FAIL; detail="unexpected error (${violated:-invalid end state?}): $stats"
      fi
    else
      local want="${expect#fail:}"
      if [ "$violated" = "$want" ]; then
        result=PASS; detail="counterexample found as expected ($want): $stats"
        if [ "$WRITE_TRAILS" = 1 ] && [ "${name#before/}" != "$name" ]; then
          local tname="${name#before/}"
          mkdir -p "$HERE/counterexamples"
          { trail_header "$tname"
            echo "#"
            echo "# Made by model/check.sh --trails from: spin -t -p -s -r $defs $file"
            echo "# (trimmed: the model's narration with its step and source line, the sentences"
            echo "# sent and received, the failed assertion and the final global state)"
            echo "#"
            echo "#  step  process source           what happens"
            (cd "$dir" && spin -t -p -s -r $defs "$file" 2>&1) | trim_trail
          } >"$HERE/counterexamples/$tname.trail.txt"
        fi
      elif [ "$errors" = 0 ]; then
        result=FAIL; detail="spin found NO counterexample (expected $want): $stats"
      else
        result=FAIL; detail="another error than expected (${violated:-?}, expected $want): $stats"
      fi
    fi
  fi
  printf '%-4s  %-26s %s\n' "$result" "$name" "$detail"
  if [ "$result" = PASS ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
}

echo "spin: $(spin -V 2>&1 | head -1); models: $MODEL, $HERE/payout.pml"

# (a) the code before 0.5.0: the windows must be found
run before/window2          fail:p5_stored_heard_by_daemon_so_credited   -DWINDOW2
run before/window2-returned fail:p3_every_stored_coin_credited_or_unconfirmed -DWINDOW2R
run before/window3          fail:p1_no_coin_credited_twice               -DWINDOW3
run before/window3-phantom  fail:p2_credit_only_for_a_coin_in_the_cash_box -DWINDOW3B
run before/late-evidence    fail:p4_journal_says_stored_so_credited      -DLATE

# (b) the fixed design: every property, same bounds, then the full bounds
run fixed/window2          pass -DFIXED -DWINDOW2
run fixed/window2-returned pass -DFIXED -DWINDOW2R
run fixed/window3          pass -DFIXED -DWINDOW3
run fixed/window3-phantom  pass -DFIXED -DWINDOW3B
run fixed/late-evidence    pass -DFIXED -DLATE
OPT=-O2 run fixed/full     pass -DFIXED

# (c) sanity: the fixed model does credit coins, and does credit one on late evidence
run sanity/fixed-credits   fail:witness -DFIXED -DWITNESS_CREDIT
run sanity/fixed-late-credit fail:witness -DFIXED -DWITNESS_LATE

# (d) money out (payout.pml): the shell before PayoutCore must show its holes; PayoutCore's
# design must pass, a changer and hoppers, with every fault at once
MODEL="$HERE/payout.pml"
run before/payout-lag       fail:p3_owed_is_recorded          -DLAGS=1
run before/payout-refill    fail:p4_request_id_one_action     -DHOPPER -DREFILLS=1
run before/payout-exchange  fail:p2_every_coin_out_on_ledger  -DHOPPER -DEXCHANGES=1
run fixed/payout-changer    pass -DFIXED -DLAGS=2 -DRESTARTS=2 -DFAILS=2 -DLOSSES=2 -DJAMS=2
run fixed/payout-hoppers    pass -DFIXED -DHOPPER -DEXCHANGES=1 -DREFILLS=1 -DRESTARTS=2 -DFAILS=2 -DLOSSES=2 -DJAMS=2
run sanity/payout-pays      fail:witness -DFIXED -DWITNESS_PAID
run sanity/payout-hoppers-pay fail:witness -DFIXED -DHOPPER -DWITNESS_PAID

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
