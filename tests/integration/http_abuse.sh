#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Attacks a running exporter on loopback with hostile HTTP (tests/tools/httpabuse.c) and after
# each attack proves it still serves a correct /metrics within 1 s: malformed request lines,
# oversized headers and URLs, declared bodies, other methods, non-ASCII and percent-encoded
# paths, hostile Accept/Accept-Encoding, pipelining, abrupt disconnects, slowloris, 10 000 idle
# connections from one address and from 100 (a newcomer is served all along). At the end the
# fd count is back to its baseline and RSS growth is bounded.
# schedule: serial each
# why: 10 000-connection attacks, connection_timeout judged to -0.5..+1.5 s
source "$(dirname "$0")/../lib.sh"
require_root_bpf
ABUSE=$BUILD/tests/httpabuse
[ -x "$ABUSE" ] || skip_all "$ABUSE not built"
command -v promtool >/dev/null || skip_all "promtool not installed"

# The limits the assertions derive from: the defaults, with a short timeout to keep it quick.
MAX_CONN=64 PER_IP=16 TIMEOUT=2 MAX_REQ=16384
# Peak and final RSS may exceed the baseline by at most this much (see "RSS" at the end).
RSS_BOUND_KB=8192
cat >"$TMP/abuse.ini" <<EOF
[web]
max_connections = $MAX_CONN
max_connections_per_ip = $PER_IP
connection_timeout = $TIMEOUT
max_request_bytes = $MAX_REQ
EOF
start_exporter --config "$TMP/abuse.ini" || {
	not_ok "exporter starts"
	finish
}
PID=$EXPORTER_PID
U=$EXPORTER_URL
notrack "${U##*:}" || not_ok "the attacks' port bypasses conntrack"
PORT=${U##*:}
TEXT_TYPE='text/plain; version=0.0.4; charset=utf-8'
OM_TYPE='application/openmetrics-text; version=1.0.0; charset=utf-8'
T0=$EPOCHREALTIME

fds() { ls "/proc/$PID/fd" 2>/dev/null | wc -l; }
status_kb() { awk -v f="$1:" '$1 == f { print $2 }' "/proc/$PID/status"; }
# num_le A B: A <= B (numbers, possibly fractional)
num_le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 <= b + 0) }'; }
rep() { head -c "$1" /dev/zero | tr '\0' "$2"; }

# answer [TIMEOUT_MS] <REQUEST: the status code of the exporter's answer to the raw bytes on
# stdin, or closed/reset/timeout when there was none; the whole answer is in $TMP/answer.
answer() {
	"$ABUSE" raw 127.0.0.1 "$PORT" "${1:-2000}" >"$TMP/answer" 2>&1
	awk 'NR == 1 { sub(/\r$/, ""); print ($1 == "NONE" || $1 ~ /^HTTP\/1\.[01]$/) ? $2 : "garbage" }' \
		"$TMP/answer"
}
# expect NAME REGEX [TIMEOUT_MS] <REQUEST: the answer matches REGEX (whole word).
expect() {
	local got
	got=$(answer "${3:-2000}")
	if [[ $got =~ ^($2)$ ]]; then
		ok "$1 ($got)"
	else
			not_ok "$1" "expected $2, got '$got': $(head -c 200 "$TMP/answer" | tr -d '\r' | head -n 2)"
	fi
}
# healthy ATTACK: a correct /metrics within 1 s, and the process alive.
healthy() {
	local code
	code=$(curl -s -m 1 -o "$TMP/healthy.body" -w '%{http_code}' "$U/metrics")
	if [ "$code" = 200 ] && grep -q '^netstack_exporter_build_info{' "$TMP/healthy.body" &&
		promtool check metrics <"$TMP/healthy.body" >"$TMP/promtool.out" 2>&1; then
		ok "after $1: /metrics 200 within 1 s with build_info, promtool accepts it"
	else
		not_ok "after $1: /metrics 200 within 1 s with build_info, promtool accepts it" \
			"status $code; $(head -c 300 "$TMP/promtool.out" 2>/dev/null)"
	fi
	check "after $1: exporter alive" kill -0 "$PID"
}
# scrape_from SRC: status of a 1 s scrape from source address SRC (000: no answer).
scrape_from() {
	curl -s -m 1 --interface "$1" -o /dev/null -w '%{http_code}' "$U/metrics"
}

# Baseline once the output buffers have grown to their working size (every format and gzip).
curl -s -o /dev/null "$U/metrics"
curl -s -o /dev/null -H 'Accept: application/openmetrics-text;version=1.0.0' "$U/metrics"
curl -s -o /dev/null -H 'Accept-Encoding: gzip' "$U/metrics"
curl -s -o /dev/null "$U/"
# The baseline once the connections above are closed: the fd count steady for 0.2 s (a fixed
# pause could take one still closing into it, and the end's return to baseline never came).
BASE_FDS=$(fds)
for _ in $(seq 25); do
	sleep 0.2
	[ "$(fds)" -eq "$BASE_FDS" ] && break
	BASE_FDS=$(fds)
done
BASE_RSS=$(status_kb VmRSS)
echo 5 >"/proc/$PID/clear_refs" # reset VmHWM: from now on it is the peak during the attacks
echo "# baseline: $BASE_FDS fds, VmRSS $BASE_RSS kB"

# ---- malformed request lines ----
expect "garbage request line: 400 or closed by connection_timeout" '400|closed' \
	$(((TIMEOUT + 2) * 1000)) < <(printf 'hello\r\n\r\n')
expect "TLS ClientHello on the plain port: 400 or closed by connection_timeout" '400|closed' \
	$(((TIMEOUT + 2) * 1000)) < <(printf '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03')
expect "request line without a version: 400" 400 < <(printf 'GET /metrics\r\n\r\n')
expect "HTTP/9.9: 505" 505 < <(printf 'GET /metrics HTTP/9.9\r\nHost: x\r\n\r\n')
expect "HTTP/2 preface: 505 or 400" '505|400' < <(printf 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n')
expect "unknown protocol FOO/1.1: 400" 400 < <(printf 'GET /metrics FOO/1.1\r\nHost: x\r\n\r\n')
expect "extra token after the version: 400" 400 \
	< <(printf 'GET /metrics HTTP/1.1 extra\r\nHost: x\r\n\r\n')
expect "NUL in the method: 400 or 405" '400|405' \
	< <(printf 'G\0T /metrics HTTP/1.1\r\nHost: x\r\n\r\n')
expect "NUL in the path: 400 or 404" '400|404' \
	< <(printf 'GET /met\0rics HTTP/1.1\r\nHost: x\r\n\r\n')
expect "NUL bytes only: 400 or closed by connection_timeout" '400|closed' \
	$(((TIMEOUT + 2) * 1000)) < <(printf '\0\0\0\0\0\0\0\0\r\n\r\n')
expect "NUL in a header value: 200 or 400" '200|400' \
	< <(printf 'GET /metrics HTTP/1.1\r\nHost: x\0y\r\n\r\n')
expect "header line without a colon: 400" 400 \
	< <(printf 'GET /metrics HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n')
expect "Content-Length -1: 400" 400 \
	< <(printf 'GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n')
expect "Content-Length overflowing 64 bits: 413 or 400" '413|400' \
	< <(printf 'GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n')
expect "4000-byte method: 405, 501 or 400" '405|501|400' < <(
	rep 4000 A
	printf ' /metrics HTTP/1.1\r\nHost: x\r\n\r\n'
)
expect "method longer than max_request_bytes: 414, 431, 501 or 400" '414|431|501|400' < <(
	rep $((MAX_REQ + 4096)) A
	printf ' /metrics HTTP/1.1\r\nHost: x\r\n\r\n'
)
healthy "malformed request lines"

# ---- oversized headers and URLs ----
expect "one header of max_request_bytes + 4 KiB: 431" 431 < <(
	printf 'GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: '
	rep $((MAX_REQ + 4096)) b
	printf '\r\n\r\n'
)
expect "one 1 MiB header: 431" 431 < <(
	printf 'GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: '
	rep $((1 << 20)) b
	printf '\r\n\r\n'
)
expect "$((MAX_REQ / 16)) headers of 19 bytes: 431" 431 < <(
	printf 'GET /metrics HTTP/1.1\r\nHost: x\r\n'
	awk -v n=$((MAX_REQ / 16)) 'BEGIN { for (i = 0; i < n; i++) printf "X-H%06d: 12345\r\n", i }'
	printf '\r\n'
)
expect "URL of max_request_bytes + 4 KiB: 414" 414 < <(
	printf 'GET /'
	rep $((MAX_REQ + 4096)) a
	printf ' HTTP/1.1\r\nHost: x\r\n\r\n'
)
expect "1 MiB query string: 414" 414 < <(
	printf 'GET /metrics?'
	rep $((1 << 20)) a
	printf ' HTTP/1.1\r\nHost: x\r\n\r\n'
)
# The limit must not refuse big but reasonable requests.
expect "an 8 KiB bearer token (max_request_bytes / 2) is served: 200" 200 < <(
	printf 'GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer '
	rep $((MAX_REQ / 2)) c
	printf '\r\n\r\n'
)
expect "100 small headers are served: 200" 200 < <(
	printf 'GET /metrics HTTP/1.1\r\nHost: x\r\n'
	awk 'BEGIN { for (i = 0; i < 100; i++) printf "X-H%06d: 12345\r\n", i }'
	printf '\r\n'
)
healthy "oversized headers and URLs"

# ---- bodies: only GET and HEAD, which take none ----
expect "POST with a 1 MiB body: 405 within 1 s" 405 1000 < <(
	printf 'POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n' $((1 << 20))
	rep $((1 << 20)) p
)
expect "GET declaring a 1 GiB body: refused within 1 s without reading it" '400|413' 1000 \
	< <(printf 'GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 1073741824\r\n\r\n')
expect "GET with a chunked body that never ends: refused within 1 s" '400|411|413' 1000 \
	< <(printf 'GET /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1000\r\nabc')
healthy "declared bodies"

# ---- methods other than GET and HEAD ----
for m in POST PUT DELETE PATCH OPTIONS TRACE PROPFIND FOO get; do
	code=$(answer < <(printf '%s /metrics HTTP/1.1\r\nHost: x\r\nX-Echo: secret-%s\r\n\r\n' \
		"$m" "$m"))
	if [ "$code" = 405 ] && grep -qi '^Allow: GET, HEAD' "$TMP/answer" &&
		! grep -q "secret-$m" "$TMP/answer"; then
		ok "$m /metrics: 405 with Allow: GET, HEAD, request not echoed"
	else
		not_ok "$m /metrics: 405 with Allow: GET, HEAD, request not echoed" \
			"$(tr -d '\r' <"$TMP/answer" | head -n 6)"
	fi
done
expect "CONNECT: 405" 405 < <(printf 'CONNECT 127.0.0.1:9 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n')
expect "OPTIONS *: 405" 405 < <(printf 'OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n')
healthy "other methods"

# ---- non-ASCII and percent-encoded paths ----
# path_case NAME EXPECTED PATH: PATH is a printf format (\xNN for raw bytes).
path_case() {
	expect "GET $1: $2" "$2" < <(printf "GET $3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
}
path_case "/m<UTF-8 e-acute>trics" 404 '/m\xc3\xa9trics'
path_case "/<invalid UTF-8 bytes>" 404 '/\xff\xfe\x80'
path_case "/metrics<UTF-8 e-acute>" 404 '/metrics\xc3\xa9'
path_case "/%C3%A9" 404 '/%%C3%%A9'
path_case "/%zz (bad escape)" 404 '/%%zz'
path_case "/% (truncated escape)" 404 '/%%'
path_case "/%00" 404 '/%%00'
path_case "/metrics%00 (decoded NUL must not cut the path)" 404 '/metrics%%00'
path_case "/metrics%00.png" 404 '/metrics%%00.png'
path_case "/metrics%2F" 404 '/metrics%%2F'
path_case "/%41 x 2000" 404 "/$(rep 2000 X | sed 's/X/%%41/g')"
# Percent-decoding an unreserved character gives the same URI (RFC 3986 6.2.2.2).
path_case "/%6Detrics (= /metrics)" 200 '/%%6Detrics'
path_case "/metrics?<non-ASCII, %00 and %ff in the query>" 200 '/metrics?q=\xc3\xa9%%00%%ff&%%zz'
healthy "non-ASCII and percent-encoded paths"

# ---- hostile Accept and Accept-Encoding ----
# negotiation HEADER: 200, a Content-Type of ours, a body valid for it (after gunzip if gzipped).
negotiation() {
	local code ct ce name
	code=$(curl -s -m 1 -D "$TMP/neg.hdr" -o "$TMP/neg.body" -w '%{http_code}' -H "$1" \
		"$U/metrics")
	ct=$(awk 'tolower($1) == "content-type:" { sub(/\r$/, ""); sub(/^[^:]*: */, ""); print }' \
		"$TMP/neg.hdr")
	ce=$(awk 'tolower($1) == "content-encoding:" { sub(/\r$/, ""); print $2 }' "$TMP/neg.hdr")
	case $ce in
	gzip) gzip -dc <"$TMP/neg.body" >"$TMP/neg.plain" 2>/dev/null || : >"$TMP/neg.plain" ;;
	"") cp "$TMP/neg.body" "$TMP/neg.plain" ;;
	*) : >"$TMP/neg.plain" ;;
	esac
	# Test names stay printable whatever the header holds.
	name=$(printf '%s' "${1:0:60}" | LC_ALL=C tr -c '[:print:]' '?')
	if [ "$code" = 200 ] && grep -q '^netstack_exporter_build_info{' "$TMP/neg.plain" &&
		{ { [ "$ct" = "$TEXT_TYPE" ] && promtool check metrics <"$TMP/neg.plain" >/dev/null 2>&1; } ||
			{ [ "$ct" = "$OM_TYPE" ] && [ "$(tail -n 1 "$TMP/neg.plain")" = "# EOF" ]; }; }; then
		ok "$name: 200, $ct${ce:+, $ce}, valid body"
	else
		not_ok "$name: 200, our Content-Type, valid body" "status $code, type '$ct', encoding '$ce'"
	fi
}
long=$(rep 8000 ,)
while IFS= read -r h; do
	negotiation "$h"
done <<EOF
Accept: ;;;;;;
Accept: application/openmetrics-text;version=abc
Accept: application/openmetrics-text;version=1.0.0;q=NaN
Accept: application/openmetrics-text;version=1.0.0;q=1e999
Accept: application/openmetrics-text;version=1.0.0;q=-1
Accept: application/openmetrics-text;version=1.0.0;;;q=;=;
Accept: application/openmetrics-text;version
Accept: application/json
Accept: "\\\\\\\\"
Accept: $(printf '\xc3\xa9\xe2\x82\xac\xff')
Accept: application/openmetrics-text;version=1.0.0$long
Accept-Encoding: gzip;q=abc
Accept-Encoding: gzip;q=1e999
Accept-Encoding: gzip;q=-0.5
Accept-Encoding: br, zstd, deflate, compress
Accept-Encoding: identity;q=0, *;q=0
Accept-Encoding: ;;;,,,gzip;;;
Accept-Encoding: gzip$long
Accept-Encoding: $(printf '\xc3\xa9\xff')
EOF
# Everything refused (RFC 9110: q=0 is "not acceptable"): 406, and serving goes on.
check_eq "Accept: */*;q=0: 406 Not Acceptable" 406 \
	"$(curl -s -m 1 -o /dev/null -w '%{http_code}' -H 'Accept: */*;q=0' "$U/metrics")"
healthy "hostile Accept and Accept-Encoding"

# ---- pipelining ----
"$ABUSE" pipeline 127.0.0.1 "$PORT" 300 >"$TMP/pipeline.out" 2>&1
rc=$?
if [ $rc -eq 0 ]; then
	ok "300 pipelined requests in one write: all answered, in order"
else
	not_ok "300 pipelined requests in one write: all answered, in order" \
		"$(cat "$TMP/pipeline.out")"
fi
healthy "pipelining"

# ---- abrupt disconnects, 4 clients at once ----
pids=()
for i in 1 2 3 4; do
	"$ABUSE" -b "127.0.4.$i" disconnect 127.0.0.1 "$PORT" 300 >"$TMP/disc.$i.out" 2>&1 &
	pids+=($!)
done
wait "${pids[@]}"
errors=$(cat "$TMP"/disc.*.out | awk '$1 == "done" { for (i = 2; i <= NF; i++) { split($i, kv, "=");
	if (kv[1] == "requests") n += kv[2]; if (kv[1] == "errors") e += kv[2] } } END { print n "/" e }')
check_eq "1200 requests dropped by FIN, RST, RST after 1 byte, RST mid-pipeline: sent/errors" \
	1200/0 "$errors"
healthy "abrupt disconnects"

# ---- slowloris ----
# 50 from 127.0.0.1, one byte every 200 ms for 4 s, then the header ends; at the same time 4
# from 127.0.0.3 that pause 3 s (> connection_timeout) between bytes.
attack "$TMP/slow1.out" -b 127.0.0.1 slowloris 127.0.0.1 "$PORT" 50 4 200
S1=$ATTACK
attack "$TMP/slow2.out" -b 127.0.0.3 slowloris 127.0.0.1 "$PORT" 4 5 3000
S2=$ATTACK
wait_line "$TMP/slow1.out" ready && wait_line "$TMP/slow2.out" ready
sleep 1
n=$(fds)
check "slowloris: exporter fds <= baseline + $PER_IP + 4 + 2 ($n, baseline $BASE_FDS)" \
	num_le "$n" $((BASE_FDS + PER_IP + 4 + 2))
check_eq "slowloris: a scrape from another address (127.0.0.2) gets 200 within 1 s" 200 \
	"$(scrape_from 127.0.0.2)"
wait "$S1" "$S2"
kept=$(field "$TMP/slow1.out" slowloris finished)
refused=$(field "$TMP/slow1.out" done refused)
check "slowloris: the server kept 1..$PER_IP of 50 from one address ($kept, refused $refused)" \
	awk -v k="$kept" -v m="$PER_IP" 'BEGIN { exit !(k >= 1 && k <= m) }'
check_eq "slowloris: every kept connection, its request sent byte by byte, got 200" "$kept" \
	"$(field "$TMP/slow1.out" slowloris status_200)"
hold=$(field "$TMP/slow2.out" done max_hold)
check_eq "slowloris with pauses > connection_timeout: all 4 cut off by the server" 4 \
	"$(field "$TMP/slow2.out" done timed_out)"
check "... within connection_timeout + 1.5 s (held $hold s)" num_le "$hold" "$((TIMEOUT + 1)).5"
healthy "slowloris"

# ---- 10 000 idle connections from one address ----
# The tool replaces connections the server times out, so its share stays taken throughout.
attack "$TMP/idle1.out" -b 127.0.0.1 idle 127.0.0.1 "$PORT" 10000 5
wait_line "$TMP/idle1.out" ready
# Opening 10 000 can outlast connection_timeout on a busy machine: the server then timed out the
# first ones it kept before "ready", and the tool replaces them only from then on. Judge the
# share the server keeps once it holds one again, from its own descriptors.
wait_until 3 sh -c "[ \$(ls /proc/$PID/fd | wc -l) -gt $BASE_FDS ]"
n=$(fds)
code2=$(scrape_from 127.0.0.2)
code1=$(scrape_from 127.0.0.1)
kept=$((n - BASE_FDS))
refused=$(field "$TMP/idle1.out" ready refused)
check_eq "idle x10000 from 127.0.0.1: all connections made (made/failed)" 10000/0 \
	"$(field "$TMP/idle1.out" ready conns)/$(field "$TMP/idle1.out" ready failed)"
check "idle x10000: the server keeps 1..$PER_IP (+2 fds of its own), refuses the rest ($kept, refused $refused)" \
	awk -v k="$kept" -v m="$((PER_IP + 2))" 'BEGIN { exit !(k >= 1 && k <= m) }'
check "idle x10000: exporter fds <= baseline + $PER_IP + 2 ($n, baseline $BASE_FDS)" \
	num_le "$n" $((BASE_FDS + PER_IP + 2))
check_eq "idle x10000: a scrape from another address (127.0.0.2) gets 200 within 1 s" 200 "$code2"
check_eq "idle x10000: a scrape from the attacking address is refused (per-IP limit)" 000 "$code1"
wait "$ATTACK"
hold=$(field "$TMP/idle1.out" done max_hold)
closed=$(field "$TMP/idle1.out" done timed_out)
# Each kept connection is timed out (and replaced) at least once, after connection_timeout.
check "idle x10000: the server closes kept ones after connection_timeout ($closed, after $hold s)" \
	awk -v n="$closed" -v h="$hold" -v m="$PER_IP" -v t="$TIMEOUT" \
	'BEGIN { exit !(n >= m && h >= t - 0.5 && h <= t + 1.5) }'
healthy "10000 idle connections from one address"

# ---- 10 000 idle connections from 100 addresses ----
# Past max_connections the exporter closes a connection of the address that holds the most
# for each new one (tests/integration/http_flood.sh has the figures): a newcomer from another
# address is served; resources stay bounded (max_connections and 32 being closed).
attack "$TMP/idle2.out" -b 127.1.0.1 -B 100 idle 127.0.0.1 "$PORT" 10000 4
wait_line "$TMP/idle2.out" ready
n=$(fds)
code2=$(scrape_from 127.0.0.2)
# A 1 s bound on one request can be missed by chance on a loaded machine (a SYN that finds the
# accept queue full waits 1 s): as in http_flood.sh, measured once more while the attack holds.
if [ "$code2" != 200 ] && ! grep -q done "$TMP/idle2.out"; then
	echo "# newcomer: $code2 within 1 s: measured once more"
	first=$code2
	code2=$(scrape_from 127.0.0.4)
	# Judged only if the attack still held at its end; else the first one stands.
	if grep -q done "$TMP/idle2.out"; then
		echo "# the attack had ended meanwhile: the first measurement stands"
		code2=$first
	fi
fi
check "idle x10000 from 100 addresses: the exporter holds at most max_connections + 34 ($n fds, baseline $BASE_FDS)" \
	num_le "$n" $((BASE_FDS + MAX_CONN + 34))
check_eq "idle x10000 from 100 addresses: a newcomer from another address gets 200 within 1 s" \
	200 "$code2"
wait "$ATTACK"
t=$EPOCHREALTIME
healthy "10000 idle connections from 100 addresses"
t=$(awk -v a="$t" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
echo "# the recovery scrape was answered $t s after the attacker left"

# ---- resources ----
n=$(fds)
for _ in $(seq $(((TIMEOUT + 2) * 10))); do
	[ "$n" -le "$BASE_FDS" ] && break
	sleep 0.1
	n=$(fds)
done
check_eq "fd count back to baseline within connection_timeout + 2 s" "$BASE_FDS" "$n"
# The bound: what the limits let attackers hold at once is max_connections x (a pool of
# max_request_bytes + ~1 KiB of connection state + one copied response of ~10 KiB), under
# 2 MiB; 8 MiB adds room for malloc arenas and fragmentation, yet a leak of 0.5 KiB per
# connection over the ~16 000 connections accepted here would exceed it.
peak=$(status_kb VmHWM)
rss=$(status_kb VmRSS)
if grep -q __asan_init "$EXPORTER"; then
	# Its quarantine keeps freed memory resident; LeakSanitizer checks at exit instead (below).
	echo "# AddressSanitizer build: RSS $BASE_RSS -> $rss kB, bound not applied"
else
	check "peak RSS during the attacks <= baseline + $RSS_BOUND_KB kB ($BASE_RSS -> $peak kB)" \
		num_le "$peak" $((BASE_RSS + RSS_BOUND_KB))
	check "RSS at the end <= baseline + $RSS_BOUND_KB kB ($BASE_RSS -> $rss kB)" \
		num_le "$rss" $((BASE_RSS + RSS_BOUND_KB))
fi

# ---- a clean exit after all that (with ASan, LeakSanitizer runs here) ----
kill -TERM "$PID"
for _ in $(seq 100); do
	kill -0 "$PID" 2>/dev/null || break
	sleep 0.1
done
if kill -0 "$PID" 2>/dev/null; then
	not_ok "SIGTERM after the attacks: exits within 10 s"
else
	wait "$PID"
	check_eq "SIGTERM after the attacks: exit status" 0 "$?"
fi
echo "# total $(awk -v a="$T0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s"
finish
