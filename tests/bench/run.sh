#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# `make bench` / `make bench-quick`: every benchmark in turn, then the one table of their
# figures (tests/bench/report.sh). Usage: run.sh full|quick. Environment: BUILD (build).
# full writes bench/results/<date>-<kernel>.md, quick $BUILD/bench-quick.md (shorter runs and
# fewer rounds, under 3 minutes: for routine use, not for the committed reference).
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
export BUILD
mode=${1:-full}
export BENCH_ROWS=$BUILD/bench-rows.tsv
: >"$BENCH_ROWS"
status=0
run() {
	echo "=== $*"
	env "$@" || status=1
	echo
}
if [ "$mode" = quick ]; then
	run ROUNDS=2 FLOOD_SECONDS=1 bash tests/bench/drops.sh
	run ROUNDS=2 FLOOD_SECONDS=1 bash tests/bench/retrans.sh
	run ROUNDS=2 FLOOD_SECONDS=1 bash tests/bench/connections.sh
	run ROUNDS=2 FLOOD_SECONDS=1 bash tests/bench/resets.sh
	run ROUNDS=2 SECONDS_PER_RUN=1 bash tests/bench/rtt.sh
	run ROUNDS=2 SECONDS_PER_RUN=1 IDLE_SECONDS=0.5 bash tests/bench/share.sh
	run ROUNDS=1 WRK_SECONDS=1 STARTS=2 MEM_SCRAPES=100 SERIES="auto 10000" \
		bash tests/bench/scrape.sh
	out=$BUILD/bench-quick.md
else
	run bash tests/bench/drops.sh
	run bash tests/bench/retrans.sh
	run bash tests/bench/connections.sh
	run bash tests/bench/resets.sh
	run bash tests/bench/rtt.sh
	run bash tests/bench/share.sh
	run bash tests/bench/scrape.sh
	out=bench/results/$(date -u +%Y-%m-%d)-$(uname -r).md
	# A second run on the same day and kernel is another file, never the first one rewritten.
	for n in $(seq 2 99); do
		[ -e "$out" ] || break
		out=bench/results/$(date -u +%Y-%m-%d)-$(uname -r)-$n.md
	done
fi
bash tests/bench/report.sh "$BENCH_ROWS" "$out" "netstack_exporter benchmark ($mode)"
exit $status
