#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Cost per event of the connections program (bpf/connections.bpf.c: "count_handshake", the
# default, with handshake timing; "count_connection" with handshake_time = false; with the netns
# label "count_handshake_netns"), measured by the kernel (kernel.bpf_stats_enabled=1) during TCP
# connection churn, against an empty tp_btf/inet_sock_set_state program (the floor:
# tests/bench/floor_connections.bpf.c). Variants run one at a time, in interleaved rounds, and
# each is the only program we attach to the hook. (native_schema changes only the rendering,
# not the program: no variant of its own.)
# Traffic: THREADS loops in namespace C of connect, a byte, FINs both ways (tests/tools/
# tcpconn.py churn) to a server in S over veth, for FLOOD_SECONDS: every state change of both
# ends runs the program, the ones it counts (to ESTABLISHED and to CLOSE) and the ones it
# returns from at once (LISTEN to SYN_RECV, to FIN_WAIT1, ...), about ten per connection.
# The exporter's figures come from its own /metrics (netstack_bpf_program_*). A missed target is
# printed, not a failure. Each variant runs alone, as in retrans.sh (tests/bench/lib.sh: ALONE).
# Handshake timing's own figure: the median ns/event of the default minus that without timing,
# against the target of at most HS_TARGET_NS (10) ns per event.
# Environment: BUILD (default build), ROUNDS (7), FLOOD_SECONDS (3), THREADS (4).
set -u
cd "$(dirname "$0")/../.." || exit 1
source tests/bench/lib.sh
ROUNDS=${ROUNDS:-7}
FLOOD_SECONDS=${FLOOD_SECONDS:-3}
THREADS=${THREADS:-4}
CONN=tests/tools/tcpconn.py
PORT=5311
SECTION="kernel cost per event, TCP connections"

NS_C=conns-bc$$ NS_S=conns-bs$$
SINK= # tcpconn.py server in S

# shellcheck disable=SC2317 # run by the exit trap
bench_cleanup() {
	kill_wait "$SINK"
	ip netns del "$NS_C" 2>/dev/null
	ip netns del "$NS_S" 2>/dev/null
}

bench_setup "$BUILD/tests/bench_floor" /usr/bin/python3 -- nstat ip
tracepoint_bench inet_sock_set_state connections count_handshake \
	family,direction,outcome,netns netstack_tcp_connections_total
HS_TARGET_NS=${HS_TARGET_NS:-10}
VARIANTS=(floor default notiming netns)
TITLE[default]="default labels (handshake timing on)"
TITLE[notiming]="default labels, handshake_time = false"
TITLE[netns]="netns label (handshake timing on)"
PROG[notiming]=count_connection
EXPECT[default]="no-handshake-histogram ^netstack_tcp_handshake_seconds_count{family=\"ipv4\",direction=\"active\"} [1-9]"
only_collector connections notiming=
echo "handshake_time = false" >>"$TMP/notiming.ini"

# C -> S over veth; the server accepts on [::]:PORT and drains each connection.
{ ip netns add "$NS_C" && ip netns add "$NS_S"; } || die "cannot create network namespaces"
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

# The churn: THREADS connection loops at once, for FLOOD_SECONDS.
# shellcheck disable=SC2317 # run by run_rounds
traffic() {
	ip netns exec "$NS_C" "$CONN" churn 10.96.0.2 "$PORT" "$FLOOD_SECONDS" "$THREADS" >/dev/null
}
COUNTER=("$NS_C" TcpActiveOpens)

# events/conn: program runs per connection C opened (about ten when only this benchmark's
# connections ran it; more when other namespaces' state changes did too).
# shellcheck disable=SC2317 # run by run_rounds
figures() {
	RATE=$(rate $((c1 - c0)))
	EXTRA=$(quotient $((c1 - c0)) $((s1 - s0)))
}

plan_runs
echo "netstack_exporter connection-path benchmark: $(uname -r), $(nproc) CPUs"
echo "traffic: $THREADS loops of TCP connect and close over veth, $FLOOD_SECONDS s per run," \
	"$ROUNDS rounds x ${#SLOTS[@]} variants, one program on $HOOK at a time"
echo
run_rounds events/s events/conn

print_table events/s
# What handshake timing adds: the default-label variants' medians, each run alone.
read -r ns_off _ < <(median notiming 2)
read -r ns_on _ < <(median default 2)
if [ -z "${ns_off:-}" ] || [ -z "${ns_on:-}" ]; then
	echo "handshake timing: no figure (a variant had no valid run)"
	status=1
else
	added=$(awk -v a="$ns_on" -v b="$ns_off" 'BEGIN { printf "%.1f", a - b }')
	result=$(awk -v d="$added" -v t="$HS_TARGET_NS" 'BEGIN { print d <= t ? "PASS" : "MISS" }')
	echo "handshake timing adds $added ns/event to ${TITLE[notiming]} (target <= $HS_TARGET_NS):" \
		"$result"
	row "$SECTION" "handshake timing, added" "$added ns/event" "${TITLE[notiming]}" - \
		"<=$HS_TARGET_NS ns" "$result"
fi
echo "ns/event: kernel run_time_ns / run_cnt (median over rounds; bpf_stats' own clock reads"
echo "are in every figure, the floor included). events/s: runs of the program (secondary)."
shared_note "state changes"
exit $status
