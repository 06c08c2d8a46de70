#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Inside an x86_64 guest of tests/kernels/run.sh booted with systemd as PID 1 (KERNEL+systemd),
# run by systemd as a unit of its own: the unit and its drop-in as `make install` installed them
# (run.sh, into the guest's /usr/local), started by systemd and checked from outside it:
#   - DynamicUser: the exporter runs under a uid from systemd's dynamic range, in no passwd file;
#   - ProtectSystem=strict: a write its uid may make elsewhere fails in its mount namespace;
#   - LimitMEMLOCK and the capability bounding set: /proc/PID/limits and /proc/PID/status
#     against the installed unit's values, and no_new_privs;
#   - every collector up; ExecReload: systemctl reload moves
#     netstack_config_last_reload_success_timestamp_seconds, same process;
#   - NO_SOCKET equals Udp NoPorts of a namespace exactly; systemctl stop ends it cleanly.
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C
RES=/tmp/results
uptime_s() {
	local u _
	read -r u _ </proc/uptime
	echo "$u"
}
since() { awk -v a="$1" -v b="$(uptime_s)" 'BEGIN { printf "%.1f", b - a }'; }
exec >"$RES/log" 2>&1
# shellcheck source=/dev/null
. "$RES/env"
trap 'echo "# guest done at uptime $(uptime_s)"; sync; echo o >/proc/sysrq-trigger; sleep 10' EXIT
echo "# guest started at uptime $(uptime_s) on $(uname -r) ($(nproc) CPUs), systemd as PID 1"
P="$KERNEL $ARCH systemd"
ok() { echo "ok - $P: $1"; }
not_ok() {
	echo "not ok - $P: $1"
	shift
	[ $# -gt 0 ] && printf '  %s\n' "$@"
	return 0
}
check_eq() { # NAME EXPECTED ACTUAL [DETAIL...]
	local name=$1 e=$2 a=$3
	shift 3
	if [ "$e" = "$a" ]; then ok "$name ($a)"; else not_ok "$name" "expected $e, got $a" "$@"; fi
}
fsum() { # FILE REGEX: sum of the samples whose name{labels} matches
	RE=$2 awk 'BEGIN { re = ENVIRON["RE"] } /^#/ { next }
		{ v = $NF; $NF = ""; sub(/ +$/, ""); if ($0 ~ re) s += v } END { printf "%.0f\n", s }' "$1"
}
no_ports() { # Udp NoPorts of namespace A: the first Udp: line names the columns
	ip netns exec A awk '$1 == "Udp:" { if (c) print $c; else
		for (i = 2; i <= NF; i++) if ($i == "NoPorts") c = i }' /proc/net/snmp
}
SVC=netstack_exporter.service
journal() { journalctl -b -u "$SVC" --no-pager 2>&1 | tail -n 15 | sed 's/^/    /'; }
# The kernel's modules are in the unpacked package (the host has none for this kernel).
printf '#!/bin/sh\nexec /sbin/modprobe -d "%s" "$@"\n' "$KDIR" >/run/modprobe
chmod +x /run/modprobe
echo /run/modprobe >/proc/sys/kernel/modprobe

# /usr/local as make install left it; a directory any uid may write to, so that only
# ProtectSystem= can refuse the service a write there.
mount -t tmpfs -o mode=0755 tmpfs /usr/local && cp -a "$RES/inst/usr/local/." /usr/local/ &&
	mkdir -m 1777 /usr/local/kt-w || not_ok "the installed files copied to /usr/local"
UNIT=/usr/local/lib/systemd/system/$SVC
unit_key() { sed -n "s/^$1=//p" "$UNIT" | tail -n 1; }
systemctl daemon-reload
t0=$(uptime_s)
systemctl start "$SVC" || not_ok "systemctl start $SVC" "$(journal)"
PID=$(systemctl show -P MainPID "$SVC")
port=$(sed -n 's/^listen_address = .*:\([0-9]*\)$/\1/p' /usr/local/etc/netstack_exporter.ini)
URL=http://127.0.0.1:$port
PORT=$port
# shellcheck source=tests/kernels/http_get.sh
. "$WT/tests/kernels/http_get.sh"
# Up to 4 minutes: under TCG start-up (BTF parsed a few times) is slow.
deadline=$((SECONDS + 240))
until http_get /healthz /dev/null; do
	if [ "$SECONDS" -ge "$deadline" ] || ! systemctl -q is-active "$SVC"; then
		not_ok "the exporter started by systemd serves $URL" \
			"$(systemctl status "$SVC" 2>&1 | head -n 5)" "$(journal)"
		exit 0
	fi
	sleep 0.2
done
echo "# serving at uptime $(uptime_s), $(since "$t0") s after systemctl start"
ok "systemctl start $SVC: $URL serves (main PID $PID)"

read -r _ uid _ < <(grep '^Uid:' "/proc/$PID/status")
read -r _ gid _ < <(grep '^Gid:' "/proc/$PID/status")
# systemd's dynamic range (61184-65519), a uid no passwd file holds.
if [ "$uid" -ge 61184 ] && [ "$uid" -le 65519 ] && ! cut -d: -f3 /etc/passwd | grep -qx "$uid"; then
	ok "DynamicUser: uid $uid is a dynamic one (61184-65519, not in /etc/passwd)"
else
	not_ok "DynamicUser: the uid is a dynamic one" "uid $uid"
fi
w=/usr/local/kt-w/by-$uid
if ! err=$(nsenter -t "$PID" -m setpriv --reuid="$uid" --regid="$gid" --clear-groups \
	touch "$w" 2>&1) && [[ $err == *Read-only* ]] &&
	setpriv --reuid="$uid" --regid="$gid" --clear-groups touch "$w"; then
	ok "ProtectSystem=strict: /usr/local read-only to its uid in its mount namespace, not outside"
else
	not_ok "ProtectSystem=strict: a write to /usr fails in its mount namespace, and not outside" \
		"inside: ${err:-it worked}" "outside: $(ls -l "$w" 2>&1)"
fi
want=$(unit_key LimitMEMLOCK)
[ "$want" = infinity ] && want=unlimited
check_eq "LimitMEMLOCK: /proc/PID/limits has the unit's $want" "$want $want" \
	"$(awk '/^Max locked memory/ { print $4, $5 }' "/proc/$PID/limits")"
mask=0
for c in $(unit_key CapabilityBoundingSet); do
	n=$(sed -n "s/^#define ${c}[[:space:]]\+\([0-9]\+\)$/\1/p" /usr/include/linux/capability.h)
	if [ -n "$n" ]; then mask=$((mask | 1 << n)); else not_ok "$c in linux/capability.h"; fi
done
status_key() { sed -n "s/^$1:[[:space:]]*//p" "/proc/$PID/status"; }
check_eq "CapBnd in /proc/PID/status: the unit's bounding set ($(unit_key CapabilityBoundingSet))" \
	"$(printf '%016x' "$mask")" "$(status_key CapBnd)"
check_eq "NoNewPrivs in /proc/PID/status" 1 "$(status_key NoNewPrivs)"

http_get /metrics /tmp/m0
for c in drops retrans rtt connections resets; do
	check_eq "collector $c up" 1 "$(fsum /tmp/m0 "^netstack_collector_up[{]collector=\"$c\"[}]$")"
done

# ExecReload: SIGHUP through systemctl reload; the timestamp is the load's, to the microsecond.
reload_ts() { sed -n 's/^netstack_config_last_reload_success_timestamp_seconds //p'; }
r0=$(reload_ts </tmp/m0)
systemctl reload "$SVC" || not_ok "systemctl reload $SVC" "$(journal)"
deadline=$((SECONDS + 60))
r1=$r0
while [ "$r1" = "$r0" ] && [ "$SECONDS" -lt "$deadline" ]; do
	sleep 0.2
	http_get /metrics /tmp/m1 && r1=$(reload_ts </tmp/m1)
done
if [ -n "$r0" ] && [ -n "$r1" ] && [ "$r1" != "$r0" ] &&
	[ "$(systemctl show -P MainPID "$SVC")" = "$PID" ]; then
	ok "ExecReload: systemctl reload moved the reload timestamp ($r0 -> $r1), same process"
else
	not_ok "ExecReload: systemctl reload moves the reload timestamp, same process" \
		"$r0 -> $r1, main PID $PID -> $(systemctl show -P MainPID "$SVC")" "$(journal)"
fi

# Drops, exactly: UDP to a closed port on the loopback of a namespace of its own.
ip netns add A && ip -n A link set lo up
http_get /metrics /tmp/d0
np=$(no_ports)
ip netns exec A "$BUILD/tests/udpflood" 127.0.0.1 9 1000 >/dev/null 2>&1
np=$(($(no_ports) - np))
http_get /metrics /tmp/d1
re='^netstack_skb_drops_total[{]reason="NO_SOCKET",family="ipv4",protocol="udp"'
[ "$np" -gt 0 ] || not_ok "the flood made Udp NoPorts grow" "$np"
check_eq "drops NO_SOCKET equals Udp NoPorts of namespace A" "$np" \
	"$(($(fsum /tmp/d1 "$re") - $(fsum /tmp/d0 "$re")))"

systemctl stop "$SVC"
check_eq "systemctl stop: the service's result" success "$(systemctl show -P Result "$SVC")" \
	"$(journal)"
echo "# systemd phase took $(since "$t0") s"
