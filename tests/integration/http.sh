#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# HTTP front end against a running exporter: status codes, headers, both exposition formats,
# gzip, the landing page, methods, a custom metrics path, the exporter's own metrics and clean
# shutdown on SIGTERM and SIGINT.
# schedule: parallel each
source "$(dirname "$0")/../lib.sh"
require_root_bpf

# fetch NAME [CURL ARGS...] URL: body in $TMP/NAME.body, headers in $TMP/NAME.hdr; prints
# the status code ("000" when there was no HTTP answer).
fetch() {
	local name=$1
	shift
	curl -s -m 5 -D "$TMP/$name.hdr" -o "$TMP/$name.body" -w '%{http_code}' "$@" || true
}
# header NAME FIELD: value of the last FIELD header of response NAME, without the CR.
header() {
	awk -v f="$2" 'BEGIN { f = tolower(f) }
		{ sub(/\r$/, "") }
		tolower(substr($0, 1, length(f) + 1)) == f ":" { v = substr($0, length(f) + 2); sub(/^[ \t]+/, "", v) }
		END { print v }' "$TMP/$1.hdr"
}
has_header() { grep -qi "^$2:" "$TMP/$1.hdr"; }
lacks_header() { ! has_header "$@"; }
# metric_value FILE SAMPLE: value of the sample whose "name{labels}" is exactly SAMPLE.
metric_value() {
	awk -v s="$2" '!/^#/ { v = $NF; $NF = ""; sub(/ +$/, ""); if ($0 == s) { print v; exit } }' "$1"
}
# positive VALUE: a number greater than zero (also in exponent notation).
positive() { awk -v v="$1" 'BEGIN { exit !(v != "" && v + 0 > 0) }'; }

TEXT_TYPE='text/plain; version=0.0.4; charset=utf-8'
OM_TYPE='application/openmetrics-text; version=1.0.0; charset=utf-8'
# What Prometheus 2.42 sends when it scrapes.
PROM_ACCEPT='application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1'

start_exporter || {
	not_ok "exporter starts"
	finish
}
U=$EXPORTER_URL

# ---- /metrics, Prometheus text format ----
check_eq "GET /metrics status" 200 "$(fetch text "$U/metrics")"
check_eq "GET /metrics Content-Type" "$TEXT_TYPE" "$(header text Content-Type)"
check "GET /metrics without Accept-Encoding is not compressed" lacks_header text Content-Encoding
check_eq "Content-Length matches the body" "$(stat -c %s "$TMP/text.body")" \
	"$(header text Content-Length)"
check "text body has no '# EOF'" bash -c "! grep -q '^# EOF' '$TMP/text.body'"
if promtool check metrics <"$TMP/text.body" >"$TMP/promtool.out" 2>&1; then
	ok "promtool check metrics accepts the text output"
else
	not_ok "promtool check metrics accepts the text output" "$(cat "$TMP/promtool.out")"
fi

# ---- OpenMetrics ----
check_eq "OpenMetrics status" 200 \
	"$(fetch om -H 'Accept: application/openmetrics-text;version=1.0.0' "$U/metrics")"
check_eq "OpenMetrics Content-Type" "$OM_TYPE" "$(header om Content-Type)"
check_eq "OpenMetrics body ends with '# EOF'" "# EOF" "$(tail -n 1 "$TMP/om.body")"
check_eq "OpenMetrics body ends with a newline" "0a" "$(tail -c 1 "$TMP/om.body" | od -An -tx1 | tr -d ' ')"
check_eq "exactly one '# EOF'" 1 "$(grep -c '^# EOF' "$TMP/om.body")"
# Counter families: names without _total in HELP/TYPE, samples with it.
om_counters=$(awk '$1 == "#" && $2 == "TYPE" && $4 == "counter" { print $3 }' "$TMP/om.body" | sort)
text_counters=$(awk '$1 == "#" && $2 == "TYPE" && $4 == "counter" { sub(/_total$/, "", $3); print $3 }' \
	"$TMP/text.body" | sort)
if [ -n "$om_counters" ] && ! grep -q '_total$' <<<"$om_counters"; then
	ok "OpenMetrics counter TYPE lines have no _total ($(wc -l <<<"$om_counters") families)"
else
	not_ok "OpenMetrics counter TYPE lines have no _total" "$om_counters"
fi
check_eq "same counter families in both formats" "$(tr "\n" " " <<<"$text_counters")" "$(tr "\n" " " <<<"$om_counters")"
bad=$(awk '$1 == "#" && $2 == "HELP" && $3 ~ /_total$/' "$TMP/om.body")
check_eq "OpenMetrics HELP lines have no _total" "" "$bad"
bad=$(awk 'NR == FNR { if ($2 == "TYPE" && $4 == "counter") c[$3] = 1; next }
	!/^#/ { n = $1; sub(/\{.*/, "", n); b = n; sub(/_total$/, "", b); if ((b in c) && n == b) print n }' \
	"$TMP/om.body" "$TMP/om.body")
check_eq "OpenMetrics counter samples keep _total" "" "$bad"
check_eq "Prometheus 2.42's Accept header gets OpenMetrics" "$OM_TYPE" \
	"$(fetch omprom -H "Accept: $PROM_ACCEPT" "$U/metrics" >/dev/null; header omprom Content-Type)"
# Several Accept lines are one list (RFC 9110); q=0 excludes text whatever wildcard matches it,
# and with nothing acceptable left the answer is 406.
check_eq "two Accept lines: OpenMetrics named in the second" "$OM_TYPE" \
	"$(fetch om2 -H 'Accept: application/json' -H 'Accept: application/openmetrics-text' \
		"$U/metrics" >/dev/null; header om2 Content-Type)"
check_eq "Accept: */* then text/plain;q=0 on another line: not text" "$OM_TYPE" \
	"$(fetch om3 -H 'Accept: */*' -H 'Accept: text/plain;q=0' "$U/metrics" >/dev/null
	header om3 Content-Type)"
check_eq "Accept: text/plain;q=0 alone: 406" 406 \
	"$(fetch none -H 'Accept: text/plain;q=0' "$U/metrics")"

# ---- gzip ----
check_eq "gzip status" 200 "$(fetch gz -H 'Accept-Encoding: gzip' "$U/metrics")"
check_eq "gzip Content-Encoding" gzip "$(header gz Content-Encoding)"
check_eq "gzip Content-Type" "$TEXT_TYPE" "$(header gz Content-Type)"
check "gzip body is valid gzip" gzip -t "$TMP/gz.body"
gzip -dc "$TMP/gz.body" >"$TMP/gunzipped" 2>/dev/null
check "gunzipped body is valid metrics (promtool)" bash -c "promtool check metrics <'$TMP/gunzipped' >/dev/null 2>&1"
check "gunzipped body has build_info" grep -q '^netstack_exporter_build_info{' "$TMP/gunzipped"
check "curl --compressed decodes it" bash -c \
	"curl -sf --compressed '$U/metrics' | grep -q '^netstack_collector_up{'"
fetch gzom -H 'Accept-Encoding: gzip' -H 'Accept: application/openmetrics-text;version=1.0.0' \
	"$U/metrics" >/dev/null
check_eq "gzip + OpenMetrics: Content-Encoding" gzip "$(header gzom Content-Encoding)"
check_eq "gzip + OpenMetrics: ends with '# EOF'" "# EOF" "$(gzip -dc "$TMP/gzom.body" 2>/dev/null | tail -n 1)"
fetch gz0 -H 'Accept-Encoding: gzip;q=0, identity' "$U/metrics" >/dev/null
check "gzip;q=0 is not compressed" lacks_header gz0 Content-Encoding

# ---- landing page, health ----
check_eq "GET / status" 200 "$(fetch root "$U/")"
check "GET / is text/html" bash -c "grep -qi '^Content-Type: text/html' '$TMP/root.hdr'"
check "GET / lists the drops collector" grep -q '<b>drops</b>' "$TMP/root.body"
check "GET / links to /metrics" grep -q 'href="/metrics"' "$TMP/root.body"
check_eq "GET /healthz status" 200 "$(fetch health "$U/healthz")"

# ---- methods and unknown paths ----
# HEAD over a raw socket, so a body sent by mistake would be seen (curl -I would not read it).
head_response() {
	local port=${U##*:}
	exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
	printf 'HEAD /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
	timeout 5 cat <&3 >"$TMP/head.raw"
	exec 3<&-
}
head_response
check_eq "HEAD /metrics status" "HTTP/1.1 200 OK" "$(head -n 1 "$TMP/head.raw" | tr -d '\r')"
check_eq "HEAD /metrics has no body" 0 \
	"$(awk 'BEGIN { RS = "\r\n\r\n" } NR > 1 { n += length($0) } END { print n + 0 }' "$TMP/head.raw")"
check "HEAD /metrics has the metrics Content-Type" grep -qi "^Content-Type: $TEXT_TYPE" "$TMP/head.raw"

check_eq "POST /metrics status" 405 "$(fetch post -X POST "$U/metrics")"
check "POST /metrics has an Allow header with GET" bash -c "grep -qi '^Allow:.*GET' '$TMP/post.hdr'"
check_eq "PUT / status" 405 "$(fetch put -X PUT "$U/")"
check "PUT / has an Allow header with GET" bash -c "grep -qi '^Allow:.*GET' '$TMP/put.hdr'"
# Real POSTs and PUTs carry a body; the answer must not depend on it.
check_eq "POST /metrics with a form body status" 405 "$(fetch postd -d 'a=b' "$U/metrics")"
check_eq "PUT / with a body status" 405 "$(fetch putd -X PUT -d 'x' "$U/")"
check_eq "DELETE /metrics status" 405 "$(fetch delete -X DELETE "$U/metrics")"
check_eq "GET /nope status" 404 "$(fetch nope "$U/nope")"
check_eq "GET /metrics/ (trailing slash) status" 404 "$(fetch slash "$U/metrics/")"
# httproute.c answers a GET with a body with 400 "GET takes no body".
check_eq "GET /metrics with a body status" 400 "$(fetch getbody -X GET -d 'x' "$U/metrics")"
check_eq "still serving /metrics after all that" 200 "$(fetch again "$U/metrics")"
check "exporter still running" kill -0 "$EXPORTER_PID"

# ---- the exporter's own metrics ----
M=$TMP/text.body
fds=$(metric_value "$M" process_open_fds)
rss=$(metric_value "$M" process_resident_memory_bytes)
check "process_open_fds > 0 ($fds)" positive "$fds"
check "process_resident_memory_bytes > 0 ($rss)" positive "$rss"
# The exporter has at least its BPF map and program fds open on top of stdio and the socket.
real_fds=$(ls /proc/"$EXPORTER_PID"/fd | wc -l)
check "process_open_fds close to /proc ($fds vs $real_fds)" \
	awk -v a="$fds" -v b="$real_fds" 'BEGIN { d = a - b; exit !(d <= 3 && d >= -3) }'
check_eq "netstack_collector_up drops" 1 "$(metric_value "$M" 'netstack_collector_up{collector="drops"}')"
check_eq "netstack_scrape_collector_success drops" 1 \
	"$(metric_value "$M" 'netstack_scrape_collector_success{collector="drops"}')"
bi=$(grep '^netstack_exporter_build_info{' "$M")
label() { sed -n "s/.*[{,]$1=\"\\([^\"]*\\)\".*/\\1/p" <<<"$bi"; }
version=$(label version)
commit=$(label commit)
check "build_info has a version label ($version)" test -n "$version"
check "build_info has a commit label ($commit)" test -n "$commit"
check_eq "build_info kernel label is uname -r" "$(uname -r)" "$(label kernel)"
check_eq "build_info value" 1 "${bi##* }"
check "build_info version and commit match --version" \
	bash -c "'$EXPORTER' --version | grep -qF -- '$version' && '$EXPORTER' --version | grep -qF -- '$commit'"

# ---- custom metrics path ----
printf '[web]\nmetrics_path = /custom\n' >"$TMP/custom.ini"
start_exporter --config "$TMP/custom.ini" || not_ok "exporter starts with metrics_path = /custom"
check_eq "custom path: GET /custom status" 200 "$(fetch custom "$EXPORTER_URL/custom")"
check "custom path: /custom serves metrics" grep -q '^netstack_exporter_build_info{' "$TMP/custom.body"
check_eq "custom path: /custom Content-Type" "$TEXT_TYPE" "$(header custom Content-Type)"
check_eq "custom path: GET /metrics status" 404 "$(fetch custom404 "$EXPORTER_URL/metrics")"
fetch customroot "$EXPORTER_URL/" >/dev/null
check "custom path: landing page links to /custom" grep -q 'href="/custom"' "$TMP/customroot.body"

# ---- shutdown ----
# stop_with SIGNAL: start an exporter, send SIGNAL, expect exit 0 within 2 s and a log line.
stop_with() {
	local sig=$1 rc=none
	start_exporter || {
		not_ok "$sig: exporter starts"
		return
	}
	kill -s "$sig" "$EXPORTER_PID"
	for _ in $(seq 40); do
		kill -0 "$EXPORTER_PID" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$EXPORTER_PID" 2>/dev/null; then
		not_ok "$sig: exits within 2 s" "still running"
		return
	fi
	ok "$sig: exits within 2 s"
	wait "$EXPORTER_PID"
	rc=$?
	check_eq "$sig: exit status" 0 "$rc"
	if grep -q "$sig" "$EXPORTER_LOG" && grep -qi 'shut' "$EXPORTER_LOG"; then
		ok "$sig: logs a shutdown line"
	else
		not_ok "$sig: logs a shutdown line" "$(cat "$EXPORTER_LOG")"
	fi
	check "$sig: port released" bash -c "! curl -s -m 1 '$EXPORTER_URL/healthz' >/dev/null"
}
stop_with SIGTERM
stop_with SIGINT

finish
