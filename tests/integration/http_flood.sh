#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The scraper is never locked out. With the built-in defaults:
# thousands of idle and slowloris connections from 100 other loopback addresses, replaced as
# soon as the exporter closes them, while Prometheus' address scrapes and must be answered
# within 1 s; afterwards file descriptors and RSS come back. Then, with basic auth, two dozen
# clients from 12 other addresses send wrong passwords (and unknown users) nonstop while the
# real scraper's scrapes and /healthz stay under a small bound; failures get 429 with
# Retry-After per address; a bcrypt cost over the maximum is a config error naming file, line
# and key. Figures (every latency) are printed as comments.
# schedule: serial each
# why: connection floods with scrape latency bounds of 0.5 s and 1 s
source "$(dirname "$0")/../lib.sh"
require_root_bpf
ABUSE=$BUILD/tests/httpabuse
[ -x "$ABUSE" ] || skip_all "$ABUSE not built"
command -v mkpasswd >/dev/null || skip_all "needs mkpasswd (Debian package whois)"

# The defaults the flood meets (conf/netstack_exporter.ini).
MAX_CONN=256 PER_IP=16 TIMEOUT=10
# How long the attackers hold on (s); the scrapes happen in between.
HOLD=14
# Acceptance: a scrape during the connection flood within this (s), the issue's bound.
FLOOD_BOUND=1.0
# Scrapes and /healthz with accepted credentials while wrong passwords pour in (s). The HTTP
# thread runs no bcrypt at all; what remains is it answering the guessers' ~10 000 requests a
# second (429s) beside the scrapes, on a loaded 2-core machine: measured up to 0.33 s.
AUTH_BOUND=0.5
# A first login (one bcrypt run, ~60 ms at cost 10, after at most one other) in the meantime.
LOGIN_BOUND=1.0
# RSS may stay above the baseline by this much after the flood (kB; see "RSS" below).
RSS_BOUND_KB=6144
T0=$EPOCHREALTIME

fds() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }
status_kb() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"; }
# num_le A B: A <= B (numbers, possibly fractional)
num_le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 <= b + 0) }'; }
# timed OUT URL [CURL ARGS...]: one request from 127.0.0.1; appends "CODE SECONDS" to OUT.
timed() {
	local out=$1 url=$2
	shift 2
	local r
	r=$(curl -s -m 5 --interface 127.0.0.1 -o /dev/null -w '%{http_code} %{time_total}' "$@" "$url")
	echo "${r:-000 5}" >>"$out"
}
# summary FILE: "n=N ok=OK min=.. median=.. max=.." over "CODE SECONDS" lines.
summary() {
	sort -k2 -g "$1" | awk '{ t[NR] = $2; ok += $1 == 200 } END {
		printf "n=%d ok=%d min=%.3f median=%.3f max=%.3f", NR, ok, t[1], t[int((NR + 1) / 2)], t[NR] }'
}
# all_within FILE BOUND: every line is a 200 within BOUND seconds.
all_within() { awk -v b="$2" '$1 != 200 || $2 + 0 > b + 0 { bad = 1 } END { exit bad || !NR }' "$1"; }
# A bound on the slowest of 10 or 20 requests can be missed by chance on a machine others load:
# once_more MEASURE BOUND FILES -- ATTACKER_OUTPUTS: when a request in FILES was over BOUND,
# MEASURE again and say so. The second measurement is judged only when no attacker had ended
# by then ("done" in its output): else it proves nothing and the first one stands.
once_more() {
	local measure=$1 bound=$2 files=() f
	shift 2
	while [ "$1" != -- ]; do files+=("$1") && shift; done
	shift
	for f in "${files[@]}"; do all_within "$f" "$bound" || break; done
	all_within "$f" "$bound" && return
	echo "# over $bound s ($(summary "$f")): measured once more"
	for f in "${files[@]}"; do cp "$f" "$f.first"; done
	"$measure"
	if grep -qs '^done' "$@"; then
		echo "# ... but an attacker had ended by then: the first measurement stands"
		for f in "${files[@]}"; do mv "$f.first" "$f"; done
	fi
}

# ==== 1. connection flood against the defaults ====
start_exporter || {
	not_ok "exporter starts"
	finish
}
PID=$EXPORTER_PID
U=$EXPORTER_URL
notrack "${U##*:}" || not_ok "the flood's port bypasses conntrack"
PORT=${U##*:}
for _ in 1 2 3; do curl -s -o /dev/null "$U/metrics"; done
curl -s -o /dev/null -H 'Accept-Encoding: gzip' "$U/metrics"
sleep 0.2
BASE_FDS=$(fds "$PID")
BASE_RSS=$(status_kb "$PID" VmRSS)
echo 5 >"/proc/$PID/clear_refs" # VmHWM from here: the peak during the flood
echo "# baseline: $BASE_FDS fds, VmRSS $BASE_RSS kB"

# 3000 idle and 1000 slowloris (a byte every 500 ms, never a whole header) from 127.0.0.2 ..
# 127.0.0.101, 40 per address; a connection the exporter times out is replaced.
attack "$TMP/idle.out" -b 127.0.0.2 -B 100 idle 127.0.0.1 "$PORT" 3000 "$HOLD"
IDLE=$ATTACK
attack "$TMP/slow.out" -b 127.0.0.2 -B 100 slowloris 127.0.0.1 "$PORT" 1000 "$HOLD" 500
SLOW=$ATTACK
wait_line "$TMP/idle.out" ready && wait_line "$TMP/slow.out" ready
sleep 1
held=$(fds "$PID")
flood_times() {
	: >"$TMP/flood.times"
	: >"$TMP/flood.healthz"
	for _ in $(seq 10); do
		timed "$TMP/flood.times" "$U/metrics"
		timed "$TMP/flood.healthz" "$U/healthz"
		sleep 0.3
	done
}
flood_times
once_more flood_times "$FLOOD_BOUND" "$TMP/flood.times" "$TMP/flood.healthz" -- \
	"$TMP/idle.out" "$TMP/slow.out"
held2=$(fds "$PID")
echo "# during the flood: $held then $held2 fds; scrapes $(summary "$TMP/flood.times");" \
	"/healthz $(summary "$TMP/flood.healthz")"
check "flood: 10 scrapes from 127.0.0.1 all 200 within $FLOOD_BOUND s ($(summary "$TMP/flood.times"))" \
	all_within "$TMP/flood.times" "$FLOOD_BOUND"
check "flood: 10 /healthz from 127.0.0.1 all 200 within $FLOOD_BOUND s ($(summary "$TMP/flood.healthz"))" \
	all_within "$TMP/flood.healthz" "$FLOOD_BOUND"
# max_connections, the daemon's headroom for connections being closed (32), epoll and ITC.
check "flood: the exporter holds at most max_connections + 34 sockets ($held, $held2 fds, baseline $BASE_FDS)" \
	num_le "$((held > held2 ? held : held2))" $((BASE_FDS + MAX_CONN + 34))
check "flood: ... and does hold connections (> $((MAX_CONN / 2)) more fds than the baseline)" \
	num_le $((BASE_FDS + MAX_CONN / 2)) "$held"
wait "$IDLE" "$SLOW"
echo "# idle attacker: $(grep '^done' "$TMP/idle.out")"
echo "# slowloris attacker: $(grep '^done' "$TMP/slow.out")"

# ---- the same, but every connection the exporter closes is opened again at once ----
# Each one the exporter closes to make room comes back: the kernel's accept queue fills with
# them, and the scraper's connection waits its turn there (or, when the queue overflows, its
# SYN is dropped and resent after 1 s). Served, but not within the 1 s bound every time: the
# figures are printed, and every scrape must succeed within 5 s.
attack "$TMP/ridle.out" -r -b 127.0.0.2 -B 100 idle 127.0.0.1 "$PORT" 3000 "$HOLD"
IDLE=$ATTACK
attack "$TMP/rslow.out" -r -b 127.0.0.2 -B 100 slowloris 127.0.0.1 "$PORT" 1000 "$HOLD" 500
SLOW=$ATTACK
wait_line "$TMP/ridle.out" ready && wait_line "$TMP/rslow.out" ready
: >"$TMP/churn.times"
for _ in $(seq 10); do
	timed "$TMP/churn.times" "$U/metrics"
	sleep 0.2
done
echo "# under reconnecting attackers: scrapes $(summary "$TMP/churn.times")"
check "reconnecting flood: 10 scrapes from 127.0.0.1 all 200 within 5 s ($(summary "$TMP/churn.times"))" \
	all_within "$TMP/churn.times" 5
wait "$IDLE" "$SLOW"
echo "# idle attacker: $(grep '^done' "$TMP/ridle.out")"
echo "# slowloris attacker: $(grep '^done' "$TMP/rslow.out")"
check "reconnecting flood: the exporter closed and the attackers reopened > 1000 connections ($(field "$TMP/ridle.out" done reopened) + $(field "$TMP/rslow.out" done reopened))" \
	num_le 1000 $(($(field "$TMP/ridle.out" done reopened) + $(field "$TMP/rslow.out" done reopened)))

ev=$(curl -sf "$U/metrics" | awk '$1 == "netstack_http_connections_evicted_total" { print $2 }')
check "the evictions are counted: netstack_http_connections_evicted_total ${ev:-absent} >= 1000" \
	num_le 1000 "${ev:-0}"
check "... and logged once" test "$(grep -c 'over max_connections; closing' "$EXPORTER_LOG")" = 1

# ---- resources come back ----
t=$EPOCHREALTIME
n=$(fds "$PID")
for _ in $(seq $(((TIMEOUT + 3) * 10))); do
	[ "$n" -le $((BASE_FDS + 1)) ] && break
	sleep 0.1
	n=$(fds "$PID")
done
t=$(awk -v a="$t" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
check "after the flood: fds back to the baseline (+1) within connection_timeout + 3 s ($n, baseline $BASE_FDS, after $t s)" \
	num_le "$n" $((BASE_FDS + 1))
# RSS: 256 connections hold a 16 KiB request pool (max_request_bytes) and ~1 KiB of state each
# (~4.4 MiB); after they are gone glibc keeps part of the freed heap. A leak of 100 bytes per
# connection over the ~10 000 connections accepted here would exceed the bound at the end.
peak=$(status_kb "$PID" VmHWM)
rss=$(status_kb "$PID" VmRSS)
echo "# RSS: baseline $BASE_RSS kB, peak $peak kB, after $rss kB"
if grep -q __asan_init "$EXPORTER"; then
	echo "# AddressSanitizer build: RSS bound not applied (LeakSanitizer checks at exit)"
else
	check "after the flood: RSS <= baseline + $RSS_BOUND_KB kB ($BASE_RSS -> $rss kB, peak $peak kB)" \
		num_le "$rss" $((BASE_RSS + RSS_BOUND_KB))
fi
code=$(curl -s -m 1 -o /dev/null -w '%{http_code}' "$U/metrics")
check_eq "after the flood: a scrape from the attackers' first address is served" 200 \
	"$(curl -s -m 1 --interface 127.0.0.2 -o /dev/null -w '%{http_code}' "$U/metrics")"
check_eq "after the flood: /metrics 200" 200 "$code"
stop_exporter

# ==== 2. wrong passwords while the real scraper scrapes ====
GOOD='right horse battery'
HASH=$(mkpasswd -m bcrypt -R 10 "$GOOD")
LATE_HASH=$(mkpasswd -m bcrypt -R 10 late-pass)
cat >"$TMP/auth.ini" <<EOF
[web]
basic_auth_user = prometheus:$HASH
basic_auth_user = late:$LATE_HASH
EOF
# As start_exporter, but /healthz too needs the password.
PORT=$(free_port)
U=http://127.0.0.1:$PORT
notrack "$PORT" || not_ok "the guessers' port bypasses conntrack"
spawn_exporter "$TMP/exporter.auth.log" --config "$TMP/auth.ini" --web.listen-address "127.0.0.1:$PORT"
PID=$EXPORTER_PID
for _ in $(seq 100); do
	[ "$(curl -s -m 2 -o /dev/null -w '%{http_code}' "$U/healthz")" = 401 ] && break
	kill -0 "$PID" 2>/dev/null || break
	sleep 0.05
done
timed "$TMP/auth.first" "$U/metrics" -u "prometheus:$GOOD"
check "auth: the exporter serves, the right password gets 200 ($(cat "$TMP/auth.first"))" \
	all_within "$TMP/auth.first" 5
echo "# first scrape (one bcrypt run, then remembered): $(cat "$TMP/auth.first")"

# 24 clients on 12 addresses (2 each) send a wrong password, 4 on 4 more an unknown user,
# each again as soon as answered.
attack "$TMP/wrong.out" -b 127.0.3.1 -B 12 auth 127.0.0.1 "$PORT" 24 "$HOLD" prometheus:wrong
WRONG=$ATTACK
attack "$TMP/unknown.out" -b 127.0.3.101 -B 4 auth 127.0.0.1 "$PORT" 4 "$HOLD" mallory:guess
UNKNOWN=$ATTACK
sleep 1
auth_times() {
	: >"$TMP/auth.times"
	: >"$TMP/auth.healthz"
	for _ in $(seq 20); do
		timed "$TMP/auth.times" "$U/metrics" -u "prometheus:$GOOD"
		timed "$TMP/auth.healthz" "$U/healthz" -u "prometheus:$GOOD"
		sleep 0.25
	done
}
auth_times
once_more auth_times "$AUTH_BOUND" "$TMP/auth.times" "$TMP/auth.healthz" -- \
	"$TMP/wrong.out" "$TMP/unknown.out"
# A user whose password was never checked yet waits for the worker; from an address without
# failures its check goes ahead of the guessers' ones: at most the check running, then its own.
: >"$TMP/auth.late"
timed "$TMP/auth.late" "$U/metrics" -u late:late-pass
echo "# under wrong passwords: scrapes $(summary "$TMP/auth.times"); /healthz $(summary "$TMP/auth.healthz");" \
	"a first login: $(cat "$TMP/auth.late")"
check "wrong passwords: 20 scrapes with accepted credentials all 200 within $AUTH_BOUND s ($(summary "$TMP/auth.times"))" \
	all_within "$TMP/auth.times" "$AUTH_BOUND"
check "wrong passwords: 20 /healthz all 200 within $AUTH_BOUND s ($(summary "$TMP/auth.healthz"))" \
	all_within "$TMP/auth.healthz" "$AUTH_BOUND"
check "wrong passwords: a first login during them is 200 within $LOGIN_BOUND s ($(cat "$TMP/auth.late"))" \
	all_within "$TMP/auth.late" "$LOGIN_BOUND"
wait "$WRONG" "$UNKNOWN"
echo "# wrong password clients: $(cat "$TMP/wrong.out")"
echo "# unknown user clients: $(cat "$TMP/unknown.out")"
w401=$(field "$TMP/wrong.out" done status_401)
w429=$(field "$TMP/wrong.out" done status_429)
check "wrong passwords: never accepted, refused with 401 and 429 (200: $(field "$TMP/wrong.out" done status_200), 401: $w401, 429: $w429)" \
	awk -v a="$(field "$TMP/wrong.out" done status_200)" -v b="$w401" -v c="$w429" \
	'BEGIN { exit !(a == 0 && b > 0 && c > 0) }'
# The budget: 5 failures per address, then one per 2 s, so 12 addresses get at most
# 12 x (5 + HOLD / 2 + 1) bcrypt runs.
check "wrong passwords: bcrypt runs within the per-address budget ($w401 <= $((12 * (5 + HOLD / 2 + 1))))" \
	num_le "$w401" $((12 * (5 + HOLD / 2 + 1)))
check_eq "unknown user: never accepted" 0 "$(field "$TMP/unknown.out" done status_200)"
rl=$(curl -sf -u "prometheus:$GOOD" "$U/metrics" |
	awk '$1 == "netstack_http_auth_refused_total{reason=\"rate_limited\"}" { print $2 }')
check "429s are counted: netstack_http_auth_refused_total{reason=\"rate_limited\"} ${rl:-absent} >= $w429" \
	num_le "$w429" "${rl:--1}"

# ---- the budget of one address ----
# 10 wrong passwords one after the other: 5 are checked (401), then one per 2 s, the rest 429.
t=$EPOCHREALTIME
for i in $(seq 10); do
	curl -s -m 5 --interface 127.0.5.1 -D "$TMP/budget.$i" -o /dev/null -u prometheus:nope "$U/metrics"
done
t=$(awk -v a="$t" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
codes=$(for i in $(seq 10); do awk 'NR == 1 { printf "%s ", $2 }' "$TMP/budget.$i"; done)
n401=$(grep -o 401 <<<"$codes" | wc -l)
check "one address, 10 wrong passwords in $t s: 5 x 401 first, then 429s, 401s <= 5 + $t / 2 ($codes)" \
	awk -v c="$codes" -v n="$n401" -v t="$t" 'BEGIN { exit !(substr(c, 1, 20) == "401 401 401 401 401 " &&
		c ~ /429/ && c !~ /200|503/ && n <= 5 + int(t / 2) + 1) }'
last=$(for i in $(seq 10); do awk 'NR == 1 && $2 == 429 { print FILENAME }' "$TMP/budget.$i"; done | tail -n 1)
retry=$(awk 'tolower($1) == "retry-after:" { print $2 + 0 }' "${last:-/dev/null}")
check "... a 429 says Retry-After in 1..3 s ($retry)" \
	awk -v r="$retry" 'BEGIN { exit !(r >= 1 && r <= 3) }'
check_eq "... while credentials accepted before still work from that address (checked first)" 200 \
	"$(curl -s -m 1 --interface 127.0.5.1 -o /dev/null -w '%{http_code}' -u "prometheus:$GOOD" "$U/metrics")"
check_eq "... and other addresses are not limited" 401 \
	"$(curl -s -m 2 --interface 127.0.5.2 -o /dev/null -w '%{http_code}' -u prometheus:nope "$U/metrics")"
sleep "${retry:-3}"
check_eq "... after Retry-After one more try is checked (401, not 429)" 401 \
	"$(curl -s -m 2 --interface 127.0.5.1 -o /dev/null -w '%{http_code}' -u prometheus:nope "$U/metrics")"
stop_exporter

# ==== 3. a bcrypt cost above the maximum is a config error ====
cat >"$TMP/cost.ini" <<EOF
[web]
max_connections = 64

basic_auth_user = slow:\$2b\$13\$${HASH:7}
EOF
out=$("$EXPORTER" --config "$TMP/cost.ini" --check-config 2>&1)
rc=$?
check_eq "bcrypt cost 13: --check-config exits 1" 1 "$rc"
check "... naming file, line and key: $out" grep -qF \
	"$TMP/cost.ini:4: basic_auth_user: user 'slow': bcrypt cost 13 is above the maximum of 12" <<<"$out"
"$EXPORTER" --config "$TMP/cost.ini" --web.listen-address "127.0.0.1:$(free_port)" \
	>"$TMP/cost.log" 2>&1 &
p=$!
for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$p" 2>/dev/null; then
	kill "$p"
	not_ok "bcrypt cost 13: the exporter refuses to start"
else
	wait "$p"
	check_eq "bcrypt cost 13: the exporter refuses to start (exit status)" 1 "$?"
fi
echo "# total $(awk -v a="$T0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s"
finish
