#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Retransmits collector end to end: real BPF on tp_btf/tcp_retransmit_skb and
# tcp_retransmit_synack, real TCP between network namespaces joined by veth, nftables rules
# making the loss, and each namespace's own SNMP counters (nstat) as the reference.
#
#   1. Bulk transfers C -> S with a random 5 % of data packets dropped in S, over IPv4, IPv6
#      and IPv6-mapped IPv4: segments{netns=C} equals C's TcpRetransSegs exactly; retransmits
#      are kind=retransmit, state=ESTABLISHED, of the right family.
#   2. The same, with C's own OUTPUT chain also dropping retransmissions: the kernel counts those
#      failed sends in TcpRetransSegs and TCPRetransFail, and so do we (segments stay exact,
#      failures grow).
#   3. Handshakes: S drops the SYN of one connection (C retransmits it: kind=retransmit,
#      state=SYN_SENT) and everything but the SYN of another (S retransmits its SYN-ACK:
#      kind=synack, state=NEW_SYN_RECV), IPv4 and IPv6. In each namespace the counts equal
#      TCPSynRetrans and the segments TcpRetransSegs.
#   4. Default labels (another exporter at the same time): only family, kind, cause, state;
#      segments (by family and cause) and failures always present for ipv4 and ipv6. The
#      exporters with the netns label list labels without cause: their counts are not split by
#      cause (the program variant without it). Causes themselves: retrans_cause.sh.
#   5. max_series = 1 with netns: overflow series carry "__overflow__", the map overflow counter
#      grows, sums over netns stay complete.
#   6. promtool check metrics accepts every scrape.
# Exact equalities hold because nothing else retransmits inside C and S, and every transfer has
# finished (tcpbulk waits for the peer's EOF) before the counters are read. On a busy host the
# kernel can skip a BPF program run (docs/collectors/retrans.md): a phase that is not exact
# runs again, up to three times, and its checks are made on the last run.
# schedule: parallel each
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
require_root_bpf
TCPBULK=$BUILD/tests/tcpbulk
[ -x "$TCPBULK" ] || skip_all "$TCPBULK not built (make $TCPBULK)"
for tool in nft nstat curl promtool; do
	command -v "$tool" >/dev/null || skip_all "needs $tool"
done

PORT=5201     # the sink; nft drops 5 % of its data packets in S
SYN_PORT=5202 # nothing listens: nft drops its SYNs in S
SECONDS_BULK=${SECONDS_BULK:-2}
R=netstack_tcp_retransmits_total
SEG=netstack_tcp_retransmitted_segments_total
FAIL=netstack_tcp_retransmit_failures_total
# Linux 6.17+ gives tcp_retransmit_skb an err argument: failed attempts are seen too, in $FAIL.
# Before, the tracepoint has two arguments and fires for successful retransmissions only.
if [ "$(tracepoint_nargs tcp_retransmit_skb)" -ge 3 ]; then
	ERR=1 RETRANSMIT=count_retransmit
else
	ERR=0 RETRANSMIT=count_retransmit_noerr
fi

netns_client_server nsrtx
# Exponential SYN backoff (1 s, then 3 s): linear timeouts (Linux 6.5+) would retry at 2 s.
ip netns exec "$NS_C" sysctl -qw net.ipv4.tcp_syn_linear_timeouts=0 2>/dev/null

# Only data packets (longer than any handshake or pure ACK) are dropped at random.
ip netns exec "$NS_S" nft -f - <<EOF || skip_all "cannot load the nftables rules"
table inet rtx {
	chain input {
		type filter hook input priority filter; policy accept;
		tcp dport $PORT meta length > 200 numgen random mod 100 < 5 drop
	}
}
EOF

ip netns exec "$NS_S" "$TCPBULK" sink :: "$PORT" >"$TMP/sink.out" 2>&1 &
on_exit "kill $!; wait $!"
for _ in $(seq 50); do
	grep -q listening "$TMP/sink.out" && break
	sleep 0.05
done

config() { # config NAME LINE...: an INI file in $TMP, prints its path
	local f=$TMP/$1.ini
	shift
	printf '%s\n' '[collector.retrans]' "$@" >"$f"
	echo "$f"
}

# Three exporters see the same traffic: netns label, default labels, netns label with a hash of 1.
start_exporter --config "$(config netns 'labels = family,kind,state,netns')" ||
	{ not_ok "exporter with the netns label starts"; finish; }
URL_NETNS=$EXPORTER_URL LOG_NETNS=$EXPORTER_LOG
start_exporter || { not_ok "exporter with default labels starts"; finish; }
URL_DEFAULT=$EXPORTER_URL LOG_DEFAULT=$EXPORTER_LOG
start_exporter --config "$(config small 'labels = family,kind,state,netns' 'max_series = 1')" ||
	{ not_ok "exporter with max_series = 1 starts"; finish; }
URL_SMALL=$EXPORTER_URL

for url in "$URL_NETNS" "$URL_DEFAULT" "$URL_SMALL"; do
	check "retrans collector attached ($url)" \
		grep -q '^netstack_collector_up{collector="retrans"} 1$' <(curl -sf "$url/metrics")
done
check "default labels: $RETRANSMIT (err argument: $ERR) and count_synack attached" \
	grep -q "attached $RETRANSMIT to .* and count_synack to " "$LOG_DEFAULT"
check "netns label, no cause: ${RETRANSMIT}_nocause_netns and count_synack_netns attached" \
	grep -q "attached ${RETRANSMIT}_nocause_netns to .* and count_synack_netns to" "$LOG_NETNS"

# nstat_get NS COUNTER: the namespace's absolute counter (history file untouched).
nstat_get() {
	ip netns exec "$1" nstat -saz "$2" |
		awk -v c="$2" '$1 == c { print $2; f = 1 } END { if (!f) print 0 }'
}
COUNTERS="TcpRetransSegs TcpExtTCPRetransFail TcpExtTCPSynRetrans TcpExtTCPSpuriousRtxHostQueues"
# snapshot NAME: the namespaces' counters and every exporter's /metrics, read together.
snapshot() {
	local ns c
	for ns in C S; do
		local n=NS_$ns
		for c in $COUNTERS; do
			echo "$ns.$c=$(nstat_get "${!n}" "$c")"
		done
	done >"$TMP/$1.nstat"
	scrape "$TMP/$1.netns" "$URL_NETNS"
	scrape "$TMP/$1.default" "$URL_DEFAULT"
	scrape "$TMP/$1.small" "$URL_SMALL"
}
# kdelta BEFORE AFTER NS COUNTER: a namespace counter's increase between two snapshots.
kdelta() {
	echo $(($(sed -n "s/^$3\\.$4=//p" "$TMP/$2.nstat") - $(sed -n "s/^$3\\.$4=//p" "$TMP/$1.nstat")))
}
# mdelta BEFORE AFTER EXPORTER REGEX: a metric sum's increase between two snapshots.
mdelta() { delta "$TMP/$1.$3" "$TMP/$2.$3" "$4"; }

# Series regexes (netns label on).
count_re() { echo "^${R}[{]family=\"$1\",kind=\"$2\",state=\"$3\",netns=\"$4\"[}]\$"; }
any_count_re() {
	echo "^${R}[{]family=\"[^\"]*\",kind=\"[^\"]*\",state=\"[^\"]*\",netns=\"$1\"[}]\$"
}
seg_re() { echo "^${SEG}[{]family=\"$1\",netns=\"$2\"[}]\$"; }
fail_re() { echo "^${FAIL}[{]family=\"$1\",netns=\"$2\"[}]\$"; }

# segs_counted NAME FAMILY: C's segments as counted by the three exporters between the snapshots.
segs_counted() {
	echo "$(mdelta "$1.before" "$1.after" netns "$(seg_re "$2" "$INO_C")")" \
		"$(mdelta "$1.before" "$1.after" default "^${SEG}[{]family=\"$2\",cause=\"[^\"]*\"[}]\$")" \
		"$(mdelta "$1.before" "$1.after" small "^${SEG}[{]family=\"$2\",")"
}

# transfer NAME ADDR FAMILY: a lossy transfer C -> S between the snapshots NAME.before and
# NAME.after; true when every exporter counted all the segments C's kernel counted.
transfer() {
	local segs netns default small
	snapshot "$1.before"
	SENT=$(ip netns exec "$NS_C" "$TCPBULK" send "$2" "$PORT" \
		"$SECONDS_BULK")
	sleep 0.2 # the last ACKs and FINs
	snapshot "$1.after"
	segs=$(kdelta "$1.before" "$1.after" C TcpRetransSegs)
	read -r netns default small < <(segs_counted "$1" "$3")
	[ "$netns" -eq "$segs" ] && [ "$default" -ge "$segs" ] && [ "$small" -ge "$segs" ] && return
	echo "# $1: C's kernel counted $segs retransmitted segments, the exporters $netns (netns)," \
		"$default (default labels, whole host), $small (max_series=1, whole host)"
	return 1
}

# attempts NAME COMMAND...: COMMAND up to 3 times, until it returns true.
# The kernel does not run a BPF program for a tracepoint hit while that program is already
# running on the CPU (a softirq interrupting it): on a busy host an exporter can miss an event
# (docs/collectors/retrans.md, "Relation to nstat"). A systematic error fails every attempt.
attempts() {
	local name=$1 i
	shift
	for i in 1 2 3; do
		"$@" && return 0
		[ "$i" -lt 3 ] && echo "# $name: attempt $i was not exact, trying again"
	done
	return 1
}

# bulk NAME ADDR FAMILY [COMMAND...]: the checks of test 1 on the last of up to three transfers
# (COMMAND, default "transfer NAME ADDR FAMILY").
bulk() {
	local name=$1 fam=$3 other=ipv6 segs netns default small
	[ "$fam" = ipv6 ] && other=ipv4
	if [ $# -gt 3 ]; then
		attempts "$name" "${@:4}"
	else
		attempts "$name" transfer "$name" "$2" "$fam"
	fi
	gt "$name: tcpbulk sent data" "${SENT:-0}" 0
	segs=$(kdelta "$name.before" "$name.after" C TcpRetransSegs)
	read -r netns default small < <(segs_counted "$name" "$fam")
	gt "$name: the kernel retransmitted segments in C (TcpRetransSegs)" "$segs" 0
	check_eq "$name: $SEG{family=\"$fam\",netns=C} equals C's TcpRetransSegs" "$segs" "$netns"
	check_eq "$name: no $other segments in C" 0 \
		"$(mdelta "$name.before" "$name.after" netns "$(seg_re "$other" "$INO_C")")"
	gt "$name: $R{family=\"$fam\",kind=\"retransmit\",state=\"ESTABLISHED\",netns=C} grows" \
		"$(mdelta "$name.before" "$name.after" netns \
			"$(count_re "$fam" retransmit ESTABLISHED "$INO_C")")" 0
	# One retransmitted packet carries one segment or more (TSO/GSO).
	le "$name: retransmitted packets in C <= segments" \
		"$(mdelta "$name.before" "$name.after" netns "$(any_count_re "$INO_C")")" "$segs"
	# Failed attempts: skbs still queued in the host (EBUSY, counted in
	# TCPSpuriousRtxHostQueues, as are some skipped loss probes) and failed sends (their
	# segments in TCPRetransFail). No zero window, memory or route trouble here.
	le "$name: failures in C <= TCPSpuriousRtxHostQueues + TCPRetransFail" \
		"$(mdelta "$name.before" "$name.after" netns "$(fail_re "$fam" "$INO_C")")" \
		$(($(kdelta "$name.before" "$name.after" C TcpExtTCPSpuriousRtxHostQueues) +
			$(kdelta "$name.before" "$name.after" C TcpExtTCPRetransFail)))
	check_eq "$name: nothing retransmitted in S" 0 \
		"$(mdelta "$name.before" "$name.after" netns "^${SEG}[{].*,netns=\"$INO_S\"[}]\$")"
	# Default labels: the same retransmissions, among whatever else the host retransmits.
	ge "$name: default labels: $SEG{family=\"$fam\"} counts C's segments" "$default" "$segs"
	ge "$name: max_series=1: $SEG{family=\"$fam\"} over every netns counts C's segments" \
		"$small" "$segs"
}

# ---------------------------------------------------------------------------------------------
# Test 1: lossy bulk transfers.

bulk ipv4 10.99.0.2 ipv4
bulk ipv6 fd99::2 ipv6
bulk mapped ::ffff:10.99.0.2 ipv4 # an IPv6 socket sending IPv4 packets

# ---------------------------------------------------------------------------------------------
# Test 2: failed sends. C's OUTPUT chain drops a third of the data packets it sends, so a third
# of the retransmissions fail inside C (EPERM from netfilter) after the kernel counted them.

ip netns exec "$NS_C" nft -f - <<EOF
table inet rtxout {
	chain output {
		type filter hook output priority filter; policy accept;
		tcp dport $PORT meta length > 200 numgen random mod 3 == 0 drop
	}
}
EOF
# Which packets the rule drops is random: a transfer without a failed retransmission (rare)
# is run again, like one whose counts are not exact.
failed_sends() {
	transfer failsend 10.99.0.2 ipv4 &&
		[ "$(kdelta failsend.before failsend.after C TcpExtTCPRetransFail)" -gt 0 ]
}
if [ "$ERR" = 1 ]; then
	bulk failsend 10.99.0.2 ipv4 failed_sends
	gt "failsend: the kernel saw failed sends (TCPRetransFail)" \
		"$(kdelta failsend.before failsend.after C TcpExtTCPRetransFail)" 0
	gt "failsend: $FAIL{family=\"ipv4\",netns=C} grows" \
		"$(mdelta failsend.before failsend.after netns "$(fail_re ipv4 "$INO_C")")" 0
else
	# The kernel counts the segments of a failed send in TcpRetransSegs, the tracepoint does
	# not fire (docs/collectors/retrans.md): no exact count to compare, and no failures family.
	ok "failsend # SKIP tcp_retransmit_skb has no err argument in this kernel"
fi
ip netns exec "$NS_C" nft delete table inet rtxout

# ---------------------------------------------------------------------------------------------
# Test 3: handshakes. Plain connects from bash (no data, so nothing else retransmits); the
# first retransmissions come after 1 s, the next ones only after 3 s: reading at 1.7 s sees
# exactly one of each, with no event racing the reads.

# handshakes: one round of test 3; true when both namespaces' counts match their kernels'.
handshakes() {
	local connects=() addr port ns ino
	ip netns exec "$NS_S" nft -f - <<-EOF
		table inet rtxsyn {
			chain input {
				type filter hook input priority filter - 1; policy accept;
				tcp dport $SYN_PORT tcp flags & syn == syn drop
				tcp dport $PORT tcp flags & syn == 0 drop
			}
		}
	EOF
	snapshot syn.before
	for addr in 10.99.0.2 fd99::2; do
		for port in "$SYN_PORT" "$PORT"; do
			ip netns exec "$NS_C" timeout 10 bash -c \
				"exec 3<>/dev/tcp/$addr/$port; exec sleep 10" 2>/dev/null &
			connects+=($!)
			on_exit "kill $!"
		done
	done
	sleep 1.7
	snapshot syn.after
	# Closing sends the FINs that complete S's pending handshakes: no SYN-ACK at 3 s.
	ip netns exec "$NS_S" nft delete table inet rtxsyn
	kill "${connects[@]}" 2>/dev/null
	wait "${connects[@]}" 2>/dev/null
	for ns in C S; do
		ino=INO_$ns
		[ "$(kdelta syn.before syn.after "$ns" TcpExtTCPSynRetrans)" -eq \
			"$(mdelta syn.before syn.after netns "$(any_count_re "${!ino}")")" ] &&
			[ "$(kdelta syn.before syn.after "$ns" TcpRetransSegs)" -eq \
				"$(mdelta syn.before syn.after netns "^${SEG}[{].*,netns=\"${!ino}\"[}]\$")" ] ||
			return 1
	done
}
attempts syn handshakes

for fam in ipv4 ipv6; do
	check_eq "$fam: C retransmitted its SYN once: kind=retransmit, state=SYN_SENT" 1 \
		"$(mdelta syn.before syn.after netns "$(count_re "$fam" retransmit SYN_SENT "$INO_C")")"
	check_eq "$fam: S retransmitted its SYN-ACK once: kind=synack, state=NEW_SYN_RECV" 1 \
		"$(mdelta syn.before syn.after netns "$(count_re "$fam" synack NEW_SYN_RECV "$INO_S")")"
done
for ns in C S; do
	ino=INO_$ns
	check_eq "$ns: retransmits (SYN_SENT in C, synack in S) equal TCPSynRetrans" \
		"$(kdelta syn.before syn.after "$ns" TcpExtTCPSynRetrans)" \
		"$(mdelta syn.before syn.after netns "$(any_count_re "${!ino}")")"
	check_eq "$ns: segments equal TcpRetransSegs (a SYN or SYN-ACK is one segment)" \
		"$(kdelta syn.before syn.after "$ns" TcpRetransSegs)" \
		"$(mdelta syn.before syn.after netns "^${SEG}[{].*,netns=\"${!ino}\"[}]\$")"
done

# ---------------------------------------------------------------------------------------------
# Test 4: default labels.

f=$TMP/ipv4.after.default
total=$(grep -c "^$R{" "$f")
plain=$(grep -cE "^$R\\{family=\"[^\"]+\",kind=\"[^\"]+\",cause=\"[^\"]+\",state=\"[^\"]+\"\\} [0-9]+\$" "$f")
if [ "$total" -gt 0 ] && [ "$total" -eq "$plain" ]; then
	ok "default labels: $total retransmit series with only family, kind, cause, state"
else
	not_ok "default labels: only family, kind, cause, state" \
		"$plain of $total: $(grep "^$R{" "$f" | head -3)"
fi
check "labels without cause: no cause label" \
	test "$(grep -c 'cause=' "$TMP/ipv4.after.netns")" -eq 0
for fam in ipv4 ipv6; do
	for cause in timeout fast tail_loss_probe syn; do
		check "default labels: $SEG{family=\"$fam\",cause=\"$cause\"} exists" \
			grep -q "^$SEG{family=\"$fam\",cause=\"$cause\"} " "$f"
	done
	if [ "$ERR" = 1 ]; then
		check "default labels: $FAIL{family=\"$fam\"} exists" \
			grep -q "^$FAIL{family=\"$fam\"} " "$f"
	else
		check "default labels: no $FAIL (no err argument)" \
			test "$(grep -c "^# TYPE $FAIL " "$f")" -eq 0
	fi
done
check "default labels: no tcp_retransmits_netns overflow series without the netns label" \
	test "$(grep -c 'map="tcp_retransmits_netns"' "$f")" -eq 0

# ---------------------------------------------------------------------------------------------
# Test 5: max_series = 1.

f=$TMP/ipv4.after.small
gt "max_series=1: netstack_map_overflow_total{map=\"tcp_retransmits_netns\"} grows" \
	"$(delta "$TMP/ipv4.before.small" "$f" \
		'^netstack_map_overflow_total[{]map="tcp_retransmits_netns"[}]$')" 0
gt "max_series=1: overflow series carry netns=\"__overflow__\"" \
	"$(grep -c "^netstack_tcp_retrans.*netns=\"__overflow__\"}" "$f")" 0
le "max_series=1: at most one series with a real netns" \
	"$(grep -E "^netstack_tcp_retrans" "$f" | grep -vc '__overflow__')" 1

# ---------------------------------------------------------------------------------------------
# Test 6: promtool.

promtool_ok "promtool check metrics: netns label" "$TMP/syn.after.netns"
promtool_ok "promtool check metrics: default labels" "$TMP/syn.after.default"
promtool_ok "promtool check metrics: overflow series" "$TMP/syn.after.small"

finish
