#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Run every unit test binary and integration script, once per build directory given
# (default: $BUILD or build), then the container tests (tests/container/*.sh, which build the
# image from the source tree) once, then the fuzzers in $FUZZ_BUILD if set, then the kernel
# matrix (tests/kernels/run.sh, QEMU) on $KERNELS_BUILD if set. Each prints TAP-style
# "ok - name" / "not ok - name" lines. Ends with "N passed, N failed, N skipped" (a script
# that exits 77 is one skip, so is each "ok - name # SKIP why" line). Under CI=true a skip
# counts as failed: CI must run everything.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export BUILD
pass=0 fail=0 skip=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

tally() { # name, command...: run it, count its ok/not ok lines
	local name=$1 rc
	shift
	echo "== $name"
	"$@" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	local p f s
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

[ $# -gt 0 ] || set -- "$BUILD"
for BUILD in "$@"; do
	export BUILD
	for t in "$BUILD"/tests/test_*; do
		[ -x "$t" ] && tally "unit ($BUILD): $(basename "$t")" "$t"
	done
	for t in tests/integration/*.sh; do
		[ -f "$t" ] && tally "integration ($BUILD): $(basename "$t" .sh)" bash "$t"
	done
done
BUILD=$1
export BUILD
for t in tests/container/*.sh; do
	[ "$(basename "$t")" = lib.sh ] || tally "container: $(basename "$t" .sh)" bash "$t"
done
if [ -n "${FUZZ_BUILD:-}" ]; then
	tally "fuzz ($FUZZ_BUILD)" bash tests/fuzz/run.sh "$FUZZ_BUILD"
fi
if [ -n "${KERNELS_BUILD:-}" ]; then
	BUILD=$KERNELS_BUILD tally "kernels ($KERNELS_BUILD)" bash tests/kernels/run.sh
fi
echo
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
