#!/usr/bin/env bash
# `make demo`: coinsim plays a US coin mech on a pseudo-terminal, coinmechd decides every coin
# with the shipped demo configuration, and `coinctl watch` shows coins accepted and returned,
# with reasons and the totals rising. Ctrl-C (or DEMO_SECONDS=N) ends it; the final totals and
# the simulator's ground truth are printed, and everything is cleaned up.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ -z "${DEMO_NO_BUILD:-}" ]]; then swift build; fi
BIN=$(swift build --show-bin-path)
DIR=$(mktemp -d -t coinmech-demo-XXXXXX)
SOCKET="$DIR/run/coinmechd.sock"
SIM="" DAEMON=""

finish() {
    local status=$?
    trap - EXIT INT TERM
    echo
    if [[ -S "$SOCKET" ]]; then
        echo "== final totals (coinctl totals) =="
        "$BIN/coinctl" totals --socket "$SOCKET" || true
    fi
    if [[ -n "$SIM" ]]; then
        kill -TERM "$SIM" 2>/dev/null || true
        wait "$SIM" 2>/dev/null || true
        echo "== simulator ground truth ($DIR/truth.json) =="
        tail -n 1 "$DIR/coinsim.log" || true
    fi
    if [[ -n "$DAEMON" ]]; then
        kill -TERM "$DAEMON" 2>/dev/null || true
        wait "$DAEMON" 2>/dev/null || true
    fi
    rm -rf "$DIR"
    exit "$status"
}
trap finish EXIT
trap 'exit 0' INT TERM

cp config/coinmechd.demo.yaml "$DIR/coinmechd.yaml"
"$BIN/coinsim" --scenario default --link "$DIR/mech" --truth "$DIR/truth.json" > "$DIR/coinsim.out" 2> "$DIR/coinsim.log" &
SIM=$!
"$BIN/coinmechd" --config "$DIR/coinmechd.yaml" --plugin-dir "$BIN" 2> "$DIR/coinmechd.log" &
DAEMON=$!
for _ in $(seq 100); do
    [[ -S "$SOCKET" ]] && break
    kill -0 "$DAEMON" 2>/dev/null || { echo "coinmechd failed:"; cat "$DIR/coinmechd.log"; exit 1; }
    sleep 0.1
done

echo "CoinMech demo in $DIR: coinsim is the mech, coinmechd decides, coinctl watch shows every coin."
echo "(daemon log: $DIR/coinmechd.log; stop with Ctrl-C${DEMO_SECONDS:+, or after $DEMO_SECONDS s})"
if [[ -n "${DEMO_SECONDS:-}" ]]; then
    timeout --foreground "$DEMO_SECONDS" "$BIN/coinctl" watch --socket "$SOCKET" || [[ $? -eq 124 ]]
else
    "$BIN/coinctl" watch --socket "$SOCKET" || [[ $? -eq 130 ]]
fi
