#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Prometheus never refuses a scrape under load (issue 33). A real Prometheus (Debian's 2.42) with
# --enable-feature=native-histograms, so that it asks for protobuf and stores the native buckets,
# scrapes the exporter every 0.5 s while, between two network namespaces of our own over a veth,
# a TCP stream runs and two connect/close loops (IPv4 and IPv6, tests/tools/tcpchurn) make
# thousands of handshakes a second: RTT and handshake samples land while the exporter reads.
# Prometheus refuses a whole scrape (up 0, every family stale) when a histogram's native buckets
# hold more observations than its count ("N observations found in buckets, but the Count field
# is M"), which a count and buckets read at different moments give. Three exporters run at once,
# one per configuration: defaults; the netns label on the RTT and connection histograms; the
# same with max_series = 2, so that both hashes overflow. For each:
#   1. Prometheus scraped it at least SCRAPES (60) times, every 0.5 s, and `up` was 1 at every
#      scrape;
#   2. Prometheus's debug log names no error for it (no "Append failed", no "observations found
#      in buckets", no failed scrape);
#   3. it stored the RTT and handshake histograms as native ones (protobuf was used), and the
#      load ran: handshakes and RTT samples counted over the window; with max_series = 2,
#      netstack_map_overflow_total of both hashes > 0.
# schedule: serial once
# why: it floods connections and a stream for about a minute, which would skew other scripts'
# timings; the exporter code it drives runs under ASan in protobuf.sh and connections.sh
source "$(dirname "$0")/../lib.sh"
require_root_bpf
command -v prometheus >/dev/null || skip_all "needs prometheus (Debian package prometheus)"
TCPBULK=$BUILD/tests/tcpbulk
[ -x "$TCPBULK" ] || skip_all "$TCPBULK not built (make tools)"
CHURN=$BUILD/tests/tcpchurn
[ -x "$CHURN" ] || skip_all "$CHURN not built (make tools)"
SCRAPES=${SCRAPES:-60} # 30 s at 0.5 s

# The exporters and Prometheus run at nice -10 (all this script starts inherits it), the load at
# 19: a scrape must answer within the 0.5 s timeout on a machine busy with other jobs, and the
# load takes what is left (both cores on a quiet machine).
renice -n -10 -p $$ >/dev/null
LOAD=(nice -n $((19 - $(nice))))

# ---- the load: runs from now to the end ----
netns_client_server nsload
"${LOAD[@]}" ip netns exec "$NS_S" "$TCPBULK" sink 10.99.0.2 5001 >"$TMP/sink.out" 2>&1 &
on_exit "kill $!"
"${LOAD[@]}" ip netns exec "$NS_S" "$CHURN" server :: 5002 >"$TMP/conn.out" 2>&1 &
on_exit "kill $!"
{ wait_grep "$TMP/sink.out" '^listening' && wait_grep "$TMP/conn.out" '^listening'; } ||
	skip_all "servers in $NS_S did not start"
"${LOAD[@]}" ip netns exec "$NS_C" "$TCPBULK" send 10.99.0.2 5001 600 >/dev/null 2>&1 &
on_exit "kill $!"
for addr in 10.99.0.2 fd99::2; do
	"${LOAD[@]}" ip netns exec "$NS_C" "$CHURN" client "$addr" 5002 600 1 >/dev/null 2>&1 &
	on_exit "kill $!"
done

# The three exporters run at once, each scraped by the one Prometheus as an instance of its job.
CONFIGS=(defaults netns overflow)
: >"$TMP/defaults.ini"
printf '%s\n' '[collector.rtt]' 'labels = family,netns' '[collector.connections]' \
	'labels = family,direction,outcome,netns' >"$TMP/netns.ini"
printf '%s\n' '[collector.rtt]' 'labels = family,netns' 'max_series = 2' \
	'[collector.connections]' 'labels = family,direction,outcome,netns' 'max_series = 2' \
	>"$TMP/overflow.ini"
declare -A URL PID
targets=
for c in "${CONFIGS[@]}"; do
	start_exporter --config "$TMP/$c.ini" || { not_ok "$c: exporter starts"; finish; }
	URL[$c]=$EXPORTER_URL PID[$c]=$EXPORTER_PID
	targets+=" ${EXPORTER_URL#http://}"
	scrape "$TMP/$c.before" "$EXPORTER_URL"
done
# A target that is never up (every scrape refused) is judged below like the others.
PROM_INTERVAL=500ms prom_start load "${targets# }" --enable-feature=native-histograms \
	--log.level=debug
prom_get /api/v1/status/buildinfo | jqe '.status == "success"' ||
	{ not_ok "Prometheus answers" "$(tail -n 20 "$PROM_LOG")"; finish; }

# pq PROMQL: the value of the first sample of an instant query ("" when none).
pq() { prom_query "$1" | jq -r '.data.result[0].value[1] // empty'; }
sel() { echo "{job=\"load\",instance=\"${URL[$1]#http://}\"}"; }
# scraped N: Prometheus holds at least N values of up for every exporter.
# shellcheck disable=SC2317 # called through wait_until
scraped() {
	local c
	for c in "${CONFIGS[@]}"; do
		[ "$(pq "count_over_time(up$(sel "$c")[10m])")" -ge "$1" ] 2>/dev/null || return 1
	done
}
# native SELECTOR: Prometheus holds a native histogram with buckets for SELECTOR now (a scrape
# refused just before leaves it stale until the next one).
# shellcheck disable=SC2317 # called through wait_until
# Some series stored with native buckets (the first one found may hold no observation yet).
native() { prom_query "$1" | jqe 'any(.data.result[]; (.histogram[1].buckets // []) | length > 0)'; }
t0=$(date +%s.%N)
wait_until $((SCRAPES / 2 + 30)) scraped "$SCRAPES"
echo "# waited $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s for" \
	"$SCRAPES scrapes of each exporter"

for c in "${CONFIGS[@]}"; do
	scrape "$TMP/$c.after" "${URL[$c]}"
	# 1. Every scrape counted, and each one up.
	n=$(pq "count_over_time(up$(sel "$c")[10m])")
	sum=$(pq "sum_over_time(up$(sel "$c")[10m])")
	echo "# $c: $n scrapes, mean up" \
		"$(awk -v s="${sum:-0}" -v n="${n:-0}" 'BEGIN { printf "%.3f", n ? s / n : 0 }')," \
		"$((${n:-0} - ${sum:-0})) failed, longest $(awk -v d="$(pq \
			"max_over_time(scrape_duration_seconds$(sel "$c")[10m])")" \
			'BEGIN { printf "%.3f", d }') s"
	ge "$c: Prometheus scraped it at least $SCRAPES times" "${n:-0}" "$SCRAPES"
	check_eq "$c: up was 1 at every scrape (min_over_time)" 1 \
		"$(pq "min_over_time(up$(sel "$c")[10m])")"
	# 2. No refused append ("Append failed", "observations found in buckets") and no scrape
	# error in Prometheus's debug log: it names a target there only when a scrape went wrong.
	errors=$(grep -F "target=${URL[$c]}/metrics" "$PROM_LOG")
	check_eq "$c: Prometheus's log names no error for it ($(grep -c . <<<"$errors") lines)" "" \
		"$(head -n 2 <<<"$errors" | cut -c 1-500)"
	# 3. Native histograms were stored (protobuf), and the load ran through the window.
	for h in handshake rtt; do
		check "$c: Prometheus stores netstack_tcp_${h}_seconds as a native histogram" \
			wait_until 5 native "netstack_tcp_${h}_seconds$(sel "$c")"
	done
	hs=$(delta "$TMP/$c.before" "$TMP/$c.after" '^netstack_tcp_handshake_seconds_count[{]')
	rtt=$(delta "$TMP/$c.before" "$TMP/$c.after" '^netstack_tcp_rtt_seconds_count[{]')
	ge "$c: handshakes timed during the window" "$hs" $((SCRAPES * 100))
	ge "$c: RTT samples during the window" "$rtt" $((SCRAPES * 500))
	check "$c: exporter still running" kill -0 "${PID[$c]}"
done
for map in tcp_rtt tcp_connections_netns; do
	gt "overflow: the $map hash overflowed (netstack_map_overflow_total)" \
		"$(fsum "$TMP/overflow.after" "^netstack_map_overflow_total[{]map=\"$map\"[}]")" 0
done
finish
