#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Run each libFuzzer harness in DIR (or those NAMEd) for FUZZ_SECONDS (default 30) from its committed seed
# corpus (tests/fuzz/corpus/NAME, read only: new inputs go to a scratch directory). A crash,
# leak or sanitizer report fails; the input that caused it is kept in DIR for a regression
# seed. Prints one "ok -" / "not ok -" line per harness.
set -u
cd "$(dirname "$0")/../.." || exit 1
dir=${1:?usage: tests/fuzz/run.sh BUILD_FUZZ_DIR [NAME...]}
shift
seconds=${FUZZ_SECONDS:-30}
failed=0
[ $# -gt 0 ] || set -- "$dir"/fuzz_*
for f in "$@"; do
	f=$dir/$(basename "$f")
	[ -x "$f" ] || continue
	name=$(basename "$f")
	scratch=$(mktemp -d)
	if "$f" -max_total_time="$seconds" -print_final_stats=1 -timeout=5 -rss_limit_mb=1024 \
		-artifact_prefix="$dir/$name-" "$scratch" "tests/fuzz/corpus/${name#fuzz_}" \
		>"$dir/$name.log" 2>&1; then
		echo "ok - $name: ${seconds}s, $(grep -o 'stat::number_of_executed_units: [0-9]*' \
			"$dir/$name.log" | grep -o '[0-9]*$' || echo '?') runs, no crash"
	else
		echo "not ok - $name: see $dir/$name.log"
		tail -n 30 "$dir/$name.log"
		failed=1
	fi
	rm -rf "$scratch"
done
exit $failed
