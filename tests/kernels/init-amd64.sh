#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# /init of the x86_64 guests' initramfs (tests/kernels/run.sh builds it): the kernel package's
# own virtio/9p modules, the host's root read-only over 9p with tmpfs where the checks write,
# the results directory read-write, then the guest script (GUEST) as the new root's init.
# (The kernel's own modules stay in the unpacked package: guest.sh points modprobe there.)
/bin/busybox --install -s /bin
export PATH=/bin
fail() {
	echo "init: $*"
	poweroff -f
}
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in $(cat /modules.order); do
	insmod "/modules/$m" || echo "init: insmod $m failed"
done
o=trans=virtio,version=9p2000.L,msize=262144
# The host's files do not change during a run: cache them.
mount -t 9p -o "$o,ro,cache=loose" hostroot /newroot || fail "cannot mount the host's root (9p)"
for d in tmp run var/tmp root; do
	mount -t tmpfs -o mode=0755 tmpfs "/newroot/$d" || fail "cannot mount a tmpfs on /$d"
done
chmod 1777 /newroot/tmp /newroot/var/tmp
mkdir /newroot/tmp/results
mount -t 9p -o "$o" results /newroot/tmp/results || fail "cannot mount the results directory"
. /newroot/tmp/results/env
# A checkout under one of those tmpfs directories (CI may clone into /tmp or /root) is hidden
# now: its own share, at the same path.
if [ ! -e "/newroot$WT/tests/kernels/guest.sh" ]; then
	mkdir -p "/newroot$WT" && mount -t 9p -o "$o,ro,cache=loose" worktree "/newroot$WT" ||
		fail "cannot mount the checkout $WT (9p)"
fi
for d in dev proc sys; do
	mount --move "/$d" "/newroot/$d"
done
# GUEST (the env file) runs as the new root's init, or under systemd as PID 1 (INIT=systemd):
# then as a unit of its own, systemd.unit=kt.target on the kernel's command line.
if [ "${INIT:-}" = systemd ]; then
	mkdir -p /newroot/run/systemd/system
	printf '[Unit]\nAllowIsolate=yes\nWants=kt-guest.service\n' \
		>/newroot/run/systemd/system/kt.target
	printf '[Unit]\nDefaultDependencies=no\n[Service]\nExecStart=/bin/bash %s\n' "$GUEST" \
		>/newroot/run/systemd/system/kt-guest.service
	# An empty container= tells systemd it is on a machine: the host's root may hold a
	# /.dockerenv, and in a container systemd would not read the kernel's command line.
	export container=
	exec switch_root /newroot /lib/systemd/systemd
fi
exec switch_root /newroot /bin/bash "$GUEST"
