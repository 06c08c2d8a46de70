#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Cost per event of the retransmit program (bpf/retrans.bpf.c, "count_retransmit"; with the
# netns label "count_retransmit_netns"; without the cause label, "count_retransmit_nocause", the
# program of before the label, for what the label adds per event), measured by
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
PORT=5301
SECTION="kernel cost per event, TCP retransmits"

NS_C=nsrtxb-c$$ NS_S=nsrtxb-s$$
SINK= # tcpbulk sink in S
FLOW_PIDS=()

# shellcheck disable=SC2317 # run by the exit trap
bench_cleanup() {
	kill_wait "${FLOW_PIDS[@]}" "$SINK"
	ip netns del "$NS_C" 2>/dev/null
	ip netns del "$NS_S" 2>/dev/null
}

bench_setup "$TCPBULK" "$BUILD/tests/bench_floor" -- nft nstat ip
tracepoint_bench tcp_retransmit_skb retrans count_retransmit family,kind,cause,state,netns \
	netstack_tcp_retransmits_total
# The cause label's cost: the same labels but cause, in the same interleaved rounds.
VARIANTS+=(nocause)
TITLE[nocause]="default labels without cause" PROG[nocause]=count_retransmit_nocause
only_collector retrans nocause=family,kind,state

# C -> S over veth. Packets of at most 16 kB (gso_max_size) rather than 64 kB: more packets for
# the same bytes, so more losses, so more retransmissions per second.
{ ip netns add "$NS_C" && ip netns add "$NS_S"; } || die "cannot create network namespaces"
ip link add va netns "$NS_C" type veth peer name vb netns "$NS_S" || die "cannot create veth"
ip -n "$NS_C" addr add 10.97.0.1/24 dev va
ip -n "$NS_S" addr add 10.97.0.2/24 dev vb
ip -n "$NS_C" link set va gso_max_size 16384
ip -n "$NS_C" link set va up
ip -n "$NS_S" link set vb up
ip -n "$NS_S" link set lo up
ip netns exec "$NS_S" nft -f - <<EOT || die "cannot load the nftables rule"
table inet rtxbench {
	chain input {
		type filter hook input priority filter; policy accept;
		tcp dport $PORT meta length > 200 numgen random mod 100 < $DROP_PERCENT drop
	}
}
EOT
ip netns exec "$NS_S" "$TCPBULK" sink 10.97.0.2 "$PORT" >"$TMP/sink.out" 2>&1 &
SINK=$!
for _ in $(seq 50); do
	grep -q listening "$TMP/sink.out" && break
	sleep 0.05
done

# The flows: FLOWS transfers at once, for FLOOD_SECONDS.
# shellcheck disable=SC2317 # run by run_rounds
traffic() {
	local i
	FLOW_PIDS=()
	for ((i = 0; i < FLOWS; i++)); do
		ip netns exec "$NS_C" "$TCPBULK" send 10.97.0.2 "$PORT" "$FLOOD_SECONDS" >/dev/null &
		FLOW_PIDS+=($!)
	done
	wait "${FLOW_PIDS[@]}"
	FLOW_PIDS=()
}
COUNTER=("$NS_C" TcpRetransSegs)

# segs/event: retransmitted segments in C per program run (about the TSO size when only C
# retransmits; lower when other namespaces' retransmissions ran it too).
# shellcheck disable=SC2317 # run by run_rounds
figures() {
	RATE=$(rate $((c1 - c0)))
	EXTRA=$(quotient $((s1 - s0)) $((c1 - c0)))
	# For the cause label's cost: "ROUND VARIANT NS SEGS/EVENT" of each run with events.
	[ -z "$t0" ] || [ -z "$t1" ] || [ $((c1 - c0)) -le 0 ] ||
		echo "$1 $v $(quotient $((t1 - t0)) $((c1 - c0))) $EXTRA" >>"$TMP/by_round"
}

plan_runs
echo "netstack_exporter retransmit-path benchmark: $(uname -r), $(nproc) CPUs"
echo "traffic: $FLOWS tcpbulk flows over veth, $DROP_PERCENT % of data packets dropped," \
	"$FLOOD_SECONDS s per run, $ROUNDS rounds x ${#SLOTS[@]} variants, one program on $HOOK at" \
	"a time"
echo
run_rounds events/s segs/event

# Runs where other namespaces' retransmissions ran the program too (segments per run well
# below the usual) measured different events, many of them warm: they are left out.
SEGS_MEDIAN=$(awk '{ print $4 }' "$TMP/results" | spread | cut -d' ' -f1)
FOREIGN=$(awk -v m="${SEGS_MEDIAN:-0}" '$4 < 0.75 * m' "$TMP/results" | wc -l)

MIN_COL4=$SEGS_MEDIAN
print_table events/s
echo "ns/event: kernel run_time_ns / run_cnt (median over rounds; bpf_stats' own clock reads"
echo "are in every figure, the floor included). events/s: runs of the program (secondary)."
if [ "$FOREIGN" -gt 0 ]; then
	echo "left out: $FOREIGN run(s) with under 3/4 of the usual segs/event: retransmissions"
	echo "outside this benchmark's namespaces ran the program too."
fi

# What the cause label adds per event: the median over rounds of the round's difference (with
# minus without, runs of foreign events left out as above; the two run in the same round, so
# what slows a round slows both), and the ratio of the medians.
read -r with _ < <(median default 2)
read -r without _ < <(median nocause 2)
read -r added lo hi n < <(awk -v m="${SEGS_MEDIAN:-0}" '$4 >= 0.75 * m { ns[$1, $2] = $3 }
	END { for (k in ns) { split(k, p, SUBSEP)
		if (p[2] == "default" && ((p[1], "nocause") in ns))
			print ns[k] - ns[p[1], "nocause"] } }' "$TMP/by_round" 2>/dev/null | spread)
if [ -n "${with:-}" ] && [ -n "${without:-}" ] && [ -n "${added:-}" ]; then
	result=$(awk -v d="$added" 'BEGIN { print d <= 10 ? "PASS" : "MISS" }')
	printf 'cause label: %+.1f ns/event (median of %d rounds, %+.1f..%+.1f; medians %.1f and' \
		"$added" "$n" "$lo" "$hi" "$with"
	printf ' %.1f ns), target <= +10 ns: %s\n' "$without" "$result"
	row "$SECTION" "cause label: default labels against the same without cause" \
		"$(printf '%+.1f ns/event' "$added")" "${TITLE[nocause]}" \
		"$(awk -v a="$with" -v b="$without" 'BEGIN { printf "%.2fx", a / b }')" "<=+10 ns" \
		"$result" "$(printf 'median of the rounds'"'"' differences, %+.1f..%+.1f (%d); medians' \
		"$lo" "$hi" "$n") $(printf '%.1f and %.1f ns' "$with" "$without")"
else
	echo "cause label: no figure (a variant has no valid measurement)"
	row "$SECTION" "cause label: default labels against the same without cause" - - - \
		"<=+10 ns" "" "no valid measurement"
	status=1
fi
echo
shared_note "traffic's retransmissions"
exit $status
