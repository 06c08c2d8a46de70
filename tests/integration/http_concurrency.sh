#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# 64 parallel scrapers, together SCRAPES scrapes, while udpflood floods a closed UDP port in a
# network namespace (so NO_SOCKET drops keep rising): every response is a complete 200, every
# one passes a structural check (and promtool, on a sample), and no counter series goes
# backwards or disappears between consecutive scrapes of the same scraper. Prints the scrape
# rate. The run ends on a count of scrapes (nothing here measures time), or after the 60 s the
# run used to take, whichever comes first: a loaded machine (ASan, other tests beside it)
# scrapes fewer, as before, and never waits longer than before.
# HTTP_CONCURRENCY_SCRAPES lengthens the run (a soak); it is never shorter than the default.
# schedule: serial each
# why: 64 scrapers and a UDP flood swamp the CPUs and everyone's sampling
source "$(dirname "$0")/../lib.sh"
require_root_bpf
UDPFLOOD=$BUILD/tests/udpflood
[ -x "$UDPFLOOD" ] || skip_all "$UDPFLOOD not built"
command -v promtool >/dev/null || skip_all "promtool not installed"

SCRAPERS=64
# Scrapes per curl process: they share one keep-alive connection, as Prometheus does.
BATCH=10
# 8 batches a scraper on average (~5000 scrapes, 79 consecutive pairs a scraper): the
# starvation check below (each >= 1/4 of the mean, i.e. 2 batches) still has room to fail,
# and the structural check reads every response, so more scrapes cost twice.
SCRAPES=$((SCRAPERS * BATCH * 8))
if [ "${HTTP_CONCURRENCY_SCRAPES:-0}" -gt "$SCRAPES" ]; then
	SCRAPES=$HTTP_CONCURRENCY_SCRAPES
fi
LIMIT=60 # s: the time the run used to take; a soak (HTTP_CONCURRENCY_SCRAPES) gets 300
[ -n "${HTTP_CONCURRENCY_SCRAPES:-}" ] && LIMIT=300
# Source addresses 127.0.5.1..8, 8 scrapers each: max_connections_per_ip (16) is never the
# limit, even while a scraper's old connection is torn down as its next one arrives.
ADDRS=8
MAX_SCRAPES=100000 # per scraper, a bound in case the clock misbehaves
PROMTOOL_SAMPLE=100

# Default configuration: max_connections 256, more than the scrapers hold.
start_exporter || {
	not_ok "exporter starts"
	finish
}
URL=$EXPORTER_URL/metrics

NS=nsconc$$
netns_add "$NS"
ip netns exec "$NS" "$UDPFLOOD" 127.0.0.1 9 0 $((LIMIT + 30)) >/dev/null 2>&1 &
FLOOD=$!
on_exit "kill $FLOOD"
# The series the flood raises (a prefix: optional labels would follow).
NOSOCK='netstack_skb_drops_total{reason="NO_SOCKET",family="ipv4",protocol="udp"'
# nosock: the sum of the NO_SOCKET UDP/IPv4 drops in one scrape.
nosock() {
	curl -s -m 5 "$URL" |
		awk -v p="$NOSOCK" 'index($0, p) == 1 { s += $NF } END { printf "%.0f\n", s }'
}
# The flood must be visible before the scrapers start, or monotonicity proves nothing.
# Waited for: the flood's process may take a while to start on a busy machine.
before=$(nosock)
# shellcheck disable=SC2317 # called through wait_until
flood_seen() {
	d=$(($(nosock) - before))
	[ "$d" -gt 1000 ]
}
wait_until 10 flood_seen
flooding=$((before + d))
check "the flood drops packets before the scrapers start ($d NO_SOCKET drops)" \
	test "$d" -gt 1000

# scraper ID SRC: scrape in batches until $TMP/stop exists (or END); responses in
# $TMP/s.ID/NNNNNN, one "status exitcode bytes seconds" line per scrape in $TMP/s.ID/status.
scraper() {
	local dir=$TMP/s.$1 n=0 b f args
	mkdir -p "$dir"
	while [ ! -e "$TMP/stop" ] && ((EPOCHSECONDS < END && n < MAX_SCRAPES)); do
		args=()
		for ((b = n; b < n + BATCH; b++)); do
			printf -v f '%s/%06d' "$dir" "$b"
			args+=(-o "$f" "$URL")
		done
		curl -s --interface "$2" -m 10 \
			-w '%{http_code} %{exitcode} %{size_download} %{time_total}\n' \
			"${args[@]}" >>"$dir/status" 2>/dev/null
		n=$((n + BATCH))
	done
}

START=$EPOCHREALTIME
END=$((EPOCHSECONDS + LIMIT))
pids=()
for ((i = 0; i < SCRAPERS; i++)); do
	scraper "$i" "127.0.5.$((i % ADDRS + 1))" &
	pids+=($!)
done
# All scrapers run until together they have SCRAPES: a slow one keeps competing to the end.
while ((EPOCHSECONDS < END)); do
	[ "$(cat "$TMP"/s.*/status 2>/dev/null | wc -l)" -ge "$SCRAPES" ] && break
	sleep 0.2
done
: >"$TMP/stop"
wait "${pids[@]}"
ELAPSED=$(awk -v a="$START" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
check "exporter alive after the run" kill -0 "$EXPORTER_PID"
d=$(($(nosock) - flooding))
check "NO_SOCKET drops kept rising during the run (+$d)" test "$d" -gt 0
kill "$FLOOD" 2>/dev/null # the checks below need the CPU
wait "$FLOOD" 2>/dev/null

# ---- zero errors ----
cat "$TMP"/s.*/status >"$TMP/all.status"
total=$(wc -l <"$TMP/all.status")
bad=$(awk '$1 != 200 || $2 != 0' "$TMP/all.status" | wc -l)
files=$(find "$TMP" -path "$TMP/s.*" -type f -name '[0-9]*' | wc -l)
rate=$(awk -v n="$total" -v t="$ELAPSED" 'BEGIN { printf "%.0f", n / t }')
lat=$(sort -n -k4 "$TMP/all.status" | awk '{ t[NR] = $4 }
	END { printf "p50 %.0f ms, p99 %.0f ms, max %.0f ms", t[int(NR * 0.5) + 1] * 1000,
		t[int(NR * 0.99) + 1] * 1000, t[NR] * 1000 }')
echo "# $total scrapes by $SCRAPERS scrapers in $ELAPSED s: $rate scrapes/s; latency $lat"
# All 64 were served throughout: none starved (single-threaded serving is fair enough).
read -r smin smax < <(for ((i = 0; i < SCRAPERS; i++)); do
	cat "$TMP/s.$i/status" 2>/dev/null | wc -l
done | sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print lo + 0, hi + 0 }')
check "no scraper starved: each did >= 1/4 of the mean $((total / SCRAPERS)) (min $smin, max $smax)" \
	test $((smin * 4 * SCRAPERS)) -ge "$total" -a "$smin" -gt "$BATCH"
check_eq "every scrape answered 200 and complete (curl exit 0): failures" 0 "$bad"
check_eq "one response file per scrape" "$total" "$files"

# ---- every response parses; counters are monotonic per scraper ----
# One awk per scraper over its responses in order. Structure: every line a HELP, a TYPE or a
# sample of a family with a TYPE, a numeric value, build_info and the last family present.
# Monotonic: every counter series of one response is >= in the next and does not vanish.
check_scraper() {
	awk -v nosock="$NOSOCK" '
	function fail(why) { if (!bad_why) bad_why = file ": " why; bad++ }
	function endfile(   k) {
		files++
		if (!build) fail("no build_info")
		if (!last) fail("no process_max_fds (truncated?)")
		if (have_prev) {
			pairs++
			for (k in prev) {
				if (!(k in cur)) { vanished++; if (!ex) ex = k " vanished in " file; continue }
				cmp++
				if (k ~ /^netstack_skb_drops_total/) drops_cmp++
				if (k == "process_cpu_seconds_total") cpu_cmp++
				if (cur[k] + 0 < prev[k] + 0) {
					decreased++
					if (!ex) ex = k " " prev[k] " -> " cur[k] " in " file
				}
				if (index(k, nosock) == 1) { nosock_pairs++; if (cur[k] + 0 > prev[k] + 0) rising++ }
			}
			for (k in prev) delete prev[k]
		}
		for (k in cur) { prev[k] = cur[k]; delete cur[k] }
		have_prev = 1
		build = last = 0
		for (k in type) delete type[k]
	}
	FNR == 1 { if (NR > 1) endfile(); file = FILENAME }
	/^# HELP / { if ($3 !~ /^[a-zA-Z_:][a-zA-Z0-9_:]*$/) fail("bad HELP"); next }
	/^# TYPE / {
		if (NF != 4 || $3 !~ /^[a-zA-Z_:][a-zA-Z0-9_:]*$/ ||
		    $4 !~ /^(counter|gauge|histogram|summary|untyped)$/)
			fail("bad TYPE")
		type[$3] = $4
		next
	}
	/^#/ || /^$/ { fail("stray line"); next }
	{
		n = $0
		sub(/[{ ].*/, "", n)
		base = n
		sub(/_(bucket|sum|count)$/, "", base)
		if (n !~ /^[a-zA-Z_:][a-zA-Z0-9_:]*$/) fail("bad name " n)
		if (!(n in type) && !(base in type)) fail("sample without TYPE: " n)
		if (index($0, "{") ? $0 !~ /^[^{]*\{.*\} [^ ]+$/ : NF != 2) fail("bad sample line: " $0)
		if ($NF !~ /^[-+]?([0-9]+\.?[0-9]*([eE][-+]?[0-9]+)?|\.[0-9]+|Inf|NaN)$/) fail("bad value " $NF)
		if (n == "netstack_exporter_build_info") build = 1
		if (n == "process_max_fds") last = 1
		if (type[n] == "counter") { k = $0; sub(/ [^ ]+$/, "", k); cur[k] = $NF }
	}
	END {
		if (NR) endfile()
		printf "files=%d pairs=%d bad=%d vanished=%d decreased=%d cmp=%d drops_cmp=%d cpu_cmp=%d",
			files, pairs, bad, vanished, decreased, cmp, drops_cmp, cpu_cmp
		printf " nosock_pairs=%d rising=%d\n", nosock_pairs, rising
		if (bad_why) print "first structural problem: " bad_why
		if (ex) print "first counter problem: " ex
	}' "$@"
}
shopt -s nullglob
for ((i = 0; i < SCRAPERS; i++)); do
	check_scraper "$TMP/s.$i"/[0-9]* </dev/null
done >"$TMP/checks"
shopt -u nullglob
# sum KEY: the total of KEY=N over every scraper's check line.
sum() {
	awk -v k="$1" '{ for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) s += substr($i, length(k) + 2) }
		END { print s + 0 }' "$TMP/checks"
}
checked=$(sum files)
check_eq "structural check ran on every response" "$total" "$checked"
check_eq "structural problems in the responses" 0 "$(sum bad)"
check_eq "counter series that went backwards between consecutive scrapes" 0 "$(sum decreased)"
check_eq "counter series that vanished between consecutive scrapes" 0 "$(sum vanished)"
grep '^first' "$TMP/checks" | head -n 5 | sed 's/^/  /'
pairs=$(sum pairs)
drops_cmp=$(sum drops_cmp)
check "netstack_skb_drops_total compared in every consecutive pair ($drops_cmp series, $pairs pairs)" \
	test "$drops_cmp" -ge "$pairs" -a "$pairs" -gt 0
check_eq "process_cpu_seconds_total compared in every consecutive pair" "$pairs" "$(sum cpu_cmp)"
echo "# NO_SOCKET rose in $(sum rising) of $(sum nosock_pairs) consecutive pairs;" \
	"$(sum cmp) counter comparisons in all"

# ---- promtool on a sample ----
step=$((total / PROMTOOL_SAMPLE))
[ "$step" -ge 1 ] || step=1
find "$TMP" -path "$TMP/s.*" -type f -name '[0-9]*' | sort | awk -v s="$step" 'NR % s == 0' |
	head -n "$PROMTOOL_SAMPLE" >"$TMP/sample"
# promtool starts slowly: four at a time.
xargs -P 4 -n 1 sh -c 'promtool check metrics <"$1" >/dev/null 2>&1 || echo "$1"' _ \
	<"$TMP/sample" >"$TMP/promtool.bad"
nbad=$(wc -l <"$TMP/promtool.bad")
[ "$nbad" -eq 0 ] || echo "  $(head -n 1 "$TMP/promtool.bad"): $(promtool check metrics \
	<"$(head -n 1 "$TMP/promtool.bad")" 2>&1 | head -c 300)"
check_eq "promtool check metrics on $(wc -l <"$TMP/sample") sampled responses: failures" 0 "$nbad"
finish
