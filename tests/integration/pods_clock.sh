#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The pod resolver's waits (between scans, API back-off) are timed on CLOCK_MONOTONIC: a step
# of the wall clock (NTP, a VM resumed) neither stalls nor hurries them. Stepping this host's
# clock would disturb everything else on it, so the test watches the waits themselves: under
# strace, the resolver's timed futex waits (refresh_seconds = 1, so several in 5 s) carry no
# FUTEX_CLOCK_REALTIME.
# schedule: parallel each
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
require_root_bpf
command -v strace >/dev/null || skip_all "needs strace"

printf '%s\n' '[collector.drops]' 'labels = reason,family,protocol,netns' \
	'pod_labels = namespace,pod' '[pods]' 'source = none' 'refresh_seconds = 1' >"$TMP/pods.ini"
start_exporter --config "$TMP/pods.ini" || exit 1
timeout -s INT 5 strace -f -qq -e trace=futex -p "$EXPORTER_PID" -o "$TMP/futex" 2>/dev/null
timed=$(grep -c 'FUTEX_WAIT_BITSET.*{tv_sec=' "$TMP/futex")
ge "timed waits seen in 5 s with refresh_seconds = 1" "$timed" 2
check_eq "none of them on the wall clock (FUTEX_CLOCK_REALTIME)" 0 \
	"$(grep -c 'FUTEX_CLOCK_REALTIME' "$TMP/futex")"
finish
