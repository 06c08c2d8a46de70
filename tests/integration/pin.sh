#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# [bpf] pin_path: counters survive the exporter. An nftables rule drops (and counts) UDP in a
# namespace of ours; the exporter's NETFILTER_DROP counter for that namespace must equal the
# nftables counter across a kill -9, drops while no exporter runs, and a restart. A changed
# setting replaces the pins (logged, counts restart); a disabled collector loses its pins;
# --unpin removes the exporter's pins and the programs detach, other tools' pins stay.
# schedule: parallel each
source "$(dirname "$0")/../lib.sh"
require_root_bpf

# ---- pin_path not on a bpf filesystem: a clear error, nothing left behind ----
printf '[bpf]\npin_path = %s\n' "$TMP/notbpf" >"$TMP/notbpf.ini"
"$EXPORTER" --config "$TMP/notbpf.ini" --strict --web.listen-address "127.0.0.1:$(free_port)" \
	>"$TMP/notbpf.log" 2>&1
rc=$?
check_eq "pin_path on $(stat -f -c %T "$TMP"): --strict exits 1" 1 "$rc"
check "... naming the path and the filesystem it needs" \
	grep -q "pin: $TMP/notbpf is not on a bpf filesystem" "$TMP/notbpf.log"
check "... and creates nothing there" test ! -e "$TMP/notbpf"

# A bpf filesystem of our own (each mount is a new instance): the test needs none on the host.
mkdir "$TMP/bpffs" && mount -t bpf bpf "$TMP/bpffs" || {
	not_ok "mount a bpf filesystem on $TMP/bpffs"
	finish
}
on_exit "umount $TMP/bpffs"
PIN=$TMP/bpffs/netstack-test$$
NS=nspin$$
netns_add "$NS" && ip netns exec "$NS" nft -f - <<EOF || {
table inet t {
	chain in {
		type filter hook input priority 0;
		udp dport 9999 counter drop
	}
}
EOF
	not_ok "namespace with an nftables drop rule"
	finish
}
INODE=$(netns_inode "$NS")
drop() { ip netns exec "$NS" bash -c "for i in \$(seq $1); do echo x >/dev/udp/127.0.0.1/9999; done" 2>/dev/null; }
nft_count() { ip netns exec "$NS" nft list chain inet t in | sed -n 's/.*counter packets \([0-9]*\).*/\1/p'; }
SERIES="^netstack_skb_drops_total\\{reason=\"NETFILTER_DROP\",family=\"ipv4\",protocol=\"udp\",netns=\"$INODE\"\\}$"

write_ini() { # MAX_SERIES [DROPS_ENABLED]
	printf '[bpf]\npin_path = %s\n[collector.drops]\nenabled = %s\nlabels = reason,family,protocol,netns\nmax_series = %s\n' \
		"$PIN" "${2:-true}" "$1" >"$TMP/pin.ini"
}
write_ini 4096
on_exit "$EXPORTER --config $TMP/pin.ini --unpin"
PORT=$(free_port)
EXPORTER_URL=http://127.0.0.1:$PORT
run() { # LOG: the exporter in the background, healthy; sets PID
	"$EXPORTER" --config "$TMP/pin.ini" --web.listen-address "127.0.0.1:$PORT" >"$1" 2>&1 &
	PID=$!
	on_exit "kill -9 $PID"
	wait_healthy "$EXPORTER_URL" "$PID" "$1" exporter
}
# equal_soon NAME: the exporter's count equals nftables' (counters are read at scrape time,
# the last datagrams may still be on their way for a moment).
equal_soon() {
	local nft exp
	for _ in $(seq 20); do
		nft=$(nft_count)
		exp=$(scrape_sum "$SERIES")
		[ "$nft" = "$exp" ] && break
		sleep 0.1
	done
	check_eq "$1: exporter = nftables" "$nft" "$exp"
}

run "$TMP/run1.log" || {
	not_ok "exporter starts with pin_path"
	finish
}
check "maps, links and settings pinned" test -e "$PIN/drops/map_skb_drops" -a -e "$PIN/drops/link_count_drop_n" -a -e "$PIN/drops/rodata"
drop 100
equal_soon "first run, 100 drops"

# ---- kill -9, drops while no exporter runs, restart ----
kill -9 "$PID"
wait "$PID" 2>/dev/null
drop 150
check_eq "nftables counted all 250" 250 "$(nft_count)"
# What an earlier version pinned (its overflow counter had a map of its own) and this one has not.
bpftool map create "$PIN/drops/map_skb_drops_overflow" type percpu_array key 4 value 8 entries 1 \
	name skb_drops_overflow || not_ok "bpftool pins a map of an earlier version"
run "$TMP/run2.log" || {
	not_ok "exporter restarts"
	finish
}
# skb_drops_by_reason, skb_drops, skb_drop_{keys,counts,slots,last,claims} and the
# sampling counters (events_*).
check "restart reused the pinned maps" grep -q 'pin: drops: 9 pinned map(s) reused' "$TMP/run2.log"
check "... and removed the pin of a map this version no longer has" \
	test ! -e "$PIN/drops/map_skb_drops_overflow"
check "... saying so" grep -q "map_skb_drops_overflow: a map this version no longer has; removed" \
	"$TMP/run2.log"
equal_soon "after kill -9 and 150 drops while down"
drop 50
equal_soon "restarted exporter counts on, once"
# Equal after more drops: the old pinned program was replaced, not left counting twice.
kill "$PID"
wait "$PID"
check_eq "SIGTERM: exit 0" 0 "$?"
check "SIGTERM keeps the pins" test -e "$PIN/drops/link_count_drop_n"
drop 10
run "$TMP/run3.log" && equal_soon "after SIGTERM, drops while down, restart"

# ---- incompatible pins: replaced, logged, counts restart ----
kill "$PID"
wait "$PID"
write_ini 8192
run "$TMP/run4.log"
check "changed max_series: pins replaced with a log line" \
	grep -q "pin: $PIN/drops/map_skb_drops: the collector's settings changed; replacing it" \
	"$TMP/run4.log"
check_eq "... and the counter restarted" 0 "$(scrape_sum "$SERIES")"
drop 7
check_eq "... then counts again" 7 "$(scrape_sum "$SERIES")"
kill "$PID"
wait "$PID"

# ---- all or none: one map missing replaces the others (slots, keys and counts must agree) ----
rm "$PIN/drops/map_skb_drop_slots"
run "$TMP/run5b.log"
check "one drop map unpinned: the others replaced too" \
	grep -q "pin: $PIN/drops/map_skb_drops: a map of the collector is not pinned; replacing it" \
	"$TMP/run5b.log"
check "... and none reused" bash -c "! grep -q 'pin: drops: .* reused' '$TMP/run5b.log'"
drop 5
check_eq "... counts start again, exactly" 5 "$(scrape_sum "$SERIES")"
kill "$PID"
wait "$PID"
write_ini 8192
sed -i 's/netns$/netns,interface/' "$TMP/pin.ini"
run "$TMP/run5.log"
check "changed labels (same layout): pins replaced" \
	grep -q "pin: $PIN/drops/map_skb_drops: the collector's settings changed; replacing it" "$TMP/run5.log"
kill "$PID"
wait "$PID"

# ---- a disabled collector loses its pins; --unpin removes the rest ----
link_id=$(bpftool -j link show pinned "$PIN/retrans/link_count_retransmit" | jq .id)
write_ini 8192 false
run "$TMP/run6.log"
check "disabled drops: its pins are gone" test ! -e "$PIN/drops"
kill "$PID"
wait "$PID"
"$EXPORTER" --config "$TMP/pin.ini" --unpin >"$TMP/unpin.log" 2>&1
check_eq "--unpin: exit 0" 0 "$?"
check "--unpin: $PIN removed" test ! -e "$PIN"
for _ in $(seq 20); do
	bpftool link show id "$link_id" >/dev/null 2>&1 || break
	sleep 0.1
done
check "--unpin: the pinned retrans link (id $link_id) is gone" \
	bash -c "! bpftool link show id '$link_id' >/dev/null 2>&1"

# ---- --unpin removes only the exporter's own pins, never other tools' beside them ----
write_ini 8192
run "$TMP/run7.log"
kill "$PID"
wait "$PID"
FOREIGN=("$PIN/foreign" "$PIN/drops/foreign")
on_exit "rm -f ${FOREIGN[*]}; rmdir $PIN/drops $PIN"
bpftool map create "$PIN/foreign" type array key 4 value 4 entries 1 name foreign &&
	bpftool map create "$PIN/drops/foreign" type array key 4 value 4 entries 1 name foreign ||
	not_ok "bpftool pins foreign maps beside ours"
"$EXPORTER" --config "$TMP/pin.ini" --unpin >"$TMP/unpin2.log" 2>&1
check_eq "--unpin with foreign pins: exit 0" 0 "$?"
check "--unpin: our drops maps, links and settings are gone" \
	test ! -e "$PIN/drops/map_skb_drops" -a ! -e "$PIN/drops/link_count_drop_n" -a ! -e "$PIN/drops/rodata"
check_eq "--unpin: nothing of ours left in drops/" foreign "$(ls "$PIN/drops" 2>/dev/null | tr '\n' ' ' | sed 's/ $//')"
check "--unpin: the other collectors' directories are gone" test ! -e "$PIN/retrans" -a ! -e "$PIN/rtt"
check "--unpin: the foreign map beside ours stays" test -e "$PIN/foreign"
check "--unpin: the foreign map inside drops/ stays" test -e "$PIN/drops/foreign"
check "--unpin: it says what it left" grep -q "$PIN holds pins that are not the exporter's" "$TMP/unpin2.log"
rm -f "$PIN/foreign" "$PIN/drops/foreign"
rmdir "$PIN/drops" "$PIN"
finish
