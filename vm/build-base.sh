#!/usr/bin/env bash
# The guest's base: a Debian 12 minbase root filesystem with systemd, udev, the runtime
# libraries and Debian's kernel, gpio-sim and irq_sim in its module tree, a small initramfs,
# and the kernel's vmlinux for a PVH boot. Nothing of the project is in it (vm/build-image.sh
# adds that), so changing the project or the checks does not rebuild it.
# Output: $OUT/base/{root/,vmlinux,initrd.img}; rebuilt only when its inputs change.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
resolve_kernel

DIR="$OUT/base"
KEY=$(hash_inputs "$KIMG=$KVER" "$(cat "$OUT/kmod/.key")" "$VM/build-base.sh" "$VM/image/packages" \
    "$VM/image/setup-hook.sh" "$VM/image/customize-hook.sh")
if up_to_date "$DIR" "$KEY"; then exit 0; fi

start=$SECONDS
rm -rf "$DIR"
mkdir -p "$DIR"
packages=$(grep -v -E '^[[:space:]]*(#|$)' "$VM/image/packages" | paste -sd, -)
# The host's own apt sources (bookworm, -updates, -security: the kernel comes from -security).
sources=/etc/apt/sources.list.d/debian.sources
[[ -f "$sources" ]] || sources=/etc/apt/sources.list
[[ -f "$sources" ]] || die "no apt sources on this machine to build the guest from"
excludes=()
for path in /usr/share/doc/'*' /usr/share/man/'*' /usr/share/info/'*' /usr/share/locale/'*' /usr/share/lintian/'*'; do
    excludes+=("--dpkgopt=path-exclude=$path")
done
# Module trees a headless VM without network never loads (a third of the image).
for tree in drivers/gpu drivers/media drivers/net/wireless drivers/net/ethernet drivers/infiniband drivers/staging \
            drivers/scsi drivers/md drivers/bluetooth drivers/isdn sound net/wireless net/bluetooth fs/nls; do
    excludes+=("--dpkgopt=path-exclude=/lib/modules/*/kernel/$tree/*" "--dpkgopt=path-exclude=/usr/lib/modules/*/kernel/$tree/*")
done
if ! mmdebstrap --variant=minbase --mode=root --format=directory \
        --include="$packages,$KIMG" "${excludes[@]}" \
        --setup-hook="'$VM/image/setup-hook.sh' \"\$1\"" \
        --customize-hook="'$VM/image/customize-hook.sh' \"\$1\" '$KABI' '$OUT/kmod'" \
        bookworm "$DIR/root" "$sources" > "$DIR/mmdebstrap.log" 2>&1; then
    tail -n 40 "$DIR/mmdebstrap.log" >&2
    die "mmdebstrap failed (whole log: $DIR/mmdebstrap.log); if $KIMG $KVER is no longer on the mirror, delete $OUT/kernel.env"
fi
[[ -f "$DIR/root/boot/vmlinuz-$KABI" && -f "$DIR/root/boot/initrd.img-$KABI" ]] || die "the guest has no kernel or initramfs for $KABI"
cp "$DIR/root/boot/initrd.img-$KABI" "$DIR/initrd.img"
# vmlinux boots through PVH, 2.6 s sooner under TCG than the bzImage.
"$OUT/kmod/extract-vmlinux" "$DIR/root/boot/vmlinuz-$KABI" > "$DIR/vmlinux" || die "extract-vmlinux failed on vmlinuz-$KABI"
mark_built "$DIR" "$KEY"
log "built the guest's Debian 12 base ($(du -sm "$DIR/root" | cut -f1) MB, kernel $KABI) in $((SECONDS - start)) s"
