#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The test runner: every unit test binary and integration script once per build directory given
# (default: $BUILD or build), the container tests (tests/container/*.sh) once, the fuzzers in
# $FUZZ_BUILD if set, the kernel matrix (tests/kernels/run.sh) on $KERNELS_BUILD if set, and
# `make lint` if LINT=1. Jobs run side by side (TEST_JOBS at once, default 2 per core): each
# integration script's "# schedule: parallel|serial each|once" line says whether it may run next
# to others (serial: alone, before the rest) and whether it runs in every build flavour or only
# the first (once). A job's output is printed whole when it ends.
#
# Each job prints TAP-style "ok - name" / "not ok - name" lines. The run ends with a time table
# (with make's own phases from $TEST_TIMES, lines "PART START END" in epoch seconds) and
# "N passed, N failed, N skipped" (a script that exits 77 is one skip, so is each
# "ok - name # SKIP why" line). Under CI=true a skip counts as failed: CI must run everything.
#
# --changed: the fast loop (make check): unit tests, then only the integration scripts named
# in T="a b" or, without T, those whose name matches a file changed against HEAD (or $BASE).
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
CHANGED=
[ "${1:-}" = --changed ] && CHANGED=1 && shift
[ $# -gt 0 ] || set -- "$BUILD"
JOBS=${TEST_JOBS:-$((2 * $(nproc)))}
T0=${TEST_T0:-$(date +%s.%N)}
pass=0 fail=0 skip=0
logs=$(mktemp -d)
running=()

# shellcheck disable=SC2317 # called from the trap
stop() {
	local pid
	for pid in "${running[@]}"; do
		kill -TERM -- "-$pid" 2>/dev/null
	done
	wait
	rm -rf "$logs"
}
trap stop EXIT
trap 'exit 130' INT TERM

tally() { # name, log, exit status: count its ok/not ok lines
	local name=$1 log=$2 rc=$3 p f s
	# "ok - name # SKIP why": a check that did not run is a skip, never a pass.
	s=$(grep -c '^ok - .*# SKIP' "$log")
	p=$(($(grep -c '^ok - ' "$log") - s))
	f=$(grep -c '^not ok - ' "$log")
	if [ "$s" -gt 0 ] && [ "${CI:-}" = true ]; then
		echo "not ok - $name: $s check(s) skipped, under CI=true a failure"
		f=$((f + s))
	else
		skip=$((skip + s))
	fi
	if [ "$rc" -eq 77 ]; then
		if [ "${CI:-}" = true ]; then
			echo "not ok - $name: SKIPPED under CI=true counts as a failure"
			fail=$((fail + 1))
		else
			echo "!!!!! SKIPPED: $name (needs root and BPF) !!!!!"
			skip=$((skip + 1))
		fi
	elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "not ok - $name exited $rc"
		f=1
	fi
	pass=$((pass + p))
	fail=$((fail + f))
}

# The job table. add PART NAME MODE AFTER COMMAND: MODE serial (alone) or parallel; AFTER the
# name of a job that must end first, or "-". COMMAND is run by bash -c in its own process group.
names=() parts=() modes=() afters=() cmds=() state=() t_start=() t_end=()
add() {
	names+=("$2") parts+=("$1") modes+=("$3") afters+=("$4") cmds+=("$5")
	state+=(pending) t_start+=(0) t_end+=(0)
}
schedule_of() { # script: its "# schedule:" words; a script without one runs alone, everywhere
	local s
	s=$(sed -n 's/^# schedule: *//p' "$1" | head -n 1)
	echo "${s:-serial each}"
}

first=$1
for b in "$@"; do
	for t in "$b"/tests/test_*; do
		[ -x "$t" ] && add "unit ($b)" "unit ($b): $(basename "$t")" parallel - "$t"
	done
done
scripts=(tests/integration/*.sh)
if [ -n "$CHANGED" ]; then
	if [ -n "${T:-}" ]; then
		read -ra picked <<<"$T"
	else
		# A changed file's stem (exporter/collectors/drops.c -> drops) picks the scripts whose
		# name begins with it; a changed script picks itself.
		mapfile -t picked < <({ git diff --name-only "${BASE:-HEAD}" --
			git ls-files --others --exclude-standard; } | sed 's|.*/||; s|\..*||' | sort -u)
	fi
	sel=()
	for t in "${scripts[@]}"; do
		n=$(basename "$t" .sh)
		for p in "${picked[@]}"; do
			case $n in "$p" | "$p"_*) sel+=("$t") && break ;; esac
		done
	done
	scripts=("${sel[@]}")
	echo "# make check: integration scripts ${scripts[*]:-(none matched; T=\"name ...\" picks)}"
fi
for t in "${scripts[@]}"; do
	read -r mode flavours <<<"$(schedule_of "$t")"
	for b in "$@"; do
		[ "$flavours" = once ] && [ "$b" != "$first" ] && continue
		add "integration ($b)" "integration ($b): $(basename "$t" .sh)" "$mode" - \
			"BUILD=$b bash $t"
	done
done
if [ -z "$CHANGED" ]; then
	prev=-
	for t in tests/container/*.sh; do
		[ "$(basename "$t")" = lib.sh ] && continue
		add container "container: $(basename "$t" .sh)" parallel "$prev" "BUILD=$first bash $t"
		prev="container: $(basename "$t" .sh)"
	done
	for f in "${FUZZ_BUILD:-/nonexistent}"/fuzz_*; do
		[ -x "$f" ] && add fuzz "fuzz: $(basename "$f")" parallel - \
			"bash tests/fuzz/run.sh $FUZZ_BUILD $(basename "$f")"
	done
	[ -n "${KERNELS_BUILD:-}" ] &&
		add kernels "kernels ($KERNELS_BUILD)" parallel - \
			"BUILD=$KERNELS_BUILD bash tests/kernels/run.sh"
	[ "${LINT:-}" = 1 ] && add lint lint parallel - \
		"make --no-print-directory -s BUILD=$first lint && echo 'ok - make lint'"
fi

now() { date +%s.%N; }
idx_of() { local i; for i in "${!names[@]}"; do [ "${names[i]}" = "$1" ] && echo "$i"; done; }
ready() { # job i may start: its predecessor ended
	[ "${afters[$1]}" = - ] && return 0
	[ "${state[$(idx_of "${afters[$1]}")]}" = done ]
}
start() {
	local i=$1
	state[i]=running t_start[i]=$(now)
	set -m
	# A job that hangs is stopped (and fails) rather than holding up the run: TEST_TIMEOUT.
	BUILD=$first timeout -k 10 "${TEST_TIMEOUT:-1800}" bash -c "${cmds[i]}" \
		>"$logs/$i" 2>&1 </dev/null &
	set +m
	pids[$!]=$i
	running+=("$!")
}
finish_one() {
	local pid rc i
	wait -n -p pid "${running[@]}"
	rc=$?
	[ "$rc" -eq 124 ] && echo "not ok - ${names[${pids[$pid]}]}: still running after" \
		"${TEST_TIMEOUT:-1800} s (TEST_TIMEOUT), stopped" >>"$logs/${pids[$pid]}"
	i=${pids[$pid]}
	local left=() r
	for r in "${running[@]}"; do [ "$r" = "$pid" ] || left+=("$r"); done
	running=("${left[@]}")
	state[i]=done t_end[i]=$(now)
	printf '== %s (%.1f s)\n' "${names[i]}" "$(echo "${t_end[i]} - ${t_start[i]}" | bc)"
	cat "$logs/$i"
	tally "${names[i]}" "$logs/$i" "$rc"
}

# Serial jobs first, alone; then the rest, the long ones (listed last) started first.
declare -A pids
order=()
for i in "${!names[@]}"; do [ "${modes[i]}" = serial ] && order+=("$i"); done
for ((i = ${#names[@]} - 1; i >= 0; i--)); do
	case ${parts[i]} in container | fuzz | kernels | lint) order+=("$i") ;; esac
done
# Longest first: by the last run's durations ($BUILD/test-durations) or, on a fresh clone, by
# the script's size.
durations=$first/test-durations
for i in "${!names[@]}"; do
	case ${parts[i]} in container | fuzz | kernels | lint) continue ;; esac
	[ "${modes[i]}" = parallel ] || continue
	d=$(awk -v n="${names[i]}" -F '\t' '$1 == n { print $2 }' "$durations" 2>/dev/null)
	f=${cmds[i]##* }
	[ -n "$d" ] || d=$(($([ -f "$f" ] && wc -c <"$f" || echo 0) / 1000))
	echo "$d $i"
done | sort -rn -k1,1 >"$logs/order"
while read -r _ i; do order+=("$i"); done <"$logs/order"
while :; do
	waiting=0
	for i in "${order[@]}"; do
		[ "${state[i]}" = pending ] || continue
		waiting=1
		if [ "${modes[i]}" = serial ]; then
			[ ${#running[@]} -eq 0 ] && start "$i"
			break # nothing after a serial job starts before it ends
		fi
		[ ${#running[@]} -lt "$JOBS" ] && ready "$i" && start "$i"
	done
	[ ${#running[@]} -eq 0 ] && [ "$waiting" -eq 0 ] && break
	[ ${#running[@]} -gt 0 ] && finish_one
done

for i in "${!names[@]}"; do
	printf '%s\t%.0f\n' "${names[i]}" "$(echo "${t_end[i]} - ${t_start[i]}" | bc)"
done >"$durations.tmp" && mv "$durations.tmp" "$durations"

# The time table: each part's span from its first job's start to its last job's end.
echo
echo "# time table (seconds from the start of make test; parts overlap)"
printf '# %-28s %8s %8s %8s\n' part start end wall
{
	[ -n "${TEST_TIMES:-}" ] && [ -r "$TEST_TIMES" ] && cat "$TEST_TIMES"
	for i in "${!names[@]}"; do
		echo "${parts[i]// /_} ${t_start[i]} ${t_end[i]}"
	done
} | awk -v t0="$T0" '
	!($1 in s) { order[n++] = $1; s[$1] = $2; e[$1] = $3 }
	$2 < s[$1] { s[$1] = $2 } $3 > e[$1] { e[$1] = $3 }
	END {
		for (k = 0; k < n; k++) {
			p = order[k]; gsub(/_/, " ", p)
			printf "# %-28s %8.0f %8.0f %8.0f\n", p, s[order[k]] - t0, e[order[k]] - t0,
				e[order[k]] - s[order[k]]
		}
	}'
printf '# %-28s %8s %8s %8.0f\n' total "" "" "$(echo "$(now) - $T0" | bc)"
echo
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
