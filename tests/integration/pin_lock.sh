#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# One exporter per [bpf] pin_path. An nftables rule drops (and counts) UDP in a namespace of
# ours; the NETFILTER_DROP count of that namespace must equal nftables' count throughout:
#
#   1. A second exporter on the same pin_path while the first runs: it waits pin_wait_seconds,
#      then exits 3 naming the path and the first one's PID; the first counts every drop once.
#   2. A second exporter started with a longer wait (a rolling update's overlap) takes over
#      when the first stops, and counts on, once.
#   3. After a kill -9 the lock is gone with the process: the next one starts at once
#      (pin_wait_seconds = 0 would refuse a held lock).
# schedule: parallel each
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
require_root_bpf

mkdir "$TMP/bpffs" && mount -t bpf bpf "$TMP/bpffs" || skip_all "cannot mount a bpf filesystem"
on_exit "umount $TMP/bpffs"
PIN=$TMP/bpffs/netstack-lock$$
NS=nslk$$
netns_add "$NS" && ip netns exec "$NS" nft -f - <<EOF || skip_all "cannot set up nftables"
table inet t {
	chain in {
		type filter hook input priority 0;
		udp dport 9999 counter drop
	}
}
EOF
INODE=$(netns_inode "$NS")
drop() { ip netns exec "$NS" bash -c "for i in \$(seq $1); do echo x >/dev/udp/127.0.0.1/9999; done" 2>/dev/null; }
nft_count() { ip netns exec "$NS" nft list chain inet t in | sed -n 's/.*counter packets \([0-9]*\).*/\1/p'; }
SERIES="^netstack_skb_drops_total\\{reason=\"NETFILTER_DROP\",family=\"ipv4\",protocol=\"udp\",netns=\"$INODE\"\\}$"

ini() { # FILE WAIT_SECONDS
	printf '%s\n' '[bpf]' "pin_path = $PIN" "pin_wait_seconds = $2" '[collector.drops]' \
		'labels = reason,family,protocol,netns' '[collector.retrans]' 'enabled = false' \
		'[collector.rtt]' 'enabled = false' >"$1"
}
ini "$TMP/wait1.ini" 1
ini "$TMP/wait30.ini" 30
ini "$TMP/wait0.ini" 0
on_exit "$EXPORTER --config $TMP/wait0.ini --unpin"
# start NAME INI: an exporter on a port of its own in the background; sets <NAME>_PID, <NAME>_URL
start() {
	local port
	port=$(free_port)
	"$EXPORTER" --config "$2" --web.listen-address "127.0.0.1:$port" >"$TMP/$1.log" 2>&1 &
	eval "$1_PID=$! $1_URL=http://127.0.0.1:$port"
	on_exit "kill -9 $!"
}
# once NAME URL: the exporter at URL counts what nftables counts (read at scrape time; the last
# datagrams may still be on their way for a moment)
once() {
	local nft exp
	for _ in $(seq 20); do
		nft=$(nft_count)
		exp=$(EXPORTER_URL=$2 scrape_sum "$SERIES")
		[ "$nft" = "$exp" ] && break
		sleep 0.1
	done
	check_eq "$1: exporter = nftables" "$nft" "$exp"
}
# ended PID SECONDS: true when PID exits within SECONDS; its exit code in RC
ended() {
	RC=
	for _ in $(seq $(($2 * 10))); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$1" 2>/dev/null && return 1
	wait "$1"
	RC=$?
}

# -- 1. a second exporter while the first runs -----------------------------------------------
start A "$TMP/wait0.ini"
wait_healthy "$A_URL" "$A_PID" "$TMP/A.log" "exporter A" || exit 1
drop 20
start B "$TMP/wait1.ini"
if ended "$B_PID" 10; then
	check_eq "a second exporter on the same pin_path exits 3" 3 "$RC"
else
	not_ok "a second exporter on the same pin_path exits 3" "still running after 10 s"
	kill "$B_PID"
fi
check "... after waiting, naming the path and the holder" grep -q \
	"pin: $PIN is in use by another exporter (pid $A_PID) and still is; exiting" "$TMP/B.log"
check "... logged that it waited" grep -q "waiting up to 1 s" "$TMP/B.log"
drop 30
once "the first exporter counts every drop once" "$A_URL"

# -- 2. the overlap of a rolling update: the next one waits, then takes over --------------------
start C "$TMP/wait30.ini"
wait_grep "$TMP/C.log" "waiting up to 30 s" || true
check "a second exporter with pin_wait_seconds = 30 waits" grep -q \
	"pin: $PIN is in use by another exporter (pid $A_PID); waiting up to 30 s" "$TMP/C.log"
check "... not serving meanwhile" bash -c "! curl -sf -m 1 '$C_URL/healthz' -o /dev/null"
kill "$A_PID"
ended "$A_PID" 10
check "the first stops (SIGTERM)" test "$RC" = 0
wait_healthy "$C_URL" "$C_PID" "$TMP/C.log" "exporter C"
check "the second takes over" grep -q "pin: $PIN is ours after" "$TMP/C.log"
drop 40
once "... and counts on, once" "$C_URL"

# -- 3. kill -9: the lock dies with its process ---------------------------------------------------
kill -9 "$C_PID"
wait "$C_PID" 2>/dev/null
start D "$TMP/wait0.ini"
check "after kill -9 the next exporter starts at once (pin_wait_seconds = 0)" \
	wait_healthy "$D_URL" "$D_PID" "$TMP/D.log" "exporter D"
drop 25
once "... and counts every drop once" "$D_URL"
start E "$TMP/wait0.ini"
ended "$E_PID" 10
check_eq "with pin_wait_seconds = 0 a held pin_path is refused at once, exit code" 3 "${RC:-}"
check "... naming the path and the holder" grep -q \
	"pin: $PIN is in use by another exporter (pid $D_PID); exiting" "$TMP/E.log"
kill "$D_PID"
wait "$D_PID"
finish
