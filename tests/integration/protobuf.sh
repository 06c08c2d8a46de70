#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The protobuf exposition (Accept: application/vnd.google.protobuf;
# proto=io.prometheus.client.MetricFamily; encoding=delimited):
#   1. negotiation: the Accept headers Prometheus 2.42 sends with and without
#      --enable-feature=native-histograms, parameter order and spacing, q-values, gzip, HEAD;
#      the other pages answer as before;
#   2. every family of a real scrape (node label, netns and interface labels, a full drops map
#      and so the overflow family and series, BPF program families) in protobuf, read back by
#      tests/tools/pbdecode, against the text scrapes just before and after it
#      (tests/tools/expocompare.py: families, TYPE, HELP, label sets; idle values equal,
#      moving counters between);
#   3. pbdecode refuses malformed input cleanly (exit 1 and a message, never a crash);
#   4. a real Prometheus 2.42 with native histograms on scrapes it and reads it, and reads
#      tests/tools/pbsample's native histograms bucket for bucket.
# schedule: parallel each
source "$(dirname "$0")/../lib.sh"
require_root_bpf
PBDECODE=$BUILD/tests/pbdecode
[ -x "$PBDECODE" ] || skip_all "$PBDECODE not built (make tools)"

PB_TYPE='application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited'
OM_TYPE='application/openmetrics-text; version=1.0.0; charset=utf-8'
TEXT_TYPE='text/plain; version=0.0.4; charset=utf-8'
PB_ACCEPT='application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited'
PROM_REST='application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1'
# What Prometheus 2.42 sends, with --enable-feature=native-histograms and without.
PROM_ACCEPT_PB="$PB_ACCEPT,application/openmetrics-text;version=1.0.0;q=0.8,$PROM_REST"
PROM_ACCEPT="application/openmetrics-text;version=1.0.0,$PROM_REST"
NODE='node-1 "quoted" back\slash'

# fetch NAME [CURL ARGS...] PATH: body in $TMP/NAME.body, headers in $TMP/NAME.hdr; prints the
# status code.
fetch() {
	local name=$1
	shift
	curl -s -m 5 -D "$TMP/$name.hdr" -o "$TMP/$name.body" -w '%{http_code}' "${@:1:$#-1}" \
		"$EXPORTER_URL${*: -1}" || true
}
# header NAME FIELD: the value of FIELD in response NAME, without the CR.
header() {
	awk -v f="$2" 'BEGIN { f = tolower(f) } { sub(/\r$/, "") }
		tolower(substr($0, 1, length(f) + 1)) == f ":" { v = substr($0, length(f) + 2); sub(/^[ \t]+/, "", v) }
		END { print v }' "$TMP/$1.hdr"
}
# negotiated NAME ACCEPT TYPE: /metrics with that Accept header is served as TYPE.
negotiated() {
	fetch "$1" -H "Accept: $2" /metrics >/dev/null
	check_eq "$1: Content-Type" "$3" "$(header "$1" Content-Type)"
}

printf '%s\n' '[collector.drops]' 'labels = reason,family,protocol,netns,interface' \
	'max_series = 2' '[collector.rtt]' 'labels = family,netns' '[sampling]' \
	'drop_sample_rate = 1' >"$TMP/exporter.ini"
# The BPF program families exist only while bpf_stats is on.
bpf_stats_on || { not_ok "kernel.bpf_stats_enabled = 1"; finish; }
start_exporter --config "$TMP/exporter.ini" --node "$NODE" || { not_ok "exporter starts"; finish; }

# Drops of three label sets at least (UDP over IPv4 and IPv6 to a closed port, a TCP reset's
# purged queue) in a map of two: the overflow series and family have samples.
"$BUILD/tests/udpflood" 127.0.0.1 9 3 >/dev/null
"$BUILD/tests/udpflood" ::1 9 3 >/dev/null
python3 tests/tools/tcpreset.py abort 4 >/dev/null
python3 tests/tools/tcpreset.py closed 6 >/dev/null
overflowed() { metrics | grep -Eq '^netstack_map_overflow_total\{map="skb_drops",[^}]*\} [1-9]'; }
check "the drops map overflows (max_series = 2)" wait_until 10 overflowed

# ---- 1. negotiation ----
negotiated pb42 "$PROM_ACCEPT_PB" "$PB_TYPE"
negotiated om42 "$PROM_ACCEPT" "$OM_TYPE"
negotiated reordered \
	'application/vnd.google.protobuf ; encoding = delimited ; proto="io.prometheus.client.MetricFamily"' \
	"$PB_TYPE"
negotiated textenc "${PB_ACCEPT%delimited}text,text/plain;q=0.2" "$TEXT_TYPE"
negotiated lowq "$PB_ACCEPT;q=0.5,application/openmetrics-text;version=1.0.0" "$OM_TYPE"
negotiated star "$PB_ACCEPT;q=0.5,*/*" "$TEXT_TYPE"
negotiated refused "$PB_ACCEPT;q=0,text/plain;q=0.1" "$TEXT_TYPE"
check "Prometheus 2.42's protobuf answer decodes" "$PBDECODE" <"$TMP/pb42.body" >/dev/null
fetch gz -H "Accept: $PROM_ACCEPT_PB" -H 'Accept-Encoding: gzip' /metrics >/dev/null
check_eq "gzip + protobuf: Content-Type" "$PB_TYPE" "$(header gz Content-Type)"
check_eq "gzip + protobuf: Content-Encoding" gzip "$(header gz Content-Encoding)"
check "gzip + protobuf: gunzipped, it decodes" bash -c \
	"gzip -dc '$TMP/gz.body' | '$PBDECODE' | grep -q '^netstack_exporter_build_info{'"
curl -s -m 5 -I -H "Accept: $PB_ACCEPT" "$EXPORTER_URL/metrics" >"$TMP/head.hdr"
check_eq "HEAD /metrics: Content-Type" "$PB_TYPE" "$(header head Content-Type)"
# Only /metrics speaks protobuf: the other pages answer as they do to no Accept header.
for page in / /events /events/top /healthz; do
	plain=$(fetch plain "$page")" $(header plain Content-Type)"
	check_eq "GET $page asked for protobuf: as without" "$plain" \
		"$(fetch asked -H "Accept: $PB_ACCEPT" "$page") $(header asked Content-Type)"
done

# ---- 2. every family, protobuf against text ----
scrape "$TMP/t1"
metrics "$EXPORTER_URL" -H "Accept: $PB_ACCEPT" >"$TMP/pb"
scrape "$TMP/t2"
if "$PBDECODE" <"$TMP/pb" >"$TMP/pb.txt" 2>"$TMP/pb.err"; then
	ok "pbdecode reads the scrape ($(stat -c %s "$TMP/pb") bytes)"
else
	not_ok "pbdecode reads the scrape" "$(cat "$TMP/pb.err")"
fi
python3 tests/tools/expocompare.py "$TMP/t1" "$TMP/pb.txt" "$TMP/t2" >"$TMP/compare" 2>&1
cat "$TMP/compare"
grep -q '^# families=' "$TMP/compare" || not_ok "expocompare.py ran" "$(tail -n 5 "$TMP/compare")"
read -r families series < <(sed -n 's/^# families=\([0-9]*\) .* series=\([0-9]*\) .*/\1 \2/p' \
	"$TMP/compare")
ge "families compared" "${families:-0}" 25
ge "series compared" "${series:-0}" 60
node_esc='node="node-1 \"quoted\" back\\slash"'
check_eq "protobuf: every sample carries the node label" 0 \
	"$(grep -v '^#' "$TMP/pb.txt" | grep -vcF "$node_esc")"
check "protobuf: the overflow family has the drops map's series" \
	grep -Eq '^netstack_map_overflow_total\{map="skb_drops",[^}]*\} [1-9]' "$TMP/pb.txt"
check "protobuf: the drops overflow series (__overflow__ labels)" \
	grep -q '^netstack_skb_drops_total{.*netns="__overflow__",interface="__overflow__"' "$TMP/pb.txt"
check "protobuf: sampled drops are their counters' exemplars (drop_sample_rate = 1)" \
	grep -q '^# EXEMPLAR netstack_skb_drops_total{' "$TMP/pb.txt"
check "protobuf: the BPF program families" \
	grep -q '^netstack_bpf_program_runs_total{program=' "$TMP/pb.txt"
check "protobuf read back as text: promtool check metrics" \
	bash -c "promtool check metrics <'$TMP/pb.txt' >'$TMP/promtool.out' 2>&1"

# ---- 3. malformed input ----
# refused NAME: pbdecode on $TMP/bad exits 1 with its message.
refused() {
	local rc=0
	"$PBDECODE" <"$TMP/bad" >/dev/null 2>"$TMP/bad.err" || rc=$?
	if [ "$rc" = 1 ] && grep -q '^pbdecode: byte [0-9]*: ' "$TMP/bad.err"; then
		ok "pbdecode refuses $1: $(cat "$TMP/bad.err")"
	else
		not_ok "pbdecode refuses $1" "exit $rc: $(cat "$TMP/bad.err")"
	fi
}
size=$(stat -c %s "$TMP/pb")
head -c $((size - 1)) "$TMP/pb" >"$TMP/bad"
refused "a scrape cut short by a byte"
head -c 3 "$TMP/pb" >"$TMP/bad"
refused "a length prefix cut short"
printf '\xff\xff\xff\xff\xff\x01' >"$TMP/bad"
refused "a length prefix over 5 bytes"
printf '\x02\x08\x01' >"$TMP/bad"
refused "a message protobuf-c cannot unpack (a name that is a varint)"
printf '\x02\x18\x01' >"$TMP/bad"
refused "a family without a name"
printf '\x09\x0a\x01x\x18\x00\x22\x02\x1a\x00' >"$TMP/bad"
refused "a counter sample without a value"
# Every 97th byte flipped in turn: each is read or refused (exit 0 or 1), nothing else; under
# ASan this is where a read past a buffer would show.
mkdir "$TMP/flipped"
python3 -c 'import sys
b = open(sys.argv[1], "rb").read()
for i in range(0, len(b), 97):
    open("%s/%d" % (sys.argv[2], i), "wb").write(b[:i] + bytes([b[i] ^ 0xff]) + b[i + 1:])' \
	"$TMP/pb" "$TMP/flipped"
crashed='' refused_n=0 runs=0
for f in "$TMP"/flipped/*; do
	rc=0
	"$PBDECODE" <"$f" >/dev/null 2>"$TMP/bad.err" || rc=$?
	runs=$((runs + 1))
	case $rc in
	0) ;;
	1) refused_n=$((refused_n + 1)) ;;
	*) crashed+=" byte ${f##*/}: exit $rc $(head -c 300 "$TMP/bad.err")" ;;
	esac
done
check_eq "pbdecode on $runs scrapes with a byte flipped: no crash" "" "$crashed"
gt "pbdecode refuses some of them ($refused_n of $runs)" "$refused_n" 0

# ---- 4. a real Prometheus, native histograms on ----
if ! command -v prometheus >/dev/null; then
	not_ok "prometheus installed (Debian package prometheus)"
	finish
fi
# pbsample's exposition, served as the exporter serves protobuf.
"$BUILD/tests/pbsample" >"$TMP/sample.pb" || not_ok "pbsample writes its exposition"
SAMPLE_PORT=$(free_port)
python3 -c 'import http.server, sys
body = open(sys.argv[1], "rb").read()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", sys.argv[3])
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[2])), H).serve_forever()' \
	"$TMP/sample.pb" "$SAMPLE_PORT" "$PB_TYPE" &
SAMPLE_PID=$!
on_exit "kill $SAMPLE_PID; wait $SAMPLE_PID"
PROM_PORT=$(free_port)
PROM_URL=http://127.0.0.1:$PROM_PORT
cat >"$TMP/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: netstack
    static_configs:
      - targets: ['${EXPORTER_URL#http://}']
  - job_name: sample
    static_configs:
      - targets: ['127.0.0.1:$SAMPLE_PORT']
EOF
prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/prom-data" \
	--web.listen-address="127.0.0.1:$PROM_PORT" --enable-feature=native-histograms \
	--log.level=debug >"$TMP/prometheus.log" 2>&1 &
PROM_PID=$!
on_exit "kill $PROM_PID; wait $PROM_PID"
prom_value() { # PROMQL: the value of the first sample of an instant query
	prom_get /api/v1/query --data-urlencode "query=$1" |
		python3 -c 'import json, sys; r = json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")'
}
up() { [ "$(prom_value 'sum(up{job=~"netstack|sample"})' 2>/dev/null)" = 2 ]; }
if wait_until 30 up; then
	ok "Prometheus 2.42 (native histograms on) scrapes the exporter: up"
else
	not_ok "Prometheus scrapes the exporter" "$(prom_get /api/v1/targets) $(tail -n 5 "$TMP/prometheus.log")"
	finish
fi
check_eq "Prometheus: no scrape error" '' "$(prom_get /api/v1/targets |
	python3 -c 'import json, sys; print(json.load(sys.stdin)["data"]["activeTargets"][0]["lastError"])')"
# Counter families keep _total in protobuf (OpenMetrics' metadata would name them without it).
check_eq "Prometheus: netstack_skb_drops_total's metadata (a counter, named with _total)" counter \
	"$(prom_get /api/v1/metadata --data-urlencode metric=netstack_skb_drops_total |
		python3 -c 'import json, sys; d = json.load(sys.stdin)["data"]; print(d["netstack_skb_drops_total"][0]["type"] if d else "")')"
check_eq "Prometheus: the node label read back" 1 \
	"$(prom_value "netstack_exporter_build_info{node=\"node-1 \\\"quoted\\\" back\\\\slash\"}")"
check_eq "Prometheus: as many netstack_collector_up series as the text scrape" \
	"$(grep -c '^netstack_collector_up{' "$TMP/t1")" "$(prom_value 'count(netstack_collector_up)')"
# The native buckets as Prometheus read them: [lower, upper, count] of each populated bucket.
native_buckets() {
	prom_get /api/v1/query --data-urlencode "query=$1" | python3 -c 'import json, sys
r = json.load(sys.stdin)["data"]["result"]
h = r[0]["histogram"][1] if r and "histogram" in r[0] else {}
print(h.get("count"), h.get("sum"), " ".join("%s,%s,%s" % (b[1], b[2], b[3]) for b in h.get("buckets", [])))'
}
check_eq "Prometheus: pbsample's native histogram, count, sum and buckets" \
	"100 12.5 0.00048828125,0.0009765625,10 0.00390625,0.0078125,20 0.0625,0.125,30 0.125,0.25,40" \
	"$(native_buckets 't_seconds{job="sample"}')"
check_eq "Prometheus: an empty native histogram is native (no observation yet)" "0 0 " \
	"$(native_buckets 'e_seconds{job="sample"}')"
# Prometheus 2.42 keeps only the native buckets of a histogram that has both (2.45 added
# scrape_classic_histograms): docs/operations.md says so.
check_eq "Prometheus 2.42: no classic series of a native histogram" 0 \
	"$(prom_value 'count(t_seconds_bucket{job="sample"}) or vector(0)')"
check_eq "Prometheus: pbsample's counter" 5 "$(prom_value 'c_total{job="sample"}')"
# Every scrape of the exporter since the start succeeded: up 1 at each, and no refused append
# ("Append failed", a debug line) or other scrape error naming it in Prometheus's log.
gt "Prometheus: scraped the exporter" "$(prom_value 'count_over_time(up{job="netstack"}[10m])')" 0
check_eq "Prometheus: up was 1 at every scrape of the exporter (min_over_time)" 1 \
	"$(prom_value 'min_over_time(up{job="netstack"}[10m])')"
check_eq "Prometheus: its log names no error for the exporter" "" \
	"$(grep -F "target=$EXPORTER_URL/metrics" "$TMP/prometheus.log" | head -n 2 | cut -c 1-500)"
finish
