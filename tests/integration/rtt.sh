#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# RTT collector end to end: the real sockops program on the cgroup2 root, real TCP bulk
# transfers between two network namespaces joined by veth, `ss -ti` as the reference.
#
# Queueing delay without netem: A's veth sends through a TBF rate limit, and B's receive
# buffer (tcp_rmem, per namespace) caps the flow's window at about 48 KB. The window sits in the
# TBF queue, so the RTT is about window / rate (~75 ms at 5 Mbit/s, ~38 ms at 10 Mbit/s), steady,
# without drops. Reno in A (per namespace) keeps BBR's probing out of the figures; each transfer
# starts on an empty queue (see stop_bulk).
#
#   1. A connection opened before the exporter started: not measured with
#      existing_sockets = false (the control; skipped when another sockops program, say
#      another exporter, could have turned its callbacks on), measured once the start-up pass
#      turned its RTT callbacks on (existing_sockets_covered = 1, log line), and its mean
#      matches ss.
#   2. A new connection: the histogram mean (delta _sum / delta _count) is within 25% of the
#      average srtt of several `ss -ti` readings over the same interval, and there is about
#      one sample per round trip (count ~ elapsed / srtt), not one per ACK.
#   3. Twice the rate: half the delay; the mean and the median bucket move down accordingly,
#      and the mean still matches ss.
#   4. family: IPv6 counts as ipv6, an IPv4-mapped IPv6 socket as ipv4; rtt_kind: one raw
#      sample per srtt value.
#   5. max_series = 1 with the netns label: overflow histograms, counted in
#      netstack_map_overflow_total{map="tcp_rtt"}.
#   6. Default labels: family only; the bpf statistics list tcp_rtt_sockops and nothing else.
#   7. promtool check metrics accepts /metrics (default labels, netns, overflow).
#   8. Native buckets (derived, as the classic ones, from the cells the kernel counts; shown by
#      the protobuf format only): the rtt collector run in build/tests/rtt_native, through a
#      capture filter, 50 reads in a row while samples arrive, each consistent,
#      during tests 2-3 (netns label: A's histograms), 5 (the overflow histograms, schema 2) and 6
#      (default labels): per histogram, the native buckets add up to the classic count, and the
#      native bucket holding the median overlaps the classic one holding it.
# schedule: serial each
# why: its existing_sockets control needs no other sockops program on the cgroup2 root
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
require_root_bpf
TCPBULK=$BUILD/tests/tcpbulk
[ -x "$TCPBULK" ] || skip_all "$TCPBULK not built (make $TCPBULK)"
NATIVE=$BUILD/tests/rtt_native
[ -x "$NATIVE" ] || skip_all "$NATIVE not built (make $NATIVE)"
for tool in ss tc promtool curl; do
	command -v "$tool" >/dev/null || skip_all "needs $tool"
done
grep -q ' - cgroup2 ' /proc/self/mountinfo || skip_all "needs a cgroup2 mount"

H=netstack_tcp_rtt_seconds
# The start-up pass for connections open before start needs iter/tcp to set the callback flags
# with bpf_setsockopt (Linux 6.12+); asked of the kernel's BTF as the exporter asks it.
EXISTING=0
kernel_btf | grep -q "] STRUCT 'bpf_iter__tcp' " &&
	kernel_btf | grep -q "^	'TCP_BPF_SOCK_OPS_CB_FLAGS' val=" && EXISTING=1
NS_A=nsrtt-a$$
NS_B=nsrtt-b$$
IF_A=va$$
PORT=5001
RATE1=5mbit
RATE2=10mbit

# ---------------------------------------------------------------------------------------------
# Helpers

# fval FILE REGEX: sum of the values of the samples whose name{labels} matches REGEX (floats).
fval() {
	RE=$2 awk '
		BEGIN { re = ENVIRON["RE"] }
		/^#/ { next }
		{ v = $NF; $NF = ""; sub(/ +$/, ""); if ($0 ~ re) s += v }
		END { printf "%.9f\n", s }' "$1"
}
# fdelta FILE_BEFORE FILE_AFTER REGEX
fdelta() {
	awk -v a="$(fval "$1" "$3")" -v b="$(fval "$2" "$3")" 'BEGIN { printf "%.9f\n", b - a }'
}
# mean_ms BEFORE AFTER LABELS: histogram mean over the interval, in ms ("" without samples).
mean_ms() {
	local s c
	s=$(fdelta "$1" "$2" "^${H}_sum[{]$3[}]\$")
	c=$(fdelta "$1" "$2" "^${H}_count[{]$3[}]\$")
	awk -v s="$s" -v c="$c" 'BEGIN { if (c > 0) printf "%.3f\n", s / c * 1000 }'
}
# median_le BEFORE AFTER LABELS: upper bound of the bucket holding the median of the interval.
median_le() {
	paste <(grep "^${H}_bucket{$3,le=" "$1") <(grep "^${H}_bucket{$3,le=" "$2") | awk '
		{ le = $1; sub(/.*le="/, "", le); sub(/".*/, "", le); n++; b[n] = le; d[n] = $4 - $2 }
		END { for (i = 1; i <= n; i++) if (d[i] >= d[n] / 2 && d[n] > 0) { print b[i]; exit } }'
}
pcheck() { # NAME FILE: promtool check metrics accepts the scrape in FILE
	local out
	if [ ! -s "$2" ]; then
		not_ok "$1" "empty scrape"
	elif out=$(promtool check metrics <"$2" 2>&1); then
		ok "$1"
	else
		not_ok "$1" "$out"
	fi
}
within() { # NAME A B PCT: |A - B| <= PCT% of B
	if awk -v a="$2" -v b="$3" -v p="$4" \
		'BEGIN { exit !(a != "" && b > 0 && (a - b) ^ 2 <= (p / 100 * b) ^ 2) }'; then
		ok "$1 ($2 vs $3, within $4%)"
	else
		not_ok "$1" "got '$2', reference '$3': more than $4% apart"
	fi
}
# shellcheck disable=SC2317 # run through check
fgt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 > b + 0) }'; }
config() { # NAME LINE...: an INI file in $TMP, prints its path
	local f=$TMP/$1.ini
	shift
	printf '%s\n' '[collector.rtt]' "$@" >"$f"
	echo "$f"
}

# bulk [ADDR] [SECONDS]: a transfer from A to B's sink in the background; sets BULK_PID.
bulk() {
	ip netns exec "$NS_A" "$TCPBULK" send "${1:-10.99.0.2}" "$PORT" "${2:-60}" >/dev/null 2>&1 &
	BULK_PID=$!
	on_exit "kill $BULK_PID"
}
# reaped PID: drop the exit cleanup of a process already waited for (its PID may be reused).
reaped() {
	local i
	for i in "${!CLEANUPS[@]}"; do
		[ "${CLEANUPS[i]}" = "kill $1" ] && CLEANUPS[i]=:
	done
}
# stop_bulk: abort A's connections (ss -K) so that no orphan keeps draining its send buffer
# into the queue, reap the sender, and wait for the queue to empty: a connection that starts
# behind a full queue measures a long first RTT, sizes its packets small for it, and TCP small
# queues then keep it from ever filling the queue (a steady state at a few ms).
stop_bulk() {
	ip netns exec "$NS_A" ss -K state established "( dport = :$PORT )" >/dev/null 2>&1
	kill "$BULK_PID" 2>/dev/null
	wait "$BULK_PID" 2>/dev/null
	reaped "$BULK_PID"
	for _ in $(seq 40); do
		ip netns exec "$NS_A" tc -s qdisc show dev "$IF_A" | grep -q 'backlog 0b 0p' && break
		sleep 0.05
	done
}
# other_sockops: sockops programs on cgroups other than our exporter's (another exporter, a
# test running alongside): they may turn RTT callbacks on for our connections too.
other_sockops() {
	local n
	command -v bpftool >/dev/null || {
		echo unknown
		return
	}
	n=$(bpftool link show 2>/dev/null | grep -c 'attach_type cgroup_sock_ops')
	echo $((n - ${1:-0}))
}
now() { date +%s.%N; }
# ss_srtt N: average of N readings, 0.25 s apart, of the srtt (ms) ss shows for A's connection.
ss_srtt() {
	for _ in $(seq "$1"); do
		ip netns exec "$NS_A" ss -tiH state established "( dport = :$PORT )" |
			grep -o ' rtt:[0-9.]*' | head -n 1
		sleep 0.25
	done | awk -F: '{ s += $2; n++ } END { if (n) printf "%.3f\n", s / n }'
}
# wait_steady: until A's srtt holds still (two readings 0.5 s apart within 5%, above 20 ms):
# the receive window grows for a few seconds after the connection opens. Bounded: 10 s.
wait_steady() {
	local a b
	for _ in $(seq 20); do
		a=$(ss_srtt 1)
		sleep 0.25
		b=$(ss_srtt 1)
		awk -v a="$a" -v b="$b" 'BEGIN { exit !(a > 20 && b > 20 && (a - b) ^ 2 <= (b / 20) ^ 2) }' &&
			return 0
	done
	return 1
}
# native_start CONFIG: the rtt collector run by rtt_native, beside the exporter; its requests go
# through fd 7.
native_start() {
	rm -f "$TMP/native.in"
	mkfifo "$TMP/native.in"
	"$NATIVE" "$1" <"$TMP/native.in" >"$TMP/native.out" 2>"$TMP/native.err" &
	NATIVE_PID=$!
	on_exit "kill $NATIVE_PID"
	exec 7>"$TMP/native.in"
	NREQ=0
	wait_grep "$TMP/native.out" '^ready$' 20 ||
		not_ok "rtt_native starts" "$(tail -n 5 "$TMP/native.err")"
}
# native_check LABELS: rtt_native's checks of the histograms whose labels hold LABELS (* all).
native_check() {
	local from line
	NREQ=$((NREQ + 1))
	from=$(wc -l <"$TMP/native.out")
	echo "$1" >&7
	if ! wait_grep "$TMP/native.out" "^done $NREQ\$" 20; then
		not_ok "rtt_native answers for $1"
		return
	fi
	while IFS= read -r line; do
		case $line in
		"not ok - "*) not_ok "native: ${line#not ok - }" ;;
		"ok - "*) ok "native: ${line#ok - }" ;;
		esac
	done < <(tail -n +$((from + 1)) "$TMP/native.out")
}
native_stop() {
	exec 7>&-
	wait "$NATIVE_PID"
	check_eq "rtt_native exits cleanly" 0 "$?"
	reaped "$NATIVE_PID"
}
tbf() {
	ip netns exec "$NS_A" tc qdisc replace dev "$IF_A" root tbf rate "$1" burst 16kb latency 400ms
}

# ---------------------------------------------------------------------------------------------
# Two namespaces, a veth, a rate limit and a small receive window.

netns_add "$NS_A" && netns_add "$NS_B" && veth_pair "$NS_A" "$NS_B" || {
	not_ok "network namespaces and veth set up"
	finish
}
ip netns exec "$NS_A" sysctl -qw net.ipv4.tcp_congestion_control=reno net.ipv4.tcp_no_metrics_save=1
ip netns exec "$NS_B" sysctl -qw net.ipv4.tcp_rmem="4096 65536 65536"
tbf "$RATE1" || {
	not_ok "TBF qdisc on $IF_A"
	finish
}
ip netns exec "$NS_B" "$TCPBULK" sink :: "$PORT" >/dev/null 2>&1 &
on_exit "kill $!"
NETNS_A=$(netns_inode "$NS_A")
# A's histograms with labels = family,netns,rtt_kind; S: the raw samples.
A="family=\"ipv4\",netns=\"$NETNS_A\",rtt_kind=\"srtt\""
A6="family=\"ipv6\",netns=\"$NETNS_A\",rtt_kind=\"srtt\""
S="family=\"ipv4\",netns=\"$NETNS_A\",rtt_kind=\"sample\""
S6="family=\"ipv6\",netns=\"$NETNS_A\",rtt_kind=\"sample\""
for _ in $(seq 50); do # the sink listens
	ip netns exec "$NS_B" ss -tlnH "( sport = :$PORT )" | grep -q . && break
	sleep 0.05
done

# ---------------------------------------------------------------------------------------------
# Test 1: a connection opened before the exporter started.

# Another exporter running alongside (a developer's, a parallel test) turns RTT callbacks on
# for our connection as well, through its own sockops program or start-up pass: the control
# then proves nothing and is reported as skipped. bpftool tells.
others=$(other_sockops 0)
bulk 10.99.0.2 60
# Established before the exporter starts: it must never see this connection open.
wait_until 10 sh -c "ip netns exec $NS_A ss -tnH state established '( dport = :$PORT )' |
	grep -q ." || not_ok "the connection opened before the exporter is established"

if start_exporter --config \
	"$(config off 'labels = family,netns,rtt_kind' 'existing_sockets = false')"; then
	check_eq "existing_sockets = false: covered gauge" 0 \
		"$(scrape_sum '^netstack_tcp_rtt_existing_sockets_covered$')"
	scrape "$TMP/t1.0"
	for _ in 1 2 3; do
		sleep 0.5
		o=$(other_sockops 1)
		[ "$o" = 0 ] || others=$o
	done
	scrape "$TMP/t1.1"
	name="existing_sockets = false: no samples from the connection opened before"
	if [ "$others" = 0 ]; then
		check_eq "$name" 0 "$(fdelta "$TMP/t1.0" "$TMP/t1.1" "^${H}_count[{]${A}[}]\$" | cut -d. -f1)"
	else
		ok "$name # SKIP $others other sockops program(s) attached meanwhile"
	fi
	stop_exporter
else
	not_ok "existing_sockets = false: exporter starts"
fi

if start_exporter --config "$(config netns 'labels = family,netns,rtt_kind')"; then
	check_eq "rtt collector up" 1 "$(scrape_sum '^netstack_collector_up[{]collector="rtt"[}]$')"
	check_eq "existing sockets covered gauge (the kernel can: $EXISTING)" "$EXISTING" \
		"$(scrape_sum '^netstack_tcp_rtt_existing_sockets_covered$')"
	# Before Linux 6.10 the callback carries no sample, which the exporter says at start (from
	# the kernel's version: nothing in BTF tells); rtt_kind="sample" must then stay empty.
	ARGS=1
	grep -q 'RTT callback carries no values' "$EXPORTER_LOG" && ARGS=0
	if [ "$EXISTING" = 0 ]; then
		check "log: connections open before start are not measured, and why" \
			grep -q 'the kernel cannot turn RTT callbacks on for them' "$EXPORTER_LOG"
		scrape "$TMP/t1.2"
		sleep 1.5
		scrape "$TMP/t1.3"
		name="no samples from the connection opened before start"
		if [ "$others" = 0 ]; then
			check_eq "$name" 0 \
				"$(fdelta "$TMP/t1.2" "$TMP/t1.3" "^${H}_count[{]${A}[}]\$" | cut -d. -f1)"
		else
			ok "$name # SKIP $others other sockops program(s) attached meanwhile"
		fi
		pcheck "promtool check metrics: netns label" "$TMP/t1.3"
		stop_bulk
	else
		# Ours: A's sender and B's receiver. With others around, they may have been first.
		line=$(grep -o \
			'RTT callbacks turned on for [0-9]* TCP connections open before start ([0-9]* were' \
			"$EXPORTER_LOG")
		read -r on already < <(tr -cs '0-9' ' ' <<<"$line")
		[ "$others" = 0 ] || on=$((${on:-0} + ${already:-0}))
		check "log: RTT callbacks turned on for the connections open before start ($line)" \
			test "${on:-0}" -ge 2
		wait_steady || not_ok "connection opened before start: RTT steady within 10 s"
		scrape "$TMP/t1.2"
		ref=$(ss_srtt 6)
		scrape "$TMP/t1.3"
		n=$(fdelta "$TMP/t1.2" "$TMP/t1.3" "^${H}_count[{]${A}[}]\$" | cut -d. -f1)
		check "connection opened before start is measured ($n samples in 1.5 s)" test "${n:-0}" -ge 5
		within "connection opened before start: mean matches ss srtt (ms)" \
			"$(mean_ms "$TMP/t1.2" "$TMP/t1.3" "$A")" "$ref" 25
		pcheck "promtool check metrics: netns label" "$TMP/t1.3"
		stop_bulk
	fi

	# -----------------------------------------------------------------------------------------
	# Test 2 and 3: a new connection at RATE1, then at RATE2.

	# After test 1: its control wants no other sockops program.
	native_start "$(config native 'labels = family,netns,rtt_kind' 'existing_sockets = false')"
	bulk 10.99.0.2 60
	wait_steady || not_ok "$RATE1: RTT steady within 10 s"
	w0=$(now)
	scrape "$TMP/t2.0"
	ref1=$(ss_srtt 8)
	scrape "$TMP/t2.1"
	w1=$(now)
	mean1=$(mean_ms "$TMP/t2.0" "$TMP/t2.1" "$A")
	within "$RATE1: histogram mean matches ss srtt (ms)" "$mean1" "$ref1" 25
	# One sample per round trip, not per ACK (~200 ACKs/s here): about elapsed / srtt.
	n=$(fdelta "$TMP/t2.0" "$TMP/t2.1" "^${H}_count[{]${A}[}]\$" | cut -d. -f1)
	per_rtt=$(awk -v n="${n:-0}" -v t="$(awk -v a="$w0" -v b="$w1" 'BEGIN { print b - a }')" \
		-v r="$ref1" 'BEGIN { if (r > 0 && t > 0) printf "%.2f\n", n / (t * 1000 / r) }')
	check "$RATE1: one sample per round trip ($n samples, $per_rtt per srtt elapsed)" \
		awk -v x="$per_rtt" 'BEGIN { exit !(x != "" && x >= 0.5 && x <= 1.5) }'
	check "$RATE1: tens of ms of RTT (ss srtt $ref1 ms)" fgt "$ref1" 20
	med1=$(median_le "$TMP/t2.0" "$TMP/t2.1" "$A")

	tbf "$RATE2"
	sleep 0.5 # the queue drains to the new level
	wait_steady || not_ok "$RATE2: RTT steady within 10 s"
	scrape "$TMP/t3.0"
	ref2=$(ss_srtt 8)
	scrape "$TMP/t3.1"
	mean2=$(mean_ms "$TMP/t3.0" "$TMP/t3.1" "$A")
	within "$RATE2: histogram mean matches ss srtt (ms)" "$mean2" "$ref2" 25
	med2=$(median_le "$TMP/t3.0" "$TMP/t3.1" "$A")
	# Twice the rate, half the queueing delay: the mean falls by a clear factor.
	check "rate x2: mean falls by at least 1.5x ($mean1 -> $mean2 ms)" \
		awk -v a="$mean1" -v b="$mean2" 'BEGIN { exit !(a > 0 && b > 0 && a >= 1.5 * b) }'
	check "rate x2: median bucket moves down (le $med1 -> $med2)" \
		awk -v a="$med1" -v b="$med2" 'BEGIN { exit !(a != "" && b != "" && b + 0 < a + 0) }'
	stop_bulk
	tbf "$RATE1"
	# A's histograms hold both rates: two medians, the one of all must still agree.
	native_check "netns=\"$NETNS_A\""
	native_stop

	# -----------------------------------------------------------------------------------------
	# Test 4: families.

	scrape "$TMP/t4.0"
	bulk fd99::2 1
	wait "$BULK_PID"
	reaped "$BULK_PID"
	bulk ::ffff:10.99.0.2 1 # an AF_INET6 socket, IPv4 on the wire
	wait "$BULK_PID"
	reaped "$BULK_PID"
	scrape "$TMP/t4.1"
	n6=$(fdelta "$TMP/t4.0" "$TMP/t4.1" "^${H}_count[{]${A6}[}]\$" | cut -d. -f1)
	n4=$(fdelta "$TMP/t4.0" "$TMP/t4.1" "^${H}_count[{]${A}[}]\$" | cut -d. -f1)
	check "IPv6 transfer counted as family ipv6 ($n6 samples)" test "${n6:-0}" -gt 0
	check "IPv4-mapped IPv6 transfer counted as family ipv4 ($n4 samples)" test "${n4:-0}" -gt 0
	# Each callback gives one srtt and one sample: with the transfers over, the counts agree.
	# Without the callback's arguments there is no sample at all.
	check_eq "rtt_kind: as many samples as srtt values (ipv6; arguments: $ARGS)" \
		$((ARGS ? ${n6:-0} : 0)) \
		"$(fdelta "$TMP/t4.0" "$TMP/t4.1" "^${H}_count[{]${S6}[}]\$" | cut -d. -f1)"
	check_eq "rtt_kind: as many samples as srtt values (ipv4; arguments: $ARGS)" \
		$((ARGS ? ${n4:-0} : 0)) \
		"$(fdelta "$TMP/t4.0" "$TMP/t4.1" "^${H}_count[{]${S}[}]\$" | cut -d. -f1)"
	stop_exporter
else
	not_ok "netns label: exporter starts"
fi

# ---------------------------------------------------------------------------------------------
# Test 5: max_series = 1. Two namespaces have samples (A's transfer, and the host's own TCP,
# at least the scrapes): one gets the histogram, the rest goes to __overflow__.

if start_exporter --config "$(config overflow 'labels = family,netns' 'max_series = 1')"; then
	native_start "$(config native2 'labels = family,netns' 'max_series = 1' 'native_schema = 2' \
		'existing_sockets = false')"
	bulk 10.99.0.2 1.5
	wait "$BULK_PID"
	reaped "$BULK_PID"
	scrape "$TMP/t5"
	series=$(grep -c "^${H}_count[{]family=\"[a-z0-9]*\",netns=\"[0-9]*\"[}]" "$TMP/t5")
	check_eq "max_series = 1: one netns histogram" 1 "$series"
	check "max_series = 1: overflow histogram present" \
		grep -q "^${H}_count[{]family=\"ipv4\",netns=\"__overflow__\"[}] [1-9]" "$TMP/t5"
	# Each sample without room counts once in each; samples keep coming (the scrapes), so
	# compare within one scrape, a few times.
	for _ in 1 2 3 4 5; do
		ovf=$(fval "$TMP/t5" '^netstack_map_overflow_total[{]map="tcp_rtt"[}]$' | cut -d. -f1)
		hov=$(fval "$TMP/t5" "^${H}_count[{]family=\"[a-z0-9]*\",netns=\"__overflow__\"[}]\$" |
			cut -d. -f1)
		[ "$ovf" = "$hov" ] && break
		sleep 0.2
		scrape "$TMP/t5"
	done
	check "max_series = 1: overflow counter = overflow histogram count ($ovf = $hov)" \
		test "${ovf:-0}" -gt 0 -a "$ovf" = "$hov"
	check "max_series = 1: overflow warning logged" grep -q 'rtt: map tcp_rtt is full' "$EXPORTER_LOG"
	pcheck "promtool check metrics: overflow" "$TMP/t5"
	# The scrapes above (host namespace) and A's transfer: one of them has no room.
	native_check "netns=\"__overflow__\""
	native_check "*"
	native_stop
	stop_exporter
else
	not_ok "max_series = 1: exporter starts"
fi

# ---------------------------------------------------------------------------------------------
# Test 6: default labels.

# Per-program statistics exist only while bpf_stats is on: pin it on, restore it at exit.
bpf_stats_on || not_ok "kernel.bpf_stats_enabled = 1"
if start_exporter; then
	native_start "$(config native6 'existing_sockets = false')"
	bulk 10.99.0.2 1
	wait "$BULK_PID"
	reaped "$BULK_PID"
	scrape "$TMP/t6"
	check "default labels: family only" grep -q "^${H}_count[{]family=\"ipv4\"[}] [1-9]" "$TMP/t6"
	check_eq "default labels: no netns label" 0 "$(grep -c "^${H}.*netns=" "$TMP/t6")"
	# The sockops program runs on every callback; the variant with label code is not loaded
	# and the start-up iterators are gone after start.
	check "bpf stats: sockops program tcp_rtt_sockops runs" \
		grep -q '^netstack_bpf_program_runs_total{program="tcp_rtt_sockops"} [1-9]' "$TMP/t6"
	check_eq "bpf stats: no other rtt program listed" 0 \
		"$(grep -c 'program="tcp_rtt_\(sockops_labels\|existing\|netns\)"' "$TMP/t6")"
	pcheck "promtool check metrics: default labels" "$TMP/t6"
	native_check "family=\"ipv4\""
	native_stop
	stop_exporter
else
	not_ok "default labels: exporter starts"
fi

finish
