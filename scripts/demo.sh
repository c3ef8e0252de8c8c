#!/usr/bin/env bash
# `make demo`: coinsim plays a US vending machine's MDB coin changer on a pseudo-terminal,
# coinmechd credits every coin the changer takes (config/coinmechd.demo-changer.yaml), and
# `coinctl watch` shows coins credited and returned, with the totals rising. Beside it the
# kiosk (examples/kiosk.py, the Python client from clients/python on PYTHONPATH, standard
# library only) sells an item each time the customer's credit covers its price and pays the
# rest back as change from the changer's tubes. Ctrl-C (or DEMO_SECONDS=N) ends it; the final
# totals, the credit left and the simulator's ground truth are printed, and every child is
# stopped and waited for.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ -z "${DEMO_NO_BUILD:-}" ]]; then swift build; fi
command -v python3 > /dev/null || { echo "the demo's kiosk needs python3 (scripts/bootstrap installs it)"; exit 1; }
BIN=$(swift build --show-bin-path)
DIR=$(mktemp -d -t coinmech-demo-XXXXXX)
SOCKET="$DIR/run/coinmechd.sock"
SIM="" DAEMON="" KIOSK=""

stop() {   # stop PID: SIGTERM, then wait for it
    kill -TERM "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}

finish() {
    local status=$?
    trap - EXIT INT TERM
    echo
    # The kiosk first: nothing of it after the totals.
    if [[ -n "$KIOSK" ]]; then stop "$KIOSK"; fi
    if [[ -S "$SOCKET" ]]; then
        echo "== final totals (coinctl totals) =="
        "$BIN/coinctl" totals --socket "$SOCKET" || true
        echo "== the customer's credit left (coinctl credit) =="
        "$BIN/coinctl" credit --socket "$SOCKET" || true
    fi
    if [[ -n "$SIM" ]]; then
        stop "$SIM"
        echo "== simulator ground truth ($DIR/truth.json) =="
        tail -n 1 "$DIR/coinsim.log" || true
    fi
    if [[ -n "$DAEMON" ]]; then stop "$DAEMON"; fi
    rm -rf "$DIR"
    exit "$status"
}
trap finish EXIT
trap 'exit 0' INT TERM HUP

# The kiosk sells with spend and pays change with cancel: control commands, so the user
# running the demo is one of the socket's control users.
user=$(id -un)
sed "s/^  control_users: \[root\]\$/  control_users: [root, \"$user\"]/" config/coinmechd.demo-changer.yaml > "$DIR/coinmechd.yaml"
grep -q "control_users: \[root, \"$user\"\]" "$DIR/coinmechd.yaml" || { echo "demo: the configuration's control_users line moved"; exit 1; }

# Each child in a session of its own (setsid execs it: $! is its pid): a Ctrl-C reaches the
# watch and this script alone, and finish stops the kiosk, asks the daemon for the totals and
# the credit, then stops the changer and the daemon, in that order. (coinsim and coinmechd
# stop on SIGINT themselves: in the terminal's process group, the daemon was gone before the
# totals could be asked.)
setsid "$BIN/coinsim" --protocol mdb --scenario changer --link "$DIR/changer" --truth "$DIR/truth.json" \
    > "$DIR/coinsim.out" 2> "$DIR/coinsim.log" < /dev/null &
SIM=$!
setsid "$BIN/coinmechd" --config "$DIR/coinmechd.yaml" --plugin-dir "$BIN" 2> "$DIR/coinmechd.log" < /dev/null &
DAEMON=$!
for _ in $(seq 100); do
    [[ -S "$SOCKET" ]] && break
    kill -0 "$DAEMON" 2>/dev/null || { echo "coinmechd failed:"; cat "$DIR/coinmechd.log"; exit 1; }
    sleep 0.1
done

echo "CoinMech demo in $DIR: coinsim is an MDB coin changer, coinmechd credits its coins,"
echo "coinctl watch shows every coin, and the kiosk sells A4 for USD 1.50 and pays the change."
echo "(daemon log: $DIR/coinmechd.log; stop with Ctrl-C${DEMO_SECONDS:+, or after $DEMO_SECONDS s})"
PYTHONPATH="$PWD/clients/python/src" setsid python3 examples/kiosk.py --socket "$SOCKET" --price 150 --item A4 \
    --repeat --quiet --prefix "KIOSK: " < /dev/null &
KIOSK=$!
if [[ -n "${DEMO_SECONDS:-}" ]]; then
    timeout --foreground "$DEMO_SECONDS" "$BIN/coinctl" watch --socket "$SOCKET" || [[ $? -eq 124 ]]
else
    "$BIN/coinctl" watch --socket "$SOCKET" || [[ $? -eq 130 ]]
fi
