#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The integration tests where threads meet (reloads under scrapes, the event consumer beside
# scrapes and /events, the pod resolver's threads) against a ThreadSanitizer build
# (make BUILD=DIR TSAN=1 all tools). Any report is a failure: "not ok" with the report.
# Usage: tests/tsan.sh BUILD_DIR [TEST...] (default: reload events pods).
set -u
cd "$(dirname "$0")/.." || exit 1
dir=${1:?usage: tests/tsan.sh BUILD_DIR [TEST...]}
shift
[ $# -gt 0 ] || set -- reload events pods
[ -x "$dir/netstack_exporter" ] || { echo "not ok - $dir/netstack_exporter not built"; exit 1; }
rc=0 skipped=0 reported=0
rm -f "$dir"/report.*
reports=$(realpath "$dir")/report
export BUILD=$dir TSAN_OPTIONS="log_path=$reports ${TSAN_OPTIONS:-}"
for t in "$@"; do
	echo "# $t.sh under ThreadSanitizer"
	bash "tests/integration/$t.sh"
	case $? in
	0) ;;
	77) skipped=1 ;;
	*) rc=1 ;;
	esac
done
sleep 1 # a process killed at a test's exit may still be writing its report
for r in "$dir"/report.*; do
	[ -f "$r" ] || continue
	cat "$r"
	echo "not ok - ThreadSanitizer report $r"
	rc=1 reported=1
done
[ "$reported" -eq 0 ] && echo "ok - no ThreadSanitizer report"
[ "$rc" -eq 0 ] && [ "$skipped" -eq 1 ] && exit 77
exit "$rc"
