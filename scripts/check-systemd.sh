#!/usr/bin/env bash
# Installs CoinMech into a scratch DESTDIR and checks the installed units the way systemd would:
# `systemd-analyze verify`, and `systemd-analyze security --offline=yes` with a ceiling on the
# exposure score (docs/OPERATIONS.md records it).
set -euo pipefail
cd "$(dirname "$0")/.."
MAX_EXPOSURE=${MAX_EXPOSURE:-3.0}
STAGE=$(mktemp -d -t coinmech-stage-XXXXXX)
trap 'rm -rf "$STAGE"' EXIT

make --no-print-directory install PREFIX=/usr DESTDIR="$STAGE" > "$STAGE.log" 2>&1 || { cat "$STAGE.log"; exit 1; }
UNITS="$STAGE/usr/lib/systemd/system"
for file in usr/bin/coinmechd usr/bin/coinctl usr/bin/coinmech-bridge usr/lib/coinmech/plugins/libcoin-table.so usr/lib/systemd/system/coinmechd.service \
            usr/lib/systemd/system/coinmech-bridge.service usr/share/doc/coinmech/examples/coinmech-bridge.yaml \
            usr/lib/sysusers.d/coinmech.conf usr/lib/tmpfiles.d/coinmech.conf usr/lib/udev/rules.d/99-coinmech.rules etc/coinmech/coinmechd.yaml; do
    [[ -e "$STAGE/$file" ]] || { echo "check-systemd: make install did not install /$file"; exit 1; }
done
"$STAGE/usr/bin/coinmechd" --config "$STAGE/etc/coinmech/coinmechd.yaml" --plugin-dir "$STAGE/usr/lib/coinmech/plugins" --check-config
"$STAGE/usr/bin/coinmech-bridge" --config "$STAGE/usr/share/doc/coinmech/examples/coinmech-bridge.yaml" --check-config

# The staged root stands in for the target system: merged /usr, /bin/sh for ExecReload, and
# the standard targets and templates the units refer to.
ln -s usr/bin "$STAGE/bin"
install -m 0755 "$(readlink -f /bin/sh)" "$STAGE/usr/bin/sh"
for unit in sysinit.target basic.target multi-user.target sockets.target shutdown.target local-fs.target paths.target \
            timers.target slices.target network.target modprobe@.service; do
    [[ -e "/usr/lib/systemd/system/$unit" ]] && cp "/usr/lib/systemd/system/$unit" "$UNITS/"
done

echo "== systemd-analyze verify"
SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --root="$STAGE" "$UNITS/coinmechd.service" "$UNITS/coinmechd.socket" "$UNITS/coinmech-bridge.service" 2>&1 \
    | tee "$STAGE/verify.log"
if grep -v -E "^$" "$STAGE/verify.log" | grep -q .; then
    echo "check-systemd: systemd-analyze verify reported problems"; exit 1
fi

echo "== systemd-analyze security --offline=yes"
for unit in coinmechd.service coinmech-bridge.service; do
    systemd-analyze security --offline=yes --root="$STAGE" "$UNITS/$unit" > "$STAGE/security.log" 2>&1 || true
    score=$(grep -oE "Overall exposure level for $unit: [0-9.]+" "$STAGE/security.log" | grep -oE "[0-9.]+$" || true)
    [[ -n "$score" ]] || { cat "$STAGE/security.log"; echo "check-systemd: no exposure score for $unit"; exit 1; }
    grep -E "^✗" "$STAGE/security.log" | head -20 || true
    echo "$unit exposure: $score (ceiling $MAX_EXPOSURE)"
    awk -v s="$score" -v m="$MAX_EXPOSURE" 'BEGIN { exit !(s <= m) }' || { echo "check-systemd: $unit exposure $score is above $MAX_EXPOSURE"; exit 1; }
done
echo "check-systemd: units verified, exposures at most $MAX_EXPOSURE"

# make uninstall takes away all that make install put there but the configuration (what this
# script added to the root first). It once left coinmech-bridge's link, page and unit behind.
rm -f "$STAGE/bin" "$STAGE/usr/bin/sh" "$STAGE/verify.log" "$STAGE/security.log"
for unit in sysinit.target basic.target multi-user.target sockets.target shutdown.target local-fs.target paths.target \
            timers.target slices.target network.target modprobe@.service; do
    rm -f "$UNITS/$unit"
done
make --no-print-directory uninstall PREFIX=/usr DESTDIR="$STAGE" > /dev/null
left=$(cd "$STAGE" && find . \( -type f -o -type l \) ! -path ./etc/coinmech/coinmechd.yaml | sort)
[[ -z "$left" ]] || { echo "check-systemd: make uninstall left behind:"; echo "$left"; exit 1; }
echo "check-systemd: make uninstall left only the configuration"
