#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Connections collector end to end: real BPF on tp_btf/inet_sock_set_state, real TCP between a
# client namespace C and a server namespace S joined by veth, nftables rules making the
# failures, and each namespace's own SNMP counters (nstat) as the reference.
#
# Per family (IPv4 to a dual-stack listener, so the server's sockets are v4-mapped IPv6, and
# IPv6), tests/tools/tcpconn.py makes connections that end in each way, one phase each:
#   close    5 connections closed with FINs both ways      C: active established, closed
#                                                          S: passive established, closed
#   reset    3 closed by C with SO_LINGER 0 (C sends RST)  C: active established, reset
#                                                          S: passive established, reset
#   refused  4 connects to a port nothing listens on       C: active failed
#   timeout  2 connects whose SYN-ACK C's nftables drops   C: active failed
#   abandon  2 such connects closed while still pending    C: active failed
#   stall    1 connection whose data S's nftables drops,   C: active established, timeout
#            ended by TCP_USER_TIMEOUT                     S: passive established
#   backlog0 (IPv4 only) 1 connection closed with FINs to  C: active established, closed
#            a server that called listen(fd, 0), whose     S: passive established, closed
#            children inherit a backlog of 0
# Each phase's counts (netns label) must be exactly those, nothing else in C and S, and every
# phase must hold the relations of docs/collectors/connections.md with the kernel's counters:
#   ActiveOpens(C)  = active established + active failed
#   AttemptFails(C) = active failed - abandoned connects (closing a pending connect is no
#                     AttemptFail)
#   PassiveOpens(S) = passive established + passive failed; AttemptFails(S) = 0 here
#   EstabResets     = reset + timeout (every reset and timeout here leaves ESTABLISHED)
# Then: default labels (a second exporter), max_series = 1 (a third), promtool.
# schedule: parallel each
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
require_root_bpf
for tool in nft nstat curl promtool /usr/bin/python3; do
	command -v "$tool" >/dev/null || skip_all "needs $tool"
done
CONN=tests/tools/tcpconn.py
M=netstack_tcp_connections_total

P_MAIN=5401   # served
P_CLOSED=5402 # nothing listens
P_SYNACK=5403 # served, but C drops the SYN-ACKs
P_STALL=5404  # served, but S drops the data packets
P_BACKLOG0=5405 # served by a listener made with listen(fd, 0)

netns_client_server conns

ip netns exec "$NS_C" nft -f - <<EOF || skip_all "cannot load the nftables rules"
table inet conns {
	chain input {
		type filter hook input priority filter; policy accept;
		tcp sport $P_SYNACK tcp flags & (syn | ack) == syn | ack drop
	}
}
EOF
ip netns exec "$NS_S" nft -f - <<EOF || skip_all "cannot load the nftables rules"
table inet conns {
	chain input {
		type filter hook input priority filter; policy accept;
		tcp dport $P_STALL meta length > 200 drop
	}
}
EOF

for port in "$P_MAIN" "$P_SYNACK" "$P_STALL" "$P_BACKLOG0"; do
	backlog=128
	[ "$port" = "$P_BACKLOG0" ] && backlog=0
	ip netns exec "$NS_S" "$CONN" server "$port" "$backlog" >"$TMP/server.$port" 2>&1 &
	on_exit "kill $!; wait $!"
	for _ in $(seq 100); do
		grep -q listening "$TMP/server.$port" && break
		sleep 0.05
	done
	grep -q listening "$TMP/server.$port" || skip_all "tcpconn.py server $port did not start"
done

config() { # config NAME LINE...: an INI file in $TMP, prints its path
	local f=$TMP/$1.ini
	shift
	printf '%s\n' '[collector.connections]' "$@" >"$f"
	echo "$f"
}

start_exporter --config "$(config netns 'labels = family,direction,outcome,netns')" ||
	{ not_ok "exporter with the netns label starts"; finish; }
URL_NETNS=$EXPORTER_URL LOG_NETNS=$EXPORTER_LOG
start_exporter || { not_ok "exporter with default labels starts"; finish; }
URL_DEFAULT=$EXPORTER_URL LOG_DEFAULT=$EXPORTER_LOG
start_exporter --config "$(config small 'labels = family,direction,outcome,netns' \
	'max_series = 1')" || { not_ok "exporter with max_series = 1 starts"; finish; }
URL_SMALL=$EXPORTER_URL LOG_SMALL=$EXPORTER_LOG

for url in "$URL_NETNS" "$URL_DEFAULT" "$URL_SMALL"; do
	check "connections collector attached ($url)" \
		grep -q '^netstack_collector_up{collector="connections"} 1$' <(curl -sf "$url/metrics")
done
# Handshake timing is on by default: the programs with it (tests/integration/handshake.sh).
check "default labels: count_handshake attached" \
	grep -q "attached count_handshake to tp_btf/inet_sock_set_state" "$LOG_DEFAULT"
check "netns label: count_handshake_netns attached" \
	grep -q "attached count_handshake_netns to tp_btf/inet_sock_set_state" "$LOG_NETNS"

COUNTERS="TcpActiveOpens TcpPassiveOpens TcpAttemptFails TcpEstabResets"
# snapshot NAME: the namespaces' counters (absolute, history file untouched) and every
# exporter's /metrics, read together.
snapshot() {
	local ns
	for ns in C S; do
		local n=NS_$ns
		# shellcheck disable=SC2086 # one argument per counter
		ip netns exec "${!n}" nstat -saz $COUNTERS | awk -v ns="$ns" '/^Tcp/ { print ns "." $1 "=" $2 }'
	done >"$TMP/$1.nstat"
	scrape "$TMP/$1.netns" "$URL_NETNS"
	scrape "$TMP/$1.default" "$URL_DEFAULT"
	scrape "$TMP/$1.small" "$URL_SMALL"
}
# kdelta BEFORE AFTER NS COUNTER: a namespace counter's increase between two snapshots.
kdelta() {
	echo $(($(sed -n "s/^$3\\.$4=//p" "$TMP/$2.nstat") - $(sed -n "s/^$3\\.$4=//p" "$TMP/$1.nstat")))
}
# cdelta BEFORE AFTER NS FAMILY DIRECTION OUTCOME: the netns-label exporter's increase of one
# series of namespace NS (C or S); FAMILY, DIRECTION, OUTCOME are regexes.
cdelta() {
	local ino=INO_$3
	delta "$TMP/$1.netns" "$TMP/$2.netns" \
		"^${M}[{]family=\"($4)\",direction=\"($5)\",outcome=\"($6)\",netns=\"${!ino}\"[}]\$"
}

# phase NAME MODE ADDR PORT N: N connections of MODE between the snapshots NAME.before and
# NAME.after.
phase() {
	local out
	snapshot "$1.before"
	out=$(ip netns exec "$NS_C" "$CONN" client "$2" "$3" "$4" "$5" 2>&1) ||
		not_ok "$1: every connection ends as '$2' says" "$out"
	sleep 0.3 # the server's side of the close
	snapshot "$1.after"
}

# expect NAME FAMILY NS DIRECTION OUTCOME=N...: in NS, each OUTCOME of DIRECTION grew by N and
# every other series of NS (any family, direction, outcome) by 0.
expect() {
	local name=$1 fam=$2 ns=$3 dir=$4 o n total=0
	shift 4
	for o in established failed reset timeout closed; do
		n=0
		for kv in "$@"; do
			[ "${kv%%=*}" = "$o" ] && n=${kv#*=}
		done
		total=$((total + n))
		[ "$n" -gt 0 ] || continue
		check_eq "$name: $ns: $M{family=\"$fam\",direction=\"$dir\",outcome=\"$o\"} +$n" "$n" \
			"$(cdelta "$name.before" "$name.after" "$ns" "$fam" "$dir" "$o")"
	done
	check_eq "$name: $ns: nothing else counted" "$total" \
		"$(cdelta "$name.before" "$name.after" "$ns" '[^"]*' '[^"]*' '[^"]*')"
}

# relations NAME ABANDONED: the kernel's counters against ours in C and S (see the header).
relations() {
	local b=$1.before a=$1.after
	check_eq "$1: C: TcpActiveOpens = active established + failed" \
		"$(kdelta "$b" "$a" C TcpActiveOpens)" \
		"$(cdelta "$b" "$a" C '[^"]*' active 'established|failed')"
	check_eq "$1: C: TcpAttemptFails = active failed - $2 abandoned" \
		"$(kdelta "$b" "$a" C TcpAttemptFails)" \
		$(($(cdelta "$b" "$a" C '[^"]*' active failed) - $2))
	check_eq "$1: S: TcpPassiveOpens = passive established + failed" \
		"$(kdelta "$b" "$a" S TcpPassiveOpens)" \
		"$(cdelta "$b" "$a" S '[^"]*' passive 'established|failed')"
	check_eq "$1: S: TcpAttemptFails = passive failed" \
		"$(kdelta "$b" "$a" S TcpAttemptFails)" \
		"$(cdelta "$b" "$a" S '[^"]*' passive failed)"
	for ns in C S; do
		check_eq "$1: $ns: TcpEstabResets = reset + timeout" \
			"$(kdelta "$b" "$a" "$ns" TcpEstabResets)" \
			"$(cdelta "$b" "$a" "$ns" '[^"]*' '[^"]*' 'reset|timeout')"
	done
}

# ---------------------------------------------------------------------------------------------
# Test 1: every way a connection ends, IPv4 and IPv6, exact per phase.

snapshot all.before
for fam in ipv4 ipv6; do
	addr=10.99.0.2
	[ "$fam" = ipv6 ] && addr=fd99::2

	phase "$fam.close" close "$addr" "$P_MAIN" 5
	expect "$fam.close" "$fam" C active established=5 closed=5
	expect "$fam.close" "$fam" S passive established=5 closed=5
	relations "$fam.close" 0

	phase "$fam.reset" reset "$addr" "$P_MAIN" 3
	expect "$fam.reset" "$fam" C active established=3 reset=3
	expect "$fam.reset" "$fam" S passive established=3 reset=3
	relations "$fam.reset" 0

	phase "$fam.refused" refused "$addr" "$P_CLOSED" 4
	expect "$fam.refused" "$fam" C active failed=4
	expect "$fam.refused" "$fam" S passive
	relations "$fam.refused" 0

	phase "$fam.timeout" timeout "$addr" "$P_SYNACK" 2
	expect "$fam.timeout" "$fam" C active failed=2
	expect "$fam.timeout" "$fam" S passive
	relations "$fam.timeout" 0

	phase "$fam.abandon" abandon "$addr" "$P_SYNACK" 2
	expect "$fam.abandon" "$fam" C active failed=2
	check_eq "$fam.abandon: C: the kernel counted the attempts (TcpActiveOpens +2)" 2 \
		"$(kdelta "$fam.abandon.before" "$fam.abandon.after" C TcpActiveOpens)"
	relations "$fam.abandon" 2

	phase "$fam.stall" stall "$addr" "$P_STALL" 1
	expect "$fam.stall" "$fam" C active established=1 timeout=1
	expect "$fam.stall" "$fam" S passive established=1
	relations "$fam.stall" 0
done
# A listener made with listen(fd, 0): its children inherit a backlog of 0, as a connecting
# socket has; the end of the connection is still passive.
phase backlog0 close 10.99.0.2 "$P_BACKLOG0" 1
expect backlog0 ipv4 C active established=1 closed=1
expect backlog0 ipv4 S passive established=1 closed=1
relations backlog0 0
snapshot all.after
relations all 4

# ---------------------------------------------------------------------------------------------
# Test 2: default labels: only family, direction, outcome; every IPv4 and IPv6 series there.

f=$TMP/all.after.default
plain="^$M\\{family=\"ipv[46]\",direction=\"(active|passive)\","
plain+="outcome=\"(established|failed|reset|timeout|closed)\"\\} [0-9]+\$"
check_eq "default labels: 20 series (ipv4, ipv6 x 2 directions x 5 outcomes), nothing else" \
	"20 20" "$(grep -cE "$plain" "$f") $(grep -c "^$M{" "$f")"
for fam in ipv4 ipv6; do
	for o in established failed reset timeout closed; do
		ge "default labels: $fam active $o counts C's" \
			"$(delta "$TMP/all.before.default" "$f" \
				"^${M}[{]family=\"$fam\",direction=\"active\",outcome=\"$o\"[}]\$")" \
			"$(cdelta all.before all.after C "$fam" active "$o")"
	done
done
check "default labels: no tcp_connections_netns overflow series without the netns label" \
	test "$(grep -c 'map="tcp_connections_netns"' "$f")" -eq 0

# ---------------------------------------------------------------------------------------------
# Test 3: max_series = 1.

f=$TMP/all.after.small
gt "max_series=1: netstack_map_overflow_total{map=\"tcp_connections_netns\"} grows" \
	"$(delta "$TMP/all.before.small" "$f" \
		'^netstack_map_overflow_total[{]map="tcp_connections_netns"[}]$')" 0
gt "max_series=1: overflow series carry netns=\"__overflow__\"" \
	"$(grep -c "^${M}{.*netns=\"__overflow__\"}" "$f")" 0
le "max_series=1: at most one series with a real netns" \
	"$(grep "^${M}{" "$f" | grep -vc '__overflow__')" 1
ge "max_series=1: the sum over every netns counts C's and S's connections" \
	"$(delta "$TMP/all.before.small" "$f" "^${M}[{]")" \
	$(($(cdelta all.before all.after C '[^"]*' '[^"]*' '[^"]*') +
		$(cdelta all.before all.after S '[^"]*' '[^"]*' '[^"]*')))
check "max_series=1: the overflow is logged once" \
	test "$(grep -c 'tcp_connections_netns is full' "$LOG_SMALL")" -eq 1

# ---------------------------------------------------------------------------------------------
# Test 4: promtool.

promtool_ok "promtool check metrics: netns label" "$TMP/all.after.netns"
promtool_ok "promtool check metrics: default labels" "$TMP/all.after.default"
promtool_ok "promtool check metrics: overflow series" "$TMP/all.after.small"

finish
