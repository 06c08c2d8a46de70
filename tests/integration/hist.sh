#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Cell histograms computed in the kernel (bpf/hist.bpf.h): the real BPF program, run with
# BPF_PROG_TEST_RUN, gives each value the cell user space gives it (exporter/collectors/histogram.c,
# held to the exact edges by tests/unit/test_hist.c), at every native edge, one either side of
# it, 0, both ends of every octave up to UINT32_MAX, and pseudo-random values
# (build/tests/hist_check).
# schedule: parallel each
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
require_root_bpf
CHECKER=$BUILD/tests/hist_check
[ -x "$CHECKER" ] || skip_all "$CHECKER not built (make $CHECKER)"

"$CHECKER" >"$TMP/out" 2>"$TMP/err"
rc=$?
cat "$TMP/out"
[ -s "$TMP/err" ] && sed 's/^/  /' "$TMP/err" | head -20
check_eq "hist_check exit status" 0 "$rc"
check_eq "one line of checks" 1 "$(grep -c '^ok - the kernel.s cell equals' "$TMP/out")"
finish
