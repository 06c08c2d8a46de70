#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Cost per event of the connections program (bpf/connections.bpf.c, "count_connection"; with
# the netns label "count_connection_netns"), measured by the kernel (kernel.bpf_stats_enabled=1)
# during TCP connection churn, against an empty tp_btf/inet_sock_set_state program (the floor:
# tests/bench/floor_connections.bpf.c). Variants run one at a time, in interleaved rounds, and
# each is the only program we attach to the hook.
# Traffic: THREADS loops in namespace C of connect, a byte, FINs both ways (tests/tools/
# tcpconn.py churn) to a server in S over veth, for FLOOD_SECONDS: every state change of both
# ends runs the program, the ones it counts (to ESTABLISHED and to CLOSE) and the ones it
# returns from at once (LISTEN to SYN_RECV, to FIN_WAIT1, ...), about ten per connection.
# The exporter's figures come from its own /metrics (netstack_bpf_program_*). A missed target is
# printed, not a failure. Each variant runs alone, as in retrans.sh (tests/bench/lib.sh: ALONE).
# Environment: BUILD (default build), ROUNDS (7), FLOOD_SECONDS (3), THREADS (4).
set -u
cd "$(dirname "$0")/../.." || exit 1
source tests/bench/lib.sh
ROUNDS=${ROUNDS:-7}
FLOOD_SECONDS=${FLOOD_SECONDS:-3}
THREADS=${THREADS:-4}
CONN=tests/tools/tcpconn.py
FLOOR=$BUILD/tests/bench_floor
HOOK=inet_sock_set_state
PORT=5311
TARGET_DEFAULT=1.5
ALONE=1
VARIANTS=(floor default netns)
SECTION="kernel cost per event, TCP connections"
declare -A TITLE=([floor]="floor (empty prog)" [default]="default labels" [netns]="netns label")

[ "$(id -u)" -eq 0 ] || die "needs root (BPF, namespaces and kernel.bpf_stats_enabled)"
[ -r /sys/kernel/btf/vmlinux ] || die "needs kernel BTF (/sys/kernel/btf/vmlinux)"
for f in "$EXPORTER" "$FLOOR" /usr/bin/python3; do
	[ -x "$f" ] || die "$f not built (make BUILD=$BUILD bench builds it)"
done
for c in bpftool curl nstat ip awk; do
	command -v "$c" >/dev/null || die "needs $c"
done

TMP=$(mktemp -d /tmp/netstack-bench.XXXXXX)
FLOOR_CMD=("$FLOOR" "$HOOK")
declare -A PROG=([default]=count_connection [netns]=count_connection_netns)
STATS_BEFORE=$(cat "$STATS")
NS_C=conns-bc$$ NS_S=conns-bs$$
PID=  # the variant currently attached
SINK= # tcpconn.py server in S

# shellcheck disable=SC2317 # run by the trap
cleanup() {
	stop_variant
	[ -n "$SINK" ] && kill "$SINK" 2>/dev/null && wait "$SINK" 2>/dev/null
	ip netns del "$NS_C" 2>/dev/null
	ip netns del "$NS_S" 2>/dev/null
	echo "$STATS_BEFORE" >"$STATS"
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo 1 >"$STATS" || die "cannot enable kernel.bpf_stats_enabled"

# C -> S over veth; the server accepts on [::]:PORT and drains each connection.
ip netns add "$NS_C" && ip netns add "$NS_S" || die "cannot create network namespaces"
ip link add conns-ba netns "$NS_C" type veth peer name conns-bb netns "$NS_S" ||
	die "cannot create veth"
ip -n "$NS_C" addr add 10.96.0.1/24 dev conns-ba
ip -n "$NS_S" addr add 10.96.0.2/24 dev conns-bb
ip -n "$NS_C" link set conns-ba up
ip -n "$NS_S" link set conns-bb up
ip -n "$NS_S" link set lo up
# Client ports are reused fast: TIME_WAIT sockets must not run out the ephemeral range.
ip netns exec "$NS_C" sysctl -qw net.ipv4.tcp_tw_reuse=1
ip netns exec "$NS_S" "$CONN" server "$PORT" >"$TMP/sink.out" 2>&1 &
SINK=$!
for _ in $(seq 100); do
	grep -q listening "$TMP/sink.out" && break
	sleep 0.05
done

# The exporter runs the connections collector alone: every other collector is disabled by name.
collector_names() {
	local port pid names
	port=$(free_tcp_port) || die "no free TCP port on loopback"
	"$EXPORTER" --web.listen-address "127.0.0.1:$port" >"$TMP/names.log" 2>&1 &
	pid=$!
	for _ in $(seq 100); do
		names=$(curl -sf "http://127.0.0.1:$port/metrics" |
			sed -n 's/^netstack_collector_up{collector="\([^"]*\)"}.*/\1/p')
		[ -n "$names" ] && break
		sleep 0.05
	done
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	echo "$names"
}
OTHERS=()
for c in $(collector_names); do
	[ "$c" != connections ] && OTHERS+=("$c")
done
for v in default netns; do
	{
		for c in "${OTHERS[@]}"; do
			printf '[collector.%s]\nenabled = false\n' "$c"
		done
		echo '[collector.connections]'
		if [ "$v" = netns ]; then
			echo 'labels = family,direction,outcome,netns'
		fi
	} >"$TMP/$v.ini"
done

# Links on the hook, ours included (tests/bench/lib.sh: hook_links, wait_hook_free).
HOOK_LINK="'$HOOK'"

opens() {
	ip netns exec "$NS_C" nstat -saz TcpActiveOpens | awk '$1 == "TcpActiveOpens" { print $2 }'
}

# The churn: THREADS connection loops at once, for FLOOD_SECONDS.
flood() {
	ip netns exec "$NS_C" "$CONN" churn 10.96.0.2 "$PORT" "$FLOOD_SECONDS" "$THREADS" >/dev/null
}

plan_runs
echo "netstack_exporter connection-path benchmark: $(uname -r), $(nproc) CPUs"
echo "traffic: $THREADS loops of TCP connect and close over veth, $FLOOD_SECONDS s per run," \
	"$ROUNDS rounds x ${#SLOTS[@]} variants, one program on $HOOK at a time"
echo
run_header events/s events/conn
: >"$TMP/results"
SHARED=0
for ((r = 0; r < ROUNDS; r++)); do
	for ((k = 0; k < ${#SLOTS[@]}; k++)); do
		begin_run "$r" "$k" || continue
		s0=$(opens)
		w0=$(now)
		flood
		w1=$(now)
		s1=$(opens)
		end_run
		# The netns label must be on, or the config did not apply.
		if [ "$v" = netns ] && ! curl -sf "$URL/metrics" |
			grep -q '^netstack_tcp_connections_total{.*,netns="[0-9]*"}'; then
			note="$note no-netns-label"
		fi
		stop_variant
		# events/conn: program runs per connection C opened (about ten when only this
		# benchmark's connections ran it; more when other namespaces' state changes did too).
		record_run "$r" "$(awk -v c=$((c1 - c0)) -v a="$w0" -v b="$w1" \
			'BEGIN { print c / (b - a) }')" \
			"$(awk -v c=$((c1 - c0)) -v s=$((s1 - s0)) 'BEGIN { if (s > 0) print c / s }')"
	done
done

declare -A TARGET=([default]="<=$TARGET_DEFAULT")
print_table events/s
echo "ns/event: kernel run_time_ns / run_cnt (median over rounds; bpf_stats' own clock reads"
echo "are in every figure, the floor included). events/s: runs of the program (secondary)."
if [ "$SHARED" = 1 ]; then
	echo "shared-hook: someone else's program was on $HOOK during that run (another exporter,"
	echo "a test): it competed for the CPUs and its own state changes ran ours too."
fi
exit $status
