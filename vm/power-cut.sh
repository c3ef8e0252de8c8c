#!/usr/bin/env bash
# The power-cut run of `make test-vm` (vm/run.sh runs it after the checks): does a coin the
# mech stored survive the daemon's machine losing power?
#
# The mech is coinsim on this host, outside the guest: it reaches the guest's ttyS2 through a
# qemu chardev on coinsim's pty, so cutting the guest leaves the mech running and its ground
# truth whole. The guest boots a persistent copy of the image (no -snapshot) with
# coinmech.vmtest=power (vm/guest/power-cut.sh): coinmechd decides from ttyS2 and the guest
# reports every credited coin on ttyS1. While coins flow, this script kills qemu with SIGKILL:
# the guest's page cache, and every write not yet synced to the virtual disk, is gone, as in a
# power cut (a kill -9 of the daemon cannot show that: the page cache survives a process).
# POWER_CUTS times (default 5), each after 1 to 6 credited coins and up to 0.4 s more. Then a
# last boot settles what was pending, the mech is stopped (its truth written), the guest stops
# coinmechd cleanly and powers off, and the ledger is read out of the disk image (debugfs)
# and judged against the truth, coin by coin (coinmech-crash audit).
#
# Prints "ok   power loss: …" or "FAIL power loss: …" and, last, a JSON line:
# {"seed":…,"cuts":…,"coins":…,"stored":…,"credited":…,"lost":0,"doubled":0,"phantom":0,"unconfirmed":…,"pending":0}
# POWER_SEED repeats a run (it is printed); POWER_CUTS sets the number of cuts.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

CUTS=${POWER_CUTS:-5}
SEED=${POWER_SEED:-$(( $(od -An -N4 -tu4 /dev/urandom) % 1000000 ))}
RELEASE_BIN=${RELEASE_BIN:-$(cd "$ROOT" && swift build -c release --scratch-path .build-release --show-bin-path)}
RUN="$OUT/power"
rm -rf "$RUN"
mkdir -p "$RUN/ledger"
RANDOM=$SEED
log "power-cut run: seed $SEED (POWER_SEED=$SEED repeats it), $CUTS cuts"

SIM_PID=""
QEMU_PID=""
READER_PID=""
cleanup() {
    [[ -n "$QEMU_PID" ]] && kill -9 "$QEMU_PID" 2> /dev/null && wait "$QEMU_PID" 2> /dev/null
    [[ -n "$READER_PID" ]] && kill "$READER_PID" 2> /dev/null && wait "$READER_PID" 2> /dev/null
    [[ -n "$SIM_PID" ]] && kill -9 "$SIM_PID" 2> /dev/null && wait "$SIM_PID" 2> /dev/null
    return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
    echo "FAIL power loss: $*"
    echo "== coinsim"; tail -n 20 "$RUN/coinsim.log" 2> /dev/null || true
    echo "== guest reports"; tail -n 40 "$RUN/power.log" 2> /dev/null | tr -d '\r' || true
    echo "== console tail"; tail -n 60 "$RUN/console.log" 2> /dev/null | tr -d '\r' || true
    exit 1
}

mkfifo "$RUN/nap"
exec {NAP}<> "$RUN/nap"
nap() { read -r -t "$1" -u "$NAP" _ || true; }
# wait_for SECONDS COMMAND…: polls COMMAND every 50 ms; false once SECONDS have passed.
wait_for() {
    local end=$((SECONDS + $1))
    shift
    until "$@"; do
        ((SECONDS < end)) || return 1
        # A guest that is gone says nothing more: one last look at what it said.
        if [[ -n "$QEMU_PID" ]] && ! kill -0 "$QEMU_PID" 2> /dev/null; then
            nap 0.2
            "$@"
            return
        fi
        nap 0.05
    done
}
reports() { tr -d '\r' < "$RUN/power.log" | sed -n "$1"',$p'; }
# The guest's report lines since line FROM of power.log.
count_coins_since() { reports "$1" | grep -c '^POWER coin ' || true; }
has_coins() { (($(count_coins_since "$1") >= $2)); }
has_report() { reports "$1" | grep -q "^POWER $2"; }

# A disk of its own that outlives each boot: a sparse copy of the checked image.
cp --sparse=always "$OUT/image/root.img" "$RUN/disk.img"
# The mech: coinsim on a pty, waiting as long as the boots take.
"$RELEASE_BIN/coinsim" --scenario "$VM/guest/config/scenario-power.yaml" --seed "$SEED" --link "$RUN/mech" \
    --truth "$RUN/truth.json" --host-timeout 0 --linger-ms 5000 > "$RUN/coinsim.out" 2> "$RUN/coinsim.log" &
SIM_PID=$!
wait_for 10 test -e "$RUN/mech" || fail "coinsim made no pty"
PTY=$(readlink -f "$RUN/mech")
# ttyS1: a two-way pipe (power.out from the guest, power.in to it).
mkfifo "$RUN/power.in" "$RUN/power.out"
: > "$RUN/power.log"
: > "$RUN/console.log"

boot() {
    qemu-system-x86_64 -machine q35 -accel tcg -cpu max -smp 2 -m 1024 \
        -kernel "$OUT/base/vmlinux" -initrd "$OUT/base/initrd.img" \
        -append "root=/dev/vda rw console=ttyS0 quiet systemd.show_status=error panic=-1 coinmech.vmtest=power" \
        -drive "file=$RUN/disk.img,if=virtio,format=raw" \
        -nic none -display none -monitor none -no-reboot \
        -serial "file:$RUN/console.boot" \
        -serial "pipe:$RUN/power" -serial "$PTY" \
        > "$RUN/qemu.log" 2>&1 &
    QEMU_PID=$!
    cat "$RUN/power.out" >> "$RUN/power.log" &
    READER_PID=$!
}
# The boot's end: qemu gone (killed or powered off), its console kept.
ended() {
    wait "$QEMU_PID" 2> /dev/null || true
    QEMU_PID=""
    # The reader ends at the pipe's end of file, once qemu (its only writer) is gone.
    wait "$READER_PID" 2> /dev/null || true
    READER_PID=""
    cat "$RUN/console.boot" >> "$RUN/console.log" 2> /dev/null || true
}

cuts=0
for ((cut = 1; cut <= CUTS; cut++)); do
    from=$(($(wc -l < "$RUN/power.log") + 1))
    boot
    wait_for 240 has_report "$from" "ready" || fail "boot $cut: the guest did not report coinmechd ready within 240 s"
    coins=$((1 + RANDOM % 6))
    wait_for 90 has_coins "$from" "$coins" || fail "boot $cut: fewer than $coins coins credited within 90 s ($(count_coins_since "$from"))"
    nap "0.$((RANDOM % 5))"
    kill -9 "$QEMU_PID"
    ended
    cuts=$((cuts + 1))
    log "cut $cut: power cut after $coins credited coins ($(reports "$from" | grep '^POWER ready' | head -n 1))"
done

# The last boot: what was pending is settled by the mech's word; then the mech stops.
from=$(($(wc -l < "$RUN/power.log") + 1))
boot
wait_for 240 has_report "$from" "ready" || fail "last boot: the guest did not report coinmechd ready within 240 s"
wait_for 90 has_coins "$from" 3 || fail "last boot: no 3 coins credited within 90 s"
kill -TERM "$SIM_PID"
sim_status=0
wait "$SIM_PID" || sim_status=$?
SIM_PID=""
((sim_status == 0)) || fail "coinsim exited with $sim_status"
exec {CTL}<> "$RUN/power.in"
printf 'finish\n' >&"$CTL"
wait_for 120 has_report "$from" "done" || fail "the guest did not stop coinmechd within 120 s of 'finish'"
guest_gone() { ! kill -0 "$QEMU_PID" 2> /dev/null; }
wait_for 60 guest_gone || fail "the guest did not power off"
ended
exec {CTL}>&-
log "last boot: $(reports "$from" | grep '^POWER done')"

# The ledger, out of the powered-off disk.
for file in ledger.sqlite3 ledger.sqlite3-wal; do
    debugfs -R "dump -p /var/lib/coinmech/$file $RUN/ledger/$file" "$RUN/disk.img" > /dev/null 2>&1 || true
done
[[ -s "$RUN/ledger/ledger.sqlite3" ]] || fail "no /var/lib/coinmech/ledger.sqlite3 on the guest's disk"
verdict_status=0
"$RELEASE_BIN/coinmech-crash" audit --ledger "$RUN/ledger" --truth "$RUN/truth.json" > "$RUN/audit.log" 2>&1 || verdict_status=$?
verdict=$(tail -n 1 "$RUN/audit.log")
[[ "$verdict" == "{"* ]] || fail "coinmech-crash audit gave no verdict: $(cat "$RUN/audit.log")"
line="{\"seed\": $SEED, \"cuts\": $cuts, ${verdict#\{}"
stored=$(jq -r '.outcomes.stored' "$RUN/truth.json")
if ((verdict_status != 0)); then
    grep -v '^{' "$RUN/audit.log" | head -n 20
    echo "FAIL power loss: $cuts power cuts with coins flowing; the ledger does not hold every coin the mech stored (POWER_SEED=$SEED repeats it)"
    echo "$line"
    exit 1
fi
echo "ok   power loss: $cuts power cuts with coins flowing, $stored coins stored by the mech, each credited once or held unconfirmed by the mech's word"
echo "$line"
