#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The one table of `make bench`: the rows the benchmarks wrote to ROWS (tests/bench/lib.sh
# row()), with the machine's facts, printed and written to OUT as Markdown.
# Usage: report.sh ROWS OUT TITLE
set -u
ROWS=$1 OUT=$2 TITLE=$3
cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)
mitig=$(grep -l -v '^Not affected' /sys/devices/system/cpu/vulnerabilities/* 2>/dev/null |
	while read -r f; do printf '%s: %s; ' "${f##*/}" "$(cat "$f")"; done)
mkdir -p "$(dirname "$OUT")"
{
	echo "# $TITLE"
	echo
	echo "- date: $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short=12 HEAD 2>/dev/null)"
	echo "- CPU: ${cpu:-unknown}, $(nproc) online CPUs; kernel $(uname -r)"
	echo "- load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine" \
		"shares the CPUs: compare the ratios, measured in the same run, not absolute figures)"
	echo "- mitigations: ${mitig:-none reported}"
	echo
	echo "| section | measurement | figure | reference | ratio | target | result | note |"
	echo "|---|---|---|---|---|---|---|---|"
	# Rows grouped by section, sections in the order they first appear.
	awk -F'\t' '{
		for (i = 1; i <= 8; i++)
			f[i] = (i <= NF && $i != "") ? $i : ""
		gsub(/\|/, "\\|", f[2])
		gsub(/<=/, "≤ ", f[6])
		gsub(/>=/, "≥ ", f[6])
		if (!(f[1] in n))
			order[++sections] = f[1]
		line[f[1], ++n[f[1]]] = sprintf("| %s | %s | %s | %s | %s | %s | %s | %s |", f[1],
			f[2], f[3], f[4], f[5], f[6], f[7], f[8])
	}
	END {
		for (s = 1; s <= sections; s++)
			for (i = 1; i <= n[order[s]]; i++)
				print line[order[s], i]
	}' "$ROWS"
} >"$OUT"
cat "$OUT"
echo
echo "written to $OUT"
