#!/usr/bin/env bash
# The bootable disk: the base (vm/build-base.sh), the project installed into it the way an
# installer does, and the guest's checks (vm/guest/). Output: $OUT/image/root.img (ext4, no
# loop mount needed), rebuilt only when the base, the installed files or vm/guest change.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

BASE="$OUT/base"
DIR="$OUT/image"
STAGE="$OUT/stage"
mkdir -p "$DIR"

# The project, as files under $STAGE: `make install` is self-contained (the Swift runtime the
# programs and plugins need is installed beside them, under /usr/lib/coinmech/swift), so the
# guest, like a cabinet, has no Swift toolchain.
stage_project() {
    rm -rf "$STAGE"
    mkdir -p "$STAGE"
    if ! make -C "$ROOT" --no-print-directory install PREFIX=/usr DESTDIR="$STAGE" > "$DIR/install.log" 2>&1; then
        tail -n 40 "$DIR/install.log" >&2
        die "make install PREFIX=/usr DESTDIR=$STAGE failed (whole log: $DIR/install.log)"
    fi
}

stage_project
KEY=$(hash_inputs "$(cat "$BASE/.key")" "$VM/build-image.sh" \
    "$(cd "$STAGE" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum)" \
    "$(cd "$VM/guest" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum)" \
    "$ROOT/Tests/Fixtures/plugins/hostile.c" "$ROOT/Sources/CoinMechPluginABI/include/coinmech_plugin.h")
if up_to_date "$DIR" "$KEY" && [[ -f "$DIR/root.img" ]]; then exit 0; fi

start=$SECONDS
ROOT_DIR="$DIR/root"
rm -rf "$ROOT_DIR" "$DIR/root.img" "$DIR/.key"
cp -a --reflink=auto "$BASE/root" "$ROOT_DIR"

# What an installer does (docs/OPERATIONS.md): install, create the users, enable the units.
cp -a "$STAGE/." "$ROOT_DIR/"
systemd-sysusers --root="$ROOT_DIR" > "$DIR/sysusers.log" 2>&1 || { cat "$DIR/sysusers.log" >&2; die "systemd-sysusers failed in the image"; }
for group in coinmech coinmech-admin gpio; do
    grep -q "^$group:" "$ROOT_DIR/etc/group" || die "systemd-sysusers did not create the $group group in the image"
done
# The guest's configuration: a GPIO pulse mech, as docs/HARDWARE.md shows an installer.
install -m 0644 "$VM/guest/config/gpio.yaml" "$ROOT_DIR/etc/coinmech/coinmechd.yaml"
systemctl --root="$ROOT_DIR" enable coinmechd.socket coinmechd.service > /dev/null 2>&1

# The checks: a one-shot unit after multi-user.target that powers the guest off when done.
install -d "$ROOT_DIR/usr/local/lib/coinmech-vm"
cp -a "$VM/guest/." "$ROOT_DIR/usr/local/lib/coinmech-vm/"
install -m 0644 "$VM/guest/coinmech-vm-test.service" "$ROOT_DIR/etc/systemd/system/"
# The hostile third-party plugin the checks run isolated, built as a third party would: with cc,
# against the public header alone.
install -d "$ROOT_DIR/usr/local/lib/coinmech-vm/hostile"
cc -shared -fPIC -O1 -I"$ROOT/Sources/CoinMechPluginABI/include" "$ROOT/Tests/Fixtures/plugins/hostile.c" \
    -o "$ROOT_DIR/usr/local/lib/coinmech-vm/hostile/libhostile.so" || die "cc could not build the hostile test plugin"
# And with escapes compiled into its constructor and its entry point, which run before the host
# calls anything of it (hostile-early.yaml).
for early in "ctor:constructor:fork" "entry:entry:setown"; do
    cc -shared -fPIC -O1 -I"$ROOT/Sources/CoinMechPluginABI/include" "$ROOT/Tests/Fixtures/plugins/hostile.c" -DHOSTILE_EARLY="\"${early#*:}\"" \
        -o "$ROOT_DIR/usr/local/lib/coinmech-vm/hostile/libhostile-${early%%:*}.so" || die "cc could not build the hostile test plugin ($early)"
done
systemctl --root="$ROOT_DIR" enable coinmech-vm-test.service > /dev/null 2>&1

# Every library the installed programs need must resolve inside the guest.
missing=$(for elf in "$ROOT_DIR"/usr/bin/coin* "$ROOT_DIR"/usr/lib/coinmech/plugins/*.so; do
    chroot "$ROOT_DIR" ldd "${elf#"$ROOT_DIR"}" | grep "not found" | sed "s|^|${elf#"$ROOT_DIR"}: |"
done || true)
[[ -z "$missing" ]] || die "libraries missing in the guest (add their packages to vm/image/packages):
$missing"

# ext4 straight from the directory: no loop mount, no privileges beyond owning the files.
mke2fs -q -t ext4 -L coinmech-vm -d "$ROOT_DIR" "$DIR/root.img" 2G > "$DIR/mke2fs.log" 2>&1 || { cat "$DIR/mke2fs.log" >&2; die "mke2fs failed"; }
rm -rf "$ROOT_DIR"
mark_built "$DIR" "$KEY"
log "built the guest image with the project installed in $((SECONDS - start)) s"
