#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# tests/tools/expocompare.py (protobuf.sh's judge) on small fixtures, so that a miscount of its
# own shows here and not as a spurious failure of the exporter:
#   1. a native histogram with an observation in the zero bucket, its buckets, count and classic
#      _count all agreeing, passes (pbdecode's "total" already holds zero_count: adding it
#      again failed it);
#   2. the same with a bucket missing from the native line, or a classic _count that differs,
#      fails;
#   3. a gauge family that moved (durations) may read the same in both text scrapes and other
#      in protobuf (the old judge failed it: protobuf.sh failed so by chance once in this
#      session's eight full runs); an idle gauge family is still compared exactly.
# schedule: parallel once
# why: python3 on fixtures: no exporter runs, nothing depends on the build
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
command -v python3 >/dev/null || skip_all "needs python3"

# A text scrape (the same before and after: an idle family) and its protobuf, as pbdecode
# prints it: 1 observation of 0 s (zero bucket), 1 in native bucket 0 (1 s) and 1 in bucket 8
# (2 s); classic buckets le=1 and +Inf.
cat >"$TMP/t1" <<'EOF'
# HELP x_seconds Some times.
# TYPE x_seconds histogram
x_seconds_bucket{job="a b",le="1"} 2
x_seconds_bucket{job="a b",le="+Inf"} 3
x_seconds_sum{job="a b"} 3
x_seconds_count{job="a b"} 3
EOF
cp "$TMP/t1" "$TMP/t2"
native() { # FIELDS: the protobuf scrape with this native line
	{
		cat "$TMP/t1"
		echo "# NATIVE x_seconds{job=\"a b\"} schema=3 zero_threshold=9.5e-07 $1"
	} >"$TMP/pb"
}
compare() { python3 tests/tools/expocompare.py "$TMP/t1" "$TMP/pb" "$TMP/t2" >"$TMP/out" 2>&1; }

native 'zero_count=1 count=3 buckets=0:1,8:1 total=3'
check "an observation in the zero bucket: zero bucket + buckets = count passes" compare
check "... the native check ran and passed" grep -q '^ok - native histograms (1)' "$TMP/out"
grep -q '^ok - native histograms (1)' "$TMP/out" || sed 's/^/  # /' "$TMP/out"

native 'zero_count=1 count=3 buckets=8:1 total=2'
check "a bucket missing from the native line fails" eval '! compare'
check "... named by the native check" grep -q '^not ok - native histograms (1)' "$TMP/out"

sed -i 's/^x_seconds_count{job="a b"} 3$/x_seconds_count{job="a b"} 4/' "$TMP/t1" "$TMP/t2"
native 'zero_count=0 count=3 buckets=0:2,8:1 total=3'
check "a classic _count other than the native count fails" eval '! compare'
check "... named by the native check" grep -q '^not ok - native histograms (1)' "$TMP/out"
# A gauge family that moved (scrape durations): one of its series can read the same in both
# text scrapes by chance and another value in between; that is no mismatch. A gauge family
# whose every series stayed (an idle one) is still compared exactly.
gauges() { # A1 A2 AP B1 B2 BP: d{c="a"} and d{c="b"} in T1, T2 and PB; u stays 1 (idle)
	local f a b
	for f in t1:$1:$4 t2:$2:$5 pb:$3:$6; do
		IFS=: read -r f a b <<<"$f"
		printf '# HELP d Duration.\n# TYPE d gauge\nd{c="a"} %s\nd{c="b"} %s\n' "$a" "$b" >"$TMP/$f"
		printf '# HELP u Up.\n# TYPE u gauge\nu 1\n' >>"$TMP/$f"
	done
}
gauges 1 3 2 0.5 0.5 0.7
check "a moving gauge family: a series equal at both ends but not between passes" compare
gauges 1 1 1 0.5 0.5 0.7
check "an idle gauge family: a value other in between fails" eval '! compare'
finish
