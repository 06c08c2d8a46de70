# SPDX-License-Identifier: GPL-2.0-only
# Shared by the benchmarks (sourced first; the caller then sets TMP, FLOOR_CMD (the floor
# program's loader and its arguments, an array) and PROG (our program's name per variant)).
# A variant is attached alone; "floor" is the empty program, "none" attaches nothing (the
# throughput reference), a variant with a command in EXTERNAL (a peer tool such as bpftrace)
# runs that command and is measured through the program it loads (EXTERNAL_PROG: bpftool's
# "TYPE  name NAME"), anything else is the exporter with $TMP/VARIANT.ini. Figures come from
# the kernel's bpf_stats: bpftool for the floor and peers, the exporter's own /metrics for ours.
# Every script's summary also goes, one tab-separated row per figure, to $BENCH_ROWS when set:
# tests/bench/report.sh makes the one table of `make bench` from them.

BUILD=${BUILD:-build}
EXPORTER=$BUILD/netstack_exporter
STATS=/proc/sys/kernel/bpf_stats_enabled

# Links attached to the benchmark's hook, ours included (HOOK_LINK: what `bpftool link show`
# prints for it).
hook_links() { bpftool link show 2>/dev/null | grep -c -- "$HOOK_LINK"; }

# Someone else's program on the hook (another exporter, a test) shares the CPUs and may add
# events: give it a second to go away, then measure anyway (the caller says so).
wait_hook_free() {
	for _ in $(seq 10); do
		[ "$(hook_links)" -eq 0 ] && return 0
		sleep 0.1
	done
	return 1
}

# Per variant: its reference when not the floor, a peer's command and its program, the
# exporter's configuration (INI text), its title, program and target.
declare -A REF=() EXTERNAL=() EXTERNAL_PROG=() CONFIG=() TITLE=() PROG=() TARGET=()

# ours NAME TITLE PROGRAM CONFIG [TARGET]: a variant, the exporter with CONFIG (INI text, "\n"
# between lines) measured through PROGRAM; TARGET is its ratio to the floor ("<=X").
ours() {
	VARIANTS+=("$1")
	TITLE[$1]=$2 PROG[$1]=$3 CONFIG[$1]=$4
	[ -z "${5:-}" ] || TARGET[$1]=$5
}

# peer NAME TITLE COMMAND PROGRAM [REFERENCE [TARGET]]: a variant running another tool's
# COMMAND, measured through the program it loads (PROGRAM as bpftool prints it:
# "TYPE  name NAME"); its ratio is to REFERENCE (default: the floor).
peer() {
	VARIANTS+=("$1")
	TITLE[$1]=$2 EXTERNAL[$1]=$3 EXTERNAL_PROG[$1]=$4
	[ -z "${5:-}" ] || REF[$1]=$5
	[ -z "${6:-}" ] || TARGET[$1]=$6
}

die() {
	echo "${0##*/}: $*" >&2
	exit 1
}

stop_variant() {
	[ -n "$PID" ] || return 0
	kill "$PID" 2>/dev/null
	wait "$PID" 2>/dev/null
	PID=
}

free_tcp_port() {
	local p
	for p in $(shuf -i 20000-60000 -n 50); do
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# Ids of the loaded programs bpftool shows as "TYPE  name NAME" ($1), one a line.
prog_ids() { bpftool prog show 2>/dev/null | awk -v m="$1" 'index($0, m) { print $1 + 0 }'; }

# start_external NAME: run EXTERNAL[NAME] and wait (30 s: bpftrace compiles first) for the new
# program it loads; sets PID and PROG_ID.
start_external() {
	local v=$1 before id
	before=" $(prog_ids "${EXTERNAL_PROG[$v]}" | tr '\n' ' ')"
	(eval "exec ${EXTERNAL[$v]}") >"$TMP/external.out" 2>"$TMP/external.err" &
	PID=$!
	for _ in $(seq 600); do
		for id in $(prog_ids "${EXTERNAL_PROG[$v]}"); do
			[[ "$before" == *" $id "* ]] && continue
			PROG_ID=$id
			return 0
		done
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.05
	done
	grep -m1 -v '^$' "$TMP/external.err" >"$TMP/why" || echo "loaded no program" >"$TMP/why"
	stop_variant
	return 1
}

# start_variant NAME: attach it alone; sets PID and, for the exporter, URL, for the floor and
# peers, PROG_ID. Fails, with the reason in $TMP/why, when the program does not load.
start_variant() {
	local v=$1 port
	[ "$v" = none ] && return 0
	if [ -n "${EXTERNAL[$v]:-}" ]; then
		start_external "$v"
		return
	fi
	if [ "$v" = floor ]; then
		"${FLOOR_CMD[@]}" >"$TMP/floor.out" 2>"$TMP/floor.err" &
		PID=$!
		for _ in $(seq 100); do
			PROG_ID=$(head -n1 "$TMP/floor.out")
			[ -n "$PROG_ID" ] && return 0
			kill -0 "$PID" 2>/dev/null || break
			sleep 0.05
		done
		head -n1 "$TMP/floor.err" >"$TMP/why"
		stop_variant
		return 1
	fi
	[ -z "${CONFIG[$v]:-}" ] || printf '%b\n' "${CONFIG[$v]}" >"$TMP/$v.ini"
	for _ in 1 2 3; do
		port=$(free_tcp_port) || die "no free TCP port on loopback"
		URL=http://127.0.0.1:$port
		# --strict: exit rather than serve without the collector.
		"$EXPORTER" --config "$TMP/$v.ini" --web.listen-address "127.0.0.1:$port" --strict \
			>"$TMP/exporter.log" 2>&1 &
		PID=$!
		for _ in $(seq 100); do
			curl -sf "$URL/healthz" >/dev/null 2>&1 && return 0
			kill -0 "$PID" 2>/dev/null || break
			sleep 0.05
		done
		stop_variant
		# Another process may have taken the port meanwhile: then try another.
		grep -q 'level=error' "$TMP/exporter.log" && ! grep -qi 'listen\|bind\|address' \
			"$TMP/exporter.log" && break
	done
	grep -m1 'level=error' "$TMP/exporter.log" | sed 's/.*msg="\(.*\)"/\1/' >"$TMP/why"
	[ -s "$TMP/why" ] || echo "exporter did not start" >"$TMP/why"
	return 1
}

# read_stats NAME: "run_time_ns run_cnt" of the variant's program, nothing if bpf_stats is off
# (or for "none").
read_stats() {
	[ "$1" = none ] && return
	if [ "$1" = floor ] || [ -n "${EXTERNAL[$1]:-}" ]; then
		# bpftool leaves the fields out while they are zero.
		bpftool prog show id "$PROG_ID" -j | awk -F '[{},]' '{
			t = c = 0
			for (i = 1; i <= NF; i++) {
				split($i, kv, ":")
				if (kv[1] == "\"run_time_ns\"")
					t = kv[2]
				if (kv[1] == "\"run_cnt\"")
					c = kv[2]
			}
			print t, c
		}'
		return
	fi
	curl -sf "$URL/metrics" | awk -v p="{program=\"${PROG[$1]}\"}" '
		$1 == "netstack_bpf_program_run_seconds_total" p { t = $2; n++ }
		$1 == "netstack_bpf_program_runs_total" p { c = $2; n++ }
		END { if (n == 2) printf "%.0f %.0f\n", t * 1e9, c }'
}

# median VARIANT COLUMN (2: ns/event, 3: the secondary rate) of $TMP/results, with min, max, n.
# With MIN_COL4 set, rows whose column 4 is under 3/4 of it are left out (foreign events).
median() {
	awk -v v="$1" -v c="$2" -v m="${MIN_COL4:-0}" \
		'$1 == v && $c != "-" && (m == 0 || $4 >= 0.75 * m) { print $c }' "$TMP/results" | sort -g | awk '
		{ x[NR] = $1 }
		END {
			if (!NR) exit
			m = NR % 2 ? x[(NR + 1) / 2] : (x[NR / 2] + x[NR / 2 + 1]) / 2
			printf "%g %g %g %d\n", m, x[1], x[NR], NR
		}'
}

# row SECTION WHAT FIGURE REFERENCE RATIO TARGET RESULT [NOTE]: one line of the `make bench`
# table, appended to $BENCH_ROWS (nothing without it).
row() {
	[ -n "${BENCH_ROWS:-}" ] || return 0
	row_line "$@" >>"$BENCH_ROWS"
}
row_line() {
	local IFS=$'\t'
	echo "$*"
}

# judge RATIO TARGET: PASS or MISS for a target written "<=X" or ">=X"; nothing without one.
judge() {
	awk -v r="$1" -v t="$2" 'BEGIN {
		if (t == "") exit
		x = substr(t, 3) + 0
		print (substr(t, 1, 2) == "<=" ? r <= x : r >= x) ? "PASS" : "MISS"
	}'
}

# print_table RATE_TITLE: one row per variant of VARIANTS (titles in TITLE), the ns/event with
# its ratio to the reference REF[v] (default: floor) and target TARGET[v] ("<=X" or ">=X").
# With a "none" variant, the rates (column 3) again with their ratio to none's: the throughput
# of the same flood with each tracer. The rows also go to $BENCH_ROWS under $SECTION (and
# $RATE_SECTION). Sets status to 1 if a variant has no figure.
print_table() {
	local v ns lo hi n rate rlo rhi rn ref ref_ns ratio result none_rate='' rates=()
	echo
	printf '%-28s %10s %17s %14s %8s %8s %s\n' variant ns/event "min..max (n)" "$1" ratio \
		target result
	read -r ref_ns _ < <(median floor 2)
	[ -n "${ref_ns:-}" ] ||
		die "no floor measurement: ${BROKEN[floor]:-bpf_stats kept being turned off}"
	[[ " ${VARIANTS[*]} " == *" none "* ]] && read -r none_rate _ < <(median none 3)
	status=0
	for v in "${VARIANTS[@]}"; do
		read -r rate rlo rhi rn < <(median "$v" 3)
		# Throughput rows after the per-event ones: kept until the loop ends.
		if [ -n "$none_rate" ] && [ -n "${rate:-}" ]; then
			rates+=("$(row_line "${RATE_SECTION:-throughput}" "${TITLE[$v]}" "$(printf \
				'%.0f %s' "$rate" "$1")" "${TITLE[none]}" "$(awk -v a="$rate" \
				-v b="$none_rate" 'BEGIN { printf "%.2fx", a / b }')" "" "" "$(printf \
				'runs %.0f..%.0f (%d)' "$rlo" "$rhi" "$rn")")")
		elif [ -n "$none_rate" ]; then
			rates+=("$(row_line "${RATE_SECTION:-throughput}" "${TITLE[$v]}" - - - "" "" \
				"${BROKEN[$v]:-no valid measurement}")")
		fi
		[ "$v" = none ] && continue
		ref=${REF[$v]:-floor}
		read -r ref_ns _ < <(median "$ref" 2)
		read -r ns lo hi n < <(median "$v" 2)
		if [ -z "${ns:-}" ] || [ -z "${ref_ns:-}" ]; then
			printf '%-28s %10s   %s\n' "${TITLE[$v]}" - "${BROKEN[$v]:-no valid measurement}"
			row "$SECTION" "${TITLE[$v]}" - - - "${TARGET[$v]:-}" "" \
				"${BROKEN[$v]:-no valid measurement}"
			status=1
			continue
		fi
		ratio=$(awk -v a="$ns" -v b="$ref_ns" 'BEGIN { printf "%.2f", a / b }')
		result=$(judge "$ratio" "${TARGET[$v]:-}")
		printf '%-28s %10.1f %17s %14.0f %7.2fx %8s %s\n' "${TITLE[$v]}" "$ns" \
			"$(printf '%.1f..%.1f (%d)' "$lo" "$hi" "$n")" "${rate:-0}" "$ratio" \
			"${TARGET[$v]:-}" "$result${REF[$v]:+ (vs ${TITLE[$ref]})}"
		row "$SECTION" "${TITLE[$v]}" "$(printf '%.1f ns/event' "$ns")" "${TITLE[$ref]}" \
			"${ratio}x" "${TARGET[$v]:-}" "$result" \
			"$(printf 'runs %.0f..%.0f ns (%d)' "$lo" "$hi" "$n")"
	done
	[ "${#rates[@]}" -eq 0 ] || [ -z "${BENCH_ROWS:-}" ] ||
		printf '%s\n' "${rates[@]}" >>"$BENCH_ROWS"
	echo
}

# begin_run ROUND INDEX: the variant for this slot (the order rotates each round so none always
# runs first), attached alone with bpf_stats on, and its starting figures. Sets v, note, t0, c0
# (t1, c1 cleared); fails when the variant is broken, so the caller skips the slot.
begin_run() {
	v=${VARIANTS[($1 + $2) % ${#VARIANTS[@]}]}
	[ -n "${BROKEN[$v]:-}" ] && return 1
	note=
	wait_hook_free || note="shared-hook"
	[ "$(cat "$STATS")" = 1 ] || echo 1 >"$STATS"
	if ! start_variant "$v"; then
		BROKEN[$v]=$(cat "$TMP/why")
		printf '%-5s %-20s  did not load: %s\n' $(($1 + 1)) "${TITLE[$v]}" "${BROKEN[$v]}"
		return 1
	fi
	t0='' c0='' t1='' c1=''
	read -r t0 c0 < <(read_stats "$v") || true
}
