#!/bin/bash
# The guest's side of the power-cut run (vm/power-cut.sh on the host; booted with
# coinmech.vmtest=power). The mech is on ttyS2, played by coinsim on the host. ttyS1 is a
# two-way line to the host: this script reports on it, one line each:
#   POWER ready boot=N seq=S pending=P   coinmechd decides from ttyS2 (after N boots of this disk)
#   POWER coin seq=S value=V             a coin credited (the host cuts the power among these)
#   POWER done pending=P seq=S           after the host's "finish": coinmechd stopped cleanly
#   POWER error TEXT                     something the run cannot go on from
# and reads the host's one command, "finish", once the host has stopped the mech.
set -uo pipefail
HERE=/usr/local/lib/coinmech-vm
LINE=/dev/ttyS1
stty -F "$LINE" raw -echo 2> /dev/null
exec 3> "$LINE" 4< "$LINE"
export COINMECH_SOCKET=/run/coinmech/coinmechd.sock
report() { printf 'POWER %s\n' "$*" >&3; printf 'POWER %s\n' "$*"; }

mkfifo /run/coinmech-vm-nap
exec {NAP}<> /run/coinmech-vm-nap
nap() { read -r -t "$1" -u "$NAP" _ || true; }
wait_for() {
    local end=$((SECONDS + $1))
    shift
    until "$@"; do
        ((SECONDS < end)) || return 1
        nap 0.1
    done
}
status_json() { timeout 10 coinctl status --json 2> /dev/null; }
connected() { [[ "$(status_json | jq -r '.source.state')" == connected ]]; }

# This disk's boots of the run, counted on the disk itself.
count=$(($(cat /var/lib/coinmech-vm-boots 2> /dev/null || echo 0) + 1))
echo "$count" > /var/lib/coinmech-vm-boots
sync /var/lib/coinmech-vm-boots

# The host's mech on ttyS2: installed once, kept across the cuts like an operator's file.
if ! cmp -s "$HERE/config/serial-host.yaml" /etc/coinmech/coinmechd.yaml; then
    install -m 0644 "$HERE/config/serial-host.yaml" /etc/coinmech/coinmechd.yaml
    sync /etc/coinmech/coinmechd.yaml
    systemctl restart coinmechd.service
fi
wait_for 120 connected || { report "error coinmechd is not connected to ttyS2 after 120 s: $(status_json | jq -c '.source')"; exit 1; }
report "ready boot=$count seq=$(status_json | jq -r '.last_seq') pending=$(status_json | jq -r '.pending')"

# Every credited coin, as the socket tells a kiosk application.
coinctl watch --json 2> /dev/null | jq --unbuffered -r 'select(.kind == "coin") | "POWER coin seq=\(.seq) value=\(.value_minor)"' >&3 &
WATCH=$!

# Until the host's word (or until the power goes, which is the point of the run).
command=""
until [[ "$command" == finish ]]; do
    read -r command <&4 || nap 0.1
    command=${command%$'\r'}
done
# The host stopped the mech and it answered every query: nothing may be left pending.
wait_for 60 eval '[[ "$(status_json | jq -r .pending)" == 0 ]]' || true
pending=$(status_json | jq -r '.pending')
seq=$(status_json | jq -r '.last_seq')
kill "$WATCH" 2> /dev/null
systemctl stop coinmechd.service coinmechd.socket
sync
report "done pending=$pending seq=$seq"
