#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What users see: the exporter's BPF time as a share of real TCP work, every collector on its
# defaults (the real exporter from the build), against the dispatch floor. Traffic between two
# namespaces this script makes (C -> S over a veth pair), its processes in a cgroup of their
# own (their CPU time: its cpu.stat), kernel.bpf_stats_enabled=1:
# - ping-pong: tests/tools/pingpong, one connection, 64-byte request and 64-byte response, one
#   transaction at a time. Share = BPF ns per transaction / wall ns per transaction.
# - bulk: tests/tools/tcpbulk, one connection sending as fast as it can. Share = BPF ns / CPU
#   ns of the transfer (the cgroup's usage: sender and receiver with the softirqs they run,
#   i.e. elapsed ns x the CPUs the transfer keeps busy); also BPF ns per MB.
# - connect/close: tests/tools/tcpconn.py churn (THREADS loops of connect, a byte, close).
#   BPF ns per connection, with handshake timing (the default) and with
#   `[collector.connections] handshake_time = false`, in the same rounds.
# - per RTT callback: run time / run count of the exporter's sockops programs in ping-pong and
#   bulk (nearly every sockops callback there is an RTT callback).
# BPF time = the sum of run_time_ns of every program the process holds (read from
# /proc/PID/fdinfo by program id, the counters `bpftool prog show` prints: whatever programs
# the exporter loads, however many); nothing scrapes during a run.
# The floor is the sockops program of tests/bench/rtt_floor.bpf.c alone (it turns the RTT
# callback on and records nothing): what any program that wants RTT callbacks pays for the
# kernel to call it. "none" attaches nothing: the workloads' own wall time and throughput.
# The sockops programs (ours and the floor) attach to the workloads' cgroup, not to the
# cgroup2 root (rtt's `cgroup` key; SOCKOPS_ROOT=1 keeps the root): the same program and
# dispatch for these sockets, and the rest of the machine's TCP does not run them. The
# tracepoints see the whole machine: an idle window of IDLE_SECONDS before and after each run
# measures what others' events cost per second and how busy the machine is; the run's part
# of it (scaled by the CPU time others had during the run: our traffic takes theirs on a
# saturated machine) is taken off, never more than the programs other than sockops ran.
# Variants run one at a time, their order rotating over ROUNDS rounds; each figure is the
# median over rounds (min..max beside it). A missed target is printed, not a failure.
# Environment: BUILD (build), ROUNDS (7), SECONDS_PER_RUN (2), IDLE_SECONDS (1), THREADS (2),
# BUSY (0.5: runs where others' events made more than this part of the raw BPF time are left
# out of the medians while other runs are not), SOCKOPS_ROOT (0).
set -u
cd "$(dirname "$0")/../.." || exit 1
source tests/bench/lib.sh
ROUNDS=${ROUNDS:-7}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-2}
IDLE_SECONDS=${IDLE_SECONDS:-1}
THREADS=${THREADS:-2}
BUSY=${BUSY:-0.5}
PINGPONG=$BUILD/tests/pingpong
TCPBULK=$BUILD/tests/tcpbulk
CONN=tests/tools/tcpconn.py
SIZE=64
PP_TARGET=1.0   # % of a ping-pong transaction
BULK_TARGET=0.2 # % of the bulk transfer's CPU time
HS_TARGET=10    # % more BPF time per connection with handshake timing
SECTION="workload share (what users see)"
PP_PORT=5321 BULK_PORT=5322 CONN_PORT=5323
ADDR_S=10.97.0.2
NS_C=share-bc$$ NS_S=share-bs$$
CG= # the workloads' cgroup
SERVERS=()

VARIANTS=(none floor defaults nohs)
declare -A TITLE=([none]="nothing attached" [floor]="floor (empty sockops, RTT flag only)"
	[defaults]="every collector on defaults" [nohs]="defaults, handshake_time = false")
# The workloads each variant runs: nohs only differs on connections.
declare -A WORKLOADS=([none]="pp bulk" [floor]="pp bulk conn" [defaults]="pp bulk conn"
	[nohs]="conn")

# shellcheck disable=SC2317 # run by the exit trap
bench_cleanup() {
	kill_wait "${SERVERS[@]}"
	ip netns del "$NS_C" 2>/dev/null
	ip netns del "$NS_S" 2>/dev/null
	# Emptied once its processes (the servers' children too) are gone.
	[ -z "$CG" ] || for _ in $(seq 50); do
		rmdir "$CG" 2>/dev/null && break
		sleep 0.1
	done
}

bench_setup "$PINGPONG" "$TCPBULK" "$BUILD/tests/bench_rtt_floor" /usr/bin/python3 -- ip

# The cgroup2 hierarchy's root (as the exporter finds it); the workloads run in a child.
root=$(awk '{ for (i = 7; i <= NF; i++) if ($i == "-") {
	if ($(i + 1) == "cgroup2" && $4 == "/") { print $5; exit } break } }' /proc/self/mountinfo)
[ -n "$root" ] || die "no cgroup2 mount"
CG=$root/netstack-share$$
mkdir "$CG" || die "cannot create cgroup $CG"
# The sockops programs attach to that cgroup, not to the root: the same dispatch for the
# workloads' sockets, and the rest of the machine's TCP does not run them (SOCKOPS_ROOT=1:
# on the root, as the exporter's default, others' TCP included).
if [ "${SOCKOPS_ROOT:-0}" = 1 ]; then
	CONFIG[defaults]="; every collector on its defaults"
	CONFIG[nohs]="[collector.connections]\nhandshake_time = false"
	FLOOR_CMD=("$BUILD/tests/bench_rtt_floor")
else
	CONFIG[defaults]="[collector.rtt]\ncgroup = $CG"
	CONFIG[nohs]="[collector.connections]\nhandshake_time = false\n${CONFIG[defaults]}"
	FLOOR_CMD=("$BUILD/tests/bench_rtt_floor" "$CG")
fi

# in_cg NS COMMAND...: COMMAND in namespace NS and in the workloads' cgroup (in a subshell).
in_cg() {
	echo "$BASHPID" >"$CG/cgroup.procs" || exit 1
	exec ip netns exec "$@"
}

{ ip netns add "$NS_C" && ip netns add "$NS_S"; } || die "cannot create network namespaces"
ip link add share-ba netns "$NS_C" type veth peer name share-bb netns "$NS_S" ||
	die "cannot create veth"
ip -n "$NS_C" addr add 10.97.0.1/24 dev share-ba
ip -n "$NS_S" addr add "$ADDR_S/24" dev share-bb
ip -n "$NS_C" link set share-ba up
ip -n "$NS_S" link set share-bb up
ip -n "$NS_S" link set lo up
ip netns exec "$NS_C" sysctl -qw net.ipv4.tcp_tw_reuse=1
for s in "pp:$PINGPONG server $ADDR_S $PP_PORT" "bulk:$TCPBULK sink $ADDR_S $BULK_PORT" \
	"conn:$CONN server $CONN_PORT"; do
	# shellcheck disable=SC2086 # the command's words
	(in_cg "$NS_S" ${s#*:}) >"$TMP/server-${s%%:*}.out" 2>&1 &
	SERVERS+=($!)
done
for s in pp bulk conn; do
	for _ in $(seq 100); do
		grep -q listening "$TMP/server-$s.out" && break
		sleep 0.05
	done
	grep -q listening "$TMP/server-$s.out" || die "the $s server did not start: $(head -n 1 \
		"$TMP/server-$s.out")"
done

# prog_stats PID: "run_time_ns run_cnt sockops_ns sockops_cnt programs" summed over every BPF
# program PID holds (each id once; link fds name a program too but have no prog_type). grep
# goes on past an fd closed meanwhile (awk would stop at it).
prog_stats() {
	[ -n "$1" ] || {
		echo 0 0 0 0 0
		return
	}
	grep -H -E '^(prog_type|prog_id|run_time_ns|run_cnt):' "/proc/$1/fdinfo/"* 2>/dev/null |
		awk -F '\t' '{
		split($1, k, ":")
		f = k[1]
		key = k[2]
		if (key == "prog_type")
			ty[f] = $2
		else if (key == "prog_id")
			id[f] = $2
		else if (key == "run_time_ns")
			t[f] = $2
		else if (key == "run_cnt")
			c[f] = $2
	}
	END {
		for (f in id) {
			if (!(f in ty) || (id[f] in seen))
				continue
			seen[id[f]] = 1
			n++
			T += t[f]
			C += c[f]
			if (ty[f] == 13) { # BPF_PROG_TYPE_SOCK_OPS
				ST += t[f]
				SC += c[f]
			}
		}
		printf "%.0f %.0f %.0f %.0f %d\n", T, C, ST, SC, n
	}'
}

cpu_usage_ns() { awk '$1 == "usage_usec" { printf "%.0f\n", $2 * 1000 }' "$CG/cpu.stat"; }

# The process whose programs a variant measures.
holder() {
	case $v in
	none) echo ;;
	floor) echo "$FLOOR_PID" ;;
	*) echo "$PID" ;;
	esac
}

# traffic WORKLOAD: run it; prints "UNITS WALL_NS" (ping-pong: its own loop's time; the
# others: 0, the caller's window is used).
traffic() {
	case $1 in
	pp)
		(in_cg "$NS_C" "$PINGPONG" client "$ADDR_S" "$PP_PORT" "$SECONDS_PER_RUN" "$SIZE")
		;;
	bulk)
		(in_cg "$NS_C" "$TCPBULK" send "$ADDR_S" "$BULK_PORT" "$SECONDS_PER_RUN") |
			awk '{ print $1, 0 }'
		;;
	conn)
		(in_cg "$NS_C" "$CONN" churn "$ADDR_S" "$CONN_PORT" "$SECONDS_PER_RUN" "$THREADS") |
			awk '{ print $1, 0 }'
		;;
	esac
}

# others_on_hook: sockops programs of others that run on the workloads' sockets (attached to
# the cgroup2 root: another exporter, a test).
others_on_hook() {
	local n
	n=$(bpftool cgroup show "$CG" effective 2>/dev/null | grep -c cgroup_sock_ops)
	echo $((n - ($(holder_attaches) ? 1 : 0)))
}
holder_attaches() { [ "$v" = none ] && echo 0 || echo 1; }

# Busy CPU time of the whole machine, ns (user, nice, system, irq, softirq; not steal).
machine_busy_ns() {
	awk -v hz="$(getconf CLK_TCK)" '$1 == "cpu" {
		printf "%.0f\n", ($2 + $3 + $4 + $7 + $8) * 1e9 / hz; exit }' /proc/stat
}

# idle_window: while none of our traffic runs, the BPF ns per second the variant's programs
# spend on others' events (IDLE_RATE) and the CPU ns per second the machine is busy
# (IDLE_CPU).
idle_window() {
	local pid a b m0 m1 t0 t1
	pid=$(holder)
	IDLE_RATE=0 IDLE_CPU=0
	[ -n "$pid" ] || return 0
	read -r a _ < <(prog_stats "$pid")
	m0=$(machine_busy_ns)
	t0=$(now)
	sleep "$IDLE_SECONDS"
	read -r b _ < <(prog_stats "$pid")
	m1=$(machine_busy_ns)
	t1=$(now)
	read -r IDLE_RATE IDLE_CPU < <(awk -v a="$a" -v b="$b" -v m0="$m0" -v m1="$m1" \
		-v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.0f %.0f\n", (b - a) / (t1 - t0),
		(m1 - m0) / (t1 - t0) }')
}

# measure ROUND WORKLOAD: one run of WORKLOAD under variant $v (attached), between two idle
# windows (the one before as the caller leaves IDLE_*, the one after is the next run's
# before); the line to $TMP/results:
# "VARIANT WORKLOAD ROUND UNITS BPF_NS BG_NS WALL_NS CPU_NS SOCKOPS_NS SOCKOPS_CNT NOTE".
# Others' events (bg): the mean of the two idle rates over the run, scaled by the CPU time
# others had during the run against the idle windows (the machine's busy time less the
# workloads' cgroup): on a saturated machine our traffic takes CPU from theirs, and so
# events.
measure() {
	local r=$1 w=$2 pid s0 s1 w0 w1 c0 c1 m0 m1 units wall rate cpu note=
	pid=$(holder)
	rate=$IDLE_RATE cpu=$IDLE_CPU
	[ "$(others_on_hook)" -eq 0 ] || note=shared-hook
	[ "$(cat "$STATS")" = 1 ] || echo 1 >"$STATS"
	read -r -a s0 < <(prog_stats "$pid")
	c0=$(cpu_usage_ns)
	m0=$(machine_busy_ns)
	w0=$(now)
	read -r units wall < <(traffic "$w")
	w1=$(now)
	m1=$(machine_busy_ns)
	c1=$(cpu_usage_ns)
	read -r -a s1 < <(prog_stats "$pid")
	[ "$(others_on_hook)" -eq 0 ] || note=shared-hook
	idle_window
	if ! [[ "${units:-}" =~ ^[0-9]+$ ]] || [ "$units" -eq 0 ] || [ "$(cat "$STATS")" != 1 ]; then
		printf '%-5s %-*s %-5s  invalid: no traffic, or bpf_stats was turned off\n' \
			$((r + 1)) "$TW" "${TITLE[$v]}" "$w"
		return
	fi
	awk -v v="$v" -v w="$w" -v r="$r" -v units="$units" -v wall="$wall" -v w0="$w0" \
		-v w1="$w1" -v ra="$rate" -v rb="$IDLE_RATE" -v ca="$cpu" -v cb="$IDLE_CPU" \
		-v bpf=$((s1[0] - s0[0])) -v cpu=$((c1 - c0)) -v mach=$((m1 - m0)) \
		-v sns=$((s1[2] - s0[2])) -v scnt=$((s1[3] - s0[3])) -v busy="$BUSY" \
		-v note="$note" -v tw="$TW" -v title="${TITLE[$v]}" -v out="$TMP/results" 'BEGIN {
		t = w1 - w0
		if (!wall)
			wall = t * 1e9
		others = mach - cpu
		scale = (ca + cb) > 0 ? others / ((ca + cb) / 2 * t) : 1
		scale = scale < 0 ? 0 : scale > 1.5 ? 1.5 : scale
		bg = (ra + rb) / 2 * t * scale
		# Only our sockets run the sockops programs: the events of others are all in the rest,
		# which cannot go below none.
		if (bg > bpf - sns)
			bg = bpf - sns
		net = bpf - bg
		if (bpf > 0 && bg > busy * bpf)
			note = note (note == "" ? "" : ",") "busy"
		if (w == "pp")
			share = sprintf("%.3f%%", 100 * net / wall)
		else if (w == "bulk")
			share = cpu > 0 ? sprintf("%.3f%%", 100 * net / cpu) : "-"
		else
			share = "-"
		# Bulk: per MB.
		u = w == "bulk" ? units / 1e6 : units
		printf "%-5d %-*s %-5s %10.0f %9.0f %8.1f %8.1f %7.1f %5.1f%% %8s %5.2f %8s %s\n",
			r + 1, tw, title, w, u, wall / u, net / u, sns / u,
			bg / u, (bpf > 0 ? 100 * bg / bpf : 0), share, cpu / (t * 1e9),
			(scnt ? sprintf("%.1f", sns / scnt) : "-"), note
		print v, w, r, units, bpf, bg, wall, cpu, sns, scnt, (note == "" ? "-" : note) >> out
	}'
}

TW=0
for v in "${VARIANTS[@]}"; do
	[ "${#TITLE[$v]}" -le "$TW" ] || TW=${#TITLE[$v]}
done
: >"$TMP/results"
echo "netstack_exporter workload share: $(uname -r), $(nproc) CPUs"
echo "traffic over veth between two namespaces: $SIZE-byte ping-pong, bulk, $THREADS" \
	"connect/close loops; $SECONDS_PER_RUN s per run between ${IDLE_SECONDS} s idle windows," \
	"$ROUNDS rounds"
echo
printf '%-5s %-*s %-5s %10s %9s %8s %8s %7s %6s %8s %5s %8s %s\n' round "$TW" variant load \
	units wall_ns/u bpf_ns/u sockops bg_ns/u bg share cpus ns/cb note
for ((r = 0; r < ROUNDS; r++)); do
	for ((k = 0; k < ${#VARIANTS[@]}; k++)); do
		v=${VARIANTS[(r + k) % ${#VARIANTS[@]}]}
		[ -z "${BROKEN[$v]:-}" ] || continue
		if ! start_variant "$v"; then
			BROKEN[$v]=$(cat "$TMP/why")
			printf '%-5s %-*s  did not load: %s\n' $((r + 1)) "$TW" "${TITLE[$v]}" \
				"${BROKEN[$v]}"
			stop_variant
			continue
		fi
		if [ "$v" = defaults ] && [ -z "${CHECKED:-}" ]; then
			# Every program the exporter lists is one it holds, and no more.
			CHECKED=1
			listed=$(curl -sf "$URL/metrics" | grep -c '^netstack_bpf_program_runs_total{')
			read -r _ _ _ _ held < <(prog_stats "$PID")
			[ "$listed" = "$held" ] || echo "warning: the exporter lists $listed programs" \
				"in /metrics and holds $held"
			NPROGS=$held
		fi
		idle_window
		for w in ${WORKLOADS[$v]}; do
			measure "$r" "$w"
		done
		stop_variant
	done
done

# col VARIANT WORKLOAD EXPR: EXPR (awk, over the result columns) of each of its runs, one a
# line; runs marked busy are left out while others are clean.
col() {
	local all=0
	# Busy runs only count when every run was busy.
	awk -v v="$1" -v w="$2" '$1 == v && $2 == w && $11 !~ /busy/ { n++ } END { exit n > 0 }' \
		"$TMP/results" && all=1
	awk -v v="$1" -v w="$2" -v all="$all" '$1 == v && $2 == w && (all || $11 !~ /busy/) {
		units = $4; bpf = $5; bg = $6; wall = $7; cpu = $8; sns = $9; scnt = $10
		net = bpf - bg
		'"$3"'
	}' "$TMP/results"
}
# figure VARIANT WORKLOAD EXPR: "median min max n" of EXPR over its runs.
figure() { col "$@" | spread; }
# Per run: BPF ns per unit, the share (%), wall ns per unit, ns per sockops callback.
PER_UNIT='print net / units'
PP_SHARE='print 100 * net / wall'
BULK_SHARE='if (cpu > 0) print 100 * net / cpu'
WALL='print wall / units'
PER_CB='if (scnt > 0) print sns / scnt'
MBS='print units / wall * 1e3'
CPUS='print cpu / wall'
PER_MB='print net / units * 1e6'

# left_out VARIANT WORKLOAD: how many of its runs col leaves out (busy while others were not).
left_out() {
	awk -v v="$1" -v w="$2" '$1 == v && $2 == w { n++; if ($11 ~ /busy/) b++ }
		END { print (b < n ? b + 0 : 0) }' "$TMP/results"
}
# spread_note FORMAT UNIT VARIANT WORKLOAD MIN MAX N: "runs MIN..MAX UNIT (N)", and the busy
# runs left out.
spread_note() {
	local out
	out=$(left_out "$3" "$4")
	# shellcheck disable=SC2059 # the format is the caller's
	printf "runs $1..$1 %s (%d%s)" "$5" "$6" "$2" "$7" \
		"$([ "$out" -eq 0 ] || echo ", $out busy left out")"
}

# share_rows WORKLOAD NAME SHARE_EXPR TARGET PER_EXPR UNIT_NAME: the share of defaults and of
# the floor, with their BPF ns per unit (PER_EXPR).
share_rows() {
	local w=$1 name=$2 expr=$3 target=$4 per=$5 unit=$6 m lo hi n fm flo fhi fn bm fbm sm ss result
	read -r m lo hi n < <(figure defaults "$w" "$expr")
	read -r fm flo fhi fn < <(figure floor "$w" "$expr")
	read -r bm _ < <(figure defaults "$w" "$per")
	read -r fbm _ < <(figure floor "$w" "$per")
	read -r sm _ < <(figure defaults "$w" "${per//net/sns}")
	read -r ss _ < <(figure defaults "$w" "${expr//net/sns}")
	if [ -z "${m:-}" ]; then
		echo "$name: no valid measurement"
		row "$SECTION" "BPF time, $name, ${TITLE[defaults]}" - - - "<=$target %" "" \
			"${BROKEN[defaults]:-no valid measurement}"
		status=1
		return
	fi
	result=$(judge "$m" "<=$target")
	printf '%s: %.3f %% (%.1f ns/%s; runs %.3f..%.3f, %d), sockops alone %.3f %%, floor %s %%:' \
		"$name" "$m" "$bm" "$unit" "$lo" "$hi" "$n" "$ss" "$(printf '%.3f' "${fm:-0}")"
	printf ' %s (target <= %s %%)\n' "$result" "$target"
	row "$SECTION" "BPF time, $name, ${TITLE[defaults]}" "$(printf '%.3f %% (%.0f ns/%s)' \
		"$m" "$bm" "$unit")" "$(printf 'floor %.3f %% (%.0f ns/%s)' "${fm:-0}" "${fbm:-0}" \
		"$unit")" "$([ -n "${fbm:-}" ] && printf '%.2fx' "$(quotient "$bm" "$fbm")")" \
		"<=$target %" "$result" "$(spread_note %.3f % defaults "$w" "$lo" "$hi" "$n");$(printf \
		' the sockops program alone %.3f %% (%.0f ns/%s)' "$ss" "$sm" "$unit")"
	[ -z "${fm:-}" ] || row "$SECTION" "BPF time, $name, ${TITLE[floor]}" \
		"$(printf '%.3f %% (%.0f ns/%s)' "$fm" "$fbm" "$unit")" "" "" "" "" \
		"$(spread_note %.3f % floor "$w" "$flo" "$fhi" "$fn")"
}

echo
echo "bpf_ns/u: the BPF time of the variant's programs per unit (transaction, MB, connection),"
echo "others' events taken off (bg_ns/u; bg: their part of the raw figure, from the idle windows"
echo "around the run; runs where it is over $(quotient "$BUSY" 0.01) % are busy and left out while"
echo "others are not); sockops: the sockops programs' part (only our sockets run them); share: of"
echo "the transaction's wall time (pp), of the workloads' CPU time (bulk: cpus x the run's time)."
echo
status=0
share_rows pp "$SIZE-byte TCP ping-pong over veth" "$PP_SHARE" "$PP_TARGET" "$PER_UNIT" \
	transaction
share_rows bulk "bulk TCP over veth, of its CPU time" "$BULK_SHARE" "$BULK_TARGET" "$PER_MB" MB
# Bulk context: throughput, CPUs busy, BPF ns per MB.
for x in defaults floor none; do
	read -r mbs _ < <(figure "$x" bulk "$MBS")
	read -r cpus _ < <(figure "$x" bulk "$CPUS")
	read -r permb _ < <(figure "$x" bulk "$PER_MB")
	[ -z "${mbs:-}" ] || printf '  bulk, %s: %.0f MB/s, %.2f CPUs busy, %.0f BPF ns per MB\n' \
		"${TITLE[$x]}" "$mbs" "$cpus" "${permb:-0}"
done
# The same transactions' wall time with nothing attached.
read -r wn _ < <(figure none pp "$WALL")
read -r wd wlo whi wcount < <(figure defaults pp "$WALL")
if [ -n "${wn:-}" ] && [ -n "${wd:-}" ]; then
	printf '  ping-pong wall time per transaction: %.0f ns with %s, %.0f ns with nothing\n' \
		"$wd" "${TITLE[defaults]}" "$wn"
	row "$SECTION" "ping-pong transaction wall time, ${TITLE[defaults]}" \
		"$(printf '%.1f µs' "$(awk -v a="$wd" 'BEGIN { print a / 1e3 }')")" \
		"$(printf 'nothing attached %.1f µs' "$(awk -v a="$wn" 'BEGIN { print a / 1e3 }')")" \
		"$(printf '%.2fx' "$(quotient "$wd" "$wn")")" "" "" \
		"$(spread_note %.0f ns defaults pp "$wlo" "$whi" "$wcount");$(printf ' %s' \
		"the machine's noise dwarfs the share")"
fi

# Per connection, with and without handshake timing.
read -r cd clo chi cn < <(figure defaults conn "$PER_UNIT")
read -r co colo cohi con < <(figure nohs conn "$PER_UNIT")
read -r cf _ < <(figure floor conn "$PER_UNIT")
if [ -n "${cd:-}" ] && [ -n "${co:-}" ]; then
	added=$(awk -v a="$cd" -v b="$co" 'BEGIN { printf "%.1f", 100 * (a / b - 1) }')
	result=$(awk -v d="$added" -v t="$HS_TARGET" 'BEGIN { print d <= t ? "PASS" : "MISS" }')
	printf 'connect/close: %.0f ns BPF per connection with handshake timing (runs %.0f..%.0f),' \
		"$cd" "$clo" "$chi"
	printf ' %.0f without (runs %.0f..%.0f), %+.1f %%: %s (target <= +%s %%); floor %.0f\n' \
		"$co" "$colo" "$cohi" "$added" "$result" "$HS_TARGET" "${cf:-0}"
	# The sockops part, which handshake timing does not change; the rest is the tracepoints'.
	read -r csd _ < <(figure defaults conn 'print sns / units')
	read -r cso _ < <(figure nohs conn 'print sns / units')
	awk -v a="$cd" -v b="$co" -v sa="$csd" -v sb="$cso" 'BEGIN { printf "  of which sockops" \
		" %.0f and %.0f ns, the other programs %.0f and %.0f ns\n", sa, sb, a - sa, b - sb }'
	row "$SECTION" "BPF time per connection, connect/close loop over veth, ${TITLE[defaults]}" \
		"$(printf '%.0f ns' "$cd")" "$(printf 'handshake_time = false: %.0f ns' "$co")" \
		"$(printf '%.2fx' "$(quotient "$cd" "$co")")" "<=+$HS_TARGET %" "$result" \
		"$(spread_note %.0f ns defaults conn "$clo" "$chi" "$cn") against$(printf ' %s' \
			"$(spread_note %.0f ns nohs conn "$colo" "$cohi" "$con")"); floor$(printf \
			' %.0f ns; sockops %.0f and %.0f ns of it' "${cf:-0}" "$csd" "$cso")"
else
	echo "connect/close: no valid measurement"
	row "$SECTION" "BPF time per connection, connect/close loop over veth" - - - \
		"<=+$HS_TARGET %" "" "no valid measurement"
	status=1
fi

# Per RTT callback: the exporter's sockops programs against the floor's.
for w in pp bulk; do
	read -r m lo hi n < <(figure defaults "$w" "$PER_CB")
	read -r f _ < <(figure floor "$w" "$PER_CB")
	name=$([ "$w" = pp ] && echo "ping-pong" || echo "bulk")
	[ -n "${m:-}" ] || continue
	printf 'per RTT callback, %s: %.1f ns (runs %.1f..%.1f), floor %.1f ns\n' "$name" "$m" \
		"$lo" "$hi" "${f:-0}"
	row "$SECTION" "sockops ns per RTT callback, $name, ${TITLE[defaults]}" \
		"$(printf '%.1f ns' "$m")" "$(printf 'floor %.1f ns' "${f:-0}")" \
		"$([ -n "${f:-}" ] && printf '%.2fx' "$(quotient "$m" "$f")")" "" "" \
		"$(spread_note %.1f ns defaults "$w" "$lo" "$hi" "$n")"
done
echo "the exporter held ${NPROGS:-?} BPF programs; medians over rounds."
if grep -q shared-hook "$TMP/results"; then
	echo "shared-hook: someone else's sockops program was on the cgroup2 root during a run: it"
	echo "ran on the same callbacks (in the wall and CPU time, not in our BPF time)."
fi
exit $status
