#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Retransmits by cause: each cause driven on purpose between two network namespaces of this
# script's own (C sends, S receives, joined by veth), nftables in S dropping chosen segments,
# and every relation of docs/collectors/retrans.md ("Causes and the kernel's counters") checked
# against each namespace's own counters (nstat) after every phase:
#   segments, all causes                      == TcpRetransSegs
#   segments{cause="fast"}                    == TCPFastRetrans
#   segments{cause="timeout"} + packets{syn}  == TCPSlowStartRetrans + TCPTimeouts
#   packets{cause="syn"}                      == TCPSynRetrans
#   packets{cause="tail_loss_probe"}          <= TCPLossProbes (== where every probe resends)
# The phases, each of which must also show its own cause:
#   1. syn: S drops the first SYN of each connection (C resends it: kind=retransmit, SYN_SENT)
#      and, on another port, the handshake's final ACK (S resends its SYN-ACK on its timer:
#      kind=synack), IPv4 and IPv6.
#   2. tail_loss_probe: request-response bursts of three segments; S drops the last segment of
#      each connection's first burst, with nothing after it: C's loss probe resends it, and
#      TCPLossProbes equals the probes counted. IPv4 and IPv6.
#   3. fast: a bulk transfer; S drops one data segment after 300 kB, with the rest of the
#      transfer behind it: SACK, fast retransmit.
#   4. timeout: a bulk transfer; S drops everything until C's retransmission timer has fired.
# C's veth sends one segment per packet (gso_max_segs 1), so a rule drops one segment, not a
# burst of them. On a busy host the kernel can skip a BPF program run (retrans.sh): a phase
# whose counts are not exact runs again, up to three times, and is checked on its last run.
# schedule: serial each
# why: its blackout and bursts retransmit hundreds of segments in softirq: a retrans.sh running
# alongside then loses program runs to recursion (docs/collectors/retrans.md) and is not exact
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
require_root_bpf
TCPBULK=$BUILD/tests/tcpbulk
BURST=tests/tools/tcpburst.py
[ -x "$TCPBULK" ] || skip_all "$TCPBULK not built (make $TCPBULK)"
for tool in nft nstat curl python3 promtool; do
	command -v "$tool" >/dev/null || skip_all "needs $tool"
done
R=netstack_tcp_retransmits_total
SEG=netstack_tcp_retransmitted_segments_total
PS=5411 # tcpburst server, phase 1: first SYN dropped
PA=5412 # tcpburst server, phase 1: final ACK of the handshake dropped
PB=5413 # tcpburst server, phase 2: last segment of the first burst dropped
PF=5414 # tcpbulk sink, phase 3: one segment dropped
PR=5415 # tcpbulk sink, phase 4: everything dropped for a while

netns_client_server nsrtc
ip -n "$NS_C" link set "va$$" gso_max_segs 1 || skip_all "cannot set gso_max_segs"
# Exponential SYN backoff (1 s, then 3 s), loss probes on (the default), SACK on (the default).
ip netns exec "$NS_C" sysctl -qw net.ipv4.tcp_syn_linear_timeouts=0 2>/dev/null
ip netns exec "$NS_C" sysctl -qw net.ipv4.tcp_early_retrans=3 net.ipv4.tcp_sack=1

# Each rule drops once per connection (keyed by the client's port); "hole" is empty until
# phase 4 fills it.
ip netns exec "$NS_S" nft -f - <<EOF || skip_all "cannot load the nftables rules"
table inet rtxc {
	set syn { type inet_service; flags dynamic; }
	set ack { type inet_service; flags dynamic; }
	set last { type inet_service; flags dynamic; }
	set mid { type inet_service; flags dynamic; }
	counter hole_in { }
	chain hole { }
	chain input {
		type filter hook input priority filter; policy accept;
		tcp dport $PS tcp flags & (syn | ack) == syn tcp sport != @syn add @syn { tcp sport } drop
		tcp dport $PA tcp flags & (fin | syn | rst | psh | ack) == ack meta length < 100 \
			tcp sport != @ack add @ack { tcp sport } drop
		tcp dport $PB tcp flags & (fin | syn | rst | psh) == psh meta length > 100 \
			tcp sport != @last add @last { tcp sport } drop
		tcp dport $PF meta length > 200 ct original bytes > 300000 \
			tcp sport != @mid add @mid { tcp sport } drop
		tcp dport $PR counter name hole_in jump hole
	}
}
EOF

for port in "$PS" "$PA" "$PB"; do
	ip netns exec "$NS_S" python3 "$BURST" server "$port" 3000 >"$TMP/burst$port.out" 2>&1 &
	on_exit "kill $!"
done
for port in "$PF" "$PR"; do
	ip netns exec "$NS_S" "$TCPBULK" sink :: "$port" >"$TMP/sink$port.out" 2>&1 &
	on_exit "kill $!"
done
for f in burst$PS burst$PA burst$PB sink$PF sink$PR; do
	wait_grep "$TMP/$f.out" listening || skip_all "$f did not start: $(cat "$TMP/$f.out")"
done

printf '%s\n' '[collector.retrans]' 'labels = family,kind,cause,state,netns' >"$TMP/cause.ini"
start_exporter --config "$TMP/cause.ini" || {
	not_ok "exporter with the cause and netns labels starts"
	finish
}

# nstat_get NS COUNTER: the namespace's absolute counter (history file untouched).
nstat_get() {
	ip netns exec "$1" nstat -saz "$2" |
		awk -v c="$2" '$1 == c { print $2; f = 1 } END { if (!f) print 0 }'
}
COUNTERS="TcpRetransSegs TcpExtTCPTimeouts TcpExtTCPSlowStartRetrans TcpExtTCPFastRetrans
	TcpExtTCPLossProbes TcpExtTCPSynRetrans TcpExtTCPRetransFail"
# snapshot NAME: both namespaces' counters and /metrics, read together.
snapshot() {
	local ns c n
	for ns in C S; do
		n=NS_$ns
		for c in $COUNTERS; do
			echo "$ns.$c=$(nstat_get "${!n}" "$c")"
		done
	done >"$TMP/$1.nstat"
	scrape "$TMP/$1.prom"
}
# kd PHASE NS COUNTER: a counter's increase over the phase.
kd() {
	echo $(($(sed -n "s/^$2\\.$3=//p" "$TMP/$1.after.nstat") -
		$(sed -n "s/^$2\\.$3=//p" "$TMP/$1.before.nstat")))
}
# pk / sg PHASE NS CAUSE: retransmitted packets / segments of that cause in NS over the phase.
pk() {
	local ino=INO_$2
	delta "$TMP/$1.before.prom" "$TMP/$1.after.prom" \
		"^${R}[{]family=\"[^\"]*\",kind=\"[^\"]*\",cause=\"$3\",state=\"[^\"]*\",netns=\"${!ino}\"[}]\$"
}
sg() {
	local ino=INO_$2
	delta "$TMP/$1.before.prom" "$TMP/$1.after.prom" \
		"^${SEG}[{]family=\"[^\"]*\",cause=\"$3\",netns=\"${!ino}\"[}]\$"
}
# relations PHASE [report]: the equalities in both namespaces, true when all hold; with
# "report", each as a test line, and the loss probe bound too.
relations() {
	local ph=$1 ns all=true lhs rhs name
	for ns in C S; do
		while read -r name lhs rhs; do
			if [ "$lhs" -ne "$rhs" ]; then
				all=false
				[ -z "${2:-}" ] || not_ok "$ph, $ns: $name" "exporter $lhs, kernel $rhs"
			else
				[ -z "${2:-}" ] || ok "$ph, $ns: $name ($lhs)"
			fi
		done <<-EOF
			segments_equal_TcpRetransSegs $(($(sg "$ph" $ns timeout) + $(sg "$ph" $ns fast) + $(sg "$ph" $ns tail_loss_probe) + $(sg "$ph" $ns syn))) $(kd "$ph" $ns TcpRetransSegs)
			fast_segments_equal_TCPFastRetrans $(sg "$ph" $ns fast) $(kd "$ph" $ns TcpExtTCPFastRetrans)
			timeout_segments+syn_equal_TCPSlowStartRetrans+TCPTimeouts $(($(sg "$ph" $ns timeout) + $(pk "$ph" $ns syn))) $(($(kd "$ph" $ns TcpExtTCPSlowStartRetrans) + $(kd "$ph" $ns TcpExtTCPTimeouts)))
			syn_equal_TCPSynRetrans $(pk "$ph" $ns syn) $(kd "$ph" $ns TcpExtTCPSynRetrans)
			probe_segments_equal_probes $(sg "$ph" $ns tail_loss_probe) $(pk "$ph" $ns tail_loss_probe)
		EOF
		[ -z "${2:-}" ] || le "$ph, $ns: tail_loss_probe <= TCPLossProbes" \
			"$(pk "$ph" $ns tail_loss_probe)" "$(kd "$ph" $ns TcpExtTCPLossProbes)"
	done
	$all
}
# phase NAME COMMAND...: snapshots around COMMAND, up to three times until the relations hold
# (and COMMAND succeeds), then the relations as test lines.
phase() {
	local name=$1 i
	shift
	for i in 1 2 3; do
		snapshot "$name.before"
		"$@"
		local rc=$?
		snapshot "$name.after"
		[ "$rc" -eq 0 ] && relations "$name" && break
		[ "$i" -lt 3 ] && echo "# $name: attempt $i was not exact (or its traffic failed), again"
	done
	check_eq "$name: its traffic ran" 0 "$rc"
	relations "$name" report
}

# --- 1. syn -----------------------------------------------------------------------------------
# Connections to PS lose their first SYN, to PA their final ACK: each completes after one
# retransmission, at 1 s. tcpburst's greeting comes once S has the connection too.
syn_traffic() {
	local pids=() a p rc=0
	for a in 10.99.0.2 fd99::2; do
		for p in "$PS" "$PA"; do
			ip netns exec "$NS_C" python3 "$BURST" client "$a" "$p" 3000 1 1 &
			pids+=($!)
		done
	done
	for p in "${pids[@]}"; do
		wait "$p" || rc=1
	done
	return $rc
}
phase syn syn_traffic
check_eq "syn: C resent 2 SYNs (TCPSynRetrans)" 2 "$(kd syn C TcpExtTCPSynRetrans)"
check_eq "syn: S resent 2 SYN-ACKs (TCPSynRetrans)" 2 "$(kd syn S TcpExtTCPSynRetrans)"
for fam in ipv4 ipv6; do
	check_eq "syn: $fam: C's SYN is kind=retransmit, cause=syn, state=SYN_SENT" 1 \
		"$(delta "$TMP/syn.before.prom" "$TMP/syn.after.prom" \
			"^${R}[{]family=\"$fam\",kind=\"retransmit\",cause=\"syn\",state=\"SYN_SENT\",netns=\"$INO_C\"[}]\$")"
	check_eq "syn: $fam: S's SYN-ACK is kind=synack, cause=syn, state=NEW_SYN_RECV" 1 \
		"$(delta "$TMP/syn.before.prom" "$TMP/syn.after.prom" \
			"^${R}[{]family=\"$fam\",kind=\"synack\",cause=\"syn\",state=\"NEW_SYN_RECV\",netns=\"$INO_S\"[}]\$")"
done

for ns in C S; do
	check_eq "syn: no other cause in $ns" 0 \
		$(($(pk syn $ns timeout) + $(pk syn $ns fast) + $(pk syn $ns tail_loss_probe)))
done

# --- 2. tail_loss_probe -----------------------------------------------------------------------
# Three connections per family, two bursts of 3000 bytes each (three segments); the first
# burst's last segment is dropped once per connection.
probe_traffic() {
	ip netns exec "$NS_C" python3 "$BURST" client 10.99.0.2 "$PB" 3000 2 3 &&
		ip netns exec "$NS_C" python3 "$BURST" client fd99::2 "$PB" 3000 2 3
}
phase probe probe_traffic
check_eq "tail_loss_probe: C sent 6 loss probes (TCPLossProbes)" 6 \
	"$(kd probe C TcpExtTCPLossProbes)"
check_eq "tail_loss_probe: each resent the last segment: cause=tail_loss_probe equals TCPLossProbes" \
	"$(kd probe C TcpExtTCPLossProbes)" "$(pk probe C tail_loss_probe)"
for fam in ipv4 ipv6; do
	check_eq "tail_loss_probe: $fam: 3 probes, state ESTABLISHED" 3 \
		"$(delta "$TMP/probe.before.prom" "$TMP/probe.after.prom" \
			"^${R}[{]family=\"$fam\",kind=\"retransmit\",cause=\"tail_loss_probe\",state=\"ESTABLISHED\",netns=\"$INO_C\"[}]\$")"
done
check_eq "tail_loss_probe: no other cause in C" 0 \
	$(($(pk probe C timeout) + $(pk probe C fast) + $(pk probe C syn)))

# --- 3. fast ----------------------------------------------------------------------------------
fast_traffic() { ip netns exec "$NS_C" "$TCPBULK" send 10.99.0.2 "$PF" 1 >/dev/null; }
phase fast fast_traffic
gt "fast: C fast-retransmitted (TCPFastRetrans)" "$(kd fast C TcpExtTCPFastRetrans)" 0
gt "fast: cause=fast, state ESTABLISHED, grows in C" \
	"$(delta "$TMP/fast.before.prom" "$TMP/fast.after.prom" \
		"^${R}[{]family=\"ipv4\",kind=\"retransmit\",cause=\"fast\",state=\"ESTABLISHED\",netns=\"$INO_C\"[}]\$")" 0

# --- 4. timeout -------------------------------------------------------------------------------
# hole_packets: what S's rule for PR has seen.
hole_packets() {
	ip netns exec "$NS_S" nft list counter inet rtxc hole_in | awk '/packets/ { print $2 }'
}
hole_seen() { [ "$(hole_packets)" -ge "$1" ]; }
timeouts_ge() { [ "$(nstat_get "$NS_C" TcpExtTCPTimeouts)" -ge "$1" ]; }
# A 2 s transfer; once data flows, S drops all of it until C's timer has fired twice (the
# first expiry may come while the last window is still arriving), then lets it through.
timeout_traffic() {
	local pid t0 rc=0
	ip netns exec "$NS_C" "$TCPBULK" send 10.99.0.2 "$PR" 2 >/dev/null &
	pid=$!
	t0=$(nstat_get "$NS_C" TcpExtTCPTimeouts)
	wait_until 10 hole_seen $(($(hole_packets) + 100)) || rc=1
	ip netns exec "$NS_S" nft add rule inet rtxc hole drop
	wait_until 10 timeouts_ge $((t0 + 2)) || rc=1
	ip netns exec "$NS_S" nft flush chain inet rtxc hole
	wait "$pid" || rc=1
	return $rc
}
phase timeout timeout_traffic
ge "timeout: C's retransmission timer fired (TCPTimeouts)" "$(kd timeout C TcpExtTCPTimeouts)" 2
gt "timeout: cause=timeout, state ESTABLISHED, grows in C" \
	"$(delta "$TMP/timeout.before.prom" "$TMP/timeout.after.prom" \
		"^${R}[{]family=\"ipv4\",kind=\"retransmit\",cause=\"timeout\",state=\"ESTABLISHED\",netns=\"$INO_C\"[}]\$")" 0

promtool_ok "promtool check metrics" "$TMP/timeout.after.prom"
finish
