#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What native buckets add to the RTT program, paired: two exporters attached at once, one with
# native_schema = off and one with the default schema, so both programs run on every callback of
# the same loopback transfer and bpf_stats times each; a round's figure is the difference of
# their ns/event. On a shared machine the load moves every figure of tests/bench/rtt.sh by tens
# of ns from run to run; a pair sees the same load. The program attached first meets the hook
# cold, so the order alternates; the summary is the median over rounds and per order.
# Not part of make bench (rtt.sh has the rows); run it by hand: ROUNDS (6), SECONDS_PER_RUN (3),
# LABELS (family; family,netns for the netns label).
set -u
cd "$(dirname "$0")/../.." || exit 1
source tests/bench/lib.sh
ROUNDS=${ROUNDS:-6}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-3}
LABELS=${LABELS:-family}
TCPBULK=$BUILD/tests/tcpbulk
PROGRAM=tcp_rtt_sockops
[ "$LABELS" = family ] || PROGRAM=tcp_rtt_sockops_labels
SINK_PID="" A_PID="" B_PID=""

# shellcheck disable=SC2317 # run by the exit trap
bench_cleanup() { kill_wait "$A_PID" "$B_PID" "$SINK_PID"; }

bench_setup "$TCPBULK" -- ss
only_collector rtt classic="$LABELS" native="$LABELS"
echo 'native_schema = off' >>"$TMP/classic.ini"
echo 'existing_sockets = false' | tee -a "$TMP/classic.ini" >>"$TMP/native.ini"

PORT=$(free_tcp_port) || die "no free TCP port for the sink"
"$TCPBULK" sink 127.0.0.1 "$PORT" >/dev/null 2>&1 &
SINK_PID=$!
# stats PORT: "run_ns runs" of the program, from that exporter's /metrics.
stats() {
	curl -sf "http://127.0.0.1:$1/metrics" | awk -v p="program=\"$PROGRAM\"" '
		index($0, "netstack_bpf_program_run_seconds_total{" p "}") == 1 { s = $2 }
		index($0, "netstack_bpf_program_runs_total{" p "}") == 1 { n = $2 }
		END { printf "%.0f %d\n", s * 1e9, n }'
}
# start VARIANT PORT: an exporter with $TMP/VARIANT.ini, up when its /metrics answers.
start() {
	"$EXPORTER" --config "$TMP/$1.ini" --web.listen-address "127.0.0.1:$2" >"$TMP/$1.log" 2>&1 &
	for _ in $(seq 100); do
		curl -sf "http://127.0.0.1:$2/metrics" | grep -q "^netstack_collector_up{collector=\"rtt\"} 1" &&
			return 0
		sleep 0.05
	done
	die "$1 exporter did not start: $(tail -n 3 "$TMP/$1.log")"
}

echo "netstack_exporter RTT native buckets, paired: $(uname -r), $(nproc) CPUs, labels $LABELS"
printf '%-5s %-14s %16s %16s %10s\n' round first "classic ns/event" "native ns/event" added
for round in $(seq "$ROUNDS"); do
	first=classic second=native
	[ $((round % 2)) = 0 ] && first=native second=classic
	PA=$(free_tcp_port) || die "no free TCP port"
	PB=$(free_tcp_port) || die "no free TCP port"
	start "$first" "$PA"
	A_PID=$!
	start "$second" "$PB"
	B_PID=$!
	read -r a0 an0 < <(stats "$PA")
	read -r b0 bn0 < <(stats "$PB")
	"$TCPBULK" send 127.0.0.1 "$PORT" "$SECONDS_PER_RUN" >/dev/null 2>&1
	read -r a1 an1 < <(stats "$PA")
	read -r b1 bn1 < <(stats "$PB")
	kill_wait "$A_PID" "$B_PID"
	A_PID="" B_PID=""
	awk -v f="$first" -v r="$round" -v a=$((a1 - a0)) -v an=$((an1 - an0)) \
		-v b=$((b1 - b0)) -v bn=$((bn1 - bn0)) 'BEGIN {
			if (an < 1000 || bn < 1000) { printf "%-5s %-14s invalid: too few events\n", r, f; exit }
			c = f == "classic" ? a / an : b / bn
			n = f == "classic" ? b / bn : a / an
			printf "%-5s %-14s %16.1f %16.1f %10.1f\n", r, f, c, n, n - c
		}' | tee -a "$TMP/rounds"
done
# Column 5: the difference; rounds by order, then all.
for order in classic native ""; do
	awk -v o="$order" '$5 != "" && $3 != "invalid:" && (o == "" || $2 == o) { print $5 }' \
		"$TMP/rounds" | spread | awk -v o="${order:+$order first}" '{
		printf "native buckets add %.1f ns/event (median; %.1f..%.1f, %d rounds%s)\n",
			$1, $2, $3, $4, o ? ", " o : "" }'
done
