#!/usr/bin/env bash
# The kernel's own gpio-sim, and the irq simulator it needs, built out of tree for the guest's
# kernel from Debian's linux-source package (Debian's config sets neither). Also takes
# scripts/extract-vmlinux from the same tarball, so the guest boots its vmlinux through PVH.
# Output: $OUT/kmod/{irq_sim.ko,gpio-sim.ko,extract-vmlinux}; rebuilt only when the kernel,
# the patch, the Kbuild or this script change.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
resolve_kernel

DIR="$OUT/kmod"
KEY=$(hash_inputs "$KVER" "$KABI" "$VM/build-kmod.sh" "$VM/kmod/Kbuild" "$VM/kmod/irq_sim-as-module.patch")
if up_to_date "$DIR" "$KEY"; then exit 0; fi

TARBALL="/usr/src/$KSRC.tar.xz"
HEADERS="/usr/src/linux-headers-$KABI"
[[ -f "$TARBALL" ]] || die "$TARBALL is missing: apt-get install $KSRC=$KVER"
[[ -d "$HEADERS" ]] || die "$HEADERS is missing: apt-get install linux-headers-$KABI"

start=$SECONDS
rm -rf "$DIR"
mkdir -p "$DIR/src" "$DIR/build"
# One pass over the 138 MB tarball for the four files.
tar -xJf "$TARBALL" -C "$DIR/src" --strip-components=1 \
    "$KSRC/kernel/irq/irq_sim.c" "$KSRC/drivers/gpio/gpio-sim.c" "$KSRC/drivers/gpio/gpiolib.h" "$KSRC/scripts/extract-vmlinux"
# irq_sim.c is built-in only upstream: it needs a licence to load as a module, and must not
# call the unexported irq_to_desc.
patch -d "$DIR/src" -p1 --quiet --forward < "$VM/kmod/irq_sim-as-module.patch" \
    || die "vm/kmod/irq_sim-as-module.patch does not apply to $KSRC $KVER"
cp "$VM/kmod/Kbuild" "$DIR/src/kernel/irq/irq_sim.c" "$DIR/src/drivers/gpio/gpio-sim.c" "$DIR/src/drivers/gpio/gpiolib.h" "$DIR/build/"
if ! make -C "$HEADERS" M="$DIR/build" modules > "$DIR/build.log" 2>&1; then
    cat "$DIR/build.log" >&2
    die "building gpio-sim and irq_sim against $HEADERS failed"
fi
cp "$DIR/build/irq_sim.ko" "$DIR/build/gpio-sim.ko" "$DIR/"
install -m 0755 "$DIR/src/scripts/extract-vmlinux" "$DIR/extract-vmlinux"
rm -rf "$DIR/src"
mark_built "$DIR" "$KEY"
log "built gpio-sim.ko and irq_sim.ko for $KABI in $((SECONDS - start)) s"
