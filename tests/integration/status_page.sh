#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The landing page as a browser renders it: headless Chromium loads / and the rendered DOM is
# checked against drops this test causes (an nftables rule in a fresh namespace drops UDP).
# Samples are 15 s apart and Chromium can take longer than that to start on a busy machine, so
# the page is fetched at the moment that matters and Chromium renders that copy; one more view
# is rendered straight from the exporter.
#
#   1. Right after start the drops table says it is collecting (a rate needs two samples), the
#      resets table says why it has no data (collector not in this build, or disabled here),
#      and the empty top lists say so instead of showing bare headers.
#   2. After a burst of drops between two samples, NETFILTER_DROP has a sparkline (an SVG with
#      a polyline and an accessible label) whose last point is higher than its first, a rate
#      now of at least the burst over the sample interval, and at least the nft rule's own
#      count in the window and in the total.
#   3. With every drop sampled, the latest events show the test's flow (its netns, 127.0.0.1 to
#      the nft-dropped port, NETFILTER_DROP at an nftables function) and the top drop
#      locations list NETFILTER_DROP.
#   4. The page needs nothing from outside (no script, no external asset), the page as served
#      parses as XML (xmllint) before and after the burst, and no table is bare headers.
#   5. TCP over IPv6 between two namespaces of its own, every segment of port 6036 held D ms in
#      each direction by tests/tools/nfqdelay (NFQUEUE: no netem here): a ping-pong and a
#      connection at a time. Right after start the retransmit, RTT and handshake tables are
#      collecting; then the RTT table's ipv6 row and the handshake table's active and passive
#      ipv6 rows have their p50 within a bucket of the 2 D round trip (native buckets of schema
#      3: in its bucket or the next one), p99 no lower. SYNs to port 6037, which nftables drops
#      in the server's namespace, are retransmitted: the retransmits table has a syn row with at
#      least the client namespace's TcpExtTCPSynRetrans in its window, as read once those SYNs
#      are over and before the sample the page is judged at (later reads may hold a ping-pong
#      SYN the page's last sample has not seen). Every table shows data
#      under its family (base/families.h): a family renamed under the page fails here.
# schedule: serial once
# why: the page in Chromium (its renderer ASan-checked in test_status, utf8); its sparkline
# is the host's NETFILTER_DROP rate: drops alongside shape it; its RTT and handshake quantiles
# are the host's: connections alongside shift them
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
require_root_bpf
UDPFLOOD=$BUILD/tests/udpflood
PINGPONG=$BUILD/tests/pingpong
NFQDELAY=$BUILD/tests/nfqdelay
for tool in "$UDPFLOOD" "$PINGPONG" "$NFQDELAY"; do
	[ -x "$tool" ] || skip_all "$tool not built (make tools)"
done
for tool in nft curl chromium xmllint iptables ip6tables nstat; do
	command -v "$tool" >/dev/null || skip_all "needs $tool"
done

NS=sparkstatus$$
PORT=5566
N=20000
STEP=15 # STATUS_STEP

# render URL OUT: the DOM after Chromium has loaded and laid out the page (a profile per OUT:
# two renders may run at once).
render() {
	timeout 60 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--user-data-dir="$TMP/chromium.${2##*/}" --dump-dom "$1" >"$2" 2>"$2.log"
}
# snap NAME: the page as served now into $TMP/NAME.raw.html, and as Chromium renders that copy
# into $TMP/NAME.html
snap() {
	curl -sf "$EXPORTER_URL/" >"$TMP/$1.raw.html"
	render "file://$TMP/$1.raw.html" "$TMP/$1.html"
}
# section FILE TITLE: the page from <h2>TITLE</h2> to the next <h2>
section() { sed -n "/<h2>$2<\\/h2>/,/<h2>/p" "$1"; }
# says_empty FILE TITLE TEXT: the section says TEXT and has no table
says_empty() { section "$1" "$2" | grep -q "$3" && ! section "$1" "$2" | grep -q '<table'; }
# no_bare_tables FILE: every table has a row of cells
no_bare_tables() {
	tr -d '\n' <"$1" | awk 'BEGIN { RS = "</table>" } /<table/ && !/<td/ { bad = 1 } END { exit bad }'
}
# drop_row FILE: "now sum total first_y last_y min_later_y points" of NETFILTER_DROP's row in the
# drops table (SVG y grows downwards: a smaller y is a higher rate)
drop_row() {
	section "$1" 'Drops by reason' | grep -o '<tr><td>NETFILTER_DROP</td>.*</tr>' | head -1 |
		sed -E 's|^<tr><td>[^<]*</td><td class="num">([^<]*)</td>.*points="([^"]*)".*</svg></td><td class="num">([0-9]+)</td><td class="num">([0-9]+)</td></tr>$|\1 \3 \4 \2|' |
		awk '{ n = split($0, f, " "); min = 99
			for (i = 5; i <= n; i++) { split(f[i], p, ","); if (p[2] + 0 < min) min = p[2] + 0 }
			split(f[4], a, ","); split(f[n], b, ",")
			print f[1], f[2], f[3], a[2], b[2], min, n - 3 }'
}
samples_in() { sed -nE 's|.*<span class="samples">([0-9]+)</span>.*|\1|p' "$1"; }
samples() { curl -sf "$EXPORTER_URL/" >"$TMP/poll.html" && samples_in "$TMP/poll.html"; }
# wait_samples MIN: up to 2 steps for the page to count at least MIN samples
wait_samples() {
	for _ in $(seq $((STEP * 10 + 20))); do
		[ "$(samples)" -ge "$1" ] 2>/dev/null && return 0
		sleep 0.2
	done
	return 1
}
nft_dropped() {
	ip netns exec "$NS" nft list counter inet sparkstatus dropped |
		awk '$1 == "packets" { print $2 }'
}
flood() { ip netns exec "$NS" "$UDPFLOOD" 127.0.0.1 "$PORT" "$1" >/dev/null; }

# ---- TCP with a known round trip: the RTT, handshake and retransmit tables ----
D=10 # ms each way: a round trip of 2 D
netns_client_server stpage
# Last before the namespaces go: what is left in them (a server's child whose client's FIN an
# nfqdelay held when it was stopped, a connect still retrying).
on_exit "ip netns pids $NS_C | xargs -r kill; ip netns pids $NS_S | xargs -r kill"
for ipt in iptables ip6tables; do
	ip netns exec "$NS_C" $ipt -A OUTPUT -p tcp --dport 6036 -j NFQUEUE --queue-num 36 ||
		skip_all "no NFQUEUE target ($ipt)"
	ip netns exec "$NS_S" $ipt -A OUTPUT -p tcp --sport 6036 -j NFQUEUE --queue-num 36 ||
		skip_all "no NFQUEUE target ($ipt)"
done
for ns in "$NS_C" "$NS_S"; do
	ip netns exec "$ns" chrt -f 10 "$NFQDELAY" 36 "$D" >"$TMP/nfq.$ns" 2>&1 &
	on_exit "kill $!; wait $!"
	wait_grep "$TMP/nfq.$ns" '^ready$' || skip_all "nfqdelay in $ns did not start"
done
ip netns exec "$NS_S" nft add table inet stpage
ip netns exec "$NS_S" nft add chain inet stpage input \
	'{ type filter hook input priority filter; policy accept; }'
ip netns exec "$NS_S" nft add rule inet stpage input tcp dport 6037 drop
ip netns exec "$NS_S" chrt -f 10 "$PINGPONG" server fd99::2 6036 >"$TMP/pp.server" 2>&1 &
on_exit "kill $!"
wait_grep "$TMP/pp.server" '^listening$' || skip_all "pingpong server did not start"
# tcp_traffic: the ping-pong, a connection at a time, and SYNs that go unanswered (two
# retransmits each in 4 s), until killed or the server is gone. The connections come 4 a
# second: their closes leave a QUEUE_PURGE drop now and then, which must not crowd the test's
# own drops out of the latest events.
tcp_traffic() {
	ip netns exec "$NS_C" chrt -f 10 "$PINGPONG" client fd99::2 6036 3600 >/dev/null 2>&1 &
	while ip netns exec "$NS_C" "$PINGPONG" client fd99::2 6036 0.05 >/dev/null 2>&1; do
		sleep 0.2
	done &
	local syn=()
	for _ in 1 2 3 4; do
		ip netns exec "$NS_C" timeout 4 "$PINGPONG" client fd99::2 6037 1 >/dev/null 2>&1 &
		syn+=($!)
	done
	wait "${syn[@]}"
	syn_retrans >"$TMP/syn.done" # what a sample taken from now on must hold
	wait
}
syn_retrans() { ip netns exec "$NS_C" nstat -saz TcpExtTCPSynRetrans | awk '/^TcpExt/ { print $2 }'; }
# bucket_edges MS: the lower edge of the native bucket (schema 3) of MS milliseconds and the
# upper edge of the next one, in seconds
bucket_edges() {
	awk -v t="$1" 'BEGIN { i = -int(-8 * log(t / 1000) / log(2))
		printf "%.9f %.9f\n", 2 ^ ((i - 1) / 8), 2 ^ ((i + 1) / 8) }'
}
# quantiles FILE TITLE ROW: "p50 p99 count" (seconds) of ROW in the quantile table TITLE
quantiles() {
	section "$1" "$2" | grep -o "<tr><td>$3</td>.*</tr>" | head -1 |
		sed -E 's|^<tr><td>[^<]*</td><td class="num"><data value="([^"]*)">[^<]*</data></td><td class="num"><data value="([^"]*)">[^<]*</data></td><td class="num">([0-9]+)</td></tr>$|\1 \2 \3|'
}
# near_rtt NAME FILE TITLE ROW: ROW's p50 within a bucket of 2 D, its p99 no lower
near_rtt() {
	local p50 p99 n lo hi
	read -r p50 p99 n <<<"$(quantiles "$2" "$3" "$4")"
	read -r lo hi <<<"$(bucket_edges $((2 * D)))"
	check "$1: p50 $p50 s within a bucket of $((2 * D)) ms ($lo..$hi), p99 $p99 no lower, $n" \
		awk -v a="${p50:-0}" -v b="${p99:-0}" -v lo="$lo" -v hi="$hi" -v n="${n:-0}" \
		'BEGIN { exit !(a >= lo && a <= hi && b >= a && n > 0) }'
}
# has_table FILE TITLE: the section shows a table
has_table() { section "$1" "$2" | grep -q '<table'; }

netns_add "$NS"
ip netns exec "$NS" nft -f - <<EOF
table inet sparkstatus {
	counter dropped { }
	chain input {
		type filter hook input priority filter; policy accept;
		udp dport $PORT counter name "dropped" drop
	}
}
EOF
printf '[sampling]\ndrop_sample_rate = 1\n' >"$TMP/config.ini"
# A build with the resets collector has it disabled here; one without says it has none.
printf '[collector.resets]\nenabled = false\n' >"$TMP/resets.ini"
if "$EXPORTER" --config "$TMP/resets.ini" --check-config >/dev/null 2>&1; then
	cat "$TMP/resets.ini" >>"$TMP/config.ini"
	resets_msg='The resets collector is not enabled'
else
	resets_msg='The resets collector is not in this build'
fi
start_exporter --config "$TMP/config.ini"

# ---- right after start ----
snap start
P=$TMP/start.html
check_eq "the page right after start: one sample" 1 "$(samples_in "$TMP/start.raw.html")"
check "Chromium rendered it" grep -q '<h2>Drops by reason</h2>' "$P"
check "a fresh exporter: the drops table is collecting, no sparkline" bash -c \
	"grep -q 'class=\"empty collecting\">Collecting' '$P' && ! grep -q '<svg' '$P'"
check "resets table: '$resets_msg'" says_empty "$P" 'TCP resets sent by reason' "$resets_msg"
check "top retransmitting flows: says it is empty" says_empty "$P" \
	'Top retransmitting flows' 'No retransmits sampled in the last minute'
check "slowest flows: says it is empty" says_empty "$P" 'Slowest flows (RTT)' \
	'No RTT samples in the last minute'
check "no table on the page is bare headers" no_bare_tables "$P"
check "the page as served parses as XML (collecting)" xmllint --noout "$TMP/start.raw.html"
for t in 'TCP retransmits by cause' 'TCP round-trip time' 'TCP handshake time'; do
	check "a fresh exporter: '$t' is collecting" says_empty "$P" "$t" \
		'class="empty collecting">Collecting'
done
syn_before=$(syn_retrans)
tcp_traffic &
TRAFFIC=$!
on_exit "pkill -P $TRAFFIC; kill $TRAFFIC"

# ---- a burst between two samples ----
check "the second sample comes within $((STEP * 2)) s" wait_samples 2
# The unanswered SYNs are over before the sample that the page is judged at (before + 1): a
# count taken later could hold retransmits the page's last sample has not seen yet.
check "the unanswered SYNs are over" wait_until 20 test -s "$TMP/syn.done"
before=$(samples)
flood "$N"
# The latest 20 sampled events hold drops from anywhere on the host (the test's own page
# fetches leave QUEUE_PURGE drops): a few more of the test's right before the page is taken.
sleep 2 # the per-CPU cap's bucket refills after the burst, so these 300 are sampled
flood 300
inode=$(netns_inode "$NS")
sleep 0.3 # the consumer reads the ring every 100 ms; no HTTP meanwhile (its closes drop too)
snap burst
dropped=$(nft_dropped)
ge "nft dropped what was sent" "${dropped:-0}" $((N + 300))
check "latest events show the dropped flow of netns $inode" grep -Eq \
	"<td>udp</td><td>$inode</td><td>127\\.0\\.0\\.1:[0-9]+</td><td>127\\.0\\.0\\.1:$PORT</td><td>NETFILTER_DROP at nft_[a-z_]+" \
	"$TMP/burst.html"
check "top drop locations list NETFILTER_DROP" bash -c \
	"sed -n '/class=\"top-drops\"/,/<\\/table>/p' '$TMP/burst.html' | grep -q NETFILTER_DROP"

check "the next sample comes" wait_samples $((before + 1))
# The page straight from the exporter (checked below), rendered while the copy is.
render "$EXPORTER_URL/" "$TMP/live.html" &
LIVE=$!
snap after
P=$TMP/after.html
read -r now sum total first_y last_y _ npoints <<<"$(drop_row "$P")"
check "NETFILTER_DROP has a row with a sparkline" grep -Eq \
	'<tr><td>NETFILTER_DROP</td><td class="num">[0-9.]+</td><td><svg [^>]*role="img" aria-label="NETFILTER_DROP: [0-9.]+/s now, peak [0-9.]+/s, [0-9]+ in [^"]+"><title>NETFILTER_DROP: [^<]*</title><polyline ' \
	"$P"
ge "its polyline has a point per sample interval and the first one's start" "${npoints:-0}" 3
lt "its last point is higher than its first (SVG y: $first_y -> $last_y)" "${last_y:-99}" \
	"${first_y:-0}"
check "its rate now covers the burst ($now/s x 20 s >= $dropped)" \
	awk -v r="${now:-0}" -v d="$dropped" 'BEGIN { exit !(r * 20 >= d) }'
ge "drops in the window >= the nft rule's count" "${sum:-0}" "$dropped"
ge "total >= the nft rule's count" "${total:-0}" "$dropped"
check "the page as served parses as XML (sparklines)" xmllint --noout "$TMP/after.raw.html"
check "no table on the page is bare headers" no_bare_tables "$P"
# ---- round trips, handshakes and retransmits ----
near_rtt "RTT, ipv6" "$P" 'TCP round-trip time' 'ipv6'
near_rtt "handshake, active ipv6" "$P" 'TCP handshake time' 'active ipv6'
near_rtt "handshake, passive ipv6" "$P" 'TCP handshake time' 'passive ipv6'
syn=$(($(cat "$TMP/syn.done" 2>/dev/null || echo "$syn_before") - syn_before))
syn_row=$(section "$P" 'TCP retransmits by cause' | grep -o '<tr><td>syn</td>.*</tr>' |
	sed -E 's|.*</svg></td><td class="num">([0-9]+)</td>.*|\1|')
ge "the client namespace retransmitted SYNs" "$syn" 4
ge "the retransmits table's syn row holds them (TcpExtTCPSynRetrans)" "${syn_row:-0}" "$syn"
for t in 'Drops by reason' 'TCP retransmits by cause' 'TCP round-trip time' 'TCP handshake time'; do
	check "'$t' shows a table: its collector writes the family the page reads" has_table "$P" "$t"
done
printf '# page: %s bytes served, %s rows in the drops table\n' "$(wc -c <"$TMP/after.raw.html")" \
	"$(section "$P" 'Drops by reason' | grep -c '<tr><td>')"

# ---- the page straight from the exporter ----
wait "$LIVE"
read -r _ _ _ first_y _ min_y _ <<<"$(drop_row "$TMP/live.html")"
check "Chromium loads it from the exporter: the burst is in the sparkline ($first_y -> $min_y)" \
	[ "${min_y:-99}" -lt "${first_y:-0}" ]
for f in "$TMP/after.html" "$TMP/live.html"; do
	check "no scripts on the page ($(basename "$f"))" bash -c "! grep -qi '<script' '$f'"
	check "no external assets ($(basename "$f"))" bash -c \
		"! grep -Eqi '(src|href)=\"(https?:)?//' '$f'"
done
finish
