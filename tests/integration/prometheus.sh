#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A real Prometheus (Debian's 2.42) scrapes the exporter every second; a UDP flood to a closed
# port must show up as a NO_SOCKET rate in PromQL, with OpenMetrics scrapes and no errors.
#
# Other processes on this host drop packets on loopback too, so the flood runs between two
# network namespaces of our own over a veth pair, and the exporter adds the `interface` label:
# the series on our veth's receiving end can only come from our flood. A TCP transfer between
# the same namespaces feeds the RTT histogram for a histogram_quantile query.
# schedule: parallel once
# why: Prometheus scraping and PromQL; the code it drives is ASan-checked elsewhere
source "$(dirname "$0")/../lib.sh"
require_root_bpf
command -v prometheus >/dev/null || skip_all "needs prometheus (Debian package prometheus)"
UDPFLOOD=$BUILD/tests/udpflood
[ -x "$UDPFLOOD" ] || skip_all "$UDPFLOOD not built (make $UDPFLOOD)"

# first_value JSON: the value of the first sample of a vector answer ("" when empty).
first_value() { grep -o '"value":\[[^]]*\]' <<<"$1" | head -n 1 | sed 's/.*,"\(.*\)"\]/\1/'; }
# reason_value JSON REASON: the value of the sample whose only label is reason=REASON.
reason_value() {
	grep -o "\"metric\":{\"reason\":\"$2\"},\"value\":\\[[^]]*\\]" <<<"$1" | head -n 1 |
		sed 's/.*,"\(.*\)"\]/\1/'
}
gt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 > b + 0) }'; }

# ---- two namespaces, a veth between them ----
NS_A=nsprom-a$$
NS_B=nsprom-b$$
IF_B=vb$$
netns_add "$NS_A" && netns_add "$NS_B" && veth_pair "$NS_A" "$NS_B" || {
	not_ok "network namespaces and veth set up"
	finish
}

# ---- exporter and Prometheus ----
printf '[collector.drops]\nlabels = reason,family,protocol,interface\n' >"$TMP/exporter.ini"
# Sampled drops give the series OpenMetrics exemplars (checked at the end).
printf '[sampling]\ndrop_sample_rate = 100\n' >>"$TMP/exporter.ini"
start_exporter --config "$TMP/exporter.ini" || {
	not_ok "exporter starts"
	finish
}
check_eq "drops collector up" 1 "$(scrape_sum '^netstack_collector_up\{collector="drops"\}$')"
TARGET=${EXPORTER_URL#http://}
if prom_start netstack "$TARGET" --log.level=info --enable-feature=exemplar-storage; then
	ok "Prometheus target is up"
else
	not_ok "Prometheus target is up" "$(prom_get /api/v1/targets)" "$(tail -n 20 "$PROM_LOG")"
	finish
fi
targets=$(prom_get /api/v1/targets --data-urlencode state=active)
check "target is our exporter" grep -q "\"scrapeUrl\":\"$EXPORTER_URL/metrics\"" <<<"$targets"

# Nothing has been dropped on our veth yet: the scoped query must start empty, so that a
# positive answer later can only come from the flood.
SCOPED="sum by (reason) (rate(netstack_skb_drops_total{interface=\"$IF_B\"}[5s]))"
check_eq "no drops on $IF_B before the flood" "" "$(reason_value "$(prom_query "$SCOPED")" NO_SOCKET)"

# ---- flood a closed UDP port for 6 s ----
ip netns exec "$NS_A" "$UDPFLOOD" 10.99.0.2 9 0 6 >"$TMP/udpflood.out" 2>&1 &
FLOOD_PID=$!
on_exit "kill $FLOOD_PID"
QUERY='sum by (reason) (rate(netstack_skb_drops_total[5s]))'
rate_all='' rate_ours=''
for _ in $(seq 40); do # bounded: about 20 s
	gt "$rate_all" 0 || rate_all=$(reason_value "$(prom_query "$QUERY")" NO_SOCKET)
	gt "$rate_ours" 0 || rate_ours=$(reason_value "$(prom_query "$SCOPED")" NO_SOCKET)
	gt "$rate_ours" 0 && gt "$rate_all" 0 && break
	sleep 0.5
done
check "PromQL $QUERY: NO_SOCKET > 0 ($rate_all/s)" gt "$rate_all" 0
check "NO_SOCKET rate on $IF_B > 0 ($rate_ours/s)" gt "$rate_ours" 0
# Our flood alone sends far more than a handful of datagrams a second.
check "NO_SOCKET rate on $IF_B > 100/s" gt "$rate_ours" 100

wait "$FLOOD_PID"
check_eq "udpflood exit status" 0 "$?"
sent=$(tail -n 1 "$TMP/udpflood.out")
check "udpflood sent datagrams ($sent)" gt "$sent" 0

# After the flood the counter stops moving: Prometheus must end up with exactly what the
# exporter reports, and never with more than was sent.
SERIES="netstack_skb_drops_total{reason=\"NO_SOCKET\",family=\"ipv4\",protocol=\"udp\",interface=\"$IF_B\"}"
prom_total='' exp_total=''
for _ in $(seq 20); do
	exp_total=$(scrape_sum "^netstack_skb_drops_total\\{reason=\"NO_SOCKET\",family=\"ipv4\",protocol=\"udp\",interface=\"$IF_B\"\\}$")
	prom_total=$(first_value "$(prom_query "$SERIES")")
	[ -n "$prom_total" ] && [ "$prom_total" = "$exp_total" ] && break
	sleep 0.5
done
check_eq "Prometheus has the exporter's final NO_SOCKET count" "$exp_total" "$prom_total"
check "NO_SOCKET count > 0 and <= datagrams sent ($exp_total <= $sent)" \
	awk -v n="$exp_total" -v s="$sent" 'BEGIN { exit !(n > 0 && n <= s) }'

# ---- TCP round-trip times ----
# A bulk TCP transfer between the namespaces gives the RTT histogram fresh samples; PromQL's
# quantile over its buckets must then be a number of seconds (not NaN, not empty).
TCPBULK=$BUILD/tests/tcpbulk
RTT_QUERY='histogram_quantile(0.9, sum by (le) (rate(netstack_tcp_rtt_seconds_bucket[1m])))'
if [ -x "$TCPBULK" ]; then
	ip netns exec "$NS_B" "$TCPBULK" sink 10.99.0.2 5001 >"$TMP/sink.out" 2>&1 &
	on_exit "kill $!"
	wait_grep "$TMP/sink.out" '^listening' 5
	ip netns exec "$NS_A" "$TCPBULK" send 10.99.0.2 5001 3 >/dev/null 2>&1 &
	BULK_PID=$!
	on_exit "kill $BULK_PID"
	p90=''
	for _ in $(seq 30); do # bounded: about 15 s
		p90=$(first_value "$(prom_query "$RTT_QUERY")")
		[[ "$p90" =~ ^[0-9.e+-]+$ ]] && gt "$p90" 0 && break
		sleep 0.5
	done
	check "PromQL $RTT_QUERY: a number of seconds ($p90)" \
		awk -v q="$p90" 'BEGIN { exit !(q ~ /^[0-9.e+-]+$/ && q + 0 > 0 && q + 0 < 60) }'
	wait "$BULK_PID"
else
	not_ok "PromQL $RTT_QUERY" "$TCPBULK not built (make $TCPBULK)"
fi

# ---- scrape health ----
check_eq "PromQL up{job=\"netstack\"}" 1 "$(first_value "$(prom_query 'up{job="netstack"}')")"
# Not only now: every scrape since the start succeeded (a refused one leaves up 0, and every
# series stale, for a second).
scrapes=$(first_value "$(prom_query 'count_over_time(up{job="netstack"}[10m])')")
check "Prometheus scraped it throughout ($scrapes scrapes)" gt "$scrapes" 5
check_eq "up was 1 at every scrape (min_over_time)" 1 \
	"$(first_value "$(prom_query 'min_over_time(up{job="netstack"}[10m])')")"
samples=$(first_value "$(prom_query 'scrape_samples_scraped{job="netstack"}')")
check "scrape_samples_scraped > 0 ($samples)" gt "$samples" 0
# Against the exposition: drop series only ever appear (counters stay in the maps), so a
# later scrape has at least as many samples, and every other sample was already there.
metrics >"$TMP/now.prom"
exp_samples=$(grep -cv '^#\|^$' "$TMP/now.prom")
exp_fixed=$(grep -v '^#\|^$' "$TMP/now.prom" | grep -cv '^netstack_skb_drops_total{')
check "scrape_samples_scraped fits the exposition ($exp_fixed <= $samples <= $exp_samples)" \
	awk -v s="$samples" -v lo="$exp_fixed" -v hi="$exp_samples" 'BEGIN { exit !(s >= lo && s <= hi) }'
targets=$(prom_get /api/v1/targets --data-urlencode state=active)
check_eq "target lastError is empty" "" \
	"$(sed -n 's/.*"lastError":"\([^"]*\)".*/\1/p' <<<"$targets")"
check "target still up" grep -q '"health":"up"' <<<"$targets"
warn=$(grep 'scrape_pool=netstack' "$PROM_LOG" | grep 'level=\(warn\|error\)')
check_eq "no scrape warnings in Prometheus' log" "" "$warn"

# ---- OpenMetrics was used ----
# Prometheus asks for OpenMetrics first. Its OpenMetrics parser names counter families
# without _total (the text parser keeps the name of the TYPE line), and the metadata API
# shows the name the parser saw.
meta=$(prom_get /api/v1/metadata --data-urlencode metric=netstack_skb_drops)
check "metadata knows family netstack_skb_drops (OpenMetrics name)" \
	grep -q '"netstack_skb_drops":\[{"type":"counter"' <<<"$meta"
meta=$(prom_get /api/v1/metadata --data-urlencode metric=netstack_skb_drops_total)
check_eq "no metadata under the text-format name netstack_skb_drops_total" \
	'{"status":"success","data":{}}' "$meta"

# ---- exemplars: the flood's sampled drops, stored by Prometheus ----
exemplars=$(prom_get /api/v1/query_exemplars --data-urlencode "query=$SERIES" \
	--data-urlencode "start=$(($(date +%s) - 300))" --data-urlencode "end=$(date +%s)")
check "query_exemplars returns the flood's flow (daddr 10.99.0.2, dport 9)" grep -q \
	'"daddr":"10.99.0.2","dport":"9"' <<<"$exemplars"
check "exporter still running" kill -0 "$EXPORTER_PID"

finish
