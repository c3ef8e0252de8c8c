#!/bin/bash
# The checks of `make test-vm`, inside the guest (coinmech-vm-test.service, as root, once the
# boot is done). CoinMech was installed as docs/OPERATIONS.md tells an installer, both units
# enabled, with the GPIO pulse mech of docs/HARDWARE.md configured; no serial adapter is
# plugged in at boot. Every check prints one line on the results port (ttyS1) and the console;
# then "SUMMARY N passed, N failed", and on a failure the coinmechd journal.
#
# Waits poll the real state (systemd, the daemon's socket, sysfs, the journal) with a limit that
# fails the check; the only timed pauses drive the simulated mech (pulse widths and gaps).
set -uo pipefail
HERE=/usr/local/lib/coinmech-vm
# The power-cut run boots the same image with its own script (vm/power-cut.sh).
if grep -qw 'coinmech.vmtest=power' /proc/cmdline; then exec "$HERE/power-cut.sh"; fi
RESULTS=/dev/ttyS1
stty -F "$RESULTS" raw -echo 2> /dev/null
exec 3> "$RESULTS"
PASSED=0
FAILED=0
export COINMECH_SOCKET=/run/coinmech/coinmechd.sock

# A pause without a fork (a bash builtin read on a FIFO nobody writes): pulse timing needs
# millisecond precision, and a forked sleep costs more than that under TCG.
mkfifo /run/coinmech-vm-nap
exec {NAP}<> /run/coinmech-vm-nap
nap() { read -r -t "$1" -u "$NAP" _ || true; }
now_ms() { echo $((${EPOCHREALTIME/./} / 1000)); }

# poll_until INTERVAL SECONDS COMMAND…: until COMMAND succeeds, tried every INTERVAL seconds;
# false once SECONDS have passed.
poll_until() {
    local interval=$1 end=$((${EPOCHREALTIME/./} + $2 * 1000000))
    shift 2
    until "$@"; do
        ((${EPOCHREALTIME/./} < end)) || return 1
        nap "$interval"
    done
}
# wait_for SECONDS COMMAND…: every 50 ms. wait_fast: every 2 ms, for outputs that stay set for
# a few hundred ms.
wait_for() { poll_until 0.05 "$@"; }
wait_fast() { poll_until 0.002 "$@"; }

# A check is a function that returns 0 or 1 and leaves one line of detail in DETAIL.
DETAIL=""
say() { DETAIL=$*; }
no() {
    DETAIL=$*
    return 1
}
result() {
    printf 'RESULT %s\n' "$1" >&3
    printf '%s\n' "$1"
}
check() {
    local name=$1 start
    shift
    DETAIL=""
    start=$(now_ms)
    if ready_for "$name" && "$@"; then
        PASSED=$((PASSED + 1))
        result "ok   $name: $DETAIL ($(($(now_ms) - start)) ms)"
    else
        FAILED=$((FAILED + 1))
        result "FAIL $name: $DETAIL"
    fi
}

# Each check starts from a daemon that answers, so that one failure does not fail the rest:
# after a failed check, the socket and the service are restarted.
ready_for() {
    [[ "$1" == boot ]] && return 0
    if [[ -f "$CHIP/live" && "$(cat "$CHIP/live")" == 0 ]]; then
        echo 1 > "$CHIP/live" && sim_path && pull_ups
    fi
    status_json > /dev/null && return 0
    systemctl restart coinmechd.socket coinmechd.service 2> /dev/null
    wait_for 30 eval 'status_json > /dev/null' || no "coinmechd does not answer on its socket, even after restarting coinmechd.socket and coinmechd.service"
}

# --- systemd, the journal and the daemon ------------------------------------------------------
prop() { systemctl show -p "$2" --value "$1"; }
main_pid() { prop coinmechd.service MainPID; }
# daemon_pid: the running daemon's PID into PID, or the check fails (never signal PID 0: that
# is this script's own process group).
daemon_pid() {
    PID=$(main_pid)
    [[ -n "$PID" && "$PID" != 0 ]] || no "coinmechd.service has no main process ($(prop coinmechd.service ActiveState))"
}
is_active() { [[ "$(prop "$1" ActiveState)" == active ]]; }
# A point in the journal: the realtime clock, to the microsecond (journalctl --since @s.us).
cursor() { echo "@$EPOCHREALTIME"; }
# journal_has MARK TEXT: coinmechd's journal since MARK has a line containing TEXT.
# (Pipelines end in "grep > /dev/null", never "grep -q": under pipefail an early grep exit
# kills the writer with SIGPIPE and fails the pipeline even though the line was there.)
journal_has() { journalctl -q -o cat -u coinmechd.service --since="$1" | grep -F -- "$2" > /dev/null; }
status_json() { timeout 10 coinctl status --json 2> /dev/null; }
source_state() { status_json | jq -r '.source.state'; }
source_is() { [[ "$(source_state)" == "$1" ]]; }
last_seq() { status_json | jq -r '.last_seq'; }
usd_lifetime() { timeout 10 coinctl totals --json | jq -r '.lifetime_value.USD // 0'; }
# decisions_since SEQ: "channel:verdict:denomination-or-reason" for each decision after SEQ.
decisions_since() {
    timeout 10 coinctl events --since "$1" --limit 200 --json \
        | jq -r '.events[] | select(.kind == "decision") | "\(.channel // "-"):\(.verdict):\(.denomination // .reason)"' | paste -sd' ' -
}
# events_since SEQ: the kinds of every event after SEQ.
events_since() { timeout 10 coinctl events --since "$1" --limit 200 --json | jq -r '.events[].kind' | paste -sd' ' -; }
decision_count_since() { timeout 10 coinctl events --since "$1" --limit 200 --json | jq '[.events[] | select(.kind == "decision")] | length'; }
has_decisions() { (($(decision_count_since "$1") >= $2)); }
active_with_new_pid() { is_active coinmechd.service && [[ "$(main_pid)" != 0 && "$(main_pid)" != "$1" ]]; }
# restarted OLD_PID OLD_COUNT: systemd restarted the service (Restart=) and the new one is READY.
restarted() { (($(prop coinmechd.service NRestarts) > $2)) && active_with_new_pid "$1"; }

# --- the gpio-sim chip: a Raspberry Pi's header, as docs/HARDWARE.md wires the mech -----------
CHIP=/sys/kernel/config/gpio-sim/mech
SIM=""
sim_path() { SIM="/sys/devices/platform/$(cat "$CHIP/dev_name")/$(cat "$CHIP/bank0/chip_name")"; }
# The pulls a real board has: the COIN line's pull-up (the mech's output is open collector and
# active low), and the pull-up docs/HARDWARE.md asks for on INHIBIT, so that a released line
# (the daemon gone) means inhibited.
pull_ups() {
    echo pull-up > "$SIM/sim_gpio17/pull"
    echo pull-up > "$SIM/sim_gpio25/pull"
}
value_is() {
    local value
    read -r value < "$SIM/sim_gpio$1/value" && [[ "$value" == "$2" ]]
}
# coin N: the mech reports a coin of channel N: N pulses on COIN, 40 ms low, 40 ms high.
coin() {
    local i
    for ((i = 0; i < $1; i++)); do
        echo pull-down > "$SIM/sim_gpio17/pull"
        nap 0.04
        echo pull-up > "$SIM/sim_gpio17/pull"
        nap 0.04
    done
}

use_config() {
    install -m 0644 "$HERE/config/$1" /etc/coinmech/coinmechd.yaml
    systemctl restart coinmechd.service
}

# === The checks ===============================================================================

check_boot() {
    is_active coinmechd.socket || no "coinmechd.socket is $(prop coinmechd.socket ActiveState) after boot" || return
    [[ -S /run/coinmech/coinmechd.sock ]] || no "no socket at /run/coinmech/coinmechd.sock after boot" || return
    is_active coinmechd.service || no "coinmechd.service is $(prop coinmechd.service ActiveState) after boot" || return
    local basic started ready waited
    basic=$(prop basic.target ActiveEnterTimestampMonotonic)
    started=$(prop coinmechd.service ExecMainStartTimestampMonotonic)
    ready=$(prop coinmechd.service ActiveEnterTimestampMonotonic)
    waited=$(((started - basic) / 1000))
    # A start job that waits for a device nobody plugged in (dev-coinmech0.device) runs
    # into the device's 90 s job timeout.
    ((waited < 20000)) || no "coinmechd.service started $((waited / 1000)) s after basic.target: its start waited for a device" || return
    journalctl -q -b -o cat | grep "Timed out waiting for device" > /dev/null \
        && { no "the boot timed out waiting for a device: $(journalctl -q -b -o cat | grep -m1 'Timed out waiting for device')"; return; }
    journalctl -q -b -o cat -u coinmechd.service | grep "listening activated=true" > /dev/null \
        || no "coinmechd did not take its listening socket from systemd" || return
    say "socket listening; coinmechd started $waited ms after basic.target, READY $((ready / 1000)) ms into the boot, on systemd's socket; no serial mech plugged in"
}

# The stopped service is started by a client's connection, through the socket systemd holds.
activate_by_connect() {
    local old=$1 mark=$2 out start
    is_active coinmechd.service && { no "coinmechd.service is still active after systemctl stop"; return; }
    is_active coinmechd.socket || no "coinmechd.socket is $(prop coinmechd.socket ActiveState) once the service stopped" || return
    [[ -S /run/coinmech/coinmechd.sock ]] \
        || no "stopping coinmechd.service removed /run/coinmech/coinmechd.sock: clients can no longer reach the socket systemd still listens on" || return
    local owner
    owner=$(stat -c '%U:%G %a' /run/coinmech/coinmechd.sock)
    [[ "$owner" == "coinmech:coinmech 660" ]] || no "the socket is $owner, not coinmech:coinmech 660" || return
    start=$(now_ms)
    out=$(timeout 30 coinctl status --json 2>&1) || no "the first connect did not get an answer: $out" || return
    ACTIVATION_MS=$(($(now_ms) - start))
    active_with_new_pid "$old" || no "coinctl got an answer, but coinmechd.service is $(prop coinmechd.service ActiveState) with PID $(main_pid)" || return
    wait_for 5 journal_has "$mark" "listening activated=true" || no "the re-activated daemon did not take systemd's socket" || return
}

check_socket_activation() {
    local old mark
    old=$(main_pid)
    mark=$(cursor)
    systemctl stop coinmechd.service
    activate_by_connect "$old" "$mark" || return
    say "the stopped service was started by the first connect to the socket systemd holds, READY and answering in $ACTIVATION_MS ms"
}

check_sandbox() {
    local pid user groups score gid name
    daemon_pid || return
    pid=$PID
    user=$(stat -c %U "/proc/$pid")
    [[ "$user" == coinmech ]] || no "coinmechd runs as $user" || return
    groups=$(awk '/^Groups:/ { $1 = ""; print }' "/proc/$pid/status")
    for name in dialout gpio; do
        gid=$(getent group "$name" | cut -d: -f3)
        [[ " $groups " == *" $gid "* ]] || no "coinmechd is not in the $name group (groups:$groups)" || return
    done
    grep -q '^CapEff:[[:space:]]*0000000000000000' "/proc/$pid/status" || no "coinmechd has capabilities: $(grep CapEff "/proc/$pid/status")" || return
    grep -q '^NoNewPrivs:[[:space:]]*1' "/proc/$pid/status" || no "coinmechd may gain privileges (NoNewPrivs is not set)" || return
    score=$(systemd-analyze security coinmechd.service 2>&1 | grep -oE 'Overall exposure level for coinmechd.service: [0-9.]+' | grep -oE '[0-9.]+$')
    [[ -n "$score" ]] || no "systemd-analyze security gave no exposure score" || return
    awk -v s="$score" 'BEGIN { exit !(s <= 3.0) }' || no "live exposure $score is above 3.0" || return
    say "runs as coinmech (groups dialout, gpio; no capabilities; no new privileges); systemd-analyze security, live: exposure $score"
}

check_gpio_chip() {
    local mark pid node info i
    mark=$(cursor)
    modprobe gpio-sim || no "modprobe gpio-sim failed" || return
    mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
    mkdir "$CHIP" "$CHIP/bank0" || no "cannot make a gpio-sim device in configfs" || return
    echo 58 > "$CHIP/bank0/num_lines"
    echo pinctrl-bcm2711 > "$CHIP/bank0/label"
    for ((i = 0; i < 58; i++)); do
        mkdir "$CHIP/bank0/line$i" && echo "GPIO$i" > "$CHIP/bank0/line$i/name"
    done
    echo 1 > "$CHIP/live" || no "gpio-sim refused to go live" || return
    sim_path
    pull_ups
    node="/dev/$(cat "$CHIP/bank0/chip_name")"
    wait_for 10 source_is connected || no "coinmechd did not connect to the chip within 10 s: $(status_json | jq -r '.source.reason // .source.state')" || return
    wait_for 5 journal_has "$mark" "udev: mech device appeared" || no "coinmechd connected, but not because udev told it the chip appeared" || return
    info=$(gpioinfo pinctrl-bcm2711)
    # (Polarity is the decoder's: active_low inverts the edges in software, not the line.)
    grep -qE '^\s+line\s+17:\s+"GPIO17"\s+"coinmechd"\s+input\s.*\[used\]' <<< "$info" || no "GPIO17 is not coinmechd's input: $(grep 'line  *17:' <<< "$info")" || return
    grep -qE '^\s+line\s+24:\s+"GPIO24"\s+"coinmechd"\s+output' <<< "$info" || no "GPIO24 is not coinmechd's output: $(grep 'line  *24:' <<< "$info")" || return
    grep -qE '^\s+line\s+25:\s+"GPIO25"\s+"coinmechd"\s+output' <<< "$info" || no "GPIO25 is not coinmechd's output: $(grep 'line  *25:' <<< "$info")" || return
    # The sandbox against a real chip: the node is only the gpio group's (the udev rule), and
    # the daemon, not root, has it open.
    [[ "$(stat -c '%U:%G %a' "$node")" == "root:gpio 660" ]] || no "$node is $(stat -c '%U:%G %a' "$node"), not root:gpio 660 (the udev rule)" || return
    pid=$(main_pid)
    ls -l "/proc/$pid/fd" 2> /dev/null | grep -- "-> $node\$" > /dev/null || no "coinmechd (PID $pid) does not hold $node open" || return
    say "gpio-sim chip pinctrl-bcm2711 ($node, root:gpio 660 by the udev rule) seen through udev; coinmechd holds GPIO17 (COIN, input), GPIO24 (accept gate) and GPIO25 (inhibit)"
}

check_pulses() {
    local seq value got expected n
    seq=$(last_seq)
    value=$(usd_lifetime)
    # Five coins 440 ms apart (gap_ms is 250): each its own train, decided as it ends.
    for n in 1 2 3 5 4; do
        coin "$n"
        nap 0.4
    done
    wait_for 20 has_decisions "$seq" 5 || no "5 coins gave $(decision_count_since "$seq") decisions within 20 s: '$(decisions_since "$seq")'" || return
    got=$(decisions_since "$seq")
    expected="1:accept:cent 2:accept:nickel 3:accept:dime 5:accept:quarter 4:reject:unknown_channel"
    [[ "$got" == "$expected" ]] || no "decisions '$got', expected '$expected'" || return
    (($(usd_lifetime) - value == 41)) || no "the totals moved by $(($(usd_lifetime) - value)) cents, expected 41" || return
    say "pulse trains of 1, 2, 3, 5 and 4 pulses: cent, nickel, dime, quarter credited (41 cents), channel 4 returned as unknown_channel"
}

check_outputs() {
    local before opened closed
    value_is 25 0 || no "the inhibit line (GPIO25) reads 1 while coinmechd decides" || return
    value_is 24 0 || no "the accept gate (GPIO24) reads 1 with no coin" || return
    before=$(last_seq)
    coin 5
    wait_fast 5 value_is 24 1 || no "the accept gate never opened for an accepted quarter" || return
    opened=$(now_ms)
    wait_fast 5 value_is 24 0 || no "the accept gate stayed open" || return
    closed=$(now_ms)
    (((closed - opened) >= 300 && (closed - opened) < 2000)) || no "the accept gate was open for $((closed - opened)) ms, configured 400 ms" || return
    wait_for 10 has_decisions "$before" 1 || no "no decision for the quarter" || return
    coinctl inhibit on > /dev/null || no "coinctl inhibit on failed" || return
    wait_for 5 value_is 25 1 || no "the inhibit line stays 0 after coinctl inhibit on" || return
    before=$(last_seq)
    coin 5
    wait_for 10 has_decisions "$before" 1 || no "no decision for a quarter while inhibited" || return
    [[ "$(decisions_since "$before")" == "5:reject:inhibited" ]] || no "a quarter while inhibited: '$(decisions_since "$before")', expected it returned as inhibited" || return
    value_is 24 0 || no "the accept gate opened while inhibited" || return
    coinctl inhibit off > /dev/null || no "coinctl inhibit off failed" || return
    wait_for 5 value_is 25 0 || no "the inhibit line stays 1 after coinctl inhibit off" || return
    say "accept gate (GPIO24) read back open for $((closed - opened)) ms after an accepted quarter; inhibit (GPIO25) read back 1 after 'coinctl inhibit on' (a quarter returned as inhibited, gate shut), 0 after 'off'"
}

check_kernel_timestamps() {
    local pid before got
    daemon_pid || return
    pid=$PID
    before=$(last_seq)
    # While coinmechd is stopped, two coins reach the kernel: 3 pulses, a 600 ms gap (more
    # than gap_ms), 2 pulses. The daemon reads all ten edges at once when it resumes: only
    # the kernel's timestamps still tell the pulses' widths and the gap between the coins.
    kill -STOP "$pid"
    coin 3
    nap 0.6
    coin 2
    nap 0.3
    kill -CONT "$pid"
    wait_for 10 has_decisions "$before" 2 || no "edges read late gave $(decision_count_since "$before") decisions, expected 2: '$(decisions_since "$before")'" || return
    got=$(decisions_since "$before")
    [[ "$got" == "3:accept:dime 2:accept:nickel" ]] || no "edges read late decoded as '$got', expected a dime then a nickel" || return
    say "ten edges read in one go after a SIGSTOP decode as a dime (3 pulses) then a nickel (2 pulses): widths and the gap come from the kernel's edge timestamps"
}

check_hotplug() {
    local pid restarts mark seq before events
    daemon_pid || return
    pid=$PID
    restarts=$(prop coinmechd.service NRestarts)
    mark=$(cursor)
    seq=$(last_seq)
    RECONNECTS_BEFORE=$(status_json | jq -r '.counters.reconnects // empty')
    echo 0 > "$CHIP/live" || no "gpio-sim refused to go offline" || return
    wait_for 10 source_is disconnected || no "coinctl status still says '$(source_state)' 10 s after the chip was removed" || return
    wait_for 5 journal_has "$mark" "udev: mech device vanished" || no "coinmechd did not see the chip's removal through udev" || return
    echo 1 > "$CHIP/live" || no "gpio-sim refused to go live again" || return
    sim_path
    pull_ups
    wait_for 10 source_is connected || no "coinmechd did not reconnect within 10 s: $(status_json | jq -r '.source.reason // .source.state')" || return
    wait_for 5 journal_has "$mark" "udev: mech device appeared" || no "coinmechd reconnected, but not because udev told it the chip appeared" || return
    [[ "$(main_pid)" == "$pid" && "$(prop coinmechd.service NRestarts)" == "$restarts" ]] \
        || no "coinmechd was restarted (PID $pid -> $(main_pid))" || return
    RECONNECTS_AFTER=$(status_json | jq -r '.counters.reconnects // empty')
    events=$(events_since "$seq")
    [[ "$events" == *"source_lost"*"source_connected"* ]] || no "the ledger has '$events', expected source_lost then source_connected" || return
    wait_for 5 value_is 25 0 || no "the inhibit line is not released after the reconnect" || return
    before=$(last_seq)
    coin 5
    wait_for 10 has_decisions "$before" 1 || no "no decision for a quarter after the reconnect" || return
    [[ "$(decisions_since "$before")" == "5:accept:quarter" ]] || no "a quarter after the reconnect: '$(decisions_since "$before")'" || return
    say "chip removed and re-added (configfs live 0/1): udev told coinmechd both, it reconnected without a restart (PID $pid), the ledger has source_lost and source_connected, and the next quarter is credited"
}

# The hotplug check's reconnect, as `coinctl status` counts it (counters.reconnects).
RECONNECTS_BEFORE=""
RECONNECTS_AFTER=""
check_reconnect_count() {
    [[ -n "$RECONNECTS_BEFORE" && -n "$RECONNECTS_AFTER" ]] \
        || no "coinctl status --json has no counters.reconnects to count the chip's reconnect (the ledger has it: source_lost, source_connected)" || return
    ((RECONNECTS_AFTER == RECONNECTS_BEFORE + 1)) \
        || no "coinctl status counted $((RECONNECTS_AFTER - RECONNECTS_BEFORE)) reconnects for one removal and return of the chip" || return
    say "coinctl status counted the reconnect: $RECONNECTS_BEFORE -> $RECONNECTS_AFTER"
}

check_reload() {
    local generation mark
    generation=$(status_json | jq -r '.chain_generation')
    mark=$(cursor)
    systemctl reload coinmechd.service || no "systemctl reload failed" || return
    wait_for 15 eval '(( $(status_json | jq -r .chain_generation) > generation ))' \
        || no "the chain generation stayed $generation after systemctl reload" || return
    wait_for 5 journal_has "$mark" "chain reloaded" || no "no 'chain reloaded' in the journal" || return
    say "systemctl reload moved the chain generation from $generation to $(status_json | jq -r .chain_generation)"
}

check_watchdog() {
    local pid restarts seq mark totals after decisions
    daemon_pid || return
    pid=$PID
    restarts=$(prop coinmechd.service NRestarts)
    seq=$(last_seq)
    totals=$(timeout 10 coinctl totals --json | jq -c '.lifetime')
    decisions=$(decisions_since 0)
    mark=$(cursor)
    kill -STOP "$pid"
    wait_for 60 restarted "$pid" "$restarts" \
        || no "systemd did not restart the stopped daemon within 60 s ($(prop coinmechd.service ActiveState), PID $(main_pid), $(prop coinmechd.service NRestarts) restarts)" || return
    journal_has "$mark" "Watchdog timeout" || no "systemd restarted coinmechd, but not for its watchdog" || return
    wait_for 10 source_is connected || no "the restarted daemon did not reconnect to the chip" || return
    after=$(timeout 10 coinctl totals --json | jq -c '.lifetime')
    [[ "$after" == "$totals" ]] || no "lifetime totals changed across the restart: $totals -> $after" || return
    (($(last_seq) > seq)) || no "the ledger's last seq went from $seq to $(last_seq)" || return
    [[ "$(decisions_since 0)" == "$decisions" ]] || no "the recorded decisions changed across the restart" || return
    say "SIGSTOP'd daemon: systemd's watchdog restarted it (PID $pid -> $(main_pid)); lifetime totals ($(usd_lifetime) cents) and every recorded decision intact"
}

check_stop_reactivate() {
    local old mark seq totals after
    old=$(main_pid)
    seq=$(last_seq)
    totals=$(timeout 10 coinctl totals --json | jq -c '.lifetime')
    mark=$(cursor)
    systemctl stop coinmechd.service
    # Nobody decides: the line is released, and the board's pull-up inhibits the mech.
    value_is 25 1 || no "with coinmechd stopped the inhibit line reads 0: the mech would take coins nobody decides" || return
    activate_by_connect "$old" "$mark" || return
    after=$(timeout 10 coinctl totals --json | jq -c '.lifetime')
    [[ "$after" == "$totals" ]] || no "lifetime totals changed across stop and re-activation" || return
    (($(last_seq) > seq)) || no "the ledger's last seq went back" || return
    wait_for 10 source_is connected || no "the re-activated daemon did not reconnect to the chip" || return
    say "after systemctl stop the socket stayed (coinmech:coinmech 660) and the mech inhibited; the next connect re-activated coinmechd in $ACTIVATION_MS ms, ledger intact"
}

check_serial_pty() {
    local value truth accepted credited rc
    install -d -o coinmech -g coinmech -m 0755 /run/coinsim
    rm -f /run/coinsim/truth.json
    use_config serial-pty.yaml
    is_active coinmechd.service || no "coinmechd did not restart with the serial configuration" || return
    value=$(usd_lifetime)
    # coinsim runs as coinmech, so the daemon (same user) may open the pty's device end.
    timeout 240 runuser -u coinmech -- /usr/bin/coinsim --scenario "$HERE/config/scenario-slow-host.yaml" --coins 8 --link /run/coinsim/mech \
        --truth /run/coinsim/truth.json --host-timeout 60 > /run/coinsim/coinsim.log 2>&1
    rc=$?
    ((rc != 124)) || no "coinsim did not finish 8 coins within 240 s" || return
    ((rc == 0)) || no "coinsim failed ($rc): $(tail -n 3 /run/coinsim/coinsim.log | tr '\n' ' ')" || return
    truth=/run/coinsim/truth.json
    accepted=$(jq -r '.outcomes.accepted' "$truth")
    credited=$(($(usd_lifetime) - value))
    ((credited == $(jq -r '.accepted_value.USD // 0' "$truth"))) \
        || no "the ledger credited $credited cents, coinsim saw $(jq -r '.accepted_value.USD // 0' "$truth") accepted ($(jq -c .outcomes "$truth"))" || return
    ((accepted >= 3)) || no "only $accepted of 8 coins accepted: $(jq -c .outcomes "$truth")" || return
    say "coinsim on a pty: $(jq -r '.sent.insertions' "$truth") coins, $accepted accepted, $credited cents credited, as coinsim counts them ($(jq -r '.outcomes.deadline_misses' "$truth") deadline misses, p99 $(jq -r '.latency_us.p99' "$truth") µs)"
}

# Runs coinsim on the pty for $1 coins of scenario $2 (the daemon must be up with a serial-pty
# configuration).
run_coinsim() {
    local rc
    install -d -o coinmech -g coinmech -m 0755 /run/coinsim
    rm -f /run/coinsim/truth.json
    timeout 240 runuser -u coinmech -- /usr/bin/coinsim --scenario "$HERE/config/$2" --coins "$1" --link /run/coinsim/mech \
        --truth /run/coinsim/truth.json --host-timeout 60 > /run/coinsim/coinsim.log 2>&1
    rc=$?
    ((rc != 124)) || no "coinsim did not finish $1 coins within 240 s" || return
    ((rc == 0)) || no "coinsim failed ($rc): $(tail -n 3 /run/coinsim/coinsim.log | tr '\n' ' ')" || return
}

# A hostile third-party plugin, isolated inside the shipped unit (its hosts never ran inside
# the unit's sandbox before): opening the ledger, the configuration, /tmp and memory past its
# limit are refused; execve ends its host alone, and the link is quarantined naming the call;
# so do fork, F_SETOWN and a socket tried from its constructor, its entry point and create.
check_hostile_plugin() {
    local mark attempt layers problem
    install -d -m 0755 /var/lib/coinmech-vm-plugins
    cp /usr/lib/coinmech/plugins/*.so "$HERE"/hostile/libhostile*.so /var/lib/coinmech-vm-plugins/
    mark=$(cursor)
    use_config hostile.yaml
    is_active coinmechd.service || no "coinmechd did not start with the hostile plugin: $(journalctl -q -o cat -u coinmechd.service --since="$mark" | tail -n 2 | tr '\n' ' ')" || return
    run_coinsim 3 scenario-hostile.yaml || return
    for attempt in ledger_write ledger_read config tmp memory; do
        journal_has "$mark" "hostile: $attempt refused" \
            || no "no refusal of $attempt in the journal: $(journalctl -q -o cat -u coinmechd.service --since="$mark" | grep -E -m8 'hostile|third-party' | tr '\n' ' ')" || return
    done
    if journal_has "$mark" "SUCCEEDED"; then
        no "an escape succeeded: $(journalctl -q -o cat -u coinmechd.service --since="$mark" | grep -m1 SUCCEEDED)"
        return
    fi
    layers=$(journalctl -q -o cat -u coinmechd.service --since="$mark" | grep -om1 'plugin host sandbox: [^;]*' | sed 's/plugin host sandbox: //')
    mark=$(cursor)
    use_config hostile-exec.yaml
    run_coinsim 2 scenario-hostile-exec.yaml || return
    problem=$(status_json | jq -r '.link_problems[]? | select(.link == "third-party") | "\(.cause): \(.reason)"')
    [[ "$problem" == "sandbox_violation: its plugin made a system call its sandbox forbids (execve)"* ]] \
        || no "after execve the link's problem is '$problem'" || return
    is_active coinmechd.service || no "coinmechd.service is $(prop coinmechd.service ActiveState) after the plugin's execve" || return
    # Escapes before it decides anything: from its constructor, its entry point and create.
    local link call early=""
    mark=$(cursor)
    use_config hostile-early.yaml
    is_active coinmechd.service || no "coinmechd did not start with plugins that escape while loading: $(journalctl -q -o cat -u coinmechd.service --since="$mark" | tail -n 2 | tr '\n' ' ')" || return
    for link in from-constructor:clone from-entry:fcntl from-create:socket; do
        call=${link#*:}
        link=${link%%:*}
        problem=$(status_json | jq -r --arg link "$link" '.link_problems[]? | select(.link == $link) | "\(.cause): \(.reason)"')
        [[ "$problem" == "sandbox_violation: its plugin made a system call its sandbox forbids ($call) while loading"* ]] \
            || no "link $link (escaping with $call while loading): its problem is '$problem'" || return
        early+=" $link ($call)"
    done
    if journal_has "$mark" "SUCCEEDED"; then
        no "an escape while loading succeeded: $(journalctl -q -o cat -u coinmechd.service --since="$mark" | grep -m1 SUCCEEDED)"
        return
    fi
    run_coinsim 2 scenario-hostile-early.yaml || return
    is_active coinmechd.service || no "coinmechd.service is $(prop coinmechd.service ActiveState) after its plugins escaped while loading" || return
    use_config serial-pty.yaml
    say "inside the unit: ledger, configuration, /tmp and 1 GiB refused; execve ended its host alone and quarantined the link (sandbox_violation); while loading, quarantined at start:$early; layers: $layers"
}

usb_adapter() {
    local dir
    for dir in /sys/bus/usb/devices/*; do
        [[ -f "$dir/idVendor" && "$(cat "$dir/idVendor"):$(cat "$dir/idProduct")" == 0403:6001 ]] && { echo "$dir"; return 0; }
    done
    return 1
}

check_usb_tty() {
    local adapter mark node pid
    adapter=$(usb_adapter) || no "no FTDI 0403:6001 adapter on the USB bus" || return
    use_config serial-usb.yaml
    is_active coinmechd.service || no "coinmechd did not restart with /dev/coinmech0 configured" || return
    [[ ! -e /dev/coinmech0 ]] || no "/dev/coinmech0 exists before the adapter is plugged in" || return
    mark=$(cursor)
    echo 1 > "$adapter/authorized"
    wait_for 20 test -e /dev/coinmech0 || no "udev made no /dev/coinmech0 for the adapter" || return
    node=$(readlink -f /dev/coinmech0)
    [[ "$(stat -c '%U:%G %a' "$node")" == "root:dialout 660" ]] || no "$node is $(stat -c '%U:%G %a' "$node"), not root:dialout 660" || return
    wait_for 10 is_active dev-coinmech0.device || no "systemd has no dev-coinmech0.device (TAG+=\"systemd\")" || return
    wait_for 15 source_is connected || no "coinmechd cannot open $node: $(status_json | jq -r '.source.reason // .source.state')" || return
    wait_for 5 journal_has "$mark" "udev: mech device appeared" || no "coinmechd opened $node, but not because udev told it the adapter appeared" || return
    pid=$(main_pid)
    ls -l "/proc/$pid/fd" 2> /dev/null | grep -- "-> $node\$" > /dev/null || no "coinmechd does not hold $node open" || return
    echo 0 > "$adapter/authorized"
    wait_for 10 source_is disconnected || no "coinmechd still says connected after the adapter was unplugged" || return
    say "USB serial adapter plugged in after boot: udev named it /dev/coinmech0 ($node, root:dialout 660), coinmechd (coinmech, sandboxed) opened it; unplugged, it saw it go"
}

# The fleet bridge under its own unit and user: shipped disabled, it starts once configured,
# reaches the daemon's socket through its group (the retained status says the daemon is
# connected) and publishes to a broker; the daemon's ledger directory is not in its sandbox.
check_bridge() {
    systemctl -q is-enabled coinmech-bridge.service 2> /dev/null && { no "coinmech-bridge.service is enabled as shipped: it must wait for its configuration"; return; }
    is_active mosquitto.service || systemctl start mosquitto.service || no "the guest's mosquitto did not start" || return
    printf 'cabinet: vm-1\nsite: vm\nmqtt: {host: 127.0.0.1, port: 1883, tls: off}\ndelivery: {acks: off}\nstatus: {poll_s: 1}\n' > /etc/coinmech/coinmech-bridge.yaml
    systemctl start coinmech-bridge.service || no "coinmech-bridge.service did not start" || return
    local status pid listed
    status=$(timeout 40 mosquitto_sub -h 127.0.0.1 -C 1 -W 30 -t coinmech/v1/vm/vm-1/status 2> /dev/null) \
        || no "no status from the bridge within 30 s: $(journalctl -q -o cat -u coinmech-bridge.service | tail -n 3 | paste -sd' ')" || return
    [[ "$(jq -r .daemon <<< "$status")" == connected ]] || no "the bridge under its unit does not reach the daemon's socket: $status" || return
    pid=$(prop coinmech-bridge.service MainPID)
    [[ "$(stat -c %U "/proc/$pid")" == coinmech-bridge ]] || no "the bridge runs as $(stat -c %U "/proc/$pid"), not coinmech-bridge" || return
    listed=$(nsenter -t "$pid" -m ls -A /var/lib/coinmech 2>&1)
    [[ "$listed" != *ledger* ]] || no "the bridge's sandbox sees the ledger: $listed" || return
    # Outside any sandbox too: the socket's group (the bridge's user is in it) reaches neither the
    # ledger nor the daemon's private plugin copies.
    runuser -u coinmech-bridge -- test -r /var/lib/coinmech/ledger.sqlite3 \
        && { no "a member of the socket's group can read the ledger ($(stat -c '%U:%G %a' /var/lib/coinmech))"; return; }
    runuser -u coinmech-bridge -- ls /var/cache/coinmech > /dev/null 2>&1 \
        && { no "a member of the socket's group can list the daemon's plugin copies ($(stat -c '%U:%G %a' /var/cache/coinmech))"; return; }
    systemctl stop coinmech-bridge.service
    rm -f /etc/coinmech/coinmech-bridge.yaml
    say "disabled as shipped; once configured it ran as coinmech-bridge, read the daemon's socket (status: daemon connected, last seq $(jq -r .last_seq <<< "$status")) and published to the broker; the ledger and the plugin copies are out of its reach, in its sandbox and outside it"
}

# === Run ======================================================================================
check "boot" check_boot
check "socket activation" check_socket_activation
check "sandbox" check_sandbox
check "gpio-sim chip" check_gpio_chip
if [[ -n "$SIM" ]]; then
    check "gpio pulses" check_pulses
    check "gpio outputs" check_outputs
    check "kernel timestamps" check_kernel_timestamps
    check "hotplug" check_hotplug
    check "hotplug count" check_reconnect_count
else
    for name in "gpio pulses" "gpio outputs" "kernel timestamps" "hotplug" "hotplug count"; do
        FAILED=$((FAILED + 1))
        result "FAIL $name: not run: no gpio-sim chip"
    done
fi
check "reload" check_reload
check "watchdog" check_watchdog
check "stop and re-activate" check_stop_reactivate
check "serial coinsim" check_serial_pty
check "hostile plugin" check_hostile_plugin
check "usb tty" check_usb_tty
check "fleet bridge" check_bridge

if ((FAILED > 0)); then
    journalctl -q -b -o short-monotonic --no-pager -u coinmechd.service -u coinmechd.socket | tail -n 250 | sed 's/^/JOURNAL /' >&3
fi
printf 'SUMMARY %d passed, %d failed\n' "$PASSED" "$FAILED" >&3
printf '%d passed, %d failed\n' "$PASSED" "$FAILED"
exec 3>&-
