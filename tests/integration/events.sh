#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Sampled events end to end: the real BPF programs sampling into the shared ring buffer, real
# traffic between network namespaces, nftables counters and sets as the reference.
#
#   1. drop_sample_rate = 1, no cap: UDP to B, nft drops a random half (IPv4 and IPv6). The
#      NETFILTER_DROP events of B's namespace equal nft's drop counters exactly (or, if the ring
#      buffer overflowed, events + lost cover them), each with the 5-tuple nft saw (source port
#      from an nft set), interface and one kallsyms function; /events filters (type, reason,
#      netns, since) select them, bad filters are a 400; /events/top names the function with
#      its explanation and hint.
#   2. Exemplars: the OpenMetrics scrape carries the flow on the NETFILTER_DROP series (within
#      128 characters, with a timestamp of the test); the 0.0.4 scrape has none and promtool
#      check metrics accepts it.
#   3. drop_sample_rate = 10: the event count is within the binomial 99.9 % interval of nft's
#      drop count.
#   4. A cap of 50 events/s per CPU (burst 10) under a flood: sampled + lost events (host-wide)
#      <= 50 x seconds x CPUs + (burst + 1) x CPUs, the cap refused some, logged once.
#   5. Retransmits: a lossy flow (nft drops 5 % in B) and a clean one: the retrans top-K (of
#      A's namespace: other tests may run beside) names the lossy flow first and not the clean one. RTT: a flow behind a 5 Mbit/s TBF queue and
#      a loopback flow: the RTT analyzer names the delayed flow first, its max RTT at least half
#      of ss's srtt.
#   6. The JSON-lines log on stdout (the source of the counts in 1 and 3: it holds every event,
#      where /events keeps the last max_events) has stable field names.
# Events are told apart by network namespace, so other traffic on the host does not disturb
# the counts (it can fill the ring buffer: that is what the lost count is for).
# schedule: parallel each
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
require_root_bpf
UDPFLOOD=$BUILD/tests/udpflood
TCPBULK=$BUILD/tests/tcpbulk
for t in "$UDPFLOOD" "$TCPBULK"; do
	[ -x "$t" ] || skip_all "$t not built (make $t)"
done
for tool in nft curl promtool jq ss tc; do
	command -v "$tool" >/dev/null || skip_all "needs $tool"
done

N=4000 # datagrams per family
PORT=5555
NS_A=nsev-a$$
NS_B=nsev-b$$
for ns in "$NS_A" "$NS_B"; do
	netns_add "$ns" || skip_all "cannot create network namespaces"
done
veth_pair "$NS_A" "$NS_B" || skip_all "cannot create a veth pair"
INO_A=$(netns_inode "$NS_A")
INO_B=$(netns_inode "$NS_B")
ip netns exec "$NS_A" ping -c1 -W2 10.99.0.2 >/dev/null 2>&1
ip netns exec "$NS_A" ping -6 -c1 -W2 fd99::2 >/dev/null 2>&1

# B: the source ports nft saw, and a random half of UDP to $PORT dropped, per family.
ip netns exec "$NS_B" nft -f - <<NFT || skip_all "cannot load the nftables rules"
table inet evtest {
	set sports4 { type inet_service; flags dynamic; }
	set sports6 { type inet_service; flags dynamic; }
	counter drop4 { }
	counter drop6 { }
	chain input {
		type filter hook input priority filter; policy accept;
		meta nfproto ipv4 udp dport $PORT add @sports4 { udp sport }
		meta nfproto ipv6 udp dport $PORT add @sports6 { udp sport }
		meta nfproto ipv4 udp dport $PORT numgen random mod 2 == 0 counter name "drop4" drop
		meta nfproto ipv6 udp dport $PORT numgen random mod 2 == 0 counter name "drop6" drop
	}
}
NFT
nft_packets() {
	ip netns exec "$NS_B" nft list counter inet evtest "$1" | awk '$1 == "packets" { print $2 }'
}
nft_sport() {
	ip netns exec "$NS_B" nft list set inet evtest "$1" |
		sed -n 's/.*elements = { \([0-9]*\) }.*/\1/p'
}
reset_nft() {
	ip netns exec "$NS_B" nft reset counters table inet evtest >/dev/null
	ip netns exec "$NS_B" nft flush set inet evtest sports4
	ip netns exec "$NS_B" nft flush set inet evtest sports6
}
config() { # NAME LINE...: a [sampling] INI file in $TMP, prints its path
	local f=$TMP/$1.ini
	shift
	printf '%s\n' '[sampling]' "$@" >"$f"
	echo "$f"
}
jqt() { jq -e "$@" >/dev/null; } # jqt FILTER [FILE]: the filter yields true
stat_sum() { scrape_sum "^netstack_events_$1_total[{]type=\"$2\"[}]\$"; }
# b_drops FILE FAMILY: B's NETFILTER_DROP events of one family from a JSON-lines file.
b_drops() {
	jq -c --argjson ns "$INO_B" --arg f "$2" 'select(.type == "drop" and .netns == $ns and
		.reason == "NETFILTER_DROP" and .family == $f)' "$1"
}
# quiesce: wait until the consumer has caught up: B's events are in the stdout log and it has
# not grown for a second (a slow build, e.g. ThreadSanitizer, reads a burst before writing).
quiesce() {
	local a b same=0
	for _ in $(seq 80); do
		a=$(wc -l <"$EXPORTER_LOG")
		sleep 0.25
		b=$(wc -l <"$EXPORTER_LOG")
		if [ "$a" = "$b" ] && grep -q "^{.*\"netns\":$INO_B," "$EXPORTER_LOG"; then
			same=$((same + 1))
			[ "$same" -ge 4 ] && return
		else
			same=0
		fi
	done
}

# ---------------------------------------------------------------------------------------------
# 1 and 2: every drop sampled.
T0=$(date +%s.%N)
start_exporter --config "$(config all 'drop_sample_rate = 1' 'drop_max_events_per_second = 0' \
	'ring_buffer_bytes = 8388608' 'max_events = 100000' 'stdout = true' \
	'stdout_max_per_second = 1000000')" || {
	not_ok "exporter with sampling starts"
	finish
}
reset_nft
lost0=$(stat_sum lost drop)
sent4=$(ip netns exec "$NS_A" "$UDPFLOOD" 10.99.0.2 "$PORT" "$N")
sent6=$(ip netns exec "$NS_A" "$UDPFLOOD" fd99::2 "$PORT" "$N")
check_eq "udpflood sent all datagrams" "$N $N" "${sent4:-0} ${sent6:-0}"
quiesce
lost=$(($(stat_sum lost drop) - lost0))
drop4=$(nft_packets drop4)
drop6=$(nft_packets drop6)
sport4=$(nft_sport sports4)
sport6=$(nft_sport sports6)
# Our namespace's lines only: other traffic's lines are many, the last one maybe half written.
grep "^{.*\"netns\":$INO_B," "$EXPORTER_LOG" >"$TMP/log.jsonl"
b_drops "$TMP/log.jsonl" ipv4 >"$TMP/b4"
b_drops "$TMP/log.jsonl" ipv6 >"$TMP/b6"
got4=$(wc -l <"$TMP/b4")
got6=$(wc -l <"$TMP/b6")
gt "nft dropped IPv4 datagrams" "${drop4:-0}" 0
if [ "$lost" -eq 0 ]; then
	check_eq "IPv4: one event per nft drop" "$drop4" "$got4"
	check_eq "IPv6: one event per nft drop" "$drop6" "$got6"
else
	# The ring buffer overflowed (other traffic on the host): what is missing was lost.
	le "IPv4: no more events than nft drops" "$got4" "$drop4"
	le "IPv6: no more events than nft drops" "$got6" "$drop6"
	ge "IPv4+IPv6: events + lost cover nft's drops" $((got4 + got6 + lost)) $((drop4 + drop6))
fi
# Every event: the 5-tuple nft saw, the interface, the length.
good4=$(jq -c --argjson sp "${sport4:-0}" --argjson dp "$PORT" --arg dev "vb$$" \
	'select(.saddr == "10.99.0.1" and .daddr == "10.99.0.2" and .sport == $sp and
		.dport == $dp and .protocol == "udp" and .interface == $dev and .len > 0)' \
	"$TMP/b4" | wc -l)
good6=$(jq -c --argjson sp "${sport6:-0}" --argjson dp "$PORT" --arg dev "vb$$" \
	'select(.saddr == "fd99::1" and .daddr == "fd99::2" and .sport == $sp and
		.dport == $dp and .protocol == "udp" and .interface == $dev and .len > 0)' \
	"$TMP/b6" | wc -l)
check_eq "IPv4 events carry the flow nft saw (sport ${sport4:-?})" "$got4" "$good4"
check_eq "IPv6 events carry the flow nft saw (sport ${sport6:-?})" "$got6" "$good6"
funcs=$(cat "$TMP/b4" "$TMP/b6" | jq -r '.function' | sed 's/+0x[0-9a-f]*$//' | sort -u)
check_eq "one drop function for the rule's drops" 1 "$(grep -c . <<<"$funcs")"
check "the function ($funcs) is a kernel symbol" grep -q " [tT] $funcs\$" /proc/kallsyms
# A kernel address in the output would tell whoever reads /events where the kernel is.
check_eq "no event carries a kernel address (KASLR)" 0 \
	"$(cat "$TMP/b4" "$TMP/b6" | grep -c '0xffff[0-9a-f]\{12\}')"
check "the drop events explain NETFILTER_DROP" \
	test "$(head -1 "$TMP/b4" | jq -r .explanation)" != null

# /events: the same events through the filters (when the store could hold all of them).
code=$(curl -s -o "$TMP/ev.jsonl" -w '%{http_code}' \
	"$EXPORTER_URL/events?type=drop&reason=NETFILTER_DROP&netns=$INO_B")
check_eq "/events?type&reason&netns answers" 200 "$code"
if [ "$(grep -c '^{' "$EXPORTER_LOG")" -lt 100000 ]; then # else other traffic evicted ours
	check_eq "/events?type&reason&netns: the same events as the log" $((got4 + got6)) \
		"$(grep -c . "$TMP/ev.jsonl")"
fi
check_eq "/events?netns: only that netns" 0 \
	"$(jq -c --argjson ns "$INO_B" 'select(.netns != $ns)' "$TMP/ev.jsonl" | wc -l)"
check_eq "/events?since=later: nothing" 0 \
	"$(curl -sf "$EXPORTER_URL/events?netns=$INO_B&since=$(($(date +%s) + 100))" | grep -c .)"
check_eq "/events?type=rtt: no drops" 0 \
	"$(curl -sf "$EXPORTER_URL/events?type=rtt&netns=$INO_B" | grep -c .)"
for q in type=bogus reason=no_such netns=abc netns=0 since=yesterday colour=red; do
	code=$(curl -s -o "$TMP/400" -w '%{http_code}' "$EXPORTER_URL/events?$q")
	check_eq "/events?$q is a 400 ($(head -c 60 "$TMP/400"))" 400 "$code"
done
curl -sf "$EXPORTER_URL/events/top" >"$TMP/top.json"
check "/events/top is JSON" jqt . "$TMP/top.json"
check "/events/top names $funcs for NETFILTER_DROP with a hint" jqt --arg f "$funcs" \
	'.drop | map(select(.reason == "NETFILTER_DROP" and (.function | startswith($f + "+0x"))
		and .hint != null)) | length > 0' "$TMP/top.json"

# 2: exemplars. The series is the host's (default labels): its exemplar is the latest such drop
# anywhere, another script's alongside maybe; then a few more of our flow (same source port).
exemplar="# {saddr=\"fd99::1\",daddr=\"fd99::2\",sport=\"$sport6\",dport=\"$PORT\"} 1.0 [0-9.]*\$"
# Each try looks every 0.1 s for 1 s (the consumer reads the ring every 100 ms), then waits a
# random 0 to 1 s: the ASan instance alongside does the same, and in lockstep each would keep
# overwriting the other's exemplar.
om_exemplar() {
	metrics "$EXPORTER_URL" -H 'Accept: application/openmetrics-text; version=1.0.0' \
		>"$TMP/om.txt"
	ex=$(grep '^netstack_skb_drops_total{reason="NETFILTER_DROP",family="ipv6",protocol="udp"}' \
		"$TMP/om.txt")
	grep -q "$exemplar" <<<"$ex"
}
for try in $(seq 10); do
	wait_until 1 om_exemplar && break
	echo "# try $try: the exemplar is another flow's ($ex): 8 more datagrams of ours"
	sleep "0.$((RANDOM % 10))"
	ip netns exec "$NS_A" python3 -c 'import socket, sys
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.bind(("fd99::1", int(sys.argv[1])))
for _ in range(8): s.sendto(b"x", ("fd99::2", int(sys.argv[2])))' "$sport6" "$PORT"
done
[ "$try" -lt 10 ] || wait_until 1 om_exemplar # after the last 8
check "OpenMetrics: the IPv6 NETFILTER_DROP series has an exemplar with the flow" grep -q \
	"$exemplar" <<<"$ex"
ts=${ex##* }
check "the exemplar's timestamp ($ts) is within the test" \
	awk -v t="$ts" -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { exit !(t >= a && t <= b) }'
check "every exemplar's labels are within 128 characters" awk '
	/ # [{]/ { l = $0; sub(/.* # [{]/, "", l); sub(/[}][^}]*$/, "", l); gsub(/[=",]/, "", l)
		if (length(l) > 128) bad = 1 }
	END { exit bad }' "$TMP/om.txt"
check "OpenMetrics ends with # EOF" test "$(tail -1 "$TMP/om.txt")" = "# EOF"
scrape "$TMP/text.txt"
check_eq "text 0.0.4 has no exemplars" 0 "$(grep -c ' # {' "$TMP/text.txt")"
promtool_ok "promtool check metrics accepts the 0.0.4 scrape" "$TMP/text.txt"
stop_exporter

# ---------------------------------------------------------------------------------------------
# 3: 1 in 10. The events of n drops: no more spread than Binomial(n, 0.1) (the gap after a
# sample is uniform on 0..18, steadier than a coin per drop), so the test takes the binomial's
# exact tails (not a normal approximation) for a false-failure rate of 1e-6 per run. For
# n = 10000 (mean 1000, sd 30): [856, 1150], where the old 99.9 % one was [901, 1099].
# A run whose ring buffer overflowed (other traffic's drops) runs once more, and says so.
# binomial_interval N P ALPHA: the smallest LO and largest HI with P(X < LO), P(X > HI) <=
# ALPHA / 2 for X ~ Binomial(N, P), the probabilities summed exactly in log space.
binomial_interval() {
	awk -v n="$1" -v p="$2" -v a="$3" 'BEGIN {
		lp[0] = n * log(1 - p)
		for (k = 1; k <= n; k++) lp[k] = lp[k - 1] + log((n - k + 1) / k) + log(p / (1 - p))
		for (lo = 0; lo < n && (c += exp(lp[lo])) <= a / 2; lo++);
		for (hi = n; hi > 0 && (d += exp(lp[hi])) <= a / 2; hi--);
		print lo, hi }'
}
for try in 1 2; do
	start_exporter --config "$(config tenth 'drop_sample_rate = 10' \
		'drop_max_events_per_second = 0' 'ring_buffer_bytes = 8388608' 'stdout = true' \
		'stdout_max_per_second = 1000000')" || {
		not_ok "exporter with 1/10 starts"
		finish
	}
	reset_nft
	lost0=$(stat_sum lost drop)
	ip netns exec "$NS_A" "$UDPFLOOD" 10.99.0.2 "$PORT" $((5 * N)) >/dev/null
	quiesce
	lost=$(($(stat_sum lost drop) - lost0))
	drops=$(nft_packets drop4)
	grep "^{.*\"netns\":$INO_B," "$EXPORTER_LOG" >"$TMP/log10.jsonl"
	got=$(b_drops "$TMP/log10.jsonl" ipv4 | wc -l)
	stop_exporter
	[ "$lost" -eq 0 ] && break
	echo "# 1/10, run $try: the ring buffer overflowed ($lost lost to other traffic)"
done
read -r lo hi < <(binomial_interval "$drops" 0.1 1e-6)
if [ "$lost" -gt 0 ]; then
	ok "1/10 # SKIP the ring buffer overflowed twice ($lost lost to other traffic)"
elif [ "$got" -ge "$lo" ] && [ "$got" -le "$hi" ]; then
	ok "1/10 (run $try): $got events of $drops drops, within [$lo, $hi] (false failure 1e-6)"
else
	not_ok "1/10: events within [$lo, $hi] (false failure 1e-6)" "$got ($drops drops)"
fi

# ---------------------------------------------------------------------------------------------
# 4: the cap under a flood (host-wide counts: every drop on the host goes through the bucket).
CAP=50
BURST=10
CPUS=$(nproc)
t0=$(date +%s.%N)
start_exporter --config "$(config cap 'drop_sample_rate = 1' \
	"drop_max_events_per_second = $CAP" "drop_burst = $BURST")" || {
	not_ok "exporter with a cap starts"
	finish
}
ip netns exec "$NS_A" "$UDPFLOOD" 10.99.0.2 "$PORT" 0 2 >/dev/null
sampled=$(stat_sum sampled drop)
lost=$(stat_sum lost drop)
limited=$(stat_sum ratelimited drop)
t1=$(date +%s.%N)
secs=$(awk -v a="$t0" -v z="$t1" 'BEGIN { printf "%.2f", z - a }')
bound=$(awk -v c=$CAP -v n="$CPUS" -v b=$BURST -v s="$secs" \
	'BEGIN { printf "%d\n", c * s * n + (b + 1) * n }')
le "cap: events <= $CAP/s x $secs s x $CPUS CPUs + burst" $((sampled + lost)) "$bound"
gt "cap: events were sampled" "$sampled" 0
gt "cap: the flood went over it" "$limited" 0
check_eq "cap: logged once" 1 "$(grep -c 'drop_max_events_per_second=50' "$EXPORTER_LOG")"
stop_exporter

# ---------------------------------------------------------------------------------------------
# 5: retransmits and RTT, A sending to B: the lossy flow to RPORT, the clean one to CPORT.
RPORT=5201
CPORT=5203
ip netns exec "$NS_B" nft -f - <<NFT
table inet evloss {
	chain input {
		type filter hook input priority filter; policy accept;
		tcp dport $RPORT meta length > 200 numgen random mod 100 < 5 drop
	}
}
NFT
ip netns exec "$NS_A" sysctl -qw net.ipv4.tcp_congestion_control=reno \
	net.ipv4.tcp_no_metrics_save=1
for p in $RPORT $CPORT; do
	ip netns exec "$NS_B" "$TCPBULK" sink :: "$p" >/dev/null 2>&1 &
	on_exit "kill $!; wait $!"
done
ip netns exec "$NS_A" "$TCPBULK" sink 127.0.0.1 $CPORT >/dev/null 2>&1 &
on_exit "kill $!; wait $!"
sleep 0.3
start_exporter --config "$(config tcp 'retrans_sample_rate = 1' \
	'retrans_max_events_per_second = 0' 'rtt_sample_rate = 1' \
	'rtt_max_events_per_second = 0' 'min_rtt_us = 0' 'stdout = true' 'max_events = 100000')" || {
	not_ok "exporter sampling TCP starts"
	finish
}
ip netns exec "$NS_A" "$TCPBULK" send 10.99.0.2 $RPORT 2 >/dev/null &
p1=$!
ip netns exec "$NS_A" "$TCPBULK" send 10.99.0.2 $CPORT 2 >/dev/null &
p2=$!
wait $p1 $p2
curl -sf "$EXPORTER_URL/events/top" |
	jq --argjson ns "$INO_A" '.retrans |= map(select(.netns == $ns))' >"$TMP/top2.json"
first=$(jq -c '.retrans[0]' "$TMP/top2.json")
check "retrans top-K: the lossy flow first ($first)" jqt --argjson ns "$INO_A" \
	--argjson p $RPORT '.netns == $ns and .daddr == "10.99.0.2" and .dport == $p and
		.retransmits > 0' <<<"$first"
# The clean flow may see a tail loss probe or two, not the lossy flow's hundreds.
clean=$(jq --argjson p $CPORT '[.retrans[] | select(.dport == $p) | .retransmits] | add // 0' \
	"$TMP/top2.json")
le "retrans top-K: the clean flow far behind (x10)" $((clean * 10)) \
	"$(jq '.retransmits // 0' <<<"$first")"

# RTT: the TBF queue on A's veth delays the flow to B; loopback inside A is the fast one.
ip netns exec "$NS_B" nft delete table inet evloss
ip netns exec "$NS_A" tc qdisc replace dev "va$$" root tbf rate 5mbit burst 16kb latency 400ms
ip netns exec "$NS_B" sysctl -qw net.ipv4.tcp_rmem="4096 65536 65536"
ip netns exec "$NS_A" "$TCPBULK" send 10.99.0.2 $CPORT 3 >/dev/null &
p1=$!
ip netns exec "$NS_A" "$TCPBULK" send 127.0.0.1 $CPORT 3 >/dev/null &
p2=$!
sleep 2
srtt=$(ip netns exec "$NS_A" ss -tin "( dport = :$CPORT and dst 10.99.0.2 )" |
	grep -o ' rtt:[0-9.]*' | head -1 | cut -d: -f2)
wait $p1 $p2
# Other tests on the host may have slow flows too: rank within our namespace A.
curl -sf "$EXPORTER_URL/events/top" | jq --argjson ns "$INO_A" '.rtt |= map(select(.netns == $ns))' \
	>"$TMP/top3.json"
first=$(jq -c '.rtt[0]' "$TMP/top3.json")
check "RTT top-K: the delayed flow first ($first)" jqt --argjson ns "$INO_A" \
	--argjson p $CPORT '.netns == $ns and .daddr == "10.99.0.2" and .dport == $p' <<<"$first"
# The loopback flow was sampled too (its events), and it is the faster one.
lo_max=$(curl -sf "$EXPORTER_URL/events?type=rtt&netns=$INO_A" |
	jq -s '[.[] | select(.daddr == "127.0.0.1") | .rtt_us] | max // -1')
check "RTT: the loopback flow was sampled, its max ($lo_max us) below the delayed flow's" \
	jqt --argjson lo "$lo_max" '$lo >= 0 and .max_rtt_us > $lo' <<<"$first"
maxms=$(jq '.max_rtt_us / 1000' <<<"$first")
check "RTT top-K: max RTT ${maxms} ms, at least half ss's srtt ${srtt:-?} ms" \
	awk -v m="$maxms" -v s="${srtt:-0}" 'BEGIN { exit !(s > 10 && m >= s / 2) }'

# 6: the stdout log, one JSON object per line with the documented fields. Every TCP flow on the
# host is sampled here (rate 1, no cap): beside other scripts the ring or stdout may have lost
# ours, as netstack_events_lost_total counts. Then the lossy flow once more, up to 3 times.
for try in 1 2 3; do
	grep "^{.*\"netns\":$INO_A," "$EXPORTER_LOG" | grep -q '"type":"retrans"' && break
	echo "# try $try: no retransmit event of ours on stdout (lost: $(scrape_sum \
		'^netstack_events_lost_total[{]type="retrans"')): the lossy flow again"
	ip netns exec "$NS_B" nft add table inet evloss
	ip netns exec "$NS_B" nft add chain inet evloss input \
		'{ type filter hook input priority filter; policy accept; }'
	ip netns exec "$NS_B" nft add rule inet evloss input tcp dport $RPORT \
		meta length '>' 200 numgen random mod 100 '<' 5 drop
	ip netns exec "$NS_A" "$TCPBULK" send 10.99.0.2 $RPORT 1 >/dev/null
	ip netns exec "$NS_B" nft delete table inet evloss
	sleep 0.5 # the consumer reads the ring every 100 ms
done
grep "^{.*\"netns\":$INO_A," "$EXPORTER_LOG" >"$TMP/tcp.jsonl"
check "stdout: every line is one JSON object" jqt . "$TMP/tcp.jsonl"
check "stdout: RTT events with their fields" jqt -s 'map(select(.type == "rtt")) | length > 0
	and all(has("seq") and has("time") and has("netns") and has("saddr") and has("sport")
		and has("rtt_us") and has("srtt_us"))' "$TMP/tcp.jsonl"
check "stdout: retransmit events with their fields" jqt -s 'map(select(.type == "retrans")) |
	length > 0 and all(has("state") and has("kind") and has("srtt_us") and has("cwnd"))' \
	"$TMP/tcp.jsonl"
stop_exporter
finish
