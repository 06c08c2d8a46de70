#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The test runner. Jobs, run side by side as their inputs allow:
#   - builds: $BUILD_CMD if set builds the first build directory, $BUILD_CMD2 the second and
#     $FUZZ_BUILD_CMD the fuzzers (make test's three builds); a job waits for the one it uses;
#   - unit tests and integration scripts, once per build directory given (default: $BUILD or
#     build); a script's "# schedule: parallel|serial each|once" line says whether it may run
#     next to other integration scripts (serial: it runs with no other one; the rest wait) and
#     whether it runs in every build flavour or only the first (once); at most TEST_JOBS
#     (default 2 per core) integration scripts at once;
#   - the container tests (tests/container/*.sh, the image's first) and, when set, the fuzzers
#     in $FUZZ_BUILD (one after another), the kernel matrix on $KERNELS_BUILD and LINT=1's
#     `make lint`: these run next to everything from the start, the long ones before the rest.
# A job's output is printed whole when it ends; one that runs past TEST_TIMEOUT (1800 s) fails.
#
# Each job prints TAP-style "ok - name" / "not ok - name" lines. The run ends with a time table
# (with make's own phases from $TEST_TIMES, lines "PART START END" in epoch seconds) and
# "N passed, N failed, N skipped" (a script that exits 77 is one skip, so is each
# "ok - name # SKIP why" line). Under CI=true a skip counts as failed: CI must run everything.
#
# --changed: the fast loop (make check): unit tests, then only the integration scripts named
# in T="a b" or, without T, those whose name matches a file changed against HEAD (or $BASE).
set -u
cd "$(dirname "$0")/.." || exit 1
# Debian's tools, which scripts/deps.sh installs, before whatever else PATH holds: a pyenv
# shim in front of python3 costs most of a second per start.
PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH
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

# The job table. add PART NAME KIND AFTER COMMAND: KIND serial or parallel (integration
# scripts), or bg; AFTER the names of jobs that must end first ("a|b"), or "-". COMMAND is run by
# bash -c in its own process group.
names=() parts=() kinds=() afters=() cmds=() state=() t_start=() t_end=()
add() {
	names+=("$2") parts+=("$1") kinds+=("$3") afters+=("$4") cmds+=("$5")
	state+=(pending) t_start+=(0) t_end+=(0)
}
schedule_of() { # script: its "# schedule:" words; a script without one runs alone, everywhere
	local s
	s=$(sed -n 's/^# schedule: *//p' "$1" | head -n 1)
	echo "${s:-serial each}"
}

first=$1
declare -A built # build directory -> the job that builds it, or "-"
build_job() { # DIR COMMAND
	built[$1]=-
	[ -n "$2" ] && add builds "builds ($1)" bg - "$2" && built[$1]="builds ($1)"
}
build_job "$first" "${BUILD_CMD:-}"
[ $# -gt 1 ] && build_job "$2" "${BUILD_CMD2:-}"
build_job "${FUZZ_BUILD:-fuzz}" "${FUZZ_BUILD_CMD:-}"
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
else
	# The long ones first: they are listed first.
	[ -n "${KERNELS_BUILD:-}" ] && add kernels "kernels ($KERNELS_BUILD)" bg "${built[$first]}" \
		"BUILD=$KERNELS_BUILD bash tests/kernels/run.sh"
	# The image needs the source tree only. The pod also the test tools, and its exporter
	# attaches to the host as the scripts' do: it is scheduled as one of them.
	add container "container: image" bg - "BUILD=$first bash tests/container/image.sh"
	add container "container: pod" parallel "${built[$first]}|container: image" \
		"BUILD=$first bash tests/container/pod.sh"
	# Debian 13: its root (made once per package set, reused across clones) from the start,
	# the build in it beside the rest, its exporter run as one of the scripts.
	add container "container: trixie root" bg - "BUILD=$first bash tests/container/trixie.sh root"
	add container "container: trixie build" bg "container: trixie root" \
		"BUILD=$first bash tests/container/trixie.sh build"
	add container "container: trixie" parallel "${built[$first]}|container: trixie build" \
		"BUILD=$first bash tests/container/trixie.sh run"
	# One after another: a harness's FUZZ_SECONDS are better spent on a core of its own.
	prev=${built[${FUZZ_BUILD:-fuzz}]}
	for f in tests/fuzz/fuzz_*.c; do
		[ -n "${FUZZ_BUILD:-}" ] || break
		f=$(basename "$f" .c)
		add fuzz "fuzz: $f" bg "$prev" "bash tests/fuzz/run.sh $FUZZ_BUILD $f"
		prev="fuzz: $f"
	done
	[ "${LINT:-}" = 1 ] && add lint lint bg "${built[$first]}" \
		"make --no-print-directory -s BUILD=$first lint && echo 'ok - make lint'"
fi
for b in "$@"; do
	for t in tests/unit/test_*.c; do
		t=$b/tests/$(basename "$t" .c)
		add "unit ($b)" "unit ($b): ${t##*/}" bg "${built[$b]}" "$t"
	done
done
# Serial scripts first, then the others longest first: by the last run's durations
# ($BUILD/test-durations) or, on a fresh clone, by the script's size.
durations=$first/test-durations
for t in "${scripts[@]}"; do
	read -r kind flavours <<<"$(schedule_of "$t")"
	for b in "$@"; do
		[ "$flavours" = once ] && [ "$b" != "$first" ] && continue
		n="integration ($b): $(basename "$t" .sh)"
		d=$(awk -v n="$n" -F '\t' '$1 == n { print $2 }' "$durations" 2>/dev/null)
		[ -n "$d" ] || d=$(($(wc -c <"$t") / 1000))
		[ "$kind" = serial ] && d=$((d + 1000000))
		printf '%s\t%s\t%s\t%s\n' "$d" "$kind" "$b" "$t"
	done
done | sort -rn -k1,1 >"$logs/order"
while IFS=$'\t' read -r _ kind b t; do
	add "integration ($b)" "integration ($b): $(basename "$t" .sh)" "$kind" "${built[$b]}" \
		"BUILD=$b bash $t"
done <"$logs/order"

now() { date +%s.%N; }
declare -A index pids
for i in "${!names[@]}"; do index[${names[i]}]=$i; done
ready() { # job i may start: the jobs it comes after ended
	local deps d
	IFS='|' read -ra deps <<<"${afters[$1]}"
	for d in "${deps[@]}"; do
		[ "$d" = - ] || [ "${state[${index[$d]}]}" = "done" ] || return 1
	done
}
start() {
	local i=$1
	state[i]=running t_start[i]=$(now)
	set -m
	# The long jobs beside the scripts (the image, guests, fuzzers, lint) take what CPU the
	# scripts leave: some scripts judge latencies, which a busy CPU stretches.
	local pre=()
	case ${parts[i]}:${names[i]} in
	kernels:*) pre=(nice -n 5) ;; # the longest of all: less
	fuzz:* | lint:* | "container:container: image" | "container:container: trixie build")
		pre=(nice -n 10 ionice -c 2 -n 7) ;;
	esac
	# A job that hangs is stopped (and fails) rather than holding up the run: TEST_TIMEOUT.
	BUILD=$first "${pre[@]}" timeout -k 10 "${TEST_TIMEOUT:-1800}" bash -c "${cmds[i]}" \
		>"$logs/$i" 2>&1 </dev/null &
	set +m
	pids[$!]=$i
	running+=("$!")
}
finish_one() {
	local pid rc i
	wait -n -p pid "${running[@]}"
	rc=$?
	i=${pids[$pid]}
	[ "$rc" -eq 124 ] && echo "not ok - ${names[i]}: still running after" \
		"${TEST_TIMEOUT:-1800} s (TEST_TIMEOUT), stopped" >>"$logs/$i"
	local left=() r
	for r in "${running[@]}"; do [ "$r" = "$pid" ] || left+=("$r"); done
	running=("${left[@]}")
	state[i]="done" t_end[i]=$(now)
	printf '== %s (%.1f s)\n' "${names[i]}" "$(echo "${t_end[i]} - ${t_start[i]}" | bc)"
	cat "$logs/$i"
	tally "${names[i]}" "$logs/$i" "$rc"
	[ "${parts[i]}" = builds ] && [ "$rc" -ne 0 ] && skip_after "${names[i]}"
}
skip_after() { # a failed build: what would use it fails without running
	local j
	for j in "${!names[@]}"; do
		[ "${state[j]}" = pending ] && [[ "|${afters[j]}|" == *"|$1|"* ]] || continue
		state[j]="done" t_start[j]=$(now) t_end[j]=${t_start[j]}
		echo "not ok - ${names[j]}: not run, $1 failed"
		fail=$((fail + 1))
	done
}

# Integration scripts: a serial one starts when none runs, and none starts while it runs or
# waits (they are listed first); the rest up to JOBS at once. Other jobs as soon as ready.
while :; do
	pending=0 scripts_running=0 serial_running=0
	for i in "${!names[@]}"; do
		[ "${state[i]}" = running ] || continue
		case ${kinds[i]} in
		serial) scripts_running=$((scripts_running + 1)) serial_running=1 ;;
		parallel) scripts_running=$((scripts_running + 1)) ;;
		esac
	done
	for i in "${!names[@]}"; do
		[ "${state[i]}" = pending ] || continue
		pending=1
		ready "$i" || continue
		case ${kinds[i]} in
		bg) start "$i" ;;
		serial)
			[ "$scripts_running" -eq 0 ] && start "$i" && scripts_running=1 serial_running=1
			serial_running=1 # those after it wait
			;;
		parallel)
			[ "$serial_running" -eq 0 ] && [ "$scripts_running" -lt "$JOBS" ] &&
				start "$i" && scripts_running=$((scripts_running + 1))
			;;
		esac
	done
	[ ${#running[@]} -eq 0 ] && [ "$pending" -eq 0 ] && break
	if [ ${#running[@]} -eq 0 ]; then
		echo "not ok - the jobs left wait on each other"
		fail=$((fail + 1))
		break
	fi
	finish_one
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
