#!/bin/sh
# mmdebstrap --customize-hook: the guest's generic setup, after every package is installed.
# Arguments: the root directory, the kernel ABI, the directory with gpio-sim.ko and irq_sim.ko.
set -eu
root=$1 abi=$2 kmod=$3

# gpio-sim and irq_sim where modprobe finds them ("modprobe gpio-sim" pulls in both and configfs).
install -d "$root/lib/modules/$abi/extra"
install -m 0644 "$kmod/irq_sim.ko" "$kmod/gpio-sim.ko" "$root/lib/modules/$abi/extra/"
chroot "$root" depmod "$abi"

# A fixed machine id: an empty one means "first boot", and systemd-firstboot would prompt.
head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$root/etc/machine-id"
echo >> "$root/etc/machine-id"
echo coinmech-vm > "$root/etc/hostname"
: > "$root/etc/fstab"

# Nothing the checks do not need: no login prompt, no timers, no first-boot wizard.
for unit in serial-getty@ttyS0.service getty@tty1.service console-getty.service systemd-firstboot.service \
            apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service fstrim.timer \
            dpkg-db-backup.timer systemd-tmpfiles-clean.timer; do
    ln -sf /dev/null "$root/etc/systemd/system/$unit"
done
# The journal in memory: the guest's disk is a throw-away snapshot anyway.
install -d "$root/etc/systemd/journald.conf.d"
printf '[Journal]\nStorage=volatile\nRateLimitBurst=0\n' > "$root/etc/systemd/journald.conf.d/coinmech-vm.conf"
