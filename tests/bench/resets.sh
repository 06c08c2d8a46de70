#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Cost per event of the sent-reset program (bpf/resets.bpf.c, "count_sent"; with the netns label
# "count_sent_netns"), measured by the kernel (kernel.bpf_stats_enabled=1) while connects to a
# closed port in a namespace of its own (tests/tools/rstflood) make resets without a socket (NO_SOCKET: the segment's
# family and device are read), against an empty tp_btf/tcp_send_reset program (the floor:
# tests/bench/floor_resets.bpf.c). Variants run one at a time, in interleaved rounds, each the
# only program we attach to the hook: as for retransmits (tests/bench/retrans.sh), an event
# comes once per connect system call, so every event meets cold caches and a pair's first
# program would pay the hook's cold lines for the other. The exporter's figures come from its own /metrics (netstack_bpf_program_*). A missed target is
# printed, not a failure. Kernels before 6.10 fire no tracepoint for a reset without a socket:
# there the benchmark has no events and says so.
# Environment: BUILD (default build), ROUNDS (7), FLOOD_SECONDS (3).
set -u
cd "$(dirname "$0")/../.." || exit 1
source tests/bench/lib.sh
ROUNDS=${ROUNDS:-7}
FLOOD_SECONDS=${FLOOD_SECONDS:-3}
RSTFLOOD=$BUILD/tests/rstflood
PORT=9 # nothing listens in the benchmark's namespace
SECTION="kernel cost per event, TCP resets sent"

NS=resets-bench$$

# shellcheck disable=SC2317 # run by the exit trap
bench_cleanup() { ip netns del "$NS" 2>/dev/null; }

bench_setup "$BUILD/tests/bench_floor" "$RSTFLOOD" -- ip
tracepoint_bench tcp_send_reset resets count_sent family,reason,state,netns \
	netstack_tcp_resets_sent_total

{ ip netns add "$NS" && ip -n "$NS" link set lo up; } ||
	die "cannot create a network namespace"
# Before 6.10 the default program is count_sent_noreason (and sees no reset without a socket).
if [ "$(bpftool btf dump file /sys/kernel/btf/vmlinux | awk '
	$2 == "TYPEDEF" && $3 == "'"'btf_trace_$HOOK'"'" { print; exit }' | wc -l)" -eq 0 ]; then
	die "this kernel has no $HOOK tracepoint"
fi

# shellcheck disable=SC2317 # run by run_rounds
traffic() { n=$(ip netns exec "$NS" "$RSTFLOOD" 127.0.0.1 "$PORT" "$FLOOD_SECONDS"); }
# shellcheck disable=SC2317 # run by run_rounds
figures() { RATE=$(rate "${n:-0}") EXTRA=-; }

plan_runs
echo "netstack_exporter sent-reset benchmark: $(uname -r), $(nproc) CPUs"
echo "traffic: connects to a closed port on the loopback of a namespace (one RST without a" \
	"socket each), $FLOOD_SECONDS s per run, $ROUNDS rounds x ${#SLOTS[@]} runs"
echo
run_rounds resets/s -

print_table resets/s
echo "ns/event: kernel run_time_ns / run_cnt (median over rounds; bpf_stats' own clock reads"
echo "are in every figure, the floor included). ratio: ours / the floor's, medians over rounds."
shared_note resets
exit $status
