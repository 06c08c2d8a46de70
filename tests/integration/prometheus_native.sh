#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The RTT histogram as Prometheus sees it, native and classic. Two real Prometheus servers
# (Debian's 2.42) scrape one exporter every second: one with --enable-feature=native-histograms,
# which asks for the protobuf exposition and stores the native buckets, one without, which reads
# text and stores the classic ones.
#
# The round trip is imposed: two pairs of network namespaces, each a client and an echo server
# on a veth, with tests/tools/nfqdelay holding every packet of the flow for a fixed time in each
# direction (NFQUEUE: this host has no netem): a round trip of 62.6 ms in one pair, 250.4 ms in
# the other, each just above the lower edge of a schema 3 bucket (2^-4 s and 2^-2 s), so that
# the milliseconds the delay tool and a busy machine add stay in that bucket (5.7 and 22.6 ms
# wide).
# The client sends a request, waits for the echo and goes on, so its RTT samples are the
# round trip the delays make, and the netns label keeps each pair's samples apart.
#   1. The native Prometheus was served protobuf and holds a native histogram;
#   2. For both delays, from the buckets Prometheus stored (rate(netstack_tcp_rtt_seconds[20s]))
#      and its histogram_quantile at the same instant: every bucket has schema 3's edges
#      (2^((i-1)/8), 2^(i/8)]; none below the imposed round trip's holds a sample (the delay is a
#      lower bound: this holds on any machine); the median is in the imposed bucket; the 0.99
#      quantile is in the bucket the stored counts put it in, and that is the imposed bucket or
#      the next. The median and the p99's place depend on how late a busy machine delivers
#      packets: they are waited for over the windows of up to 60 s (docs/testing.md, "checks
#      that can fail by chance").
#   3. the classic Prometheus still answers over the classic buckets: its median lies in the
#      classic bucket that holds the imposed round trip, or the one above it.
# schedule: serial once
# why: the imposed round trips hold only while no other script floods the host's softirqs (a
# late NET_RX adds tens of ms to the tail the p99 check reads); ASan-checked elsewhere
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
require_root_bpf
command -v prometheus >/dev/null || skip_all "needs prometheus (Debian package prometheus)"
NFQDELAY=$BUILD/tests/nfqdelay
[ -x "$NFQDELAY" ] || skip_all "needs $NFQDELAY (make tools)"

# pair N DELAY_MS: client namespace C$N and server S$N on a veth (10.98.N.1 and .2), the port
# 6000 flow held DELAY_MS in each direction by an nfqdelay in each namespace; sets NETNS_N.
pair() {
	local n=$1 ms=$2 ns
	local c=nsnat-c$n-$$ s=nsnat-s$n-$$
	netns_add "$c" && netns_add "$s" || return 1
	ip link add "nc$n$$" netns "$c" type veth peer name "ns$n$$" netns "$s" || return 1
	ip -n "$c" addr add "10.98.$n.1/24" dev "nc$n$$" && ip -n "$c" link set "nc$n$$" up
	ip -n "$s" addr add "10.98.$n.2/24" dev "ns$n$$" && ip -n "$s" link set "ns$n$$" up
	ip netns exec "$c" iptables -A OUTPUT -p tcp --dport 6000 -j NFQUEUE --queue-num "$n" ||
		return 1
	ip netns exec "$s" iptables -A OUTPUT -p tcp --sport 6000 -j NFQUEUE --queue-num "$n" ||
		return 1
	for ns in "$c" "$s"; do
		ip netns exec "$ns" chrt -f 10 "$NFQDELAY" "$n" "$ms" >"$TMP/nfq.$ns" 2>&1 &
		on_exit "kill $!; wait $!"
		wait_grep "$TMP/nfq.$ns" '^ready$' || return 1
	done
	ip netns exec "$s" chrt -f 10 python3 -c "$ECHO" server "10.98.$n.2" >"$TMP/echo.$s" 2>&1 &
	on_exit "kill $!"
	wait_grep "$TMP/echo.$s" '^listening$' || return 1
	ip netns exec "$c" python3 -c "$ECHO" client "10.98.$n.2" >"$TMP/echo.$c" 2>&1 &
	on_exit "kill $!"
	printf -v "NETNS_$n" %s "$(netns_inode "$c")"
}
# Request and echo, 64 bytes each, one at a time, without Nagle: each request's ACK comes back
# with its echo, one round trip later. The delay tool and the echo server run as real-time
# processes: on a machine busy with other tests, a late wake-up of either adds to the round
# trip.
ECHO='
import socket, sys, time
role, addr = sys.argv[1], sys.argv[2]
if role == "server":
    ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, 6000)); ls.listen(); print("listening", flush=True)
    c, _ = ls.accept(); c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    while (d := c.recv(64)):
        c.sendall(d)
else:
    c = socket.create_connection((addr, 6000)); c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    while True:
        c.sendall(b"x" * 64); n = 0
        while n < 64:
            n += len(c.recv(64 - n))
        time.sleep(0.005)
'

printf '[collector.rtt]\nlabels = family,netns\n' >"$TMP/exporter.ini"
start_exporter --config "$TMP/exporter.ini" || {
	not_ok "exporter starts"
	finish
}
TARGET=${EXPORTER_URL#http://}
if ! pair 1 31.3 || ! pair 2 125.2; then
	skip_all "namespaces, NFQUEUE rules and nfqdelay set up"
fi

prom_start native "$TARGET" --enable-feature=native-histograms || {
	not_ok "native Prometheus scrapes the exporter" "$(tail -n 20 "$PROM_LOG")"
	finish
}
NATIVE=$PROM_URL
prom_start classic "$TARGET" || {
	not_ok "classic Prometheus scrapes the exporter" "$(tail -n 20 "$PROM_LOG")"
	finish
}
CLASSIC=$PROM_URL

# at URL PROMQL: the first value of an instant query's answer from the Prometheus at URL.
at() { PROM_URL=$1 prom_query "$2" | jq -r '.data.result[0].value[1] // empty'; }
# ge_query URL PROMQL N: that value is at least N.
# shellcheck disable=SC2317 # called through wait_until and check
ge_query() { awk -v v="$(at "$1" "$2")" -v n="$3" 'BEGIN { exit !(v != "" && v >= n) }'; }

# A full window of samples from both pairs in both servers (the slower pair makes ~4 a second).
W=20s
for n in 1 2; do
	ns=NETNS_$n
	wait_until 60 ge_query "$CLASSIC" \
		"count_over_time(netstack_tcp_rtt_seconds_count{netns=\"${!ns}\"}[$W])" 18
	check "classic Prometheus: $W of samples of pair $n" ge_query "$CLASSIC" \
		"increase(netstack_tcp_rtt_seconds_count{netns=\"${!ns}\"}[$W])" 50
	check "native Prometheus: $W of samples of pair $n" ge_query "$NATIVE" \
		"histogram_count(increase(netstack_tcp_rtt_seconds{netns=\"${!ns}\"}[$W]))" 50
done

# 1. The native histogram is there, and the classic buckets are not stored beside it.
check "native Prometheus stores netstack_tcp_rtt_seconds as a native histogram" jqe \
	'.data.result[0].histogram[1].buckets | length > 0' \
	<<<"$(PROM_URL=$NATIVE prom_query "netstack_tcp_rtt_seconds{netns=\"$NETNS_1\"}")"
check "native Prometheus has no classic _bucket series" jqe '.data.result == []' \
	<<<"$(PROM_URL=$NATIVE prom_query 'netstack_tcp_rtt_seconds_bucket')"

# One instant T for every query of a judgement: a window that moved between two queries would
# compare different samples (T a few seconds back: the scrapes before it are all stored).
# at_t URL PROMQL T: the first value of an instant query at T.
at_t() {
	PROM_URL=$1 prom_get /api/v1/query --data-urlencode "query=$2" --data-urlencode "time=$3" |
		jq -r '.data.result[0].value[1] // empty'
}
# buckets PROMQL T: the native histogram PROMQL gives at T, a bucket a line (lower edge, upper
# edge, count), ascending.
buckets() {
	PROM_URL=$NATIVE prom_get /api/v1/query --data-urlencode "query=$1" --data-urlencode "time=$2" |
		jq -r '.data.result[0].histogram[1].buckets[]? | "\(.[1]) \(.[2]) \(.[3])"' | sort -g -k2
}
# native_judge N: pair N's stored buckets and quantiles at one instant, into $TMP/judge.N as
# "key value" lines: total, edges (1: every bucket has schema 3's edges), below (samples in
# buckets under the imposed one), and for q = 0.5 and 0.99 the quantile Prometheus answers
# (got_Q) and the edges of the bucket the counts put it in (lo_Q, hi_Q: the first whose
# cumulative count reaches Q of the total).
# shellcheck disable=SC2317 # called through within
native_judge() {
	local n=$1 ns=NETNS_$1 t sel
	t=$(($(date +%s) - 3))
	sel="netstack_tcp_rtt_seconds{netns=\"${!ns}\"}"
	buckets "sum(rate(${sel}[$W]))" "$t" >"$TMP/buckets.$n"
	{
		for qq in 0.5 0.99; do
			echo "got_$qq $(at_t "$NATIVE" "histogram_quantile($qq, sum(rate(${sel}[$W])))" "$t")"
		done
		awk -v e="${EDGE[$n]}" '
			function ix(x) { return log(x) / log(2) * 8 }
			function whole(x) { return (x - int(x + (x < 0 ? -0.5 : 0.5))) ^ 2 < 1e-12 }
			{ lo[NR] = $1; hi[NR] = $2; c[NR] = $3; total += $3 }
			# schema 3: both edges powers of 2^(1/8), one step apart (the zero bucket, were
			# there one, has no edges of its own: below every other)
			$1 > 0 && !(whole(ix($1)) && whole(ix($2)) && (ix($2) - ix($1) - 1) ^ 2 < 1e-12) { bad++ }
			$1 <= 0 && $2 > 0 { bad++ }
			$2 <= 2 ^ (e / 8) * (1 + 1e-9) { below += $3 }
			END {
				printf "total %s\nedges %d\nbelow %s\n", total, (NR > 0 && !bad), below + 0
				split("0.5 0.99", qs, " ")
				for (k = 1; k <= 2; k++) {
					cum = 0
					for (i = 1; i <= NR; i++) {
						cum += c[i]
						if (cum >= qs[k] * total * (1 - 1e-12))
							break
					}
					printf "lo_%s %s\nhi_%s %s\n", qs[k], lo[i], qs[k], hi[i]
				}
			}' "$TMP/buckets.$n"
	} >"$TMP/judge.$n"
}
# jv N KEY: a value of the last judgement of pair N.
jv() { awk -v k="$2" '$1 == k { print $2 }' "$TMP/judge.$1"; }
# in_bucket N Q: Prometheus's Q quantile lies in the bucket the counts put it in.
# shellcheck disable=SC2317 # called through check
in_bucket() {
	awk -v g="$(jv "$1" "got_$2")" -v lo="$(jv "$1" "lo_$2")" -v hi="$(jv "$1" "hi_$2")" \
		'BEGIN { exit !(g != "" && lo != "" && g >= lo * (1 - 1e-9) && g <= hi * (1 + 1e-9)) }'
}
# bucket_at N Q K: the Q quantile's bucket is the imposed one's K-th successor (0: itself).
# shellcheck disable=SC2317 # called through check
bucket_at() {
	awk -v lo="$(jv "$1" "lo_$2")" -v e="${EDGE[$1]}" -v k="$3" \
		'BEGIN { d = log(lo) / log(2) * 8 - e - k; exit !(lo != "" && d * d < 1e-12) }'
}
# within S CMD...: CMD until it succeeds, for at most S seconds (a try is a few queries).
within() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep 0.5
	done
}
# median_ok N / p99_ok N: a fresh judgement whose median is in the imposed bucket / whose p99
# is in it or the next.
# shellcheck disable=SC2317 # called through within
median_ok() { native_judge "$1" && in_bucket "$1" 0.5 && bucket_at "$1" 0.5 0; }
# shellcheck disable=SC2317 # called through within
p99_ok() { native_judge "$1" && in_bucket "$1" 0.99 && { bucket_at "$1" 0.99 0 || bucket_at "$1" 0.99 1; }; }

declare -A EDGE=([1]=-32 [2]=-16)
for n in 1 2; do
	ns=NETNS_$n edge=${EDGE[$n]}
	rtt=$(awk -v e="$edge" 'BEGIN { printf "%.6f", 2^(e/8) * 1.0016 }')
	imposed=$(awk -v e="$edge" 'BEGIN { printf "(%.6f, %.6f]", 2^(e/8), 2^((e+1)/8) }')
	# 2. What holds on any machine, at one instant: the buckets' edges and nothing faster than
	# the delays.
	native_judge "$n"
	echo "# pair $n, per second by upper edge: $(awk '{ printf "%.4f:%.2f ", $2, $3 }' "$TMP/buckets.$n")"
	check "native buckets of pair $n have schema 3's edges ($(jv "$n" total)/s in $(wc -l <"$TMP/buckets.$n") buckets)" \
		test "$(jv "$n" edges)" = 1
	check_eq "native: no sample of a ${rtt} s round trip below its bucket $imposed" 0 "$(jv "$n" below)"
	# The median in the imposed bucket (the delay tool and a busy machine add less than its
	# width to most round trips): at most 60 s of windows until one shows it.
	median_ok "$n" || {
		echo "# pair $n, median out of its bucket ($(paste -sd' ' "$TMP/judge.$n")): measured again"
		within 60 median_ok "$n"
	}
	check "native median of a ${rtt} s round trip in its bucket $imposed: $(jv "$n" got_0.5)" \
		bucket_at "$n" 0.5 0
	check "... where the stored counts put it" in_bucket "$n" 0.5
	# The p99: a late softirq or wake-up adds tens of ms to a round trip now and then, and the
	# smoothed RTT carries it over several samples: in the imposed bucket or the next.
	p99_ok "$n" || {
		echo "# pair $n, p99 out of bounds ($(paste -sd' ' "$TMP/judge.$n")): measured again"
		within 60 p99_ok "$n"
	}
	check "native q0.99 of a ${rtt} s round trip where the stored counts put it ([$(jv "$n" lo_0.99), $(jv "$n" hi_0.99)]): $(jv "$n" got_0.99)" \
		in_bucket "$n" 0.99
	check "... in the bucket $imposed or the next" \
		eval "bucket_at $n 0.99 0 || bucket_at $n 0.99 1"
	# 3. Classic log2 buckets of microseconds: the median in the one holding the round trip, or
	# the next (the delay is a lower bound).
	got=$(at "$CLASSIC" \
		"histogram_quantile(0.5, sum by (le) (rate(netstack_tcp_rtt_seconds_bucket{netns=\"${!ns}\"}[$W])))")
	check "classic median of a ${rtt} s round trip in its log2 bucket or the next: $got" \
		awk -v g="$got" -v r="$rtt" 'BEGIN { lo = 1e-6; while (lo * 2 < r) lo *= 2;
			exit !(g != "" && g > lo && g <= 4 * lo) }'
done
check "exporter still running" kill -0 "$EXPORTER_PID"
finish
