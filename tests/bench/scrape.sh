#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The exporter's user-space cost next to Debian's prometheus-node-exporter, in one run:
# - scrape: /metrics latency (p50, p99) and scrapes/s under wrk (one connection scraping back
#   to back, as Prometheus does), plain and gzip, at about node_exporter's series count, 10k
#   and 100k series, against node_exporter at its defaults. The series are synthetic drop
#   series written into the running exporter's skb_drops map by tests/tools/dropsfill (netns
#   label on, so each key is its own series), rendered by the real scrape path;
# - memory: RSS after start-up and after 1000, 2000, 3000 (MEM_SCRAPES) scrapes at 10k series; BPF map
#   memory (memlock in /proc/PID/fdinfo) of each collector started alone; node_exporter's RSS;
# - start-up: exec to /healthz OK (every collector attached before the HTTP server starts),
#   all collectors and each alone, against node_exporter's exec to its first /metrics.
# Rounds are interleaved and each figure is the median. A missing peer is reported
# "not installed". Environment: BUILD (build), ROUNDS (3), WRK_SECONDS (3), SERIES
# ("auto 10000 100000"; auto = node_exporter's count, 1000 without it), STARTS (5).
set -u
cd "$(dirname "$0")/../.." || exit 1
source tests/bench/lib.sh
ROUNDS=${ROUNDS:-3}
WRK_SECONDS=${WRK_SECONDS:-3}
SERIES=${SERIES:-auto 10000 100000}
STARTS=${STARTS:-5}
FILL=$BUILD/tests/dropsfill
NODE_EXPORTER=${NODE_EXPORTER:-prometheus-node-exporter}
WRK_LUA=tests/bench/wrk_summary.lua
MEM_SERIES=10000
MEM_SCRAPES=${MEM_SCRAPES:-1000}

[ "$(id -u)" -eq 0 ] || die "needs root (BPF)"
for f in "$EXPORTER" "$FILL"; do
	[ -x "$f" ] || die "$f not built (make BUILD=$BUILD bench builds it)"
done
for c in curl awk; do
	command -v "$c" >/dev/null || die "needs $c"
done
HAVE_WRK=1 HAVE_NE=1
command -v wrk >/dev/null || HAVE_WRK=0
command -v "$NODE_EXPORTER" >/dev/null || HAVE_NE=0

TMP=$(mktemp -d /tmp/netstack-bench.XXXXXX)
PID=
# shellcheck disable=SC2317 # run by the trap
cleanup() {
	stop_variant
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

now_ms() { echo $(($(date +%s%N) / 1000000)); }
rss_kb() { awk '$1 == "VmRSS:" { print $2 }' "/proc/$1/status"; }
# Private (anonymous) part of the RSS: the rest is file pages, shared libraries mostly.
anon_kb() { awk '$1 == "RssAnon:" { print $2 }' "/proc/$1/status"; }
series() { curl -sf "$1" | grep -vc '^#'; }

# wait_url URL: poll every 5 ms for up to 10 s while $PID lives.
wait_url() {
	for _ in $(seq 2000); do
		curl -sf -o /dev/null "$1" && return 0
		kill -0 "$PID" 2>/dev/null || return 1
		sleep 0.005
	done
	return 1
}

# start_on LOG PATH COMMAND...: run COMMAND (its listen address given as @ADDR@) on a free
# port until PATH answers; sets PID, URL, STARTUP_MS. Another process may take the port
# between the check and the bind: then another port, three times.
start_on() {
	local log=$1 path=$2 port t0
	shift 2
	for _ in 1 2 3; do
		port=$(free_tcp_port) || die "no free TCP port on loopback"
		URL=http://127.0.0.1:$port
		t0=$(now_ms)
		"${@//@ADDR@/127.0.0.1:$port}" >"$log" 2>&1 &
		PID=$!
		if wait_url "$URL$path"; then
			STARTUP_MS=$(($(now_ms) - t0))
			return 0
		fi
		stop_variant
		grep -qi 'listen\|bind\|address already in use' "$log" || break
	done
	return 1
}

# start_ours INI: the exporter with that config (exec to /healthz OK).
start_ours() {
	start_on "$TMP/exporter.log" /healthz "$EXPORTER" --config "$1" \
		--web.listen-address @ADDR@ --strict
}

# node_exporter at its defaults (exec to its first /metrics).
start_node_exporter() {
	start_on "$TMP/ne.log" /metrics "$NODE_EXPORTER" --web.listen-address=@ADDR@
}

# ours_room N: the exporter with the netns label on and room for N drop series.
ours_room() {
	cat >"$TMP/fill.ini" <<-EOF
		[collector.drops]
		labels = reason,family,protocol,netns
		max_series = $(($1 + 4096))
	EOF
	start_ours "$TMP/fill.ini" || die "exporter did not start: $(tail -n1 "$TMP/exporter.log")"
}

# ours_fill N: synthetic drop series up to about N series in all; sets SERIES_NOW.
ours_fill() {
	local have
	have=$(series "$URL/metrics")
	[ "$have" -lt "$1" ] && { "$FILL" "$PID" $(($1 - have)) >/dev/null || die "dropsfill failed"; }
	SERIES_NOW=$(series "$URL/metrics")
}

# load NAME ENCODING: wrk on $URL/metrics; appends "NAME ENCODING p50 p99 rps" to results.
load() {
	local hdr=() out
	[ "$2" = gzip ] && hdr=(-H "Accept-Encoding: gzip")
	out=$(wrk -t1 -c1 -d"${WRK_SECONDS}s" "${hdr[@]}" -s "$WRK_LUA" "$URL/metrics" 2>&1 |
		awk '$1 == "RESULT"')
	read -r _ p50 p99 rps errs bytes <<<"$out"
	if [ -z "$out" ] || [ "$errs" != 0 ]; then
		echo "  $1 $2: wrk failed or saw errors: ${out:-no result}"
		return
	fi
	printf '  %-26s %-5s p50 %7.2f ms  p99 %7.2f ms  %8.1f scrapes/s  %8d B\n' "$1" "$2" \
		"$p50" "$p99" "$rps" "$bytes"
	echo "$1 $2 $p50 $p99 $rps" >>"$TMP/scrapes"
}

# median_of: the median of the numbers on stdin (one a line or space-separated).
median_of() { tr ' ' '\n' | grep . | spread | cut -d' ' -f1; }

# med NAME ENCODING COLUMN (3 p50, 4 p99, 5 rps): median over rounds.
med() {
	awk -v n="$1" -v e="$2" -v c="$3" '$1 == n && $2 == e { print $c }' "$TMP/scrapes" |
		median_of
}

echo "netstack_exporter user-space benchmark: $(uname -r), $(nproc) CPUs"

# --- scrape -------------------------------------------------------------------------------
SEC="scrape /metrics (wrk, 1 connection)"
: >"$TMP/scrapes"
NE_SERIES='' NE_RSS='' NE_START=()
if [ "$HAVE_NE" = 1 ]; then
	start_node_exporter || die "node_exporter did not start: $(tail -n1 "$TMP/ne.log")"
	NE_SERIES=$(series "$URL/metrics")
	stop_variant
fi
LEVELS=()
for s in $SERIES; do
	[ "$s" = auto ] && s=${NE_SERIES:-1000}
	LEVELS+=("$s")
done
declare -A GOT=()
if [ "$HAVE_WRK" = 0 ]; then
	row "$SEC" "wrk" - - - "" "" "not installed (Debian wrk)"
	echo "wrk: not installed (Debian wrk): no scrape figures"
else
	echo "scrape: wrk -c1 for ${WRK_SECONDS}s each, $ROUNDS rounds; series: ${LEVELS[*]}" \
		"(ours), ${NE_SERIES:-not installed} (node_exporter)"
	for ((r = 1; r <= ROUNDS; r++)); do
		echo "round $r"
		if [ "$HAVE_NE" = 1 ]; then
			start_node_exporter || die "node_exporter did not start"
			NE_START+=("$STARTUP_MS")
			load node_exporter plain
			load node_exporter gzip
			NE_RSS=$(rss_kb "$PID")
			stop_variant
		fi
		for n in "${LEVELS[@]}"; do
			ours_room "$n"
			ours_fill "$n"
			GOT[$n]=$SERIES_NOW
			load "ours-$n" plain
			load "ours-$n" gzip
			stop_variant
		done
	done
	for enc in plain gzip; do
		ne_rps=
		if [ "$HAVE_NE" = 1 ]; then
			ne_rps=$(med node_exporter $enc 5)
			row "$SEC" "node_exporter, $NE_SERIES series, $enc" "$(printf \
				'p50 %.2f ms, p99 %.2f ms, %.0f scrapes/s' "$(med node_exporter $enc 3)" \
				"$(med node_exporter $enc 4)" "$ne_rps")" - - "" ""
		else
			row "$SEC" "node_exporter, $enc" - - - "" "" \
				"not installed (Debian prometheus-node-exporter)"
		fi
		for n in "${LEVELS[@]}"; do
			p50=$(med "ours-$n" $enc 3) p99=$(med "ours-$n" $enc 4) rps=$(med "ours-$n" $enc 5)
			what="ours, ${GOT[$n]:-$n} series, $enc"
			[ -n "$rps" ] || { row "$SEC" "$what" - - - "" "" "no valid run" && continue; }
			fig=$(printf 'p50 %.2f ms, p99 %.2f ms, %.0f scrapes/s' "$p50" "$p99" "$rps")
			if [ "$n" = "${LEVELS[0]}" ] && [ -n "$ne_rps" ]; then
				ratio=$(awk -v a="$rps" -v b="$ne_rps" 'BEGIN { printf "%.2f", a / b }')
				row "$SEC" "$what" "$fig" "node_exporter scrapes/s" "${ratio}x" ">=5" \
					"$(judge "$ratio" ">=5")"
			elif [ "$n" = 10000 ]; then
				row "$SEC" "$what" "$fig" "p99 target 10 ms" "$(awk -v a="$p99" \
					'BEGIN { printf "%.2fx", a / 10 }')" "<=1" "$(judge \
					"$(awk -v a="$p99" 'BEGIN { print a / 10 }')" "<=1")"
			else
				row "$SEC" "$what" "$fig" - - "" ""
			fi
		done
	done
fi

# --- memory -------------------------------------------------------------------------------
SEC="memory"
ours_room "$MEM_SERIES"
RSS0=$(rss_kb "$PID") # start-up: no synthetic series yet
ours_fill "$MEM_SERIES"
RSS=()
for _ in 1 2 3; do
	curl -sf -o /dev/null "$URL/metrics?scrape=[1-$MEM_SCRAPES]" || die "scrapes failed"
	RSS+=("$(rss_kb "$PID")")
done
ANON=$(anon_kb "$PID")
stop_variant
echo "memory: RSS $RSS0 kB after start-up; ${RSS[*]} kB after 1, 2, 3 x $MEM_SCRAPES scrapes at" \
	"$MEM_SERIES series; node_exporter ${NE_RSS:-?} kB"
mb() { awk -v k="$1" 'BEGIN { printf "%.1f MB", k / 1024 }'; }
if [ -n "$NE_RSS" ]; then
	row "$SEC" "RSS after start-up" "$(mb "$RSS0")" "node_exporter RSS $(mb "$NE_RSS")" \
		"$(awk -v a="$RSS0" -v b="$NE_RSS" 'BEGIN { printf "%.2fx", a / b }')" "" ""
else
	row "$SEC" "RSS after start-up" "$(mb "$RSS0")" - - "" "" \
		"node_exporter not installed"
fi
row "$SEC" "RSS after $MEM_SCRAPES scrapes at $MEM_SERIES series" "$(mb "${RSS[0]}")" "target 8 MB" \
	"$(awk -v a="${RSS[0]}" 'BEGIN { printf "%.2fx", a / 8192 }')" "<=1" \
	"$(judge "$(awk -v a="${RSS[0]}" 'BEGIN { print a / 8192 }')" "<=1")" \
	"of it anonymous (private) after $((3 * MEM_SCRAPES)): $(mb "$ANON")"
row "$SEC" "RSS growth over scrapes $((2 * MEM_SCRAPES + 1))..$((3 * MEM_SCRAPES))" "$((RSS[2] - RSS[1])) kB" \
	"RSS after $((2 * MEM_SCRAPES)): $(mb "${RSS[1]}")" - "0 kB" "$([ $((RSS[2] - RSS[1])) -le 0 ] &&
		echo PASS || echo MISS)"

# --- start-up and BPF map memory, per collector ---------------------------------------------
SEC="start-up (exec to /healthz OK)"
start_ours /dev/null || die "exporter did not start: $(tail -n1 "$TMP/exporter.log")"
NAMES=$(curl -sf "$URL/metrics" | sed -n 's/^netstack_collector_up{collector="\([^"]*\)"} 1/\1/p')
stop_variant
# map_memlock: bytes of BPF map memory held by $PID.
map_memlock() {
	awk '$1 == "map_type:" { m = 1 } $1 == "memlock:" && m { s += $2 } ENDFILE { m = 0 }
		END { print s + 0 }' /proc/"$PID"/fdinfo/* 2>/dev/null
}
ALL_START=()
declare -A ONE_START=() MAPMEM=()
for ((i = 0; i < STARTS; i++)); do
	if [ "$HAVE_NE" = 1 ] && [ "$i" -ge "${#NE_START[@]}" ]; then
		start_node_exporter && NE_START+=("$STARTUP_MS")
		stop_variant
	fi
	start_ours /dev/null || die "exporter did not start: $(tail -n1 "$TMP/exporter.log")"
	ALL_START+=("$STARTUP_MS")
	stop_variant
	for c in $NAMES; do
		for o in $NAMES; do
			[ "$o" != "$c" ] && printf '[collector.%s]\nenabled = false\n' "$o"
		done >"$TMP/alone.ini"
		start_ours "$TMP/alone.ini" ||
			die "collector $c alone did not start: $(tail -n1 "$TMP/exporter.log")"
		ONE_START[$c]="${ONE_START[$c]:-} $STARTUP_MS"
		MAPMEM[$c]=$(map_memlock)
		stop_variant
	done
done
all=$(echo "${ALL_START[*]}" | median_of)
ne=$(echo "${NE_START[*]:-}" | median_of)
echo "start-up: all collectors ${ALL_START[*]} ms; node_exporter ${NE_START[*]:-} ms"
row "$SEC" "all collectors (defaults), median of $STARTS" "$all ms" "target 300 ms" \
	"$(awk -v a="$all" 'BEGIN { printf "%.2fx", a / 300 }')" "<=1" \
	"$(judge "$(awk -v a="$all" 'BEGIN { print a / 300 }')" "<=1")"
if [ -n "$ne" ]; then
	row "$SEC" "node_exporter (exec to first /metrics)" "$ne ms" "ours, all collectors" \
		"$(awk -v a="$ne" -v b="$all" 'BEGIN { printf "%.2fx", a / b }')" "" ""
else
	row "$SEC" "node_exporter" - - - "" "" "not installed (Debian prometheus-node-exporter)"
fi
for c in $NAMES; do
	ms=$(echo "${ONE_START[$c]}" | median_of)
	row "$SEC" "$c alone" "$ms ms" "all collectors" \
		"$(awk -v a="$ms" -v b="$all" 'BEGIN { printf "%.2fx", a / b }')" "" ""
	row "memory" "BPF maps, $c (memlock, default config)" \
		"$(awk -v b="${MAPMEM[$c]}" 'BEGIN { printf "%.0f kB", b / 1024 }')" - - "" ""
	echo "collector $c alone: start-up ${ONE_START[$c]} ms, BPF maps ${MAPMEM[$c]} B"
done
exit 0
