#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Inside the arm64 guest of tests/kernels/run.sh (busybox sh, as init): the unit tests of the
# arm64 build, then the exporter as root and as shipped (the systemd unit's user and
# capabilities): every collector as expected, and NO_SOCKET drops equal to Udp NoPorts for a UDP
# flood to a closed port on loopback (the guest runs nothing else). Results in /results/log.
RES=/results
exec >"$RES/log" 2>&1
. "$RES/env"
export PATH=/usr/bin:/bin LD_LIBRARY_PATH=/opt/lib:/host/usr/lib/aarch64-linux-gnu
poweroff_now() {
	echo "# guest done at uptime $(cut -d' ' -f1 /proc/uptime)"
	sync
	echo o >/proc/sysrq-trigger
	sleep 10
}
trap poweroff_now EXIT
echo "# guest started at uptime $(cut -d' ' -f1 /proc/uptime) on $(uname -r) $(uname -m)"
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t bpf bpf /sys/fs/bpf
mount -t tracefs tracefs /sys/kernel/tracing
ip link set lo up
cd "/host$WT" || exit 1
B=/host$BUILD
# The exporter is the arm64 image's, run in the image's own file system (run.sh unpacks it; the
# host's arm64 libraries are Debian 12's, older than the image's): chroot, with the guest's
# /proc, /sys (bpffs, tracefs, BTF, cgroup2), /dev and a /tmp of its own bound in, the image's
# config. The unit tests are the arm64 build's, on the host's libraries.
R=/host$ROOTFS
mount -t proc proc "$R/proc" && mount -o rbind /sys "$R/sys" && mount -o bind /dev "$R/dev" &&
	mount -t tmpfs tmpfs "$R/tmp" || echo "not ok - $KERNEL $ARCH: the image's root prepared for chroot"
# in_image [SETPRIV_ARGS]: the image's exporter, with the image's setpriv (util-linux) first if
# given: the root's chroot before the shipped profile drops CAP_SYS_CHROOT.
in_image() {
	if [ $# -gt 0 ]; then
		set -- /usr/bin/setpriv "$@"
	fi
	exec env -u LD_LIBRARY_PATH chroot "$R" "$@" /usr/bin/netstack_exporter \
		--config /etc/netstack_exporter.ini --web.listen-address "127.0.0.1:$PORT"
}
P="$KERNEL $ARCH"

# ---- unit tests ----
t0=$(cut -d' ' -f1 /proc/uptime)
for t in "$B"/tests/test_*; do
	[ -x "$t" ] || continue
	n=$(basename "$t")
	"$t" >/tmp/unit.out 2>&1
	rc=$?
	sed -n "s/^ok - /ok - $P unit $n: /p; s/^not ok - /not ok - $P unit $n: /p; s/^  /  /p;
		s/^SKIPPED: /# SKIPPED: $P unit $n: /p" /tmp/unit.out
	# 77: some cases are about another kernel (a 6.18 fixture, a 6.18-only enumerator) and say
	# so in their SKIPPED lines above; every other case ran.
	if [ "$rc" -eq 77 ]; then
		:
	elif [ "$rc" -ne 0 ] && ! grep -q '^not ok - ' /tmp/unit.out; then
		echo "not ok - $P unit $n: exited $rc"
		tail -n 5 /tmp/unit.out | sed 's/^/  /'
	fi
done
echo "# $P unit tests: $(awk -v a="$t0" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { printf "%.1f", b - a }') s"

expect() { echo "$EXPECT" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
scrape() { curl -sf -m 20 -o "$1" "$URL/metrics" || : >"$1"; }
fsum() {
	awk -v re="$2" '/^#/ { next } { v = $NF; $NF = ""; sub(/ +$/, ""); if ($0 ~ re) s += v }
		END { printf "%.0f\n", s }' "$1"
}
noports() {
	awk '$1 == "Udp:" { if (!n) { for (i = 2; i <= NF; i++) c[$i] = i; n = 1 } else print $c["NoPorts"] }' \
		/proc/net/snmp
}

PORT=9437
for PROFILE in ${PROFILES:-root shipped}; do
	t0=$(cut -d' ' -f1 /proc/uptime)
	PORT=$((PORT + 1))
	URL=http://127.0.0.1:$PORT
	LOG=/tmp/exporter.$PROFILE.log
	if [ "$PROFILE" = root ]; then
		(in_image) >"$LOG" 2>&1 </dev/null &
	else
		# shellcheck disable=SC2086
		(in_image $SHIPPED_SETPRIV) >"$LOG" 2>&1 </dev/null &
	fi
	PID=$!
	# Up to 4 minutes: emulated arm64 on a busy host parses the kernel's BTF slowly.
	t1=$(cut -d' ' -f1 /proc/uptime)
	until curl -sf -m 5 -o /dev/null "$URL/healthz"; do
		kill -0 $PID 2>/dev/null || break
		awk -v a="$t1" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { exit !(b - a > 240) }' && break
		sleep 0.2
	done
	echo "# $P $PROFILE: serving after $(awk -v a="$t1" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { printf "%.1f", b - a }') s"
	scrape /tmp/s0
	if [ ! -s /tmp/s0 ]; then
		echo "not ok - $P $PROFILE: exporter starts"
		tail -n 15 "$LOG" | sed 's/^/    /'
		continue
	fi
	# The image's libraries, not the host's (/host/usr/lib/aarch64-linux-gnu, Debian 12's).
	root=$(readlink "/proc/$PID/root")
	lib=$(grep -m 1 -o '/[^ ]*/libbpf\.so[^ ]*' "/proc/$PID/maps")
	case $root:$lib in
	"$R:$R"/*) echo "ok - $P $PROFILE: runs in the image's root, with its libbpf (${lib#"$R"})" ;;
	*)
		echo "not ok - $P $PROFILE: runs in the image's root, with its libbpf"
		echo "  expected $R and a libbpf under it, got $root and $lib"
		;;
	esac
	for c in drops retrans rtt connections; do
		want=0
		[ "$(expect $c)" = up ] && want=1
		up=$(sed -n "s/^netstack_collector_up{collector=\"$c\"} \\([01]\\)$/\\1/p" /tmp/s0)
		if [ "$up" = "$want" ]; then
			echo "ok - $P $PROFILE: collector $c up = $want ($up)"
		else
			echo "not ok - $P $PROFILE: collector $c up = $want"
			echo "  expected $want, got ${up:-absent}; log: $(grep "$c:" "$LOG" | head -n 3)"
		fi
	done
	if [ "$(expect drops)" = up ] && ! grep -q '^netstack_collector_up{collector="drops"} 1$' /tmp/s0; then
		echo "not ok - $P $PROFILE: drops NO_SOCKET equals Udp NoPorts"
		echo "  not checked: the collector is down"
	elif [ "$(expect drops)" = up ]; then
		for try in 1 2; do
			scrape /tmp/d0
			np=$(noports)
			"$B/tests/udpflood" 127.0.0.1 9 1000 >/dev/null 2>&1
			sleep 0.2
			scrape /tmp/d1
			np=$(($(noports) - np))
			re='^netstack_skb_drops_total[{]reason="NO_SOCKET",family="ipv4",protocol="udp"'
			d=$(($(fsum /tmp/d1 "$re") - $(fsum /tmp/d0 "$re")))
			[ "$d" = "$np" ] && break
			echo "# attempt $try: NO_SOCKET $d, Udp NoPorts $np"
		done
		if [ "$np" -gt 0 ] && [ "$d" = "$np" ]; then
			echo "ok - $P $PROFILE: drops NO_SOCKET equals Udp NoPorts ($d)"
		else
			echo "not ok - $P $PROFILE: drops NO_SOCKET equals Udp NoPorts"
			echo "  expected $np (> 0), got $d"
		fi
	fi
	kill -TERM $PID
	wait $PID
	rc=$?
	if [ "$rc" = 0 ]; then
		echo "ok - $P $PROFILE: exits 0 on SIGTERM"
	else
		echo "not ok - $P $PROFILE: exits 0 on SIGTERM"
		echo "  exit $rc; $(tail -n 3 "$LOG")"
	fi
	echo "# $P $PROFILE: $(awk -v a="$t0" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { printf "%.1f", b - a }') s"
done
