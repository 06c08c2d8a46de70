#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Cost per event of the RTT program (bpf/rtt.bpf.c: "tcp_rtt_sockops", or with optional labels
# "tcp_rtt_sockops_labels"), measured by the kernel (kernel.bpf_stats_enabled=1) while tcpbulk
# runs a bulk TCP transfer on loopback, against a floor sockops program that sees the same
# callbacks (tests/bench/rtt_floor.bpf.c: it turns the RTT callback on where ours does and
# records nothing). An event is one sockops callback of any kind; during a bulk transfer nearly
# all are RTT callbacks. Variants run one at a time, in interleaved rounds, on the cgroup2 root.
# The exporter's figures come from its own /metrics (netstack_bpf_program_*). A missed target
# is printed, not a failure: this is a benchmark.
# Cells (bpf/hist.h: classic and native buckets both derived from one counter per sample):
# "classic" is the reference, the classic-only program of the tree before cells and native
# buckets (tests/bench/rtt_floor.bpf.c tcp_rtt_classic), in the same run; the summary says what
# the cells add per event against it (target: at most CELL_TARGET_NS, 5 ns).
# Not paired with the floor as drops.sh is (tests/bench/lib.sh): on this rare event the program
# attached first pays the hook's cold cache lines, tens of ns for the floor but next to nothing
# measurable for ours, so a pair's ratio would not be the ratio of each alone.
# Environment: BUILD (default build), ROUNDS (5), SECONDS_PER_RUN (2).
set -u
cd "$(dirname "$0")/../.." || exit 1
source tests/bench/lib.sh
ROUNDS=${ROUNDS:-5}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-2}
TCPBULK=$BUILD/tests/tcpbulk
FLOOR=$BUILD/tests/bench_rtt_floor
declare -A PROG=([default]=tcp_rtt_sockops [netns]=tcp_rtt_sockops_labels
	[all]=tcp_rtt_sockops_labels)
TARGET_DEFAULT=1.3
CELL_TARGET_NS=5
ALONE=1
VARIANTS=(floor default netns all)
SECTION="kernel cost per event, TCP RTT (sockops)"
declare -A TITLE=([floor]="floor (flag only)" [default]="default labels"
	[netns]="netns label" [all]="netns + rtt_kind")
peer classic "classic only, before cells (reference)" "$FLOOR --classic" \
	"sock_ops  name tcp_rtt_classic"

FLOOR_CMD=("$FLOOR")
SINK_PID= # the transfer's receiver
BULK_PID=

# shellcheck disable=SC2317 # run by the exit trap
bench_cleanup() { kill_wait "$BULK_PID" "$SINK_PID"; }

bench_setup "$TCPBULK" "$FLOOR" -- ss

# Links on the hook, ours included (tests/bench/lib.sh: hook_links, wait_hook_free).
HOOK_LINK='attach_type cgroup_sock_ops'

only_collector rtt default=family netns=family,netns all=family,netns,rtt_kind
# The transfer's samples must carry the optional labels, or the config did not apply.
EXPECT=([all]='no-rtt_kind-label rtt_kind="sample"'
	[netns]='no-netns-label family="ipv4",netns="')

PORT=$(free_tcp_port) || die "no free TCP port for the sink"
"$TCPBULK" sink 127.0.0.1 "$PORT" >/dev/null 2>&1 &
SINK_PID=$!
for _ in $(seq 50); do
	[ -n "$(ss -Htln "sport = :$PORT")" ] && break
	sleep 0.05
done
plan_runs
echo "netstack_exporter RTT benchmark: $(uname -r), $(nproc) CPUs"
echo "traffic: tcpbulk send 127.0.0.1 $PORT for $SECONDS_PER_RUN s per run (one new connection" \
	"each), $ROUNDS rounds x ${#SLOTS[@]} variants, one sockops program at a time"
echo
# shellcheck disable=SC2317 # run by run_rounds
traffic() {
	"$TCPBULK" send 127.0.0.1 "$PORT" "$SECONDS_PER_RUN" >"$TMP/bulk.out" 2>&1 &
	BULK_PID=$!
	wait "$BULK_PID"
	BULK_PID=
}

# shellcheck disable=SC2317 # run by run_rounds
figures() {
	local sent
	sent=$(tail -n 1 "$TMP/bulk.out")
	if ! [[ "$sent" =~ ^[0-9]+$ ]]; then
		invalid "$1" "the transfer failed"
		return 1
	fi
	RATE=$(rate "$sent" | awk '{ print $1 / 1e6 }')
}

run_rounds MB/s ""

declare -A TARGET=([default]="<=$TARGET_DEFAULT")
print_table MB/s
# cell_row: what the cells add per event to the default labels' program, against the classic-only
# reference, median against median.
cell_row() {
	local with without added result
	read -r with _ < <(median default 2)
	read -r without _ < <(median classic 2)
	if [ -z "${with:-}" ] || [ -z "${without:-}" ]; then
		echo "cells: no valid measurement"
		row "$SECTION" "RTT program with cells (default labels): added" - \
			"${TITLE[classic]}" - "<=+$CELL_TARGET_NS ns" "" "no valid measurement"
		return
	fi
	added=$(awk -v a="$with" -v b="$without" 'BEGIN { printf "%.1f", a - b }')
	result=$(awk -v d="$added" -v t="$CELL_TARGET_NS" 'BEGIN { print d <= t ? "PASS" : "MISS" }')
	printf 'cells add %s ns/event to the default labels (%.1f against %.1f, %.2fx): %s\n' \
		"$added" "$with" "$without" "$(quotient "$with" "$without")" "$result"
	row "$SECTION" "RTT program with cells (default labels): added" "$added ns/event" \
		"${TITLE[classic]}" "$(printf '%.2fx' "$(quotient "$with" "$without")")" \
		"<=+$CELL_TARGET_NS ns" "$result" "medians $with vs $without ns/event"
}
cell_row
# The cell alone, hot in cache (tests/tools/hist_check.c --bench).
if [ -x "$BUILD/tests/hist_check" ] &&
	"$BUILD/tests/hist_check" --bench >"$TMP/cell" 2>"$TMP/cell.err"; then
	cat "$TMP/cell"
	# "cell: W ns per value with the cell, L without: D ns"
	read -r added with < <(awk '{ print $(NF - 1), $2 }' "$TMP/cell")
	row "$SECTION" "histogram cell alone (hot, test run)" "$added ns/value" "" "" "" "" \
		"$with ns/value with the loop around it"
else
	echo "histogram cell alone: not measured ($(head -n 1 "$TMP/cell.err" 2>/dev/null))"
fi
echo "ns/event: kernel run_time_ns / run_cnt over every sockops callback (median over rounds;"
echo "bpf_stats' own clock reads are in every figure, the floor included). MB/s: what tcpbulk"
echo "sent (secondary)."
if [ "$SHARED" = 1 ]; then
	echo "shared-hook: someone else's sockops program was attached during that run (another"
	echo "exporter, a test): it ran on the same callbacks and competed for the CPUs."
fi
exit $status
