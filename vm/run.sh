#!/usr/bin/env bash
# `make test-vm`: CoinMech under a real systemd, a real udevd and the kernel's own gpio-sim,
# in a qemu VM (TCG: no KVM needed). Builds what is missing or stale under .build-vm/ (the
# gpio-sim modules, a Debian 12 base, the image with the project installed), boots it, and
# prints the guest's checks, one line each, then "N passed, N failed". On a failure it also
# prints the coinmechd journal and the tail of the VM's console. Exits 0 only when every
# check passed.
#
# VM_TIMEOUT=seconds bounds the boot and checks (default 900); VM_BUILD_DIR moves .build-vm.
# `vm/run.sh --prepare` (`make vm-prepare`) only installs the host's tools and builds what does
# not depend on the project (the gpio-sim modules, the Debian base), then exits: CI does it in
# the background while its tests run.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
mkdir -p "$OUT"
TOTAL_START=$SECONDS

# --- The host: qemu, mmdebstrap, and the guest kernel's headers and source ---------------
installed() { dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null | grep -q '^ii'; }
host_tools() {
    local -a missing=()
    local package
    for package in qemu-system-x86 mmdebstrap e2fsprogs jq xz-utils patch gcc make flex bison libelf-dev "linux-headers-$KABI"; do
        installed "$package" || missing+=("$package")
    done
    [[ "$(dpkg-query -W -f='${Version}' "$KSRC" 2>/dev/null || true)" == "$KVER" ]] || missing+=("$KSRC=$KVER")
    [[ ${#missing[@]} -eq 0 ]] && return
    if [[ $EUID -ne 0 ]]; then
        die "the VM needs Debian packages that are not installed, and only root can install them:
    sudo apt-get install -y --no-install-recommends ${missing[*]}"
    fi
    apt_lists_ready
    log "installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${missing[@]}" > "$OUT/apt-install.log" 2>&1 \
        || { tail -n 30 "$OUT/apt-install.log" >&2; die "apt-get install ${missing[*]} failed"; }
}

[[ $EUID -eq 0 ]] || die "make test-vm builds a root filesystem (mmdebstrap, file ownership) and must run as root"
[[ "$(uname -m)" == x86_64 ]] || die "the VM is x86_64 (qemu-system-x86_64 with Debian's amd64 kernel); this machine is $(uname -m)"
command -v apt-get > /dev/null || die "the VM is built from Debian packages with apt; this machine has no apt-get"
resolve_kernel
host_tools
command -v qemu-system-x86_64 > /dev/null || die "qemu-system-x86_64 is missing after installing qemu-system-x86"

# --- Build what is stale -------------------------------------------------------------------
step() {
    local name=$1 start=$SECONDS
    shift
    "$@" || die "$name failed"
    STEPS+="$name $((SECONDS - start)) s, "
}
STEPS=""
step "gpio-sim modules" "$VM/build-kmod.sh"
step "base image" "$VM/build-base.sh"
if [[ "${1:-}" == --prepare ]]; then
    log "prepared: ${STEPS%, } (the project image and the VM are left to make test-vm)"
    exit 0
fi
step "project image" "$VM/build-image.sh"

# --- Boot ------------------------------------------------------------------------------------
RUN="$OUT/run"
rm -rf "$RUN"
mkdir -p "$RUN"
CONSOLE="$RUN/console.log"
RESULTS="$RUN/results.log"
: > "$CONSOLE"
: > "$RESULTS"
QEMU_PID=""
TAIL_PID=""
cleanup() {
    [[ -n "$TAIL_PID" ]] && kill "$TAIL_PID" 2> /dev/null && wait "$TAIL_PID" 2> /dev/null
    [[ -n "$QEMU_PID" ]] && kill "$QEMU_PID" 2> /dev/null && wait "$QEMU_PID" 2> /dev/null
    return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ttyS0 is the console; ttyS1 carries the checks' results. The USB serial adapter is QEMU's
# FTDI (0403:6001), the one the udev rule names /dev/coinmech0; usbcore.authorized_default=0
# keeps it unplugged until the checks plug it in (authorized), so the boot has no serial mech.
log "booting the VM (qemu TCG, 2 vCPUs): $STEPS"
boot_start=$SECONDS
timeout=${VM_TIMEOUT:-900}
# qemu exits when the guest powers off; timeout only bounds a hung guest.
timeout --kill-after=10 "$timeout" qemu-system-x86_64 -machine q35 -accel tcg -cpu max -smp 2 -m 1024 \
    -kernel "$OUT/base/vmlinux" -initrd "$OUT/base/initrd.img" \
    -append "root=/dev/vda rw console=ttyS0 quiet systemd.show_status=error panic=-1 usbcore.authorized_default=0" \
    -drive "file=$OUT/image/root.img,if=virtio,format=raw" -snapshot \
    -nic none -display none -monitor none -no-reboot \
    -serial "file:$CONSOLE" -serial "file:$RESULTS" \
    -device qemu-xhci -chardev null,id=usbmech -device usb-serial,chardev=usbmech,always-plugged=on \
    > "$RUN/qemu.log" 2>&1 &
QEMU_PID=$!
# Each check's line as the guest writes it (tail ends with qemu; sed with tail).
tail -n +1 -f --pid="$QEMU_PID" "$RESULTS" 2> /dev/null > >(sed -u -n 's/\r$//; s/^RESULT //p') &
TAIL_PID=$!
qemu_status=0
wait "$QEMU_PID" || qemu_status=$?
QEMU_PID=""
wait "$TAIL_PID" 2> /dev/null || true
wait  # and the sed behind it (the last process substitution)
TAIL_PID=""
if ((qemu_status == 124)); then log "the VM did not power off within $timeout s: stopped it"; fi
boot_seconds=$((SECONDS - boot_start))

# --- Report ----------------------------------------------------------------------------------
summary=$(tr -d '\r' < "$RESULTS" | sed -n 's/^SUMMARY //p' | tail -n 1)
failed=1
if [[ "$summary" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]] && ((BASH_REMATCH[2] == 0 && BASH_REMATCH[1] > 0)); then
    failed=0
fi
if ((failed)); then
    if [[ -z "$summary" ]]; then
        echo "test-vm: the guest did not finish its checks (qemu exit status $qemu_status, $boot_seconds s)"
        [[ -s "$RUN/qemu.log" ]] && { echo "== qemu"; cat "$RUN/qemu.log"; }
    fi
    if grep -q '^JOURNAL ' "$RESULTS"; then
        echo "== journal of coinmechd (guest)"
        tr -d '\r' < "$RESULTS" | sed -n 's/^JOURNAL //p'
    fi
    echo "== console tail ($CONSOLE)"
    tail -n 80 "$CONSOLE" | tr -d '\r'
fi
log "VM: boot, checks and power-off in $boot_seconds s"
passed_count=0
failed_count=1
if [[ "$summary" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
    passed_count=${BASH_REMATCH[1]}
    failed_count=${BASH_REMATCH[2]}
fi

# --- Power cuts: the same image on a disk of its own, the mech on this host ------------------
cleanup
trap - EXIT
power_start=$SECONDS
if "$VM/power-cut.sh"; then
    passed_count=$((passed_count + 1))
else
    failed_count=$((failed_count + 1))
    failed=1
fi
log "power-cut run in $((SECONDS - power_start)) s; whole run $((SECONDS - TOTAL_START)) s"
echo "$passed_count passed, $failed_count failed"
exit "$failed"
