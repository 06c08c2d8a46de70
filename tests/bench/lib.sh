# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash disable=SC2034,SC2153 # globals shared with the sourcing script
# Shared by the kernel-cost benchmarks (sourced first; the caller then sets TMP, FLOOR_CMD (the
# floor program's loader and its arguments, an array), VARIANTS and PROG (our program's name per
# variant)). "floor" is the empty program on the hook, "none" attaches nothing (the throughput
# reference), a variant with a command in EXTERNAL (a peer tool such as bpftrace) runs that
# command and is measured through the program it loads (EXTERNAL_PROG: bpftool's "TYPE  name
# NAME"), anything else is the exporter with $TMP/VARIANT.ini. Figures come from the kernel's
# bpf_stats: bpftool for the floor and peers, the exporter's own /metrics for ours.
# Ours run PAIRED: the floor is attached beside it, so both programs run on every event of the
# same traffic and bpf_stats times each on its own; a run's ratio is ours / floor of that run.
# A tracepoint's (and a cgroup's) programs run in attach order and the first pays a few ns
# more (it meets the hook cold), so each round has two runs per variant, ours attached first
# and the floor attached first; the variant's ratio is the median over rounds of the geometric
# mean of the two, which cancels the order effect. The floor, "none" and peers run alone, and
# so does ours with ALONE set (the order effect is not the same for ours and the floor there).
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
# exporter's configuration (INI text), its title, program and target, why it cannot run.
declare -A REF=() EXTERNAL=() EXTERNAL_PROG=() CONFIG=() TITLE=() PROG=() TARGET=() BROKEN=()

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

now() { date +%s.%N; }

die() {
	echo "${0##*/}: $*" >&2
	exit 1
}

# stop NAME...: end the processes whose ids the variables NAME hold, and clear them.
stop() {
	local n
	for n; do
		if [ -n "${!n:-}" ]; then
			kill "${!n}" 2>/dev/null
			wait "${!n}" 2>/dev/null
		fi
		printf -v "$n" %s ''
	done
}

# The variant attached (PID: the exporter or a peer) and the floor (FLOOR_PID).
stop_variant() { stop PID FLOOR_PID; }

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
	# Not bpftrace's warning that it cannot raise RLIMIT_MEMLOCK: kernels since 5.11 do not
	# charge BPF maps to it, and the cause is further down.
	grep -m1 -v -e '^$' -e 'RLIMIT_MEMLOCK' "$TMP/external.err" >"$TMP/why" ||
		echo "loaded no program" >"$TMP/why"
	stop PID
	return 1
}

# start_variant NAME: attach it; sets PID and, for the exporter, URL, for peers, PROG_ID, for
# the floor FLOOR_PID and FLOOR_ID. Fails, with the reason in $TMP/why, when the program does
# not load.
start_variant() {
	local v=$1 port
	[ "$v" = none ] && return 0
	if [ -n "${EXTERNAL[$v]:-}" ]; then
		start_external "$v"
		return
	fi
	if [ "$v" = floor ]; then
		"${FLOOR_CMD[@]}" >"$TMP/floor.out" 2>"$TMP/floor.err" &
		FLOOR_PID=$!
		for _ in $(seq 100); do
			FLOOR_ID=$(head -n1 "$TMP/floor.out")
			[ -n "$FLOOR_ID" ] && return 0
			kill -0 "$FLOOR_PID" 2>/dev/null || break
			sleep 0.05
		done
		head -n1 "$TMP/floor.err" >"$TMP/why"
		stop FLOOR_PID
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
		stop PID
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
		bpftool prog show id "$([ "$1" = floor ] && echo "$FLOOR_ID" || echo "$PROG_ID")" -j |
			awk -F '[{},]' '{
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

# spread: "median min max n" of the numbers on stdin, one a line; nothing without any.
spread() {
	sort -g | awk '
		{ x[NR] = $1 }
		END {
			if (!NR) exit
			m = NR % 2 ? x[(NR + 1) / 2] : (x[NR / 2] + x[NR / 2 + 1]) / 2
			printf "%g %g %g %d\n", m, x[1], x[NR], NR
		}'
}

# rows NAME COLUMN [COLUMN2]: that column (and COLUMN2) of NAME's rows of $TMP/results that
# have a figure there. With MIN_COL4 set, rows whose column 4 is under 3/4 of it are left out
# (foreign events); with ORDER set, rows of paired runs of another order.
rows() {
	awk -v v="$1" -v c="$2" -v c2="${3:-0}" -v m="${MIN_COL4:-0}" -v o="${ORDER:-}" '
		$1 == v && $c != "-" && (m == 0 || $4 >= 0.75 * m) && (o == "" || $5 == o) {
			print $c, (c2 ? $c2 : "")
		}' "$TMP/results"
}

# median VARIANT COLUMN (2: ns/event, 3: the secondary rate): "median min max n" over its runs.
median() { rows "$1" "$2" | spread; }

# pair_median VARIANT: "median min max n" of its paired ratio to the floor over rounds, each
# round's the geometric mean of its ours-first and floor-first runs (rows "pair:VARIANT RATIO
# ROUND"); a round with one of them invalid is left out.
pair_median() {
	rows "pair:$1" 2 3 | awk '
		{ p[$2] = n[$2]++ ? p[$2] * $1 : $1 }
		END { for (k in p) if (n[k] == 2) print sqrt(p[k]) }' | spread
}

# first_second VARIANT: its median ns/event in paired runs attached first and attached second.
first_second() {
	local a=ours-first b=floor-first
	[ "$1" = floor ] && a=floor-first b=ours-first
	echo "$(ORDER=$a median "$1" 2 | cut -d' ' -f1) $(ORDER=$b median "$1" 2 | cut -d' ' -f1)"
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

# paired VARIANT: whether it runs beside the floor (ours, unless ALONE is set), not alone
# (none, the floor, peers).
paired() {
	[ -z "${ALONE:-}" ] && [ "$1" != none ] && [ "$1" != floor ] && [ -z "${EXTERNAL[$1]:-}" ]
}

# plan_runs: SLOTS, the runs of one round: "VARIANT" alone, or "VARIANT ours-first" and
# "VARIANT floor-first" for a paired one; TW, the width of the titles.
plan_runs() {
	local v
	SLOTS=()
	TW=${#TITLE[floor]}
	for v in "${VARIANTS[@]}"; do
		if paired "$v"; then
			SLOTS+=("$v ours-first" "$v floor-first")
		else
			SLOTS+=("$v")
		fi
		[ "${#TITLE[$v]}" -le "$TW" ] || TW=${#TITLE[$v]}
	done
}

# run_header RATE EXTRA: the heading of the lines record_run prints.
run_header() {
	printf '%-5s %-*s %-5s %9s %11s %9s %9s %6s %12s %10s\n' round "$TW" variant first \
		events run_ns ns/event floor_ns ratio "$1" "$2"
}

# invalid ROUND WHY: a run left out.
invalid() { printf '%-5s %-*s  invalid: %s\n' $(($1 + 1)) "$TW" "${TITLE[$v]}" "$2"; }

# begin_run ROUND INDEX: the run of this slot of SLOTS (the order rotates each round so none
# always runs first): the variant, and for a paired one the floor before or after it, with
# bpf_stats on, and their starting figures. Sets v, order, note, LINKS (the links of ours on
# the hook), t0, c0 and the floor's ft0, fc0; fails when a program is broken, so the caller
# skips the slot.
begin_run() {
	local u todo
	read -r v order <<<"${SLOTS[($1 + $2) % ${#SLOTS[@]}]}"
	case $order in
	ours-first) todo=("$v" floor) ;;
	floor-first) todo=(floor "$v") ;;
	*) todo=("$v") ;;
	esac
	for u in "${todo[@]}"; do
		[ -z "${BROKEN[$u]:-}" ] || return 1
	done
	note=
	wait_hook_free || note="shared-hook"
	[ "$(cat "$STATS")" = 1 ] || echo 1 >"$STATS"
	for u in "${todo[@]}"; do
		start_variant "$u" && continue
		BROKEN[$u]=$(cat "$TMP/why")
		printf '%-5s %-*s  did not load: %s\n' $(($1 + 1)) "$TW" "${TITLE[$u]}" "${BROKEN[$u]}"
		stop_variant
		return 1
	done
	# A tp_btf or cgroup link each for ours and the floor; bpftrace's is a perf event.
	LINKS=${#todo[@]}
	{ [ "$v" = none ] || [ -n "${EXTERNAL[$v]:-}" ]; } && LINKS=$((LINKS - 1))
	[ "$(hook_links)" -eq "$LINKS" ] || note="shared-hook"
	t0='' c0='' t1='' c1='' ft0='' fc0='' ft1='' fc1=''
	read -r t0 c0 < <(read_stats "$v") || true
	[ -z "$order" ] || read -r ft0 fc0 < <(read_stats floor) || true
}

# end_run: the figures at the end of the traffic (t1, c1, the floor's ft1, fc1), before the
# caller's own checks and stop_variant.
end_run() {
	read -r t1 c1 < <(read_stats "$v") || true
	[ -z "$order" ] || read -r ft1 fc1 < <(read_stats floor) || true
	[ "$(hook_links)" -eq "$LINKS" ] || note="shared-hook"
}

# record_run ROUND RATE [EXTRA]: print the run (RATE: the traffic's rate, EXTRA: a figure per
# event) and add it to $TMP/results: "VARIANT NS RATE EXTRA ORDER" ("-" for what it lacks),
# for a paired run also "floor NS - EXTRA ORDER" and "pair:VARIANT RATIO ROUND EXTRA". Sets
# SHARED=1 when someone else's program was on the hook. Fails when the run is invalid.
record_run() {
	if [ "$v" != none ] && { [ -z "$t0" ] || [ -z "$t1" ] || [ $((c1 - c0)) -le 0 ] ||
		[ "$(cat "$STATS")" != 1 ] || { [ -n "$order" ] && { [ -z "$ft0" ] ||
		[ -z "$ft1" ] || [ $((fc1 - fc0)) -le 0 ]; }; }; }; then
		invalid "$1" "no events, or bpf_stats was turned off meanwhile"
		return 1
	fi
	case $note in shared-hook*) SHARED=1 ;; esac
	awk -v r="$1" -v v="$v" -v title="${TITLE[$v]}" -v tw="$TW" -v order="$order" \
		-v dt=$((t1 - t0)) -v dc=$((c1 - c0)) -v ft=$((ft1 - ft0)) -v fc=$((fc1 - fc0)) \
		-v rate="$2" -v extra="${3:--}" -v note="$note" -v out="$TMP/results" 'BEGIN {
		ns = dc ? dt / dc : "-"
		fns = fc ? ft / fc : "-"
		ratio = fc ? ns / fns : "-"
		printf "%-5d %-*s %-5s %9s %11s %9s %9s %6s %12.0f %10s %s\n", r + 1, tw, title,
			order ? substr(order, 1, index(order, "-") - 1) : "-", dc ? dc : "-",
			dc ? dt : "-", fmt("%.1f", ns), fmt("%.1f", fns), fmt("%.3f", ratio), rate,
			fmt("%.2f", extra), note
		print v, ns, rate, extra, order ? order : "-" >> out
		if (fc) {
			print "floor", fns, "-", extra, order >> out
			print "pair:" v, ratio, r, extra >> out
		}
	}
	function fmt(f, x) { return x == "-" ? x : sprintf(f, x) }'
}

# print_table RATE_TITLE: one row for the floor, then one per variant of VARIANTS (titles in
# TITLE), the ns/event with its ratio: paired ones the median pair ratio to the floor, the
# others the ratio of medians to REF[v] (default: floor), and target TARGET[v] ("<=X" or
# ">=X"). With a "none" variant, the rates (column 3) again with their ratio to none's: the
# throughput of the same traffic with each tracer (ours with the floor beside it). The rows also
# go to $BENCH_ROWS under $SECTION (and $RATE_SECTION). Sets status to 1 if a variant has no
# figure.
print_table() {
	local v ns lo hi n rate rlo rhi rn ref ref_ns ratio plo phi pn result title
	local none_rate='' rates=() vs=("${VARIANTS[@]}")
	echo
	printf '%-*s %10s %17s %14s %8s %8s %s\n' "$TW" variant ns/event "min..max (n)" "$1" \
		ratio target result
	read -r ref_ns _ < <(median floor 2)
	[ -n "${ref_ns:-}" ] ||
		die "no floor measurement: ${BROKEN[floor]:-bpf_stats kept being turned off}"
	[[ " ${VARIANTS[*]} " == *" none "* ]] && read -r none_rate _ < <(median none 3)
	status=0
	# The floor's row even where it runs only paired.
	[[ " ${VARIANTS[*]} " == *" floor "* ]] || vs=(floor "${vs[@]}")
	for v in "${vs[@]}"; do
		title=${TITLE[$v]}
		read -r rate rlo rhi rn < <(median "$v" 3)
		# Throughput rows after the per-event ones: kept until the loop ends.
		paired "$v" && title+=" + floor"
		if [ -n "$none_rate" ] && [ -n "${rate:-}" ]; then
			rates+=("$(row_line "${RATE_SECTION:-throughput}" "$title" "$(printf \
				'%.0f %s' "$rate" "$1")" "${TITLE[none]}" "$(awk -v a="$rate" \
				-v b="$none_rate" 'BEGIN { printf "%.2fx", a / b }')" "" "" "$(printf \
				'runs %.0f..%.0f (%d)' "$rlo" "$rhi" "$rn")")")
		elif [ -n "$none_rate" ]; then
			rates+=("$(row_line "${RATE_SECTION:-throughput}" "$title" - - - "" "" \
				"${BROKEN[$v]:-no valid measurement}")")
		fi
		title=${TITLE[$v]}
		[ "$v" = none ] && continue
		ref=${REF[$v]:-floor}
		read -r ref_ns _ < <(median "$ref" 2)
		read -r ns lo hi n < <(median "$v" 2)
		ratio='' pn=''
		if paired "$v"; then
			read -r ratio plo phi pn < <(pair_median "$v")
		elif [ -n "${ns:-}" ] && [ -n "${ref_ns:-}" ]; then
			ratio=$(awk -v a="$ns" -v b="$ref_ns" 'BEGIN { print a / b }')
		fi
		if [ -z "$ratio" ]; then
			printf '%-*s %10s   %s\n' "$TW" "$title" - "${BROKEN[$v]:-no valid measurement}"
			row "$SECTION" "$title" - - - "${TARGET[$v]:-}" "" \
				"${BROKEN[$v]:-no valid measurement}"
			status=1
			continue
		fi
		ratio=$(printf '%.2f' "$ratio")
		result=$(judge "$ratio" "${TARGET[$v]:-}")
		printf '%-*s %10.1f %17s %14s %7.2fx %8s %s\n' "$TW" "$title" "$ns" \
			"$(printf '%.1f..%.1f (%d)' "$lo" "$hi" "$n")" \
			"$([ -n "${rate:-}" ] && printf '%.0f' "$rate" || echo -)" "$ratio" \
			"${TARGET[$v]:-}" "$result${REF[$v]:+ (vs ${TITLE[$ref]})}${pn:+$(printf \
			' (pairs %.2f..%.2f, %d)' "$plo" "$phi" "$pn")}"
		row "$SECTION" "$title" "$(printf '%.1f ns/event' "$ns")" "${TITLE[$ref]}" \
			"${ratio}x" "${TARGET[$v]:-}" "$result" "$(printf 'runs %.0f..%.0f ns (%d)' \
			"$lo" "$hi" "$n")${pn:+$(printf '; paired ratio %.2f..%.2f (%d pairs)' \
			"$plo" "$phi" "$pn")}"
	done
	[ "${#rates[@]}" -eq 0 ] || [ -z "${BENCH_ROWS:-}" ] ||
		printf '%s\n' "${rates[@]}" >>"$BENCH_ROWS"
	echo
}

# bench_setup FILE... -- COMMAND...: what every benchmark needs (root, kernel BTF, each FILE
# built, each COMMAND installed), then TMP and bpf_stats on, until exit: the exit trap runs the
# caller's bench_cleanup (if it defines one) for its own processes and namespaces, detaches the
# variant and restores bpf_stats_enabled.
bench_setup() {
	local f c
	[ "$(id -u)" -eq 0 ] || die "needs root (BPF, namespaces and kernel.bpf_stats_enabled)"
	[ -r /sys/kernel/btf/vmlinux ] || die "needs kernel BTF (/sys/kernel/btf/vmlinux)"
	for f in "$EXPORTER" "$@"; do
		[ "$f" = -- ] && break
		[ -x "$f" ] || die "$f not built (make BUILD=$BUILD bench builds it)"
	done
	while [ $# -gt 0 ] && [ "$1" != -- ]; do shift; done
	for c in bpftool curl awk "${@:2}"; do
		command -v "$c" >/dev/null || die "needs $c"
	done
	TMP=$(mktemp -d /tmp/netstack-bench.XXXXXX)
	STATS_BEFORE=$(cat "$STATS")
	PID= # the variant currently attached
	trap bench_exit EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	echo 1 >"$STATS" || die "cannot enable kernel.bpf_stats_enabled"
}

# shellcheck disable=SC2317 # run by the trap
bench_exit() {
	! declare -F bench_cleanup >/dev/null || bench_cleanup
	stop_variant
	echo "$STATS_BEFORE" >"$STATS"
	rm -rf "$TMP"
}

# kill_wait PID...: end these processes (ids, empty ones skipped).
kill_wait() {
	local p
	for p; do
		[ -n "$p" ] && kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	return 0
}

# The collectors the exporter has, one a line (what its /metrics lists in collector_up).
collector_names() {
	local port pid names
	port=$(free_tcp_port) || die "no free TCP port on loopback"
	"$EXPORTER" --web.listen-address "127.0.0.1:$port" >"$TMP/names.log" 2>&1 &
	pid=$!
	for _ in $(seq 100); do
		names=$(curl -sf "http://127.0.0.1:$port/metrics" |
			sed -n 's/^netstack_collector_up{collector="\([^"]*\)"}.*/\1/p')
		[ -n "$names" ] && break
		sleep 0.05
	done
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	echo "$names"
}

# only_collector COLLECTOR VARIANT=LABELS...: $TMP/VARIANT.ini for each, the exporter running
# COLLECTOR alone (every other collector disabled by name: their programs are not on the hook,
# but their CPU is) with LABELS (its default when empty).
only_collector() {
	local name=$1 spec c others=()
	shift
	for c in $(collector_names); do
		[ "$c" != "$name" ] && others+=("$c")
	done
	for spec; do
		{
			for c in "${others[@]}"; do
				printf '[collector.%s]\nenabled = false\n' "$c"
			done
			echo "[collector.$name]"
			[ -z "${spec#*=}" ] || echo "labels = ${spec#*=}"
		} >"$TMP/${spec%%=*}.ini"
	done
}

# Per variant: "NOTE REGEX", a line its exporter's /metrics must have after the traffic (the
# optional labels it configures), or the run is marked NOTE.
declare -A EXPECT=()

# tracepoint_bench HOOK COLLECTOR PROGRAM NETNS_LABELS METRIC: the usual benchmark of a tp_btf
# program: the floor (the empty program on HOOK, bench_floor) and the exporter with COLLECTOR
# alone, with its default labels ("default", PROGRAM) and with NETNS_LABELS ("netns",
# PROGRAM_netns, METRIC then has a netns label), each alone on the hook (ALONE: as for rare
# events, where the program attached first would pay the hook's cold lines for the other).
# After bench_setup.
tracepoint_bench() {
	HOOK=$1
	FLOOR_CMD=("$BUILD/tests/bench_floor" "$HOOK")
	HOOK_LINK="'$HOOK'"
	ALONE=1
	VARIANTS=(floor default netns)
	TITLE=([floor]="floor (empty prog)" [default]="default labels" [netns]="netns label")
	PROG=([default]=$3 [netns]=$3_netns)
	TARGET=([default]="<=1.5")
	EXPECT=([netns]="no-netns-label ^$5{.*,netns=\"[0-9]*\"}")
	only_collector "$2" default= "netns=$4"
}

# The nstat counter run_rounds reads around the traffic (NAMESPACE NAME), if any.
COUNTER=()

# nstat_value NAMESPACE COUNTER: the kernel's COUNTER (as nstat names it) in NAMESPACE.
nstat_value() { ip netns exec "$1" nstat -saz "$2" | awk -v n="$2" '$1 == n { print $2 }'; }

# quotient A B: A / B, nothing when B is not above 0.
quotient() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) print a / b }'; }

# run_rounds RATE EXTRA: ROUNDS rounds of the runs of SLOTS (plan_runs first) into
# $TMP/results, under run_header RATE EXTRA. Each run calls the caller's `traffic` (timed: w0,
# w1) between begin_run and end_run, then, with the variant stopped, its `figures`, which sets
# RATE (and EXTRA) for record_run or, when the run is invalid, says so (invalid) and fails.
# With COUNTER set (NAMESPACE NAME), that nstat counter is read before and after the traffic
# (s0, s1).
run_rounds() {
	local r k
	run_header "$1" "$2"
	: >"$TMP/results"
	SHARED=0
	for ((r = 0; r < ROUNDS; r++)); do
		for ((k = 0; k < ${#SLOTS[@]}; k++)); do
			begin_run "$r" "$k" || continue
			[ "${#COUNTER[@]}" -eq 0 ] || s0=$(nstat_value "${COUNTER[@]}")
			w0=$(now)
			traffic
			w1=$(now)
			[ "${#COUNTER[@]}" -eq 0 ] || s1=$(nstat_value "${COUNTER[@]}")
			end_run
			if [ -n "${EXPECT[$v]:-}" ] &&
				! curl -sf "$URL/metrics" | grep -q -- "${EXPECT[$v]#* }"; then
				note="$note ${EXPECT[$v]%% *}"
			fi
			stop_variant
			RATE='' EXTRA=''
			figures "$r" || continue
			record_run "$r" "$RATE" "$EXTRA"
		done
	done
}

# rate N: N per second of the run's traffic.
rate() { awk -v n="$1" -v a="$w0" -v b="$w1" 'BEGIN { print n / (b - a) }'; }

# shared_note EVENTS: the table's note on runs where someone else's program was on the hook.
shared_note() {
	[ "$SHARED" = 1 ] || return 0
	echo "shared-hook: someone else's program was on $HOOK during that run (another exporter,"
	echo "a test): it competed for the CPUs and its own $1 ran ours too."
}
