#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Cost per event of the drop program (bpf/drops.bpf.c: "count_drop", with all optional labels
# "count_drop_fni"), measured by the kernel (kernel.bpf_stats_enabled=1) while udpflood sends
# to a closed UDP port on loopback, against an empty tp_btf/kfree_skb program (the floor:
# tests/bench/floor.bpf.c) attached BESIDE it: both run on every dropped datagram of the same
# flood, and a run's ratio is ours / floor of that run. Each round runs each of our variants
# twice, once attached before the floor and once after (the first program on the hook pays a
# few ns more); a round's ratio is the geometric mean of the two, the variant's the median over
# rounds (tests/bench/lib.sh). The exporter's figures come from its own /metrics
# (netstack_bpf_program_*), so they also check the self-metrics. Next to ours, on the same
# flood, each alone on the hook: bpftrace counting by reason in a map (the same aggregation, on
# the classic tracepoint) and bpftrace printing every event (the per-event model), measured
# through bpf_stats too, their ratio to ours' ns/event; the floor alone; and no tracer at all,
# the reference for the flood's throughput (datagrams/s, the second part of the table). Ours'
# datagrams/s are those of its paired runs, so they include the floor's cost: compare them to
# the floor's alone. A missing bpftrace is reported "not installed". A missed target is
# printed, not a failure: this is a benchmark.
# Environment: BUILD (default build), ROUNDS (5), FLOOD_SECONDS (2).
set -u
cd "$(dirname "$0")/../.." || exit 1
source tests/bench/lib.sh
ROUNDS=${ROUNDS:-5}
FLOOD_SECONDS=${FLOOD_SECONDS:-2}
UDPFLOOD=$BUILD/tests/udpflood
declare -A FLOOD_DEST=() # where a variant's flood goes, when not 127.0.0.1
FLOOR=$BUILD/tests/bench_floor
# The variants, in the order of the first round; one line each.
VARIANTS=(none floor)
TITLE=([none]="no tracer" [floor]="floor (empty prog)")
D='[collector.drops]\n'
ours default "default labels" count_drop "${D}labels = reason,family,protocol" "<=1.3"
ours all "all labels" count_drop_fni \
	"${D}labels = reason,family,protocol,function,netns,interface" "<=2.5"
# The program for kernels without bpf_rdonly_cast (before 6.2): no target, for comparison.
# The same, with the label set changing at every drop (IPv6 and IPv4 datagrams alternating,
# so family and function alternate): each drop misses the CPU's last-label-set cache and pays
# the hash lookup. No target: the worst case of the path above.
ours mixed "all labels, set changes every drop" count_drop_fni \
	"${D}labels = reason,family,protocol,function,netns,interface"
FLOOD_DEST[mixed]="::1,::ffff:127.0.0.1"
ours compat "default, helper read" count_drop_compat "${D}direct_read = false"
# Sampled events (docs/cost.md): target +10 % over default labels, printed below.
ours sample1000 "sampling 1/1000" sample_drop '[sampling]\ndrop_sample_rate = 1000'
ours sample1 "sampling 1/1, cap" sample_drop '[sampling]\ndrop_sample_rate = 1'
TP='tracepoint:skb:kfree_skb'
peer bpftrace_agg "bpftrace @[reason]=count()" \
	"bpftrace -e '$TP { @[args->reason] = count(); }'" "tracepoint  name kfree_skb" default
peer bpftrace_print "bpftrace printf per event" \
	"bpftrace -e '$TP { printf(\"%p %d\\n\", args->location, args->reason); }' >/dev/null" \
	"tracepoint  name kfree_skb" default ">=40"
SECTION="kernel cost per event, UDP drop flood"
RATE_SECTION="throughput of the drop flood"

if ! command -v bpftrace >/dev/null; then
	BROKEN[bpftrace_agg]="not installed (Debian bpftrace)"
	BROKEN[bpftrace_print]="not installed (Debian bpftrace)"
fi
FLOOR_CMD=("$FLOOR")
FLOOD_PID=
# bpftrace reads a classic tracepoint's format from tracefs, which a fresh machine may not have
# mounted: mounted for the run, unmounted after.
TRACEFS_MOUNTED=
if command -v bpftrace >/dev/null && [ ! -d /sys/kernel/tracing/events ]; then
	mount -t tracefs tracefs /sys/kernel/tracing && TRACEFS_MOUNTED=1
fi

# shellcheck disable=SC2317 # run by the exit trap
bench_cleanup() {
	kill_wait "$FLOOD_PID"
	[ -z "$TRACEFS_MOUNTED" ] || umount /sys/kernel/tracing
}

bench_setup "$UDPFLOOD" "$FLOOR" -- ss

closed_udp_port() {
	local p
	for p in $(shuf -i 20000-60000 -n 50); do
		[ -z "$(ss -Hauln "sport = :$p")" ] && echo "$p" && return 0
	done
	return 1
}

# Links on the hook, ours included (tests/bench/lib.sh: hook_links, wait_hook_free).
HOOK_LINK="'kfree_skb'"

UDP_PORT=$(closed_udp_port) || die "no closed UDP port found"
plan_runs
echo "netstack_exporter drop-path benchmark: $(uname -r), $(nproc) CPUs"
echo "flood: udpflood 127.0.0.1 $UDP_PORT (closed port), $FLOOD_SECONDS s per run," \
	"$ROUNDS rounds x ${#SLOTS[@]} runs; ours with the floor beside it, the others alone"
echo
# shellcheck disable=SC2317 # run by run_rounds
traffic() {
	"$UDPFLOOD" "${FLOOD_DEST[$v]:-127.0.0.1}" "$UDP_PORT" 0 "$FLOOD_SECONDS" >"$TMP/flood.out" &
	FLOOD_PID=$!
	wait "$FLOOD_PID"
	FLOOD_PID=
}

# ev/dgram well above 1: the drops of someone else's traffic were counted too.
# shellcheck disable=SC2317 # run by run_rounds
figures() {
	local sent
	sent=$(cat "$TMP/flood.out")
	if [ -z "$sent" ]; then
		invalid "$1" "the flood failed"
		return 1
	fi
	RATE=$(rate "$sent")
	EXTRA=$(quotient $((c1 - c0)) "$sent")
}

# The flood's drops must carry the optional labels, or the config did not apply.
EXPECT[all]='no-interface-label interface="lo"'
run_rounds datagrams/s ev/dgram

print_table datagrams/s
read -r d _ < <(pair_median default)
read -r s1k _ < <(pair_median sample1000)
if [ -n "${d:-}" ] && [ -n "${s1k:-}" ]; then
	awk -v d="$d" -v s="$s1k" 'BEGIN { printf "sampling 1/1000 vs default: %+.1f %% (target" \
		" <= +10 %%; of their paired ratios)\n", (s / d - 1) * 100 }'
	r=$(awk -v d="$d" -v s="$s1k" 'BEGIN { printf "%.2f", s / d }')
	row "$SECTION" "sampling 1/1000, against default labels" "$(awk -v r="$r" \
		'BEGIN { printf "%+.1f %%", (r - 1) * 100 }')" "default labels" "${r}x" "<=1.10" \
		"$(judge "$r" "<=1.10")" "of their paired ratios to the floor"
fi
read -r ff fs < <(first_second floor)
read -r df ds < <(first_second default)
[ -n "${fs:-}" ] && [ -n "${ds:-}" ] && awk -v ff="$ff" -v fs="$fs" -v df="$df" -v ds="$ds" \
	'BEGIN { printf "attached first / second (median): the floor %.1f / %.1f ns, default labels" \
		" %.1f / %.1f ns (first / first: %.2fx)\n", ff, fs, df, ds, df / ff }'
echo "ns/event: kernel run_time_ns / run_cnt (median over runs; bpf_stats' own clock reads are"
echo "in every figure, the floor included). Ours ran with the floor attached beside it, on the"
echo "same events: ratio = median over rounds of the geometric mean of ours/floor with ours"
echo "attached first and with the floor first (pairs: its range). Where being first costs one"
echo "program more than the other (the line above), that is not quite the ratio of each alone"
echo "(alone, each is first: first / first, of different runs). The floor's ns/event: all its"
echo "runs, alone and paired. bpftrace ran alone; its ratio is to ours' ns/event. datagrams/s:"
echo "what udpflood sent, whose ratio to no tracer is the throughput effect; ours' (+ floor) is"
echo "with the floor beside it, so it includes the floor's cost. bpftrace runs on the classic"
echo "tracepoint: the perf trace buffer it fills before its program runs is not in its"
echo "ns/event, only in datagrams/s."
if [ "$SHARED" = 1 ]; then
	echo "shared-hook: someone else's program was on kfree_skb during that run (another"
	echo "exporter, a test): it competed for the CPUs and its traffic's drops were counted too."
fi
exit $status
