#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# [bpf] pin_path under every setting that changes which maps a collector creates (a feature
# turned off leaves its maps out): a restart with the same settings must reuse every pinned map
# (the same kernel map ids, no "replacing it" line) and its counters must go on, never restart
# from 0. One row per collector and setting in CASES; a setting that stops changing the maps
# (a collector that no longer makes them optional) still passes, so the table only grows.
# pin.sh checks the drops counter against nftables; this is the breadth.
# schedule: parallel once
# why: the kernel's pins and map ids are under test; pin.sh runs pin_prepare under ASan
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
require_root_bpf
for tool in jq bpftool nft; do
	command -v "$tool" >/dev/null || skip_all "needs $tool"
done
CONN=tests/tools/tcpconn.py

mkdir "$TMP/bpffs" || exit 1
mount -t bpf bpf "$TMP/bpffs" || skip_all "cannot mount a bpf filesystem"
on_exit "umount $TMP/bpffs"
PIN=$TMP/bpffs/netstack-settings$$
NS=nspinset$$
netns_add "$NS" || skip_all "cannot create a network namespace"
INO=$(netns_inode "$NS")
P_SERVED=5411 P_CLOSED=5412 P_STALL=5413
for port in "$P_SERVED" "$P_STALL"; do
	ip netns exec "$NS" /usr/bin/python3 "$CONN" server "$port" >"$TMP/server$port.out" 2>&1 &
	on_exit "kill $!"
	wait_until 10 grep -qs listening "$TMP/server$port.out" ||
		skip_all "tcpconn.py server did not start"
done
# Data to P_STALL never arrives: retransmits until TCP_USER_TIMEOUT ends the connection.
ip netns exec "$NS" nft -f - <<EOF || skip_all "cannot load the nftables rule"
table inet pinset {
	chain input {
		type filter hook input priority filter; policy accept;
		tcp dport $P_STALL meta length > 200 drop
	}
}
EOF

# traffic N: what each collector counts, in our namespace: connections closed and reset (rtt,
# connections, resets), refused connects (resets, connections), UDP to a closed port (drops),
# a stalled connection (retrans).
traffic() {
	ip netns exec "$NS" /usr/bin/python3 "$CONN" clients 127.0.0.1 "close:$P_SERVED:$1" \
		"reset:$P_SERVED:2" "refused:$P_CLOSED:2" "stall:$P_STALL:1" >/dev/null
	ip netns exec "$NS" bash -c "for i in \$(seq $1); do echo x >/dev/udp/127.0.0.1/$P_CLOSED; done" \
		2>/dev/null
}

# COLLECTOR|SETTINGS ("\n" between keys)|the counter that must go on (a scrape_sum regex)
DROPS='^netstack_skb_drops_total'
CONNS='^netstack_tcp_connections_total'
RESETS='^netstack_tcp_resets_(sent|received)_total'
RTT='^netstack_tcp_rtt_seconds_count'
RETRANS='^netstack_tcp_retransmits_total'
CASES=(
	"drops||$DROPS"
	"drops|labels = reason,family,protocol,netns|$DROPS"
	"drops|direct_read = false|$DROPS"
	"retrans||$RETRANS"
	"retrans|labels = family,kind,cause,state,netns|$RETRANS"
	"resets||$RESETS"
	"resets|labels = family,reason,state,netns|$RESETS"
	"connections||$CONNS"
	"connections|handshake_time = false|$CONNS"
	"connections|native_schema = off|$CONNS"
	"connections|native_schema = 2|$CONNS"
	"connections|labels = family,direction,outcome,netns|$CONNS"
	"connections|labels = family,direction,outcome,netns\nhandshake_time = false|$CONNS"
	"connections|labels = family,direction,outcome,netns\nnative_schema = off|$CONNS"
	"rtt||$RTT"
	"rtt|native_schema = off|$RTT"
	"rtt|native_schema = 2|$RTT"
	"rtt|existing_sockets = false|$RTT"
	"rtt|labels = family,netns|$RTT"
	"rtt|labels = family,netns\nnative_schema = off|$RTT"
)
ALL=(drops retrans resets connections rtt)

# write_ini COLLECTOR SETTINGS: only COLLECTOR on, with SETTINGS, pinned under $PIN.
write_ini() {
	{
		printf '[bpf]\npin_path = %s\n' "$PIN"
		for c in "${ALL[@]}"; do
			printf '[collector.%s]\nenabled = %s\n' "$c" "$([ "$c" = "$1" ] && echo true || echo false)"
			[ "$c" = "$1" ] && printf '%b\n' "$2"
		done
	} >"$TMP/settings.ini"
}
# map_ids COLLECTOR: "map_NAME ID" for each map the collector pinned, sorted.
map_ids() {
	local f
	for f in "$PIN/$1"/map_*; do
		[ -e "$f" ] || continue
		echo "${f##*/}=$(bpftool -j map show pinned "$f" | jq .id)"
	done | sort | tr '\n' ' '
}

n=0
for row in "${CASES[@]}"; do
	IFS='|' read -r coll settings counter <<<"$row"
	[ -z "${ONLY:-}" ] || [ "$coll" = "$ONLY" ] || continue # ONLY=rtt: one collector's rows
	name="$coll${settings:+ ($(printf '%b' "$settings" | tr '\n' ',' | sed 's/,$//'))}"
	n=$((n + 1))
	# With the netns label, only our namespace's series: exact, whatever else the host does.
	case $settings in *netns*) counter="$counter\\{.*netns=\"$INO\"" ;; esac
	write_ini "$coll" "$settings"
	start_exporter --config "$TMP/settings.ini" || {
		not_ok "$name: starts with pin_path"
		continue
	}
	traffic 20
	wait_until 10 sum_ge "$counter" 1
	before=$(scrape_sum "$counter")
	ids=$(map_ids "$coll")
	stop_exporter
	spawn_exporter "$TMP/restart$n.log" --config "$TMP/settings.ini" \
		--web.listen-address "${EXPORTER_URL#http://}"
	if ! wait_healthy "$EXPORTER_URL" "$EXPORTER_PID" "$EXPORTER_LOG" exporter; then
		not_ok "$name: restarts"
		continue
	fi
	check "$name: the restart replaces no pinned map" \
		bash -c "! grep -q 'replacing it' '$TMP/restart$n.log'"
	check_eq "$name: the restart reuses every pinned map (same ids)" "$ids" "$(map_ids "$coll")"
	gt "$name: counted before the restart ($counter)" "$before" 0
	ge "$name: its counter goes on" "$(scrape_sum "$counter")" "$before"
	stop_exporter
done

# A feature turned off: what only it used goes. Handshake timing has no map of its own (its
# histograms are in the slot table, whose value shrinks without them: a map these settings
# make anew), but a program: its pinned link goes, and the program with it.
write_ini connections ""
start_exporter --config "$TMP/settings.ini" && stop_exporter
check "connections: note_syn_retransmit's link pinned" \
	test -e "$PIN/connections/link_note_syn_retransmit"
write_ini connections "handshake_time = false"
start_exporter --config "$TMP/settings.ini" && stop_exporter
check "handshake_time = false: its link's pin is removed" \
	test ! -e "$PIN/connections/link_note_syn_retransmit"
check "... and the slot table is made anew, saying so" \
	grep -q "map_tcp_connections: .*replacing it" "$EXPORTER_LOG"

"$EXPORTER" --config "$TMP/settings.ini" --unpin >/dev/null 2>&1
check "--unpin leaves nothing under $PIN" test ! -e "$PIN"
finish
