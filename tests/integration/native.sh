#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Native histogram buckets computed in the kernel (bpf/native.bpf.h): the real BPF search, run
# with BPF_PROG_TEST_RUN for every schema, gives the slot the user-space reference (exact edges,
# exporter/collectors/nativehist.c) gives, at every bucket edge, one either side of it, 0, and
# both ends of every octave up to UINT32_MAX (build/tests/native_check).
# schedule: parallel each
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
require_root_bpf
CHECKER=$BUILD/tests/native_check
[ -x "$CHECKER" ] || skip_all "$CHECKER not built (make $CHECKER)"

"$CHECKER" >"$TMP/out" 2>"$TMP/err"
rc=$?
cat "$TMP/out"
[ -s "$TMP/err" ] && sed 's/^/  /' "$TMP/err" | head -20
check_eq "native_check exit status" 0 "$rc"
check_eq "a line per schema 0..5" 6 "$(grep -c '^ok - schema [0-5]: ' "$TMP/out")"
finish
