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
FLOOR=$BUILD/tests/bench_floor
RSTFLOOD=$BUILD/tests/rstflood
PORT=9 # nothing listens in the benchmark's namespace
HOOK=tcp_send_reset
TARGET_DEFAULT=1.5
ALONE=1
VARIANTS=(floor default netns)
SECTION="kernel cost per event, TCP resets sent"
declare -A TITLE=([floor]="floor (empty prog)" [default]="default labels" [netns]="netns label")

[ "$(id -u)" -eq 0 ] || die "needs root (BPF, namespaces and kernel.bpf_stats_enabled)"
[ -r /sys/kernel/btf/vmlinux ] || die "needs kernel BTF (/sys/kernel/btf/vmlinux)"
for f in "$EXPORTER" "$FLOOR" "$RSTFLOOD"; do
	[ -x "$f" ] || die "$f not built (make BUILD=$BUILD bench builds it)"
done
for c in bpftool curl ip awk; do
	command -v "$c" >/dev/null || die "needs $c"
done

TMP=$(mktemp -d /tmp/netstack-bench.XXXXXX)
FLOOR_CMD=("$FLOOR" "$HOOK")
declare -A PROG=([default]=count_sent [netns]=count_sent_netns)
STATS_BEFORE=$(cat "$STATS")
NS=resets-bench$$
PID= # the variant currently attached

# shellcheck disable=SC2317 # run by the trap
cleanup() {
	stop_variant
	ip netns del "$NS" 2>/dev/null
	echo "$STATS_BEFORE" >"$STATS"
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo 1 >"$STATS" || die "cannot enable kernel.bpf_stats_enabled"
ip netns add "$NS" && ip -n "$NS" link set lo up || die "cannot create a network namespace"

# The exporter runs the resets collector alone: every other collector is disabled by name.
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
	[ "$c" != resets ] && OTHERS+=("$c")
done
for v in default netns; do
	{
		for c in "${OTHERS[@]}"; do
			printf '[collector.%s]\nenabled = false\n' "$c"
		done
		echo '[collector.resets]'
		if [ "$v" = netns ]; then
			echo 'labels = family,reason,state,netns'
		fi
	} >"$TMP/$v.ini"
done
# Before 6.10 the default program is count_sent_noreason (and sees no reset without a socket).
if [ "$(bpftool btf dump file /sys/kernel/btf/vmlinux | awk '
	$2 == "TYPEDEF" && $3 == "'"'btf_trace_$HOOK'"'" { print; exit }' | wc -l)" -eq 0 ]; then
	die "this kernel has no $HOOK tracepoint"
fi

# Links on the hook, ours included (tests/bench/lib.sh: hook_links, wait_hook_free).
HOOK_LINK="'$HOOK'"

plan_runs
echo "netstack_exporter sent-reset benchmark: $(uname -r), $(nproc) CPUs"
echo "traffic: connects to a closed port on the loopback of a namespace (one RST without a" \
	"socket each), $FLOOD_SECONDS s per run, $ROUNDS rounds x ${#SLOTS[@]} runs"
echo
run_header resets/s -
: >"$TMP/results"
SHARED=0
for ((r = 0; r < ROUNDS; r++)); do
	for ((k = 0; k < ${#SLOTS[@]}; k++)); do
		begin_run "$r" "$k" || continue
		w0=$(now)
		n=$(ip netns exec "$NS" "$RSTFLOOD" 127.0.0.1 "$PORT" "$FLOOD_SECONDS")
		w1=$(now)
		end_run
		# The netns label must be on, or the config did not apply.
		if [ "$v" = netns ] && ! curl -sf "$URL/metrics" |
			grep -q '^netstack_tcp_resets_sent_total{.*,netns="[0-9]*"}'; then
			note="$note no-netns-label"
		fi
		stop_variant
		record_run "$r" "$(awk -v n="${n:-0}" -v a="$w0" -v b="$w1" \
			'BEGIN { print n / (b - a) }')" -
	done
done

declare -A TARGET=([default]="<=$TARGET_DEFAULT")
print_table resets/s
echo "ns/event: kernel run_time_ns / run_cnt (median over rounds; bpf_stats' own clock reads"
echo "are in every figure, the floor included). ratio: ours / the floor's, medians over rounds."
if [ "$SHARED" = 1 ]; then
	echo "shared-hook: someone else's program was on $HOOK during that run (another exporter,"
	echo "a test): it competed for the CPUs and its own resets ran ours too."
fi
exit $status
