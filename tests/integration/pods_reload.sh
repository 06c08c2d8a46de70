#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The pod fold across reloads that restart a collector (pod_labels = netns: the fold runs, no
# pod source needed):
#   1. rtt with native buckets: a reload changing native_schema (3 -> 2, then off) changes the
#      family's bucket shape; the folded series must start again in the new shape and move
#      with new traffic, never freeze ("changed its buckets ... samples dropped").
#   2. drops: a reload restarts the collector (its counts start from 0), then more drops than
#      before arrive ahead of the next scrape, so the new count passes the old one: the folded
#      counter must still equal nftables' (the fold tells the restart by the collector's new
#      maps, not by totals, which would see a smaller increase).
#   3. drops with [bpf] pin_path: a reload restarts the collector on its pinned maps (its counts
#      go on): the folded counter must not count them twice.
# schedule: parallel each
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
require_root_bpf
CONN=tests/tools/tcpconn.py
P_SERVED=5421 P_DROP=5422

NS=nspodrl$$
netns_add "$NS" || skip_all "cannot create a network namespace"
INO=$(netns_inode "$NS")
ip netns exec "$NS" nft -f - <<EOF || skip_all "cannot load the nftables rule"
table inet podrl {
	counter dropped { }
	chain input {
		type filter hook input priority filter; policy accept;
		udp dport $P_DROP counter name "dropped" drop
	}
}
EOF
ip netns exec "$NS" /usr/bin/python3 "$CONN" server "$P_SERVED" >"$TMP/server.out" 2>&1 &
on_exit "kill $!"
wait_until 10 grep -qs listening "$TMP/server.out" || skip_all "tcpconn.py server did not start"
connect() { ip netns exec "$NS" /usr/bin/python3 "$CONN" client close 127.0.0.1 "$P_SERVED" "$1"; }
drop() { ip netns exec "$NS" bash -c "for i in \$(seq $1); do echo x >/dev/udp/127.0.0.1/$P_DROP; done" 2>/dev/null; }
nft_drops() { ip netns exec "$NS" nft list counter inet podrl dropped | awk '/packets/ { print $2 }'; }

INI=$TMP/podrl.ini
write_ini() { # DROPS_MAX_SERIES RTT_NATIVE_SCHEMA
	printf '%s\n' '[pods]' 'source = none' \
		'[collector.drops]' 'labels = reason,family,protocol,netns' 'pod_labels = netns' \
		"max_series = $1" \
		'[collector.rtt]' 'labels = family,netns' 'pod_labels = netns' "native_schema = $2" \
		'[collector.retrans]' 'enabled = false' '[collector.resets]' 'enabled = false' \
		'[collector.connections]' 'enabled = false' >"$INI"
}
verdicts() { grep -c 'reload: .*\(applied\|keeping the running\)' "$EXPORTER_LOG"; }
# shellcheck disable=SC2317 # run through wait_until
more_verdicts() { [ "$(verdicts)" -gt "$1" ]; }
hup() { # wait until the log has one more "reload:" verdict line
	local seen
	seen=$(verdicts)
	kill -HUP "$EXPORTER_PID"
	wait_until 10 more_verdicts "$seen"
}
# shellcheck disable=SC2317 # run through wait_until
sum_gt() { [ "$(scrape_sum "$1")" -gt "$2" ]; }
# shellcheck disable=SC2317 # run through wait_until
drops_caught_up() { [ "$(scrape_sum "$DROPS")" -ge "$(nft_drops)" ]; }
write_ini 4096 3
start_exporter --config "$INI" || {
	not_ok "exporter starts"
	finish
}

# ---- 1. native_schema changed by a reload: the folded RTT histogram starts again ----
# Our namespace's series (source = none adds the process label).
RTT="^netstack_tcp_rtt_seconds_count\\{family=\"ipv4\",netns=\"$INO\"[,}]"
connect 5
wait_until 10 sum_ge "$RTT" 1
gt "schema 3: the folded RTT count of our namespace moves" "$(scrape_sum "$RTT")" 0
restarts=0
for schema in 2 off; do
	write_ini 4096 "$schema"
	hup || not_ok "native_schema $schema: the reload ends"
	restarts=$((restarts + 1))
	check_eq "native_schema $schema: the reload restarted rtt" "$restarts" \
		"$(grep -c "reload: collector rtt (re)started" "$EXPORTER_LOG")"
	before=$(scrape_sum "$RTT")
	connect 5
	if wait_until 10 sum_gt "$RTT" "$before"; then
		ok "native_schema $schema: the folded series moves again with new traffic"
	else
		not_ok "native_schema $schema: the folded series moves again with new traffic" \
			"stuck at $(scrape_sum "$RTT")"
	fi
done
check "no sample dropped for its shape" bash -c "! grep -q 'samples dropped' '$EXPORTER_LOG'"
check "the restarts are logged, once each" \
	test "$(grep -c 'pods: netstack_tcp_rtt_seconds changed its buckets' "$EXPORTER_LOG")" = 2
check_eq "... and counted" 2 \
	"$(scrape_sum '^netstack_pods_fold_restarts_total\{metric="netstack_tcp_rtt_seconds"\}$')"

# ---- 2. a restart whose new count passes the old one before the next scrape ----
DROPS="^netstack_skb_drops_total\\{reason=\"NETFILTER_DROP\",family=\"ipv4\",protocol=\"udp\",netns=\"$INO\"[,}]"
drop 10
wait_until 10 sum_ge "$DROPS" 10
check_eq "drops: the folded counter equals nftables'" "$(nft_drops)" "$(scrape_sum "$DROPS")"
write_ini 2048 off
hup || not_ok "max_series changed: the reload ends"
check "... the reload restarted drops (its counts start again)" \
	grep -q "reload: collector drops (re)started" "$EXPORTER_LOG"
drop 15 # no scrape in between: the new count (15) passes the old one (10)
wait_until 10 drops_caught_up
check_eq "drops after the restart: the folded counter still equals nftables'" \
	"$(nft_drops)" "$(scrape_sum "$DROPS")"
drop 5
wait_until 10 drops_caught_up
check_eq "... and goes on, once" "$(nft_drops)" "$(scrape_sum "$DROPS")"

# ---- 3. a restart that reuses the pinned maps: the counts go on, and are not added twice ----
stop_exporter
mkdir "$TMP/bpffs" || exit 1
mount -t bpf bpf "$TMP/bpffs" || skip_all "cannot mount a bpf filesystem"
on_exit "umount $TMP/bpffs"
pinned_ini() { # DIRECT_READ: auto or false
	write_ini 4096 off
	printf '%s\n' '[bpf]' "pin_path = $TMP/bpffs/podrl" '[collector.drops]' "direct_read = $1" \
		>>"$INI"
}
pinned_ini auto
start_exporter --config "$INI" || not_ok "exporter with pin_path starts"
on_exit "$EXPORTER --config $INI --unpin"
base=$(nft_drops) # the pins are new: our namespace's drops so far are not in them
drop 10
wait_until 10 sum_ge "$DROPS" 10
check_eq "pinned drops: the folded counter counts ours" 10 "$(scrape_sum "$DROPS")"
pinned_ini false # another program, the same maps
hup || not_ok "direct_read changed: the reload ends"
check "... the reload restarted drops" \
	grep -q "reload: collector drops (re)started" "$EXPORTER_LOG"
check "... on its pinned maps" grep -q "pin: drops: .* pinned map(s) reused" "$EXPORTER_LOG"
drop 5
want=$(($(nft_drops) - base))
wait_until 10 sum_ge "$DROPS" "$want"
check_eq "... the folded counter goes on, counted once" "$want" "$(scrape_sum "$DROPS")"
finish
