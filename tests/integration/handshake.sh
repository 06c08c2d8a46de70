#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Handshake times end to end (netstack_tcp_handshake_seconds, bpf/connections.bpf.c): real TCP
# between a client namespace C and a server namespace S joined by veth, nftables rules that
# drop chosen handshake segments once, tests/tools/nfqdelay holding packets for a fixed time
# (NFQUEUE through iptables-nft: this host has no netem), and the kernel's own counters (nstat,
# nftables rule counters) as the reference. Phases, each between two scrapes:
#   plain   5 IPv4 and 5 IPv6 connections      every handshake timed, under 0.5 s
#   syn     3 connections whose first SYN C's  C: active in (0.5 s, 2 s], the bucket of the
#           nftables drop                      1 s initial RTO; S: passive under 0.5 s;
#                                              C's rule counter 3, C's TCPSynRetrans +3
#   synack  3 connections whose first SYN-ACK  S: passive in (0.5 s, 2 s] (its timer resent
#           S's nftables drop (and S drops the  the SYN-ACK: S's TCPSynRetrans +3); C: active
#           client's repeated SYNs, so that    there too
#           S's timer, not a repeated SYN,
#           resends it)
#   delay   3 connections with D ms added each both sides in the bucket of the round trip 2 D
#           way (D = 40, then 5; nfqdelay runs or the next one, never below; mean >= 2 D
#           SCHED_FIFO where chrt can, so that
#           a busy machine adds little)
# In every phase and namespace: histogram count + untimed = established, for both directions,
# and untimed stays 0 (every handshake here started after the exporter attached).
# Then: handshake_time = false loads count_connection and renders no handshake family.
# schedule: parallel each
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
require_root_bpf
for tool in nft nstat curl iptables ip6tables bpftool jq /usr/bin/python3; do
	command -v "$tool" >/dev/null || skip_all "needs $tool"
done
CONN=tests/tools/tcpconn.py
NFQDELAY=$BUILD/tests/nfqdelay
[ -x "$NFQDELAY" ] || skip_all "needs $NFQDELAY (make tools)"
H=netstack_tcp_handshake_seconds
C_M=netstack_tcp_connections_total
U_M=netstack_tcp_handshakes_untimed_total

P_PLAIN=5501
P_SYN=5502    # C drops the first SYN of each connection
P_SYNACK=5503 # S drops the first SYN-ACK of each connection, and repeated SYNs
P_D1=5504     # 40 ms each way
P_D2=5505     # 5 ms each way

netns_client_server hs

# Sets of the ports seen: "once" rules drop a connection's first such segment, and only it.
ip netns exec "$NS_C" nft -f - <<EOF || skip_all "cannot load the nftables rules"
table inet hs {
	set syn_seen { type inet_service; flags dynamic; }
	chain output {
		type filter hook output priority filter; policy accept;
		tcp dport $P_SYN tcp flags & (syn | ack) == syn tcp sport != @syn_seen \
			add @syn_seen { tcp sport } counter name syn_drops drop
	}
	counter syn_drops { }
}
EOF
ip netns exec "$NS_S" nft -f - <<EOF || skip_all "cannot load the nftables rules"
table inet hs {
	set synack_seen { type inet_service; flags dynamic; }
	set syn_seen { type inet_service; flags dynamic; }
	chain output {
		type filter hook output priority filter; policy accept;
		tcp sport $P_SYNACK tcp flags & (syn | ack) == syn | ack tcp dport != @synack_seen \
			add @synack_seen { tcp dport } counter name synack_drops drop
	}
	chain input {
		type filter hook input priority filter; policy accept;
		tcp dport $P_SYNACK tcp flags & (syn | ack) == syn tcp sport @syn_seen \
			counter name resyn_drops drop
		tcp dport $P_SYNACK tcp flags & (syn | ack) == syn add @syn_seen { tcp sport }
	}
	counter synack_drops { }
	counter resyn_drops { }
}
EOF
# nft_counter NS NAME: packets of a named counter of table inet hs.
nft_counter() {
	ip netns exec "$1" nft list counter inet hs "$2" | awk '/packets/ { print $2 }'
}

RT=()
chrt -f 10 true 2>/dev/null && RT=(chrt -f 10)
# The delays: C's packets to a delay port and S's from it go through queue 1 or 2, where an
# nfqdelay in each namespace holds them.
for q in 1:$P_D1:40 2:$P_D2:5; do
	IFS=: read -r num port ms <<<"$q"
	for ipt in iptables ip6tables; do
		ip netns exec "$NS_C" $ipt -A OUTPUT -p tcp --dport "$port" -j NFQUEUE \
			--queue-num "$num" || skip_all "no NFQUEUE target ($ipt)"
		ip netns exec "$NS_S" $ipt -A OUTPUT -p tcp --sport "$port" -j NFQUEUE \
			--queue-num "$num" || skip_all "no NFQUEUE target ($ipt)"
	done
	for ns in "$NS_C" "$NS_S"; do
		ip netns exec "$ns" "${RT[@]}" "$NFQDELAY" "$num" "$ms" >"$TMP/nfq.$ns.$num" 2>&1 &
		on_exit "kill $!; wait $!"
		wait_grep "$TMP/nfq.$ns.$num" '^ready$' || skip_all "nfqdelay $num did not start"
	done
done

for port in "$P_PLAIN" "$P_SYN" "$P_SYNACK" "$P_D1" "$P_D2"; do
	ip netns exec "$NS_S" "$CONN" server "$port" >"$TMP/server.$port" 2>&1 &
	on_exit "kill $!; wait $!"
	wait_grep "$TMP/server.$port" listening || skip_all "tcpconn.py server $port did not start"
done

config() { # config NAME LINE...: an INI file in $TMP, prints its path
	local f=$TMP/$1.ini
	shift
	printf '%s\n' '[collector.connections]' "$@" >"$f"
	echo "$f"
}
start_exporter --config "$(config netns 'labels = family,direction,outcome,netns')" ||
	{ not_ok "exporter with the netns label starts"; finish; }
URL=$EXPORTER_URL LOG=$EXPORTER_LOG PID_NETNS=$EXPORTER_PID
start_exporter || { not_ok "exporter with default labels starts"; finish; }
URL_DEFAULT=$EXPORTER_URL
check "count_handshake_netns attached (handshake timing is on by default)" \
	grep -q "attached count_handshake_netns to tp_btf/inet_sock_set_state" "$LOG"

# snapshot NAME: both namespaces' counters and the exporter's /metrics, read together.
snapshot() {
	local ns
	for ns in C S; do
		local n=NS_$ns
		ip netns exec "${!n}" nstat -saz TcpExtTCPSynRetrans |
			awk -v ns="$ns" '/^Tcp/ { print ns "." $1 "=" $2 }'
	done >"$TMP/$1.nstat"
	scrape "$TMP/$1.prom" "$URL"
}
kdelta() { # kdelta BEFORE AFTER NS COUNTER
	echo $(($(sed -n "s/^$3\\.$4=//p" "$TMP/$2.nstat") - $(sed -n "s/^$3\\.$4=//p" "$TMP/$1.nstat")))
}
# hdelta BEFORE AFTER NS FAMILY DIRECTION SUFFIX [LE]: increase of one histogram series of NS.
hdelta() {
	local ino=INO_$3 le=
	[ -n "${7:-}" ] && le=",le=\"$7\""
	delta "$TMP/$1.prom" "$TMP/$2.prom" \
		"^${H}_$6[{]family=\"$4\",direction=\"$5\",netns=\"${!ino}\"${le}[}]\$"
}
# sdelta BEFORE AFTER NS METRIC FAMILY DIRECTION [OUTCOME]: increase of a counter series of NS.
sdelta() {
	local ino=INO_$3 o=
	[ -n "${7:-}" ] && o=",outcome=\"$7\""
	delta "$TMP/$1.prom" "$TMP/$2.prom" \
		"^$4[{]family=\"$5\",direction=\"$6\"$o,netns=\"${!ino}\"[}]\$"
}

# phase NAME ADDR PORT N: N connections (mode close) between snapshots NAME.before and .after.
phase() {
	local out
	snapshot "$1.before"
	out=$(ip netns exec "$NS_C" "$CONN" client close "$2" "$3" "$4" 2>&1) ||
		not_ok "$1: every connection is made and closed" "$out"
	snapshot "$1.after"
}

# counts NAME FAMILY N: in the phase, N established each way, all timed: count = established.
counts() {
	local ns dir est cnt unt
	for ns in C S; do
		dir=active
		[ "$ns" = S ] && dir=passive
		est=$(sdelta "$1.before" "$1.after" "$ns" "$C_M" "$2" "$dir" established)
		cnt=$(hdelta "$1.before" "$1.after" "$ns" "$2" "$dir" count)
		unt=$(sdelta "$1.before" "$1.after" "$ns" "$U_M" "$2" "$dir")
		check_eq "$1: $ns $2 $dir: established = $3" "$3" "$est"
		check_eq "$1: $ns $2 $dir: histogram count = established" "$est" "$cnt"
		check_eq "$1: $ns $2 $dir: no untimed handshake" 0 "$unt"
	done
}

# within NAME NS DIRECTION N LO HI: all N handshakes of the phase above LO and at most HI
# seconds (bucket bounds as rendered; LO - for no lower bound).
within() {
	local below upto ino=INO_$2 le
	for le in $5 $6; do
		[ "$le" = - ] && continue
		check "$1: bucket le=\"$le\" is rendered" grep -q \
			"^${H}_bucket{family=\"ipv4\",direction=\"$3\",netns=\"${!ino}\",le=\"$le\"} " \
			"$TMP/$1.after.prom"
	done
	if [ "$5" != - ]; then
		below=$(hdelta "$1.before" "$1.after" "$2" ipv4 "$3" bucket "$5")
		check_eq "$1: $2 $3: none at or below ${5}s" 0 "$below"
	fi
	upto=$(hdelta "$1.before" "$1.after" "$2" ipv4 "$3" bucket "$6")
	check_eq "$1: $2 $3: all $4 at or below ${6}s" "$4" "$upto"
}

phase plain 10.99.0.2 "$P_PLAIN" 5
counts plain ipv4 5
within plain C active 5 - 0.5
within plain S passive 5 - 0.5
phase plain6 fd99::2 "$P_PLAIN" 5
counts plain6 ipv6 5

phase syn 10.99.0.2 "$P_SYN" 3
counts syn ipv4 3
within syn C active 3 0.5 2
within syn S passive 3 - 0.5
check_eq "syn: C's nftables dropped one SYN per connection" 3 "$(nft_counter "$NS_C" syn_drops)"
check_eq "syn: C's TcpExtTCPSynRetrans +3" 3 "$(kdelta syn.before syn.after C TcpExtTCPSynRetrans)"

phase synack 10.99.0.2 "$P_SYNACK" 3
counts synack ipv4 3
within synack S passive 3 0.5 2
within synack C active 3 0.5 2
check_eq "synack: S's nftables dropped one SYN-ACK per connection" 3 \
	"$(nft_counter "$NS_S" synack_drops)"
check_eq "synack: S's TcpExtTCPSynRetrans +3 (its timer resent each SYN-ACK)" 3 \
	"$(kdelta synack.before synack.after S TcpExtTCPSynRetrans)"

# delay NAME PORT MS LO HI: the round trip 2 MS lies in the bucket (LO, ...]; allow one more.
delay() {
	local ns dir sum ino
	phase "$1" 10.99.0.2 "$2" 3
	counts "$1" ipv4 3
	for ns in C S; do
		dir=active
		[ "$ns" = S ] && dir=passive
		within "$1" "$ns" "$dir" 3 "$4" "$5"
		ino=INO_$ns
		sum=$(RE="^${H}_sum[{]family=\"ipv4\",direction=\"$dir\",netns=\"${!ino}\"" awk '
			BEGIN { re = ENVIRON["RE"] }
			$0 ~ re { s += (FILENAME == ARGV[1] ? -1 : 1) * $NF }
			END { printf "%d", s * 1e6 / 3 }' "$TMP/$1.before.prom" "$TMP/$1.after.prom")
		ge "$1: $ns $dir: mean handshake (us) at least the round trip" "$sum" \
			$((2 * $3 * 1000))
	done
}
delay delay40 "$P_D1" 40 0.0625 0.25
delay delay5 "$P_D2" 5 0.007812 0.03125

# Cells (bpf/hist.h; text shows the classic buckets, protobuf the native ones too, all from the
# cells): with the netns label they are entries of the slot table's hash, histogram h's cell c
# at slot HS_BASE + h * HS_BLOCK + HS_CELLS_AT + c (bpf/connections.h: 31, 323, 3; the block's
# first three counters are its established and untimed counts and its sum), one entry per cell
# used; per namespace they must count every timed handshake the histograms count: each
# handshake went whole into its namespace's entries.
check "native buckets of schema 3 (the default)" \
	grep -q "handshake native buckets of schema 3" "$LOG"
hash_id=$(for f in /proc/"$PID_NETNS"/fdinfo/*; do awk '/^map_id:/ { print $2 }' "$f"; done |
	sort -u | while read -r id; do
		bpftool map show id "$id" -j 2>/dev/null |
			jq -r 'select(.type == "percpu_hash" and (.name | startswith("tcp_connection"))) | .id'
	done)
if [ -n "$hash_id" ]; then
	bpftool map dump id "$hash_id" -j >"$TMP/hash.json"
	for ns in C S; do
		ino=INO_$ns
		cells=$(jq --argjson ns "${!ino}" '[.[] | .formatted | select(.key.netns == $ns and
			.key.slot >= 31 and (.key.slot - 31) % 323 >= 3) | .values[].value] | add // 0' \
			"$TMP/hash.json")
		count=$(fsum "$TMP/delay5.after.prom" "^${H}_count[{].*,netns=\"${!ino}\"[}]")
		check_eq "$ns: the cells count every timed handshake" "$count" "$cells"
	done
else
	not_ok "the netns exporter's slot table hash found (bpftool, jq)"
fi
promtool_ok "promtool check metrics (netns label)" "$TMP/delay5.after.prom"
# Default labels: the four IPv4/IPv6 histograms and untimed counts, and every handshake of the
# phases above in them (other tests' connections may add more).
scrape "$TMP/default.prom" "$URL_DEFAULT"
promtool_ok "promtool check metrics (default labels)" "$TMP/default.prom"
check_eq "default labels: 4 histograms" 4 \
	"$(grep -c "^${H}_count{family=\"ipv[46]\",direction=\"[a-z]*\"} " "$TMP/default.prom")"
check_eq "default labels: 4 untimed counts" 4 \
	"$(grep -c "^${U_M}{family=\"ipv[46]\",direction=\"[a-z]*\"} " "$TMP/default.prom")"
ge "default labels: IPv4 active handshakes timed" \
	"$(fsum "$TMP/default.prom" "^${H}_count[{]family=\"ipv4\",direction=\"active\"[}]")" 20
ge "default labels: IPv6 passive handshakes timed" \
	"$(fsum "$TMP/default.prom" "^${H}_count[{]family=\"ipv6\",direction=\"passive\"[}]")" 5

# Timing off: the program without it, and no handshake families.
start_exporter --config "$(config off 'handshake_time = false')" ||
	{ not_ok "exporter with handshake_time = false starts"; finish; }
check "handshake_time = false: count_connection attached" \
	grep -q "attached count_connection to tp_btf/inet_sock_set_state" "$EXPORTER_LOG"
scrape "$TMP/off.prom" "$EXPORTER_URL"
check "handshake_time = false: connections still rendered" grep -q "^$C_M{" "$TMP/off.prom"
check "handshake_time = false: no handshake families" \
	bash -c "! grep -Eq '^(# TYPE )?(${H}|${U_M})' '$TMP/off.prom'"
finish
