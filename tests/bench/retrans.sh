#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Cost per event of the retransmit program (bpf/retrans.bpf.c, "count_retransmit"; with the
# netns label "count_retransmit_netns"), measured by
# the kernel (kernel.bpf_stats_enabled=1) during loss-heavy bulk TCP transfers, against an empty
# tp_btf/tcp_retransmit_skb program (the floor: tests/bench/floor_retrans.bpf.c). Variants run
# one at a time, in interleaved rounds, and each is the only program we attach to the hook.
# Traffic: FLOWS tcpbulk flows from namespace C to S over veth, S's nftables input chain
# dropping DROP_PERCENT % of the data packets at random. The exporter's figures come from its
# own /metrics (netstack_bpf_program_*). A missed target is printed, not a failure.
# Not paired with the floor as drops.sh is (tests/bench/lib.sh): on this rare event the program
# attached first pays the hook's cold cache lines, tens of ns for the floor but next to nothing
# measurable for ours, so a pair's ratio would not be the ratio of each alone.
# Environment: BUILD (default build), ROUNDS (7), FLOOD_SECONDS (3), FLOWS (16), DROP_PERCENT (5).
set -u
cd "$(dirname "$0")/../.." || exit 1
source tests/bench/lib.sh
ROUNDS=${ROUNDS:-7}
FLOOD_SECONDS=${FLOOD_SECONDS:-3}
FLOWS=${FLOWS:-16}
DROP_PERCENT=${DROP_PERCENT:-5}
TCPBULK=$BUILD/tests/tcpbulk
FLOOR=$BUILD/tests/bench_floor
HOOK=tcp_retransmit_skb
PORT=5301
TARGET_DEFAULT=1.5
ALONE=1
VARIANTS=(floor default netns)
SECTION="kernel cost per event, TCP retransmits"
declare -A TITLE=([floor]="floor (empty prog)" [default]="default labels" [netns]="netns label")

[ "$(id -u)" -eq 0 ] || die "needs root (BPF, namespaces and kernel.bpf_stats_enabled)"
[ -r /sys/kernel/btf/vmlinux ] || die "needs kernel BTF (/sys/kernel/btf/vmlinux)"
for f in "$EXPORTER" "$TCPBULK" "$FLOOR"; do
	[ -x "$f" ] || die "$f not built (make BUILD=$BUILD bench builds it)"
done
for c in bpftool curl nft nstat ip awk; do
	command -v "$c" >/dev/null || die "needs $c"
done

TMP=$(mktemp -d /tmp/netstack-bench.XXXXXX)
FLOOR_CMD=("$FLOOR" "$HOOK")
declare -A PROG=([default]=count_retransmit [netns]=count_retransmit_netns)
STATS_BEFORE=$(cat "$STATS")
NS_C=nsrtxb-c$$ NS_S=nsrtxb-s$$
PID=  # the variant currently attached
SINK= # tcpbulk sink in S
FLOW_PIDS=()

# shellcheck disable=SC2317 # run by the trap
cleanup() {
	local p
	for p in "${FLOW_PIDS[@]}"; do
		kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
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

# C -> S over veth. Packets of at most 16 kB (gso_max_size) rather than 64 kB: more packets for
# the same bytes, so more losses, so more retransmissions per second.
ip netns add "$NS_C" && ip netns add "$NS_S" || die "cannot create network namespaces"
ip link add va netns "$NS_C" type veth peer name vb netns "$NS_S" || die "cannot create veth"
ip -n "$NS_C" addr add 10.97.0.1/24 dev va
ip -n "$NS_S" addr add 10.97.0.2/24 dev vb
ip -n "$NS_C" link set va gso_max_size 16384
ip -n "$NS_C" link set va up
ip -n "$NS_S" link set vb up
ip -n "$NS_S" link set lo up
ip netns exec "$NS_S" nft -f - <<EOF || die "cannot load the nftables rule"
table inet rtxbench {
	chain input {
		type filter hook input priority filter; policy accept;
		tcp dport $PORT meta length > 200 numgen random mod 100 < $DROP_PERCENT drop
	}
}
EOF
ip netns exec "$NS_S" "$TCPBULK" sink 10.97.0.2 "$PORT" >"$TMP/sink.out" 2>&1 &
SINK=$!
for _ in $(seq 50); do
	grep -q listening "$TMP/sink.out" && break
	sleep 0.05
done

# The exporter runs the retrans collector alone: every other collector is disabled by name.
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
	[ "$c" != retrans ] && OTHERS+=("$c")
done
for v in default netns; do
	{
		for c in "${OTHERS[@]}"; do
			printf '[collector.%s]\nenabled = false\n' "$c"
		done
		echo '[collector.retrans]'
		if [ "$v" = netns ]; then
			echo 'labels = family,kind,state,netns'
		fi
	} >"$TMP/$v.ini"
done

# Links on the hook, ours included (tests/bench/lib.sh: hook_links, wait_hook_free).
HOOK_LINK="'$HOOK'"

retrans_segs() {
	ip netns exec "$NS_C" nstat -saz TcpRetransSegs | awk '$1 == "TcpRetransSegs" { print $2 }'
}

# The flows: FLOWS transfers at once, for FLOOD_SECONDS.
flood() {
	local i
	FLOW_PIDS=()
	for ((i = 0; i < FLOWS; i++)); do
		ip netns exec "$NS_C" "$TCPBULK" send 10.97.0.2 "$PORT" "$FLOOD_SECONDS" >/dev/null &
		FLOW_PIDS+=($!)
	done
	wait "${FLOW_PIDS[@]}"
	FLOW_PIDS=()
}

plan_runs
echo "netstack_exporter retransmit-path benchmark: $(uname -r), $(nproc) CPUs"
echo "traffic: $FLOWS tcpbulk flows over veth, $DROP_PERCENT % of data packets dropped," \
	"$FLOOD_SECONDS s per run, $ROUNDS rounds x ${#SLOTS[@]} variants, one program on $HOOK at" \
	"a time"
echo
run_header events/s segs/event
: >"$TMP/results"
SHARED=0
for ((r = 0; r < ROUNDS; r++)); do
	for ((k = 0; k < ${#SLOTS[@]}; k++)); do
		begin_run "$r" "$k" || continue
		s0=$(retrans_segs)
		w0=$(now)
		flood
		w1=$(now)
		s1=$(retrans_segs)
		end_run
		# The netns label must be on, or the config did not apply.
		if [ "$v" = netns ] && ! curl -sf "$URL/metrics" |
			grep -q '^netstack_tcp_retransmits_total{.*,netns="[0-9]*"}'; then
			note="$note no-netns-label"
		fi
		stop_variant
		# segs/event: retransmitted segments in C per program run (about the TSO size when
		# only C retransmits; lower when other namespaces' retransmissions ran it too).
		record_run "$r" "$(awk -v c=$((c1 - c0)) -v a="$w0" -v b="$w1" \
			'BEGIN { print c / (b - a) }')" \
			"$(awk -v c=$((c1 - c0)) -v s=$((s1 - s0)) 'BEGIN { if (c > 0) print s / c }')"
	done
done

# Runs where other namespaces' retransmissions ran the program too (segments per run well
# below the usual) measured different events, many of them warm: they are left out.
SEGS_MEDIAN=$(awk '{ print $4 }' "$TMP/results" | spread | cut -d' ' -f1)
FOREIGN=$(awk -v m="${SEGS_MEDIAN:-0}" '$4 < 0.75 * m' "$TMP/results" | wc -l)

declare -A TARGET=([default]="<=$TARGET_DEFAULT")
MIN_COL4=$SEGS_MEDIAN
print_table events/s
echo "ns/event: kernel run_time_ns / run_cnt (median over rounds; bpf_stats' own clock reads"
echo "are in every figure, the floor included). events/s: runs of the program (secondary)."
if [ "$FOREIGN" -gt 0 ]; then
	echo "left out: $FOREIGN run(s) with under 3/4 of the usual segs/event: retransmissions"
	echo "outside this benchmark's namespaces ran the program too."
fi
if [ "$SHARED" = 1 ]; then
	echo "shared-hook: someone else's program was on $HOOK during that run (another exporter,"
	echo "a test): it competed for the CPUs and its own traffic's retransmissions ran ours too."
fi
exit $status
