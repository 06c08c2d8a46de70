#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Inside an x86_64 guest of tests/kernels/run.sh (as its init): mounts what a node has, then for
# each profile (root; shipped = the systemd unit's user and capabilities; pod = the DaemonSet's;
# where the kernel charges BPF to RLIMIT_MEMLOCK, pod-memlock = the pod with components/memlock,
# its labels phase only, and CAP_SYS_RESOURCE gone after start) starts the exporter and checks it
# against the guest kernel's own counters:
#   - netstack_collector_up per collector as the expectation table says; a collector expected
#     down logs why; --strict serves (and exits 0) when all are expected up, exits 1 otherwise;
#   - drops: NO_SOCKET equals the namespace's Udp NoPorts, NETFILTER_DROP equals an nftables
#     rule's counter, the reason count and numbers are this kernel's (BTF, tracefs); without
#     the reason argument (5.10) NOT_SPECIFIED at __udp4_lib_rcv and at the netfilter hook
#     instead, and the drop series an idle guest and ordinary traffic make, printed;
#   - retrans: retransmitted segments equal the namespaces' TcpRetransSegs under nftables loss;
#   - rtt: the histogram gets samples from that transfer;
#   - connections: IPv6 connections C -> S closed, reset and refused, counted by outcome and
#     against the namespaces' ActiveOpens, PassiveOpens, AttemptFails and EstabResets; their
#     handshakes, timed or untimed, equal the established ones per direction;
#   - resets: the resets tests/tools/tcpreset.py drives in namespace R (closed port, abort on
#     close, SO_LINGER 0, TIME_WAIT; IPv4 and IPv6) against R's TcpOutRsts, by reason where the
#     kernel gives one (docs/collectors/resets.md);
#   - the netns label of each collector, and the container and process labels the pod
#     resolver's process walk (BPF task iterator; without bpf_loop in tail-called chunks)
#     gives a process of A in a kubepods cgroup.
# Results go to /tmp/results/log (a 9p directory the host reads); then the guest powers off.
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C
RES=/tmp/results
uptime_s() {
	local u _
	read -r u _ </proc/uptime
	echo "$u"
}
exec >"$RES/log" 2>&1
# shellcheck source=/dev/null
. "$RES/env"
poweroff_now() {
	echo "# guest done at uptime $(uptime_s)"
	sync
	echo o >/proc/sysrq-trigger
	sleep 10
}
trap poweroff_now EXIT
echo "# guest started at uptime $(uptime_s) on $(uname -r) ($(nproc) CPUs)"
cd "$WT" || exit 1

# The kernel loads modules (nf_tables, veth, ...) from the unpacked package: the host has no
# /lib/modules for this kernel and its root is read-only here.
printf '#!/bin/sh\nexec /sbin/modprobe -d "%s" "$@"\n' "$KDIR" >/run/modprobe
chmod +x /run/modprobe
echo /run/modprobe >/proc/sys/kernel/modprobe
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t bpf bpf /sys/fs/bpf
mount -t tracefs tracefs /sys/kernel/tracing
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
ip link set lo up

P="$KERNEL $ARCH"
EXP=$BUILD/netstack_exporter
TCPBULK=$BUILD/tests/tcpbulk
UDPFLOOD=$BUILD/tests/udpflood
COLLECTORS="drops retrans rtt connections resets"
ok() { echo "ok - $P $PROFILE: $1"; }
not_ok() {
	echo "not ok - $P $PROFILE: $1"
	shift
	[ $# -gt 0 ] && printf '  %s\n' "$@"
	return 0
}
check_eq() { # NAME EXPECTED ACTUAL [DETAIL...]
	local name=$1 e=$2 a=$3
	shift 3
	if [ "$e" = "$a" ]; then ok "$name ($a)"; else not_ok "$name" "expected $e, got $a" "$@"; fi
}
# Builtins where they do: every process costs under TCG.
declare -A WANT UP
for kv in $EXPECT; do WANT[${kv%%=*}]=${kv#*=}; done
# memlock: up where RLIMIT_MEMLOCK lets the maps load (root; the unit with LimitMEMLOCK; the pod
# with components/memlock's CAP_SYS_RESOURCE), down with a log line naming RLIMIT_MEMLOCK in the
# pod profile (no CAP_SYS_RESOURCE, 64 KiB here).
expect() {
	local w=${WANT[$1]:-}
	[ "$w" = memlock ] && { [ "$PROFILE" = pod ] && w=down || w=up; }
	echo "$w"
}
declare -A FEATURE
for kv in ${FEATURES:-}; do FEATURE[${kv%%=*}]=${kv#*=}; done
all_up() {
	for c in $COLLECTORS; do [ "$(expect "$c")" = up ] || return 1; done
}

# /proc/net/snmp of a namespace, read by builtins from /proc/PID/net of a process in it (NSPID,
# below): a process started here costs a fifth of a second under TCG, ip netns exec a second.
# snmp NS Udp NoPorts
declare -A NSPID=()
snmp() {
	local -a l h=()
	local i
	while read -r -a l; do
		[ "${l[0]}" = "$2:" ] || continue
		[ ${#h[@]} -eq 0 ] && { h=("${l[@]}"); continue; }
		for i in "${!h[@]}"; do [ "${h[$i]}" = "$3" ] && echo "${l[$i]}"; done
		return
	done <"/proc/${NSPID[$1]}/net/${4:-snmp}"
}
# cause_counters: TCPFastRetrans, TCPSlowStartRetrans + TCPTimeouts, over C and S (the
# relations of docs/collectors/retrans.md, "Causes and the kernel's counters").
cause_counters() {
	local n f=0 t=0
	for n in C S; do
		f=$((f + $(snmp $n TcpExt TCPFastRetrans netstat)))
		t=$((t + $(snmp $n TcpExt TCPSlowStartRetrans netstat) + $(snmp $n TcpExt TCPTimeouts netstat)))
	done
	echo "$f $t"
}
# shellcheck source=tests/kernels/http_get.sh
. "$WT/tests/kernels/http_get.sh"
scrape() { http_get /metrics "$1" || : >"$1"; }
fsum() { # FILE REGEX: sum of the samples whose name{labels} matches
	RE=$2 awk 'BEGIN { re = ENVIRON["RE"] } /^#/ { next }
		{ v = $NF; $NF = ""; sub(/ +$/, ""); if ($0 ~ re) s += v } END { printf "%.0f\n", s }' "$1"
}
delta() { deltas "$1" "$2" "$3"; } # FILE0 FILE1 REGEX
# deltas FILE0 FILE1 REGEX...: delta of each, a line each, in one awk (every process costs here)
deltas() {
	local f0=$1 f1=$2
	shift 2
	awk 'BEGIN { n = ARGC - 3; for (i = 1; i <= n; i++) { re[i] = ARGV[i + 2]; delete ARGV[i + 2] } }
		/^#/ { next }
		{ v = $NF; $NF = ""; sub(/ +$/, ""); f = FILENAME == ARGV[1] ? 0 : 1
		for (i = 1; i <= n; i++) if ($0 ~ re[i]) s[f, i] += v }
		END { for (i = 1; i <= n; i++) printf "%.0f\n", s[1, i] - s[0, i] }' "$f0" "$f1" "$@"
}

# ---- the namespaces, made once for every profile ---------------------------------------------
# A: UDP to a closed port and to a port nftables drops, on its loopback.
# C -> S over veth: bulk TCP with 5 % of the data packets dropped by nftables in S.
ip netns add A && ip netns add C && ip netns add S && ip netns add R ||
	echo "# cannot create network namespaces"
for ns in A C S R; do ip -n "$ns" link set lo up; done
# A's is kt-pod below: the pod labels' process walk must find only it there.
for ns in C S R; do
	ip netns exec "$ns" sleep 1000000 &
	NSPID[$ns]=$!
done
ip link add vc netns C type veth peer name vs netns S
ip -n C addr add 10.99.0.1/24 dev vc && ip -n S addr add 10.99.0.2/24 dev vs
ip -n C link set vc up && ip -n S link set vs up
ip netns exec A nft -f - <<'EOF' || echo "# cannot load nftables rules in A"
table inet kt {
	chain in {
		type filter hook input priority filter; policy accept;
		udp dport 7777 counter drop
	}
}
EOF
ip netns exec S nft -f - <<'EOF' || echo "# cannot load nftables rules in S"
table inet kt {
	chain in {
		type filter hook input priority filter; policy accept;
		tcp dport 5201 meta length > 200 numgen random mod 100 < 5 drop
	}
}
EOF
ip netns exec S "$TCPBULK" sink 10.99.0.2 5201 >/tmp/sink.log 2>&1 &
nft_packets() { ip netns exec A nft list chain inet kt in | sed -n 's/.*counter packets \([0-9]*\).*/\1/p'; }
# A process of A, named kt-pod (sleep through a link), in a cgroup shaped like kubelet's: what
# the process walk should find (with no pod source: the short container ID and the name).
POD_CID=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
POD_CG=/sys/fs/cgroup/kubepods/burstable/pod01234567-89ab-cdef-0123-456789abcdef/$POD_CID
ln -s "$(command -v sleep)" /tmp/kt-pod && mkdir -p "$POD_CG" || echo "# cannot make the pod cgroup"
ip netns exec A /tmp/kt-pod 100000 &
NSPID[A]=$!
echo $! >"$POD_CG/cgroup.procs"

# The kernel's own names and numbers of the drop reasons: the print format of skb/kfree_skb
# (__print_symbolic over enum skb_drop_reason; its MAX entry is a bound, not a reason).
FORMAT=/sys/kernel/tracing/events/skb/kfree_skb/format
grep -o '{ [0-9]*, "[A-Z_0-9]*" }' "$FORMAT" 2>/dev/null | sed 's/{ \([0-9]*\), "\(.*\)" }/\2 \1/' |
	grep -v '^MAX ' >/tmp/reasons.tracefs
tracefs_reason() { awk -v n="$1" '$1 == n { print $2 }' /tmp/reasons.tracefs; }
echo "# namespaces and nftables ready at uptime $(uptime_s)"
# And from the kernel's BTF: every enum's "enum enumerator value", then the reasons the exporter
# should know (enum skb_drop_reason less MAX and the subsystem mask, and subsystem enums
# *drop_reason with a subsystem id in the high bits), and the numbers of the two we cause.
bpftool btf dump file /sys/kernel/btf/vmlinux format c 2>/dev/null |
	awk '/^enum [A-Za-z_0-9]+ \{$/ { e = $2; next } /^\};/ { e = ""; next }
		e != "" { gsub(/[\t,]/, ""); print e, $1, $3 }' >/tmp/enums
N_REASONS=$(awk '($1 == "skb_drop_reason" && $2 != "SKB_DROP_REASON_MAX" &&
	$2 != "SKB_DROP_REASON_SUBSYS_MASK") ||
	($1 ~ /.drop_reason$/ && $1 != "skb_drop_reason" && $3 >= 65536) { n++ } END { print n + 0 }' /tmp/enums)
declare -A REASON_BTF
for c in NO_SOCKET NETFILTER_DROP; do
	REASON_BTF[$c]=$(awk -v n="SKB_DROP_REASON_$c" '$1 == "skb_drop_reason" && $2 == n { print $3 }' /tmp/enums)
done
echo "# RLIMIT_MEMLOCK here (the kernel's default, inherited by every profile): $(ulimit -l) KiB"
echo "# setup done at uptime $(uptime_s)"

# ---- one profile ----------------------------------------------------------------------------
PORT=9437
start() { # [ARGS...]: the exporter as $PROFILE on $PORT; sets PID LOG
	PORT=$((PORT + 1))
	LOG=/tmp/exporter.$PROFILE.$PORT.log
	local ini=$WT/conf/netstack_exporter.ini
	[ "$PROFILE" = pod ] && ini=/tmp/pod.ini
	[ -n "${INI:-}" ] && ini=$INI
	# exec: $PID is the exporter itself, which the SIGTERM below must reach.
	# shellcheck disable=SC2086 # the setpriv options are words
	case $PROFILE in
	root) exec "$EXP" --config "$ini" --web.listen-address "127.0.0.1:$PORT" "$@" ;;
	shipped) exec ${SHIPPED_MEMLOCK:+prlimit --memlock=$SHIPPED_MEMLOCK} setpriv $SHIPPED_SETPRIV "$EXP" --config "$ini" --web.listen-address "127.0.0.1:$PORT" "$@" ;;
	pod) exec setpriv $POD_SETPRIV "$EXP" --config "$ini" --web.listen-address "127.0.0.1:$PORT" "$@" ;;
	pod-memlock) exec setpriv $POD_MEMLOCK_SETPRIV "$EXP" --config "$ini" --web.listen-address "127.0.0.1:$PORT" "$@" ;;
	esac >"$LOG" 2>&1 </dev/null &
	PID=$!
	# Up to 4 minutes: under TCG on a busy host start-up (BTF parsed a few times) is slow.
	local deadline=$((SECONDS + 240))
	while [ "$SECONDS" -lt "$deadline" ]; do
		http_get /healthz /dev/null && return 0
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.1
	done
	return 1
}
is_up() { echo "${UP[$1]:-}"; }
has_cap() { # CAP (lower case): whether $PROFILE runs with it
	case $PROFILE in
	root) return 0 ;;
	shipped) [[ $SHIPPED_SETPRIV == *"+$1"* ]] ;;
	pod) [[ $POD_SETPRIV == *"+$1"* ]] ;;
	pod-memlock) [[ $POD_MEMLOCK_SETPRIV == *"+$1"* ]] ;;
	esac
}
stop() { # sets STOP_RC, the exit status
	kill -TERM "$PID" 2>/dev/null
	wait "$PID"
	STOP_RC=$?
}
mark() {
	local u _
	read -r u _ </proc/uptime
	echo "# $P $PROFILE: $1 at uptime $u"
}
show_log() { sed 's/^/    /' "$LOG" | tail -n 15; }

# The DaemonSet's INI with its cgroup path (the node's /sys/fs/cgroup mounted in the pod) where
# this guest has it.
sed 's|^cgroup = /host/sys/fs/cgroup$|cgroup = /sys/fs/cgroup|' \
	"$WT/deploy/kubernetes/base/netstack_exporter.ini" >/tmp/pod.ini

run_profile() {
	local strict_pid='' c up want s0 s1 np nft seg rtt tries t0 kf kt k0 k1 sf st
	t0=$(uptime_s)
	echo "# $P $PROFILE: start at uptime $t0"
	if all_up; then
		if start --strict; then
			ok "--strict starts and serves (every collector expected up)"
			strict_pid=$PID
		else
			not_ok "--strict starts and serves (every collector expected up)" \
				"it exited $(wait "$PID"; echo $?); its log:" "$(show_log)"
			start || { not_ok "exporter starts" "$(show_log)"; return; }
		fi
	else
		start --strict
		if kill -0 "$PID" 2>/dev/null; then
			not_ok "--strict exits 1 (a collector is expected down)" "it serves"
			stop
		else
			wait "$PID"
			check_eq "--strict exits 1 (a collector is expected down)" 1 "$?"
		fi
		start || { not_ok "exporter starts" "$(show_log)"; return; }
	fi

	mark "exporter serving"
	scrape /tmp/s0
	UP=()
	local line
	while read -r line; do
		[[ $line =~ ^netstack_collector_up\{collector=\"([a-z_]+)\"\}\ ([01])$ ]] &&
			UP[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}
	done </tmp/s0
	for c in $COLLECTORS; do
		want=$(expect "$c")
		up=${UP[$c]:-}
		[ "$want" = up ] && want=1 || want=0
		# The log's lines only when they are shown: every process costs here.
		if [ "$want" = "${up:-absent}" ]; then
			ok "collector $c up = $want ($up)"
		else
			check_eq "collector $c up = $want" "$want" "${up:-absent}" \
				"log: $(grep "$c:" "$LOG" | head -n 3)"
		fi
		if [ "$want" = 0 ]; then
			if [ "${WANT[$c]}" = memlock ] && ! grep -q "msg=\"$c: .*RLIMIT_MEMLOCK" "$LOG"; then
				not_ok "$c down with a log line naming RLIMIT_MEMLOCK" "$(show_log)"
			elif grep -q "level=error.*msg=\"$c: " "$LOG"; then
				ok "$c down with a clear log line: $(grep -m1 "level=error.*msg=\"$c: " "$LOG" | sed 's/.*msg=//')"
			else
				not_ok "$c down with a clear log line" "$(show_log)"
			fi
		fi
	done

	mark "collectors checked"
	# ---- drops ----
	if [ "$(expect drops)" = up ] && [ "$(is_up drops)" != 1 ]; then
		not_ok "drops: exact counts and reason names" "not checked: the collector is down"
	elif [ "$(expect drops)" = up ] && [ "${FEATURE[dropreason]:-}" = no ]; then
		drops_noreason
	elif [ "$(expect drops)" = up ]; then
		for tries in 1 2; do
			scrape /tmp/d0
			np=$(snmp A Udp NoPorts)
			nft=$(nft_packets)
			ip netns exec A "$UDPFLOOD" 127.0.0.1 9 1000 >/dev/null 2>&1
			ip netns exec A "$UDPFLOOD" 127.0.0.1 7777 300 >/dev/null 2>&1
			sleep 0.2
			scrape /tmp/d1
			np=$(($(snmp A Udp NoPorts) - np))
			nft=$(($(nft_packets) - nft))
			s0=$(delta /tmp/d0 /tmp/d1 '^netstack_skb_drops_total[{]reason="NO_SOCKET",family="ipv4",protocol="udp"')
			s1=$(delta /tmp/d0 /tmp/d1 '^netstack_skb_drops_total[{]reason="NETFILTER_DROP",family="ipv4",protocol="udp"')
			[ "$s0" = "$np" ] && [ "$s1" = "$nft" ] && break
			echo "# attempt $tries: NO_SOCKET $s0 / NoPorts $np, NETFILTER_DROP $s1 / nft $nft"
		done
		[ "$np" -gt 0 ] || not_ok "the flood made Udp NoPorts grow" "$np"
		check_eq "drops NO_SOCKET equals Udp NoPorts" "$np" "$s0"
		[ "$nft" -gt 0 ] || not_ok "the nftables rule counted packets" "$nft"
		check_eq "drops NETFILTER_DROP equals the nftables counter" "$nft" "$s1"
		# Every UDP drop of the flood under a name, none under a bare number.
		check_eq "no drop reason rendered as a bare number" 0 \
			"$(grep -c '^netstack_skb_drops_total{reason="[0-9]' /tmp/d1)"
		local n_exp
		n_exp=$(sed -n 's/.*drops: attached .*(\([0-9]*\) reasons from .*/\1/p' "$LOG")
		check_eq "drops knows this kernel's $N_REASONS reasons (its BTF)" "$N_REASONS" "${n_exp:-?}"
		for c in NO_SOCKET NETFILTER_DROP; do
			check_eq "$c is $(tracefs_reason "$c") in this kernel's tracefs format and BTF" \
				"$(tracefs_reason "$c")" "${REASON_BTF[$c]}"
		done
		local reads=helper
		[ "${FEATURE[direct]:-}" = yes ] && reads=direct
		if grep -q "drops: attached .*, $reads reads)" "$LOG"; then
			ok "drops attached with $reads reads (this kernel: direct=${FEATURE[direct]:-?})"
		else
			not_ok "drops attached with $reads reads" "$(grep 'drops: attached' "$LOG")"
		fi
	fi

	mark "drops checked"
	# ---- retrans and rtt, one lossy transfer ----
	if [ "$(expect retrans)" = up ] || [ "$(expect rtt)" = up ]; then
		for tries in 1 2; do
			scrape /tmp/r0
			seg=$(($(snmp C Tcp RetransSegs) + $(snmp S Tcp RetransSegs)))
			k0=$(cause_counters) # no process substitution: the guest has no /dev/fd
			ip netns exec C "$TCPBULK" send 10.99.0.2 5201 1.5 >/dev/null 2>&1
			sleep 0.3 # the last ACKs and FIN
			scrape /tmp/r1
			seg=$(($(snmp C Tcp RetransSegs) + $(snmp S Tcp RetransSegs) - seg))
			k1=$(cause_counters)
			kf=$((${k1% *} - ${k0% *})) kt=$((${k1#* } - ${k0#* }))
			s0=$(delta /tmp/r0 /tmp/r1 '^netstack_tcp_retransmitted_segments_total')
			sf=$(delta /tmp/r0 /tmp/r1 '^netstack_tcp_retransmitted_segments_total[{].*cause="fast"')
			st=$(($(delta /tmp/r0 /tmp/r1 '^netstack_tcp_retransmitted_segments_total[{].*cause="timeout"') +
				$(delta /tmp/r0 /tmp/r1 '^netstack_tcp_retransmits_total[{].*cause="syn"')))
			rtt=$(delta /tmp/r0 /tmp/r1 '^netstack_tcp_rtt_seconds_count')
			[ "$(expect retrans)" = down ] ||
				{ [ "$s0" = "$seg" ] && [ "$sf" = "$kf" ] && [ "$st" = "$kt" ]; } && break
			echo "# attempt $tries: segments $s0 / TcpRetransSegs $seg, fast $sf / $kf," \
				"timeout+syn $st / $kt"
		done
		if [ "$(expect retrans)" = up ] && [ "$(is_up retrans)" != 1 ]; then
			not_ok "retransmitted segments equal TcpRetransSegs" "not checked: the collector is down"
		elif [ "$(expect retrans)" = up ]; then
			[ "$seg" -gt 0 ] || not_ok "the lossy transfer retransmitted (TcpRetransSegs)" "$seg"
			check_eq "retransmitted segments equal TcpRetransSegs" "$seg" "$s0"
			[ "$kf" -gt 0 ] || not_ok "the lossy transfer fast-retransmitted (TCPFastRetrans)" "$kf"
			check_eq "segments of cause fast equal TCPFastRetrans" "$kf" "$sf"
			check_eq "segments of cause timeout + syn retransmits equal TCPSlowStartRetrans + TCPTimeouts" \
				"$kt" "$st"
			local fam=0
			[ "${FEATURE[err]:-}" = yes ] && fam=1
			check_eq "retransmit failures family present = $fam (err argument: ${FEATURE[err]:-?})" \
				"$fam" "$(grep -c '^# TYPE netstack_tcp_retransmit_failures_total ' /tmp/r1)"
		fi
		if [ "$(expect rtt)" = up ] && [ "$(is_up rtt)" != 1 ]; then
			not_ok "the RTT histogram gets samples" "not checked: the collector is down"
		elif [ "$(expect rtt)" = up ]; then
			if [ "$rtt" -gt 0 ]; then
				ok "the RTT histogram got $rtt samples"
			else
				not_ok "the RTT histogram gets samples" "$rtt"
			fi
		fi
	fi

	mark "retrans and rtt checked"
	connections_phase
	resets_phase
	mark "resets checked"
	if [ -n "$strict_pid" ]; then
		stop
		check_eq "--strict exits 0 on SIGTERM" 0 "$STOP_RC"
	else
		stop
	fi
	cp "$LOG" "$RES/exporter.$PROFILE.log"
	labels_phase
	echo "# $P $PROFILE: done in $(awk -v a="$t0" -v b="$(uptime_s)" 'BEGIN { printf "%.1f", b - a }') s"
}

# Drops on a kernel whose kfree_skb has no reason (default labels): every packet the floods make
# A drop, to the closed port (Udp NoPorts) and to the port nftables drops, is NOT_SPECIFIED
# ipv4/udp; nothing else in the guest drops UDP meanwhile.
drops_noreason() {
	local tries np nft s0
	for tries in 1 2; do
		scrape /tmp/d0
		np=$(snmp A Udp NoPorts)
		nft=$(nft_packets)
		ip netns exec A "$UDPFLOOD" 127.0.0.1 9 1000 >/dev/null 2>&1
		ip netns exec A "$UDPFLOOD" 127.0.0.1 7777 300 >/dev/null 2>&1
		sleep 0.2
		scrape /tmp/d1
		np=$(($(snmp A Udp NoPorts) - np))
		nft=$(($(nft_packets) - nft))
		s0=$(delta /tmp/d0 /tmp/d1 '^netstack_skb_drops_total[{]reason="NOT_SPECIFIED",family="ipv4",protocol="udp"')
		[ "$s0" = $((np + nft)) ] && break
		echo "# attempt $tries: NOT_SPECIFIED ipv4/udp $s0 / NoPorts $np + nft $nft"
	done
	[ "$np" -gt 0 ] || not_ok "the flood made Udp NoPorts grow" "$np"
	[ "$nft" -gt 0 ] || not_ok "the nftables rule counted packets" "$nft"
	check_eq "drops NOT_SPECIFIED ipv4/udp equals Udp NoPorts + the nftables counter" \
		$((np + nft)) "$s0"
	check_eq "every drop series has reason NOT_SPECIFIED (no reason argument)" 0 \
		"$(grep '^netstack_skb_drops_total{' /tmp/d1 | grep -vc 'reason="NOT_SPECIFIED"')"
	if grep -q 'drops: attached count_drop_noreason to tp_btf/kfree_skb (1 reasons from a kfree_skb tracepoint without reasons' "$LOG"; then
		ok "drops attached count_drop_noreason (1 reason: NOT_SPECIFIED)"
	else
		not_ok "drops attached count_drop_noreason (1 reason: NOT_SPECIFIED)" "$(grep 'drops:' "$LOG")"
	fi
	# What the exporter read from BTF (two arguments), as tracefs says it.
	if [ -r "$FORMAT" ] && ! grep -q 'field:.* reason;' "$FORMAT"; then
		ok "this kernel's skb/kfree_skb has no reason field (tracefs format)"
	else
		not_ok "this kernel's skb/kfree_skb has no reason field (tracefs format)" \
			"$(grep field: "$FORMAT" 2>&1)"
	fi
}
# drop_deltas FILE0 FILE1 WHAT: every drop series that grew, as "# WHAT: +N series" lines.
drop_deltas() {
	awk -v what="$3" '/^netstack_skb_drops_total[{]/ { v = $NF; $NF = ""; sub(/ +$/, "")
			if (FILENAME == ARGV[1]) a[$0] = v; else if (v - a[$0] > 0) d[$0] = v - a[$0] }
		END { for (k in d) printf "%d %s\n", d[k], k }' "$1" "$2" | sort -rn |
		while read -r n k; do echo "# $P $PROFILE: $3: +$n ${k#netstack_skb_drops_total}"; done
}

# Connections (default labels, the exporter of run_profile): IPv6 between C and S, so the
# exporter's own IPv4 scrapes on the loopback are in none of the series compared. Per round:
# 3 closed with FINs, 2 reset by C (SO_LINGER 0), 2 refused by a closed port; the relations of
# docs/collectors/connections.md, exact here (no connect pending or given up).
CONN=$WT/tests/tools/tcpconn.py
connections_phase() {
	local tries want n f
	[ "$(expect connections)" = up ] || return 0
	if [ "$(is_up connections)" != 1 ]; then
		not_ok "connections: counts by outcome" "not checked: the collector is down"
		return
	fi
	if [ -z "${CONN_SERVER:-}" ]; then
		ip -n C addr add fd99::1/64 dev vc nodad && ip -n S addr add fd99::2/64 dev vs nodad
		ip netns exec S "$CONN" server 5205 >/tmp/conn-server.log 2>&1 &
		CONN_SERVER=$!
		local line=''
		for ((n = 0; n < 200; n++)); do
			{ read -r line </tmp/conn-server.log; } 2>/dev/null && [ "$line" = listening ] && break
			sleep 0.1
		done
	fi
	# tcp_snmp NS FILE: the namespace's Tcp counters, "Name value" a line (builtins only).
	tcp_snmp() {
		local -a l h=()
		local i
		while read -r -a l; do
			[ "${l[0]}" = Tcp: ] || continue
			[ ${#h[@]} -eq 0 ] && { h=("${l[@]}"); continue; }
			for i in "${!h[@]}"; do [ "$i" -gt 0 ] && echo "${h[$i]} ${l[$i]}"; done
			break
		done <"/proc/${NSPID[$1]}/net/snmp" >"$2"
	}
	s_busy() {
		local loc st
		while read -r _ loc _ st _; do
			[[ $loc == *:1455 ]] && [ "$st" != 0A ] && [ "$st" != 06 ] && return 0 # 5205
		done <"/proc/${NSPID[S]}/net/tcp6"
		return 1
	}
	# kd NS COUNTER: its increase over the round (read by builtins: no process).
	kd() {
		local k v a='' b=''
		while read -r k v; do [ "$k" = "$2" ] && a=$v; done <"/tmp/conn.$1.0"
		while read -r k v; do [ "$k" = "$2" ] && b=$v; done <"/tmp/conn.$1.1"
		echo $((b - a))
	}
	for tries in 1 2; do
		scrape /tmp/c0
		tcp_snmp C /tmp/conn.C.0 && tcp_snmp S /tmp/conn.S.0
		ip netns exec C "$CONN" clients fd99::2 close:5205:3 reset:5205:2 refused:5206:2 ||
			not_ok "connections: tcpconn.py clients end as their modes say"
		# The server's side of the closes: until S holds no connection on the port but in
		# TIME_WAIT (/proc/net/tcp6 of S, state 0A = LISTEN, 06 = TIME_WAIT; builtins only).
		for ((n = 0; n < 100; n++)); do
			s_busy || break
			sleep 0.05
		done
		tcp_snmp C /tmp/conn.C.1 && tcp_snmp S /tmp/conn.S.1
		scrape /tmp/c1
		# A passive failure here is a child dropped because another CPU won the race for its
		# request (docs/collectors/connections.md: D, in no kernel counter): once more.
		# (Here-strings: the guest has no /dev/fd for bash's <(...).)
		{ read -r n && read -r f; } <<<"$(deltas /tmp/c0 /tmp/c1 \
			'^netstack_tcp_connections_total[{]family="ipv6",direction="active",outcome="(established|failed)"' \
			'^netstack_tcp_connections_total[{]family="ipv6",direction="passive",outcome="failed"')"
		[ "$n" = "$(kd C ActiveOpens)" ] && [ "$f" = "$(kd S AttemptFails)" ] && break
		echo "# attempt $tries: active established + failed $n / C ActiveOpens $(kd C ActiveOpens), passive failed $f / S AttemptFails $(kd S AttemptFails)"
	done
	# Every delta below from one awk: DIRECTION:OUTCOME-REGEX -> its delta.
	local specs=("active:established" "active:closed" "active:reset" "active:failed"
		"passive:established" "passive:closed" "passive:reset" "passive:failed" "active:timeout"
		"passive:timeout" "active:established|failed" "passive:established|failed"
		"active:reset|timeout" "passive:reset|timeout") res=() i
	local -A CD=()
	for i in "${specs[@]}"; do
		res+=("^netstack_tcp_connections_total[{]family=\"ipv6\",direction=\"${i%%:*}\",outcome=\"(${i#*:})\"")
	done
	local -a d
	mapfile -t d <<<"$(deltas /tmp/c0 /tmp/c1 "${res[@]}")"
	for i in "${!specs[@]}"; do CD[${specs[$i]}]=${d[$i]:-?}; done
	cdelta() { echo "${CD[$1:$2]}"; } # DIRECTION OUTCOME-REGEX
	for want in "active established 5" "active closed 3" "active reset 2" "active failed 2" \
		"passive established 5" "passive closed 3" "passive reset 2" "passive failed 0" \
		"active timeout 0" "passive timeout 0"; do
		# shellcheck disable=SC2086 # three words
		set -- $want
		check_eq "connections: ipv6 $1 $2 +$3" "$3" "$(cdelta "$1" "$2")"
	done
	check_eq "connections: C ActiveOpens = active established + failed" "$(kd C ActiveOpens)" \
		"$(cdelta active 'established|failed')"
	check_eq "connections: C AttemptFails = active failed" "$(kd C AttemptFails)" \
		"$(cdelta active failed)"
	check_eq "connections: S PassiveOpens = passive established + failed" \
		"$(kd S PassiveOpens)" "$(cdelta passive 'established|failed')"
	check_eq "connections: S AttemptFails = passive failed" "$(kd S AttemptFails)" \
		"$(cdelta passive failed)"
	check_eq "connections: C EstabResets = active reset + timeout" "$(kd C EstabResets)" \
		"$(cdelta active 'reset|timeout')"
	check_eq "connections: S EstabResets = passive reset + timeout" "$(kd S EstabResets)" \
		"$(cdelta passive 'reset|timeout')"
	# Handshake times (default on): every established connection is timed or counted untimed
	# (docs/collectors/connections.md); on this kernel's own fields for the passive side.
	local dir hs
	for dir in active passive; do
		hs=$(deltas /tmp/c0 /tmp/c1 \
			"^netstack_tcp_(handshake_seconds_count|handshakes_untimed_total)[{]family=\"ipv6\",direction=\"$dir\"")
		check_eq "handshake: ipv6 $dir timed + untimed = established" \
			"$(cdelta "$dir" established)" "$hs"
		# Each began after the program attached, none in a simultaneous open: all timed
		# (active: the SYN's round trip from srtt_us, or the retransmit's note).
		check_eq "handshake: ipv6 $dir untimed = 0" 0 "$(deltas /tmp/c0 /tmp/c1 \
			"^netstack_tcp_handshakes_untimed_total[{]family=\"ipv6\",direction=\"$dir\"")"
	done
	mark "connections checked"
}

# ---- resets: R's loopback, every case of tests/tools/tcpreset.py over IPv4 and IPv6 ----
# With the reason argument (6.10+) every reset R sends is seen: sent == R's TcpOutRsts; before,
# the four without a full socket (closed port, TIME_WAIT) are not. Received: the 8 the cases
# cause. The guest makes no other resets meanwhile (scrapes close with FIN), so the default
# labels' host-wide sums are R's.
resets_phase() {
	local tries out sent rcv c f unseen=4
	[ "${FEATURE[reason]:-}" = yes ] && unseen=0
	if [ "$(expect resets)" != up ]; then
		return
	elif [ "$(is_up resets)" != 1 ]; then
		not_ok "resets: sent resets against TcpOutRsts" "not checked: the collector is down"
		return
	fi
	for tries in 1 2; do
		scrape /tmp/x0
		out=$(snmp R Tcp OutRsts)
		# One python3 for the eight cases: each start costs seconds under TCG.
		ip netns exec R python3 "$WT/tests/kernels/tcpresets.py" closed:4 closed:6 abort:4 \
			abort:6 linger0:4 linger0:6 timewait:4 timewait:6 >/dev/null ||
			echo "# tcpresets.py: a case failed (above)"
		scrape /tmp/x1
		out=$(($(snmp R Tcp OutRsts) - out))
		{ read -r sent && read -r rcv; } <<<"$(deltas /tmp/x0 /tmp/x1 \
			'^netstack_tcp_resets_sent_total' '^netstack_tcp_resets_received_total')"
		[ "$sent" = $((out - unseen)) ] && [ "$rcv" = 8 ] && break
		echo "# attempt $tries: sent $sent, TcpOutRsts $out, received $rcv"
	done
	check_eq "resets: the cases sent 8 resets in R (TcpOutRsts)" 8 "$out"
	check_eq "resets: sent equals TcpOutRsts less $unseen unseen (reason: ${FEATURE[reason]:-?})" \
		$((out - unseen)) "$sent"
	check_eq "resets: received equals the 8 the cases caused" 8 "$rcv"
	if [ "${FEATURE[reason]:-}" = yes ]; then
		if grep -q 'resets: attached count_sent to' "$LOG"; then
			ok "resets: count_sent attached"
		else
			not_ok "resets: count_sent attached" "$(grep 'resets:' "$LOG")"
		fi
		for c in NO_SOCKET:__none__ TCP_ABORT_ON_CLOSE:CLOSE TCP_TIMEWAIT_SOCKET:TIME_WAIT; do
			check_eq "resets: reason=${c%%:*}, state=${c#*:}: one per family" 2 \
				"$(delta /tmp/x0 /tmp/x1 "^netstack_tcp_resets_sent_total[{]family=\"ipv[46]\",reason=\"${c%%:*}\",state=\"${c#*:}\"")"
		done
	else
		if grep -q 'resets: attached count_sent_noreason to' "$LOG" &&
			grep -q "every reset sent has reason='__unknown__'" "$LOG"; then
			ok "resets: count_sent_noreason attached, the log says reason=__unknown__"
		else
			not_ok "resets: count_sent_noreason attached, the log says reason=__unknown__" \
				"$(grep 'resets:' "$LOG")"
		fi
		check_eq "resets: every reset sent has reason=__unknown__" "$sent" \
			"$(delta /tmp/x0 /tmp/x1 '^netstack_tcp_resets_sent_total[{]family="ipv[46]",reason="__unknown__"')"
	fi
	for c in SYN_SENT:1 ESTABLISHED:2 CLOSE_WAIT:1; do
		check_eq "resets: received in ${c%%:*}: ${c#*:} per family" $((${c#*:} * 2)) \
			"$(delta /tmp/x0 /tmp/x1 "^netstack_tcp_resets_received_total[{]family=\"ipv[46]\",state=\"${c%%:*}\"")"
	done
}

# The optional labels with this profile's privileges, and what RTT does with the kernel's
# features: drops of A under A's inode, on lo, by kernel function, exactly; retransmitted
# segments and RTT samples of C's transfer under C's or S's inode; rtt_kind="sample" only where
# the callback has arguments; a connection open before start (IPv6 on the guest's own loopback,
# so that the scrapes, IPv4, are not counted with it) measured only where the kernel can.
sed -e 's/^labels = reason,family,protocol$/labels = reason,family,protocol,netns,function,interface/' \
	-e 's/^labels = family,kind,cause,state$/labels = family,kind,cause,state,netns/' \
	-e 's/^labels = family$/labels = family,netns,rtt_kind/' "$WT/conf/netstack_exporter.ini" >/tmp/labels.ini
# And pod labels on drops (its pod_labels is the file's first), no pod source: the process walk.
sed -i -e '0,/^pod_labels =$/s//pod_labels = container,process,netns/' \
	-e 's/^source = auto$/source = none/' -e 's/^refresh_seconds = .*/refresh_seconds = 1/' \
	/tmp/labels.ini
inode() { stat -L -c %i "/proc/${NSPID[$1]}/ns/net"; }
labels_phase() {
	local ia ic is ih np nft s0 s1 seg rtt c fns fn bad sender n want hook
	declare -A WANT_NETNS=()
	[ "$(grep -c '^labels = .*netns' /tmp/labels.ini)" = 3 ] ||
		not_ok "labels: the test's INI enables them on three collectors" "$(grep ^labels /tmp/labels.ini)"
	ia=$(inode A) ic=$(inode C) is=$(inode S) ih=$(stat -L -c %i /proc/self/ns/net)
	# One small write every 0.1 s from the guest's own namespace, open before the exporter.
	"$TCPBULK" sink ::1 5203 >/dev/null 2>&1 &
	local sink=$!
	sleep 0.2
	(exec 3<>/dev/tcp/::1/5203 && while echo x >&3; do sleep 0.1; done) 2>/dev/null &
	sender=$!
	sleep 0.3
	INI=/tmp/labels.ini start || { not_ok "labels: exporter starts" "$(show_log)"; return; }
	# The first walk, so that A's series are born with its pod labels. The walk's maps do not
	# fit under 5.10's RLIMIT_MEMLOCK in the pod profile: no walk there, logged.
	local walk=up
	[ "${FEATURE[memlock]:-}" = yes ] && [ "$PROFILE" = pod ] && walk=down
	for _ in $(seq 100); do
		[ "$walk" = up ] || break
		scrape /tmp/n0 && grep -q '^netstack_pods_resolver_up 1' /tmp/n0 && break
		sleep 0.2
	done
	# Without the reason every kfree_skb() counts: what an idle guest frees (its scrapes, the
	# write every 0.1 s above), then what the traffic below does (docs/kernels.md).
	if [ "${FEATURE[dropreason]:-}" = no ] && [ "$PROFILE" = root ]; then
		scrape /tmp/i0
		sleep 20 # a measurement over a fixed span, not a wait
		scrape /tmp/i1
		drop_deltas /tmp/i0 /tmp/i1 "idle 20 s"
	fi
	scrape /tmp/n0
	np=$(snmp A Udp NoPorts)
	nft=$(nft_packets)
	seg=$(($(snmp C Tcp RetransSegs) + $(snmp S Tcp RetransSegs)))
	ip netns exec A "$UDPFLOOD" 127.0.0.1 9 200 >/dev/null 2>&1
	ip netns exec A "$UDPFLOOD" 127.0.0.1 7777 100 >/dev/null 2>&1
	ip netns exec C "$TCPBULK" send 10.99.0.2 5201 1 >/dev/null 2>&1
	if [ "${FEATURE[dropreason]:-}" = no ]; then
		# Ordinary traffic besides: connections closed, reset and refused; neighbour discovery
		# (ARP, NDISC) and pings after a flush; UDP answered on the loopback; a UNIX socket
		# closed with data unread.
		[ -n "${CONN_SERVER:-}" ] && ip netns exec C "$CONN" clients fd99::2 close:5205:3 \
			reset:5205:2 refused:5206:2 >/dev/null 2>&1
		ip -n C neigh flush dev vc && ip -n S neigh flush dev vs
		ip netns exec C busybox ping -c 3 -i 0.2 10.99.0.2 >/dev/null 2>&1
		ip netns exec C busybox ping -6 -c 3 -i 0.2 fd99::2 >/dev/null 2>&1
		python3 -c 'import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0))
c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(10):
    c.sendto(b"q", s.getsockname()); d, a = s.recvfrom(10); s.sendto(b"a", a); c.recv(10)
u, v = socket.socketpair(); u.send(b"unread"); v.close(); u.close()' ||
			echo "# the UDP and UNIX socket traffic failed"
	fi
	sleep 0.3
	scrape /tmp/n1
	np=$(($(snmp A Udp NoPorts) - np))
	nft=$(($(nft_packets) - nft))
	seg=$(($(snmp C Tcp RetransSegs) + $(snmp S Tcp RetransSegs) - seg))
	[ "$PROFILE" = pod-memlock ] && memlock_privs
	stop
	kill "$sender" "$sink" 2>/dev/null
	wait "$sender" "$sink" 2>/dev/null
	# Bigger maps with the labels: where RLIMIT_MEMLOCK bounds them (pod profile, before 5.11),
	# a collector may be down, saying why; its counts are then not checked.
	local upl=''
	for c in $COLLECTORS; do
		[ "$(expect "$c")" = up ] || continue
		grep -q "^netstack_collector_up{collector=\"$c\"} 1" /tmp/n1 && upl+=" $c" && continue
		if [ "${FEATURE[memlock]:-}" = yes ] && [ "$PROFILE" = pod ] &&
			grep -q "msg=\"$c: .*RLIMIT_MEMLOCK" "$LOG"; then
			ok "labels: $c down under RLIMIT_MEMLOCK, logged"
			WANT_NETNS[$c]=down
		else
			not_ok "labels: $c up" "$(show_log)"
		fi
	done
	[ -n "$upl" ] && ok "labels: collectors up:$upl"
	if [ "$(expect drops)" = up ] && [ "${WANT_NETNS[drops]:-}" != down ] &&
		[ "${FEATURE[dropreason]:-}" = no ]; then
		[ "$PROFILE" = root ] && drop_deltas /tmp/n0 /tmp/n1 "traffic"
		if has_cap syslog; then
			# Where the kernel frees them: UDP's receive path for the closed port, the
			# netfilter hook (which one: the check's name) for the rule's drops.
			s0=$(delta /tmp/n0 /tmp/n1 "^netstack_skb_drops_total[{]reason=\"NOT_SPECIFIED\",family=\"ipv4\",protocol=\"udp\",function=\"__udp4_lib_rcv\",netns=\"$ia\",interface=\"lo\"")
			check_eq "labels: NOT_SPECIFIED at __udp4_lib_rcv in A ($ia) on lo equals its Udp NoPorts" "$np" "$s0"
			hook=$(sed -n "s/^netstack_skb_drops_total{reason=\"NOT_SPECIFIED\",family=\"ipv4\",protocol=\"udp\",function=\"\(nf_hook_slow\|nft_do_chain\)\",netns=\"$ia\",.*/\1/p" /tmp/n1 | sort -u)
			s1=$(delta /tmp/n0 /tmp/n1 "^netstack_skb_drops_total[{]reason=\"NOT_SPECIFIED\",family=\"ipv4\",protocol=\"udp\",function=\"(nf_hook_slow|nft_do_chain)\",netns=\"$ia\",interface=\"lo\"")
			check_eq "labels: NOT_SPECIFIED at the netfilter hook (${hook//$'\n'/ }) in A equals the nftables counter" "$nft" "$s1"
		else
			s0=$(delta /tmp/n0 /tmp/n1 "^netstack_skb_drops_total[{]reason=\"NOT_SPECIFIED\",family=\"ipv4\",protocol=\"udp\",function=\"__unknown__\",netns=\"$ia\",interface=\"lo\"")
			check_eq "labels: without CAP_SYSLOG, NOT_SPECIFIED in A at __unknown__ equals Udp NoPorts + nftables" "$((np + nft))" "$s0"
		fi
		if [ "$walk" = up ]; then
			s0=$(delta /tmp/n0 /tmp/n1 "^netstack_skb_drops_total[{]reason=\"NOT_SPECIFIED\",family=\"ipv4\",protocol=\"udp\",.*netns=\"$ia\".*container=\"${POD_CID:0:12}\",process=\"kt-pod\"")
			check_eq "pod labels: the process walk (loop=${FEATURE[loop]:-?}) names A's container and process on its Udp NoPorts + nftables drops" \
				"$((np + nft))" "$s0"
		fi
	elif [ "$(expect drops)" = up ] && [ "${WANT_NETNS[drops]:-}" != down ]; then
		s0=$(delta /tmp/n0 /tmp/n1 "^netstack_skb_drops_total[{]reason=\"NO_SOCKET\",family=\"ipv4\",protocol=\"udp\",function=\"[^\"]*\",netns=\"$ia\",interface=\"lo\"")
		check_eq "labels: NO_SOCKET of namespace A ($ia) on lo, summed over function, equals its Udp NoPorts" "$np" "$s0"
		fns=$(sed -n "s/^netstack_skb_drops_total{reason=\"NO_SOCKET\",.*,function=\"\([^\"]*\)\",netns=\"$ia\",.*/\1/p" /tmp/n1 | sort -u)
		if ! has_cap syslog; then
			# Without CAP_SYSLOG kallsyms shows no addresses: never render the raw one.
			check_eq "labels: without CAP_SYSLOG the function is __unknown__" __unknown__ "$fns"
			if grep -q 'drops: cannot read /proc/kallsyms.*CAP_SYSLOG' "$LOG"; then
				ok "log: function labels unknown without CAP_SYSLOG"
			else
				not_ok "log: function labels unknown without CAP_SYSLOG" "$(show_log)"
			fi
		else
			bad=
			for fn in $fns; do
				awk -v f="$fn" '$3 == f && ($2 == "t" || $2 == "T") { found = 1; exit }
					END { exit !found }' /proc/kallsyms || bad+=" $fn"
			done
			if [ -n "$fns" ] && [ -z "$bad" ]; then
				ok "labels: function is a kernel text symbol: ${fns//$'\n'/ }"
			else
				not_ok "labels: function is a kernel text symbol" "not in kallsyms:${bad:- (no series)}"
			fi
		fi
		if [ "$walk" = up ]; then
			s0=$(delta /tmp/n0 /tmp/n1 "^netstack_skb_drops_total[{]reason=\"NO_SOCKET\",.*netns=\"$ia\".*container=\"${POD_CID:0:12}\",process=\"kt-pod\"")
			check_eq "pod labels: the process walk names A's container and process" "$np" "$s0"
		fi
	fi
	if [ "$walk" = up ]; then
		check_eq "pod labels: netstack_pods_resolver_up" 1 "$(fsum /tmp/n1 '^netstack_pods_resolver_up$')" \
			"$(grep 'pods:' "$LOG")"
		# Without bpf_loop the walk goes in tail-called chunks (bpf/tasks.bpf.c).
		if [ "${FEATURE[loop]:-}" != yes ]; then
			if grep -q 'pods: no bpf_loop .*chunks of tail calls' "$LOG"; then
				ok "pod labels: no bpf_loop, the walk runs in chunks of tail calls (logged)"
			else
				not_ok "pod labels: no bpf_loop, the walk runs in chunks of tail calls (logged)" "$(grep 'pods:' "$LOG")"
			fi
		fi
	elif grep -q 'level=error.*pods: cannot load the kernel-side process walk' "$LOG"; then
		check_eq "pod labels: the walk does not fit RLIMIT_MEMLOCK, logged; netstack_pods_resolver_up" 0 \
			"$(fsum /tmp/n1 '^netstack_pods_resolver_up$')"
	else
		not_ok "pod labels: the walk does not fit RLIMIT_MEMLOCK, logged" "$(show_log)"
	fi
	if [ "$(expect retrans)" = up ] && [ "${WANT_NETNS[retrans]:-}" != down ]; then
		s0=$(delta /tmp/n0 /tmp/n1 "^netstack_tcp_retransmitted_segments_total[{].*netns=\"($ic|$is)\"")
		check_eq "labels: segments of C ($ic) and S ($is) equal their TcpRetransSegs" "$seg" "$s0"
	fi
	if [ "$(expect rtt)" != up ] || [ "${WANT_NETNS[rtt]:-}" = down ]; then
		return 0
	fi
	rtt=$(delta /tmp/n0 /tmp/n1 "^netstack_tcp_rtt_seconds_count[{].*netns=\"($ic|$is)\",rtt_kind=\"srtt\"")
	if [ "$rtt" -gt 0 ]; then
		ok "labels: $rtt RTT samples under C's or S's inode"
	else
		not_ok "labels: RTT samples under C's or S's inode" "$rtt" "$(show_log)"
	fi
	n=$(delta /tmp/n0 /tmp/n1 "^netstack_tcp_rtt_seconds_count[{].*netns=\"($ic|$is)\",rtt_kind=\"sample\"")
	if [ "${FEATURE[args]:-}" = yes ]; then
		check_eq "rtt_kind=\"sample\": one raw sample per srtt (callback arguments)" "$rtt" "$n"
	else
		check_eq "rtt_kind=\"sample\" stays empty (no callback arguments)" 0 "$n"
		if grep -q 'RTT callback carries no values' "$LOG"; then
			ok "log: the RTT callback carries no values here"
		else
			not_ok "log: the RTT callback carries no values here" "$(show_log)"
		fi
	fi
	n=$(delta /tmp/n0 /tmp/n1 "^netstack_tcp_rtt_seconds_count[{]family=\"ipv6\",netns=\"$ih\",rtt_kind=\"srtt\"")
	# Namespaces other than the exporter's need CAP_SYS_ADMIN to enter: root only.
	want=0
	[ "${FEATURE[existing]:-}" = yes ] && [ "$PROFILE" = root ] && want=1
	check_eq "existing sockets covered gauge (existing=${FEATURE[existing]:-?})" "$want" \
		"$(fsum /tmp/n1 '^netstack_tcp_rtt_existing_sockets_covered$')"
	if [ "${FEATURE[existing]:-}" = yes ]; then
		if [ "$n" -gt 0 ]; then
			ok "the connection open before start is measured ($n samples)"
		else
			not_ok "the connection open before start is measured" "$n" "$(show_log)"
		fi
	else
		check_eq "the connection open before start is not measured" 0 "$n"
		if grep -q 'the kernel cannot turn RTT callbacks on for them' "$LOG"; then
			ok "log: connections open before start are not measured, and why"
		else
			not_ok "log: connections open before start are not measured, and why" "$(show_log)"
		fi
	fi
}

# pod-memlock: the capability components/memlock adds (CAP_SYS_RESOURCE) raised the limit at
# start and is gone after it; the limit stays raised.
memlock_privs() {
	local k v l prm='' eff='' lim=''
	while read -r k v _; do
		case $k in CapPrm:) prm=$v ;; CapEff:) eff=$v ;; esac
	done <"/proc/$PID/status"
	while read -r l; do [[ $l == "Max locked memory"* ]] && lim=$l; done <"/proc/$PID/limits"
	check_eq "memlock: CAP_SYS_RESOURCE (24) neither permitted nor effective after start" 0 \
		$((0x${prm:-1000000} >> 24 & 1 | 0x${eff:-1000000} >> 24 & 1)) "CapPrm $prm CapEff $eff"
	if [[ $lim =~ ^Max\ locked\ memory\ +unlimited\ +unlimited ]] &&
		grep -q 'msg="RLIMIT_MEMLOCK raised from [0-9]* KiB to unlimited' "$LOG"; then
		ok "memlock: RLIMIT_MEMLOCK raised to unlimited at start, logged"
	else
		not_ok "memlock: RLIMIT_MEMLOCK raised to unlimited at start, logged" "$lim" "$(show_log)"
	fi
}

# Where the kernel charges BPF to RLIMIT_MEMLOCK, the pod once more with components/memlock: the
# labels phase alone (one exporter start) checks every collector up, drops exact and the walk.
DEFAULT_PROFILES="root shipped pod"
[ "${FEATURE[memlock]:-}" = yes ] && DEFAULT_PROFILES+=" pod-memlock"
for PROFILE in ${PROFILES:-$DEFAULT_PROFILES}; do
	if [ "$PROFILE" = pod-memlock ]; then
		t0=$(uptime_s)
		labels_phase
		cp "$LOG" "$RES/exporter.$PROFILE.log"
		echo "# $P $PROFILE: done in $(awk -v a="$t0" -v b="$(uptime_s)" 'BEGIN { printf "%.1f", b - a }') s"
	else
		run_profile
	fi
done
