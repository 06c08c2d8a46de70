#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Resets collector end to end: real BPF on tp_btf/tcp_send_reset and tcp_receive_reset, real TCP
# over loopback inside a namespace of the test's own, and that namespace's SNMP counters (nstat)
# as the reference. tests/tools/tcpreset.py drives, over IPv4 and IPv6, one reset of each kind:
#   closed    a connect to a port nothing listens on (RST without a socket: NO_SOCKET),
#   abort     a server closing a connection with unread data (TCP_ABORT_ON_CLOSE),
#   linger0   a client closing with SO_LINGER {1, 0},
#   timewait  data hitting a TIME_WAIT socket (TCP_TIMEWAIT_SOCKET).
# Checks (docs/collectors/resets.md states the relations):
#   1. sent{netns=NS} summed equals NS's TcpOutRsts increase exactly where the tracepoint has the
#      reason argument (6.10+); before, TcpOutRsts less the resets sent without a full socket
#      (closed and timewait: 4). Reasons and states of each case; received resets by state, equal
#      to what the cases caused (the kernel keeps no count of received resets).
#   2. Default labels (another exporter at the same time): family, reason, state only.
#   3. max_series = 1 with netns: overflow series, the map overflow counter, complete sums.
#   4. reset_sample_rate = 1: one sampled event per reset in /events, with reason, state and
#      flow; /events/top lists reset endpoints; exemplars on the sent counter (OpenMetrics).
#   5. promtool check metrics accepts every scrape.
# On a busy host the kernel can skip a BPF program run (docs/collectors/retrans.md): a round
# whose counts are not exact runs again, up to three times, and the checks use the last round.
# schedule: parallel each
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
require_root_bpf
for tool in nstat curl promtool python3; do
	command -v "$tool" >/dev/null || skip_all "needs $tool"
done
TOOL=tests/tools/tcpreset.py
S=netstack_tcp_resets_sent_total
RCV=netstack_tcp_resets_received_total
if [ "$(tracepoint_nargs tcp_send_reset)" -ge 3 ]; then
	REASON=1 SENT_PROG=count_sent
else
	REASON=0 SENT_PROG=count_sent_noreason
fi

NS=resets-ns$$
netns_add "$NS" || skip_all "cannot create a network namespace"
INO=$(netns_inode "$NS")

config() { # config NAME LINE...: an INI file in $TMP, prints its path
	local f=$TMP/$1.ini
	shift
	printf '%s\n' "$@" >"$f"
	echo "$f"
}
start_exporter --config "$(config netns '[collector.resets]' 'labels = family,reason,state,netns' \
	'[sampling]' 'reset_sample_rate = 1' 'reset_max_events_per_second = 0' \
	'max_events = 100000')" ||
	{ not_ok "exporter with the netns label starts"; finish; }
URL_NETNS=$EXPORTER_URL LOG_NETNS=$EXPORTER_LOG
start_exporter || { not_ok "exporter with default labels starts"; finish; }
URL_DEFAULT=$EXPORTER_URL LOG_DEFAULT=$EXPORTER_LOG
start_exporter --config "$(config small '[collector.resets]' \
	'labels = family,reason,state,netns' 'max_series = 1')" ||
	{ not_ok "exporter with max_series = 1 starts"; finish; }
URL_SMALL=$EXPORTER_URL

for url in "$URL_NETNS" "$URL_DEFAULT" "$URL_SMALL"; do
	check "resets collector attached ($url)" \
		grep -q '^netstack_collector_up{collector="resets"} 1$' <(curl -sf "$url/metrics")
done
check "default labels: $SENT_PROG and count_received attached (reason argument: $REASON)" \
	grep -q "attached $SENT_PROG to tp_btf/tcp_send_reset and count_received to" "$LOG_DEFAULT"
check "netns label: ${SENT_PROG}_netns and count_received_netns attached" \
	grep -q "attached ${SENT_PROG}_netns to .* and count_received_netns to" "$LOG_NETNS"
if [ "$REASON" = 0 ]; then
	check "no reason argument: the log says what the reason label holds" \
		grep -q "every reset sent has reason='__unknown__'" "$LOG_DEFAULT"
fi

nstat_get() { # nstat_get COUNTER: NS's absolute counter
	ip netns exec "$NS" nstat -saz "$1" |
		awk -v c="$1" '$1 == c { print $2; f = 1 } END { if (!f) print 0 }'
}
COUNTERS="TcpOutRsts TcpExtTCPAbortOnClose"
snapshot() { # snapshot NAME: NS's counters and every exporter's /metrics, read together
	local c
	for c in $COUNTERS; do
		echo "$c=$(nstat_get "$c")"
	done >"$TMP/$1.nstat"
	scrape "$TMP/$1.netns" "$URL_NETNS"
	scrape "$TMP/$1.default" "$URL_DEFAULT"
	scrape "$TMP/$1.small" "$URL_SMALL"
	curl -sf -H 'Accept: application/openmetrics-text; version=1.0.0' \
		"$URL_NETNS/metrics" >"$TMP/$1.om" || : >"$TMP/$1.om"
}
kdelta() { # kdelta COUNTER: NS's counter's increase over the round
	echo $(($(sed -n "s/^$1=//p" "$TMP/after.nstat") - $(sed -n "s/^$1=//p" "$TMP/before.nstat")))
}
mdelta() { delta "$TMP/before.$1" "$TMP/after.$1" "$2"; } # mdelta EXPORTER REGEX
sent_re() { echo "^${S}[{]family=\"$1\",reason=\"$2\",state=\"$3\",netns=\"$INO\"[}]\$"; }
rcv_re() { echo "^${RCV}[{]family=\"$1\",state=\"$2\",netns=\"$INO\"[}]\$"; }
ALL_SENT="^${S}[{].*,netns=\"$INO\"[}]\$"
ALL_RCV="^${RCV}[{].*,netns=\"$INO\"[}]\$"
# Resets sent without a full socket, invisible to the tracepoint before 6.10: closed, timewait.
if [ "$REASON" = 1 ]; then UNSEEN=0; else UNSEEN=4; fi

# round: every case once per family between two snapshots; true when the counts are exact.
round() {
	local c f
	snapshot before
	for c in closed abort linger0 timewait; do
		for f in 4 6; do
			ip netns exec "$NS" python3 "$TOOL" "$c" "$f" >/dev/null || {
				echo "# $TOOL $c $f failed"
				return 1
			}
		done
	done
	snapshot after
	[ "$(mdelta netns "$ALL_SENT")" -eq $(($(kdelta TcpOutRsts) - UNSEEN)) ] &&
		[ "$(mdelta netns "$ALL_RCV")" -eq 8 ] && return
	echo "# round: TcpOutRsts +$(kdelta TcpOutRsts), sent +$(mdelta netns "$ALL_SENT")," \
		"received +$(mdelta netns "$ALL_RCV")"
	return 1
}
for i in 1 2 3; do
	round && break
	[ "$i" -lt 3 ] && echo "# round $i was not exact, trying again"
done

# ---------------------------------------------------------------------------------------------
# Test 1: exactness, reasons and states.

check_eq "the cases sent 8 resets in NS (TcpOutRsts)" 8 "$(kdelta TcpOutRsts)"
check_eq "sum($S{netns=NS}) equals TcpOutRsts less $UNSEEN unseen (reason argument: $REASON)" \
	$(($(kdelta TcpOutRsts) - UNSEEN)) "$(mdelta netns "$ALL_SENT")"
for fam in ipv4 ipv6; do
	if [ "$REASON" = 1 ]; then
		check_eq "$fam closed: reason=NO_SOCKET, state=__none__" 1 \
			"$(mdelta netns "$(sent_re "$fam" NO_SOCKET __none__)")"
		check_eq "$fam abort: reason=TCP_ABORT_ON_CLOSE, state=CLOSE" 1 \
			"$(mdelta netns "$(sent_re "$fam" TCP_ABORT_ON_CLOSE CLOSE)")"
		check_eq "$fam timewait: reason=TCP_TIMEWAIT_SOCKET, state=TIME_WAIT" 1 \
			"$(mdelta netns "$(sent_re "$fam" TCP_TIMEWAIT_SOCKET TIME_WAIT)")"
	else
		check_eq "$fam: no reset without a full socket (state __none__ or TIME_WAIT)" 0 \
			"$(mdelta netns "^${S}[{]family=\"$fam\",.*state=\"(__none__|TIME_WAIT)\",")"
		check_eq "$fam: reason=__unknown__ for abort and linger0" 2 \
			"$(mdelta netns "^${S}[{]family=\"$fam\",reason=\"__unknown__\",state=\"CLOSE\",")"
	fi
	# abort and linger0 both send from a socket the kernel has just closed.
	check_eq "$fam abort + linger0: two resets with state=CLOSE" 2 \
		"$(mdelta netns "^${S}[{]family=\"$fam\",reason=\"[^\"]*\",state=\"CLOSE\",netns=\"$INO\"[}]\$")"
	check_eq "$fam closed: the client received one reset in SYN_SENT" 1 \
		"$(mdelta netns "$(rcv_re "$fam" SYN_SENT)")"
	check_eq "$fam abort + linger0: two resets received in ESTABLISHED" 2 \
		"$(mdelta netns "$(rcv_re "$fam" ESTABLISHED)")"
	check_eq "$fam timewait: the server received one reset in CLOSE_WAIT" 1 \
		"$(mdelta netns "$(rcv_re "$fam" CLOSE_WAIT)")"
done
check_eq "abort: the kernel counted two TCPAbortOnClose" 2 "$(kdelta TcpExtTCPAbortOnClose)"
check_eq "8 resets received in NS, as the cases caused" 8 "$(mdelta netns "$ALL_RCV")"

# ---------------------------------------------------------------------------------------------
# Test 2: default labels.

f=$TMP/after.default
total=$(grep -c "^$S{" "$f")
plain=$(grep -cE "^${S}\\{family=\"[^\"]+\",reason=\"[^\"]+\",state=\"[^\"]+\"\\} [0-9]+\$" "$f")
if [ "$total" -gt 0 ] && [ "$total" -eq "$plain" ]; then
	ok "default labels: $total sent series with only family, reason, state"
else
	not_ok "default labels: only family, reason, state" "$plain of $total"
fi
check "default labels: received series with only family, state" \
	grep -qE "^$RCV\\{family=\"ipv(4|6)\",state=\"[A-Z_0-9]+\"\\} [0-9]+\$" "$f"
ge "default labels: the host's sent resets include NS's" \
	"$(mdelta default "^${S}[{]")" "$(mdelta netns "$ALL_SENT")"
check "default labels: no tcp_resets_netns overflow series without the netns label" \
	test "$(grep -c 'map="tcp_resets_netns"' "$f")" -eq 0

# ---------------------------------------------------------------------------------------------
# Test 3: max_series = 1.

f=$TMP/after.small
gt "max_series=1: netstack_map_overflow_total{map=\"tcp_resets_netns\"} grows" \
	"$(mdelta small '^netstack_map_overflow_total[{]map="tcp_resets_netns"[}]$')" 0
gt "max_series=1: overflow series carry netns=\"__overflow__\"" \
	"$(grep -c "^netstack_tcp_resets_.*netns=\"__overflow__\"}" "$f")" 0
le "max_series=1: at most one series with a real netns" \
	"$(grep -E "^netstack_tcp_resets_" "$f" | grep -vc '__overflow__')" 1
ge "max_series=1: sent over every netns counts NS's" \
	"$(mdelta small "^${S}[{]")" "$(mdelta netns "$ALL_SENT")"

# ---------------------------------------------------------------------------------------------
# Test 4: sampled resets.

# The consumer reads the ring buffer every 100 ms: wait for the round's events.
want=$(($(mdelta netns "$ALL_SENT") + 8))
for _ in $(seq 50); do
	got=$(curl -sf "$URL_NETNS/events?type=reset&netns=$INO&max_events=1000" | grep -c .)
	[ "$got" -ge "$want" ] && break
	sleep 0.1
done
# Three rounds at most: the events of the last one are the store's latest (the store keeps
# 100000: the host's own resets, sampled too, do not push the round's out).
curl -sf "$URL_NETNS/events?type=reset&netns=$INO&max_events=1000" >"$TMP/events.jsonl"
ev() { # ev FILTER: events of the last round matching a jq-like python condition on e
	python3 -c '
import json, sys
evs = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
print(sum(1 for e in evs[-int(sys.argv[3]):] if eval("(" + sys.argv[2] + ")")))' "$TMP/events.jsonl" "$1" "$want"
}
check_eq "sampling: one event per reset in NS (rate 1, no cap)" "$want" \
	"$(ev 'e["type"] == "reset"')"
check_eq "sampling: 8 received resets" 8 "$(ev 'e["direction"] == "received"')"
if [ "$REASON" = 1 ]; then
	check_eq "sampling: NO_SOCKET sent from the closed port, answering a SYN, state __none__" 2 \
		"$(ev 'e["direction"] == "sent" and e["reason"] == "NO_SOCKET" and
			e["state"] == "__none__" and e["tcp_flags"] == "SYN" and
			e["saddr"] in ("127.0.0.1", "::1")')"
	check_eq "sampling: TCP_TIMEWAIT_SOCKET events, state TIME_WAIT" 2 \
		"$(ev 'e["reason"] == "TCP_TIMEWAIT_SOCKET" and e["state"] == "TIME_WAIT"')"
	code=$(curl -s -o "$TMP/reason.jsonl" -w '%{http_code}' \
		"$URL_NETNS/events?type=reset&reason=TCP_ABORT_ON_CLOSE&netns=$INO")
	check_eq "/events?reason=TCP_ABORT_ON_CLOSE answers" 200 "$code"
	ge "/events?reason=TCP_ABORT_ON_CLOSE: the abort cases" "$(grep -c . "$TMP/reason.jsonl")" 2
	check "OpenMetrics: exemplar on $S{reason=NO_SOCKET,netns=NS}" grep -qE \
		"^${S}[{]family=\"ipv4\",reason=\"NO_SOCKET\",state=\"__none__\",netns=\"$INO\"[}] [0-9]+ # [{]saddr=\"127.0.0.1\",daddr=\"127.0.0.1\",sport=\"[0-9]+\",dport=\"[0-9]+\"[}]" \
		"$TMP/after.om"
else
	check_eq "sampling: sent events carry reason __unknown__" "$(mdelta netns "$ALL_SENT")" \
		"$(ev 'e["direction"] == "sent" and e["reason"] == "__unknown__"')"
fi
curl -sf "$URL_NETNS/events/top" >"$TMP/top.json"
# The host's own resets may outrank NS's endpoints (one reset each): the list's form only.
check "/events/top lists reset endpoints with count, direction, reason and state" python3 -c '
import json, sys
top = json.load(open(sys.argv[1]))["reset"]
sys.exit(not top or not all(t["resets"] >= 1 and {"direction", "reason", "state", "saddr",
                                                   "sport"} <= t.keys() for t in top))' \
	"$TMP/top.json"

# ---------------------------------------------------------------------------------------------
# Test 5: promtool.

promtool_ok "promtool check metrics: netns label" "$TMP/after.netns"
promtool_ok "promtool check metrics: default labels" "$TMP/after.default"
promtool_ok "promtool check metrics: overflow series" "$TMP/after.small"

finish
