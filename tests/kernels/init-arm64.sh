#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# /init of the arm64 guest's initramfs (tests/kernels/run.sh builds it): busybox, setpriv and
# libcap-ng for arm64 in the initramfs; the host's root read-only over 9p at /host, where the
# arm64 build and the arm64 libraries (dpkg multiarch: /usr/lib/aarch64-linux-gnu) are; then
# tests/kernels/guest-arm64.sh.
/bin/busybox --install -s /bin
export PATH=/usr/bin:/bin
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
mount -t 9p -o "$o,ro,cache=loose" hostroot /host || fail "cannot mount the host's root (9p)"
mount -t 9p -o "$o" results /results || fail "cannot mount the results directory"
mkdir -p /lib /etc
ln -s /host/usr/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1 /lib/ld-linux-aarch64.so.1
cp /host/etc/passwd /host/etc/group /etc/
. /results/env
exec /bin/sh "/host$WT/tests/kernels/guest-arm64.sh"
