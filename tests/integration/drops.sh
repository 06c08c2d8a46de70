#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Drops collector end to end: real BPF on tp_btf/kfree_skb, real UDP traffic between network
# namespaces joined by veth, nftables rules whose own counters are the reference.
#
#   1. NETFILTER_DROP ipv4/ipv6 in netns B equals the nft drop counters exactly.
#   2. NO_SOCKET in netns B equals what passed the rule; every datagram sent is dropped exactly
#      once somewhere (there is no socket anywhere to take it).
#   3. Default labels: only reason,family,protocol; a loopback flood to a closed port is counted.
#   4. All optional labels: interface and netns of the drop, function is a real kernel symbol;
#      sums over function stay exact.
#   5. max_series = 2: the hash overflows, overflow series carry __overflow__, sums by reason stay
#      exact.
#   6. promtool check metrics accepts /metrics (default labels, all labels, overflow).
#   7. drop_reason = false: count_drop_noreason, the program for kernels whose kfree_skb has no
#      reason (before 5.17), here: every drop NOT_SPECIFIED, by function exact against nft's
#      counters in B (the netfilter hook) and what passed them (UDP's receive path); no atomic
#      exchange or fetch in its code (5.10's verifier has neither); with max_series = 2 its
#      claimed slots overflow as the others do.
# Not covered: a collector failing at scrape time (cannot be forced from outside).
# schedule: parallel each
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
require_root_bpf
UDPFLOOD=$BUILD/tests/udpflood
[ -x "$UDPFLOOD" ] || skip_all "$UDPFLOOD not built (make $UDPFLOOD)"
for tool in nft curl promtool; do
	command -v "$tool" >/dev/null || skip_all "needs $tool"
done

N=20000 # datagrams per family and flood
PORT=5555 # the port the nft rules drop a random half of; nothing listens on it
M=netstack_skb_drops_total

# ---------------------------------------------------------------------------------------------
# Helpers

# Regex for drop series with the given reason, family, protocol and optional labels (a regex
# fragment for the rest of the label set, "" for none).
series() {
	if [ -n "${4:-}" ]; then
		echo "^${M}[{]reason=\"$1\",family=\"$2\",protocol=\"$3\",$4[}]\$"
	else
		echo "^${M}[{]reason=\"$1\",family=\"$2\",protocol=\"$3\"[}]\$"
	fi
}
# Same, any optional labels: sums over everything for a (reason, family, protocol).
series_any() { echo "^${M}[{]reason=\"$1\",family=\"$2\",protocol=\"$3\"[,}]"; }

# prog_xlated NAME: the running exporter's program NAME as the verifier left it.
prog_xlated() {
	local id
	for id in $(awk '/^prog_id:/ { print $2 }' /proc/"$EXPORTER_PID"/fdinfo/* 2>/dev/null | sort -u); do
		bpftool prog show id "$id" | grep -q " name $1 " && bpftool prog dump xlated id "$id"
	done
}

# key_published_last: on a program's xlated code (stdin), whether the atomic exchange that
# publishes a new slot's reason (bpf/drops.bpf.c new_slot) comes after the stores of the key's
# other fields through the same register, and no store through it follows.
key_published_last() {
	awk '{ l[NR] = $0 } /atomic_xchg\(\(u32 \*\)\(r[0-9] \+8\)/ { x = NR }
	END {
		if (!x)
			exit 1
		match(l[x], /\(r[0-9] \+8\)/)
		r = substr(l[x], RSTART + 1, 2)
		set = "\\) " r " ([-+*/|&]?=) "
		store = "\\*\\(u[0-9]+ \\*\\)\\(" r " \\+[0-9]+\\) = "
		for (i = x - 1; i > 0 && l[i] !~ set; i--)
			before += l[i] ~ store
		for (i = x + 1; i <= NR && l[i] !~ set; i++)
			after += l[i] ~ store
		# location, netns, ifname (two u64), family, protocol
		exit !(before >= 6 && !after)
	}'
}

config() { # config NAME LINE...: an INI file in $TMP, prints its path
	local f=$TMP/$1.ini
	shift
	printf '%s\n' '[collector.drops]' "$@" >"$f"
	echo "$f"
}

# Receiver side: an inet table in NS whose input chain counts UDP to $PORT (seen4/seen6) and
# drops a random half of it (drop4/drop6), one named counter per family.
nft_receiver() {
	ip netns exec "$1" nft -f - <<-EOF
		table inet nstest {
			counter seen4 { }
			counter seen6 { }
			counter drop4 { }
			counter drop6 { }
			chain input {
				type filter hook input priority filter; policy accept;
				meta nfproto ipv4 udp dport $PORT counter name "seen4"
				meta nfproto ipv6 udp dport $PORT counter name "seen6"
				meta nfproto ipv4 udp dport $PORT numgen random mod 2 == 0 counter name "drop4" drop
				meta nfproto ipv6 udp dport $PORT numgen random mod 2 == 0 counter name "drop6" drop
			}
		}
	EOF
}
nft_packets() { # NS COUNTER
	ip netns exec "$1" nft list counter inet nstest "$2" | awk '$1 == "packets" { print $2 }'
}
# nft_snapshot NS...: "NS.counter=value" lines for every receiver namespace given
nft_snapshot() {
	local ns c
	for ns in "$@"; do
		for c in seen4 seen6 drop4 drop6; do
			echo "$ns.$c=$(nft_packets "$ns" "$c")"
		done
	done
}
nft_get() { sed -n "s/^$2\\.$3=//p" "$1"; } # FILE NS COUNTER
nft_delta() { echo $(($(nft_get "$2" "$3" "$4") - $(nft_get "$1" "$3" "$4"))); } # BEFORE AFTER NS C

mac_of() { ip -n "$1" link show dev "$2" | awk '$1 == "link/ether" { print $2 }'; }

# link NS_A DEV_A NS_B DEV_B V4_A V4_B V6_A V6_B: a veth pair with /24 and /64 addresses and
# permanent neighbour entries both ways, so no datagram waits for (or is lost to) ARP/ND.
link() {
	ip link add "$2" netns "$1" type veth peer name "$4" netns "$3" || return 1
	ip -n "$1" addr add "$5/24" dev "$2"
	ip -n "$3" addr add "$6/24" dev "$4"
	ip -n "$1" addr add "$7/64" dev "$2" nodad
	ip -n "$3" addr add "$8/64" dev "$4" nodad
	ip -n "$1" link set "$2" up
	ip -n "$3" link set "$4" up
	pin_neighbours "$@"
}
pin_neighbours() {
	local mac_a mac_b
	mac_a=$(mac_of "$1" "$2")
	mac_b=$(mac_of "$3" "$4")
	[ -n "$mac_a" ] && [ -n "$mac_b" ] || return 1
	ip -n "$1" neigh replace "$6" lladdr "$mac_b" dev "$2" nud permanent &&
		ip -n "$1" neigh replace "$8" lladdr "$mac_b" dev "$2" nud permanent &&
		ip -n "$3" neigh replace "$5" lladdr "$mac_a" dev "$4" nud permanent &&
		ip -n "$3" neigh replace "$7" lladdr "$mac_a" dev "$4" nud permanent
}

# flood NS ADDR COUNT: datagrams to ADDR:$PORT from NS; prints how many the kernel accepted
# (0 if udpflood failed, so that the checks fail rather than the arithmetic).
flood() {
	local n
	n=$(ip netns exec "$1" "$UDPFLOOD" "$2" "$PORT" "$3")
	echo "${n:-0}"
}

# settle NS SEEN4 SEEN6: wait (up to 3 s) until the receiver's input hook has seen that many
# datagrams in total, so that nothing is still queued when we read the counters.
settle() {
	local i
	for i in $(seq 60); do
		[ "$(nft_packets "$1" seen4)" -ge "$2" ] && [ "$(nft_packets "$1" seen6)" -ge "$3" ] &&
			break
		sleep 0.05
	done
	sleep 0.05 # the drop follows its nft counter within the same softirq pass
}

# ---------------------------------------------------------------------------------------------
# Topology: A -> B (veth va/vb), C -> D (veth vc/vd, used by the max_series test). Traffic stays
# inside these namespaces.

NS_A=nsdrops-a$$ NS_B=nsdrops-b$$ NS_C=nsdrops-c$$ NS_D=nsdrops-d$$ NS_L=nsdrops-l$$
DEV_A=va$$ DEV_B=vb$$ DEV_C=vc$$ DEV_D=vd$$
for ns in "$NS_A" "$NS_B" "$NS_C" "$NS_D" "$NS_L"; do
	netns_add "$ns" || skip_all "cannot create network namespaces"
done
link "$NS_A" "$DEV_A" "$NS_B" "$DEV_B" 10.99.0.1 10.99.0.2 fd99::1 fd99::2 ||
	skip_all "cannot create a veth pair"
link "$NS_C" "$DEV_C" "$NS_D" "$DEV_D" 10.98.0.1 10.98.0.2 fd98::1 fd98::2 ||
	skip_all "cannot create a veth pair"
nft_receiver "$NS_B" || skip_all "cannot load the nftables rules"
nft_receiver "$NS_D" || skip_all "cannot load the nftables rules"
INO_B=$(netns_inode "$NS_B")
INO_A=$(netns_inode "$NS_A")
INO_D=$(netns_inode "$NS_D")

# ---------------------------------------------------------------------------------------------
# Tests 1 and 2: labels reason,family,protocol,netns; exact equality with nft in netns B.

# Direct reads need the bpf_rdonly_cast kfunc (Linux 6.2+); without it, the helper program.
DIRECT=count_drop_n # the program for the netns label set
kernel_has_kfunc bpf_rdonly_cast || DIRECT=count_drop_compat
for read in auto false; do
	if start_exporter --config "$(config "netns-$read" 'labels = reason,family,protocol,netns' \
		'max_series = 4096' "direct_read = $read")"; then
		want_prog=$DIRECT
		[ "$read" = false ] && want_prog=count_drop_compat
		check "direct_read=$read: program $want_prog attached" \
			grep -q "attached $want_prog to" "$EXPORTER_LOG"
		# A new series' key is published by its reason, last, with release semantics (an
		# atomic exchange; user space reads it with acquire): in the code the kernel runs.
		check "direct_read=$read: $want_prog publishes a key's reason with an atomic exchange" \
			grep -q 'atomic_xchg((u32 \*)(r[0-9] +8)' <(prog_xlated "$want_prog")
		check "direct_read=$read: $want_prog publishes a key's reason after its other fields" \
			key_published_last < <(prog_xlated "$want_prog")
		# Sampling off: the verifier removed the sampling code behind the test of the rate
		# (bpf/sample.bpf.h), which only count_drop_compat has.
		[ "$want_prog" = count_drop_compat ] &&
			check "direct_read=$read: sampling off, $want_prog has no sampling code" \
				bash -c '! grep -q bpf_ringbuf_reserve' < <(prog_xlated "$want_prog")

		check "direct_read=$read: netns config: drops collector attached" \
			grep -q '^netstack_collector_up{collector="drops"} 1$' <(metrics)
		nft_snapshot "$NS_B" >"$TMP/nft1.before"
		scrape "$TMP/m1.before"
		sent4=$(flood "$NS_A" 10.99.0.2 "$N")
		sent6=$(flood "$NS_A" fd99::2 "$N")
		settle "$NS_B" $(($(nft_get "$TMP/nft1.before" "$NS_B" seen4) + sent4)) \
			$(($(nft_get "$TMP/nft1.before" "$NS_B" seen6) + sent6))
		scrape "$TMP/m1.after"
		nft_snapshot "$NS_B" >"$TMP/nft1.after"
		check_eq "direct_read=$read: udpflood sent all IPv4 datagrams" "$N" "$sent4"
		check_eq "direct_read=$read: udpflood sent all IPv6 datagrams" "$N" "$sent6"

		for fam in 4 6; do
			sent=$((fam == 4 ? sent4 : sent6))
			seen=$(nft_delta "$TMP/nft1.before" "$TMP/nft1.after" "$NS_B" "seen$fam")
			dropped=$(nft_delta "$TMP/nft1.before" "$TMP/nft1.after" "$NS_B" "drop$fam")
			[ "$seen" -eq "$sent" ] ||
				echo "# ipv$fam: $sent sent, $seen reached B's input hook (the rest: 'all udp drops')"
			gt "direct_read=$read ipv$fam: nft dropped some datagrams" "$dropped" 0
			lt "direct_read=$read ipv$fam: nft dropped only a share" "$dropped" "$seen"

			# 1. The rule's counter and the exporter count the same packets.
			got=$(delta "$TMP/m1.before" "$TMP/m1.after" \
				"$(series NETFILTER_DROP "ipv$fam" udp "netns=\"$INO_B\"")")
			check_eq "direct_read=$read ipv$fam: NETFILTER_DROP in netns B equals the nft drop counter" \
				"$dropped" "$got"

			# 2. What the rule let through reaches UDP in B, where no socket has the port.
			got=$(delta "$TMP/m1.before" "$TMP/m1.after" \
				"$(series NO_SOCKET "ipv$fam" udp "netns=\"$INO_B\"")")
			check_eq "direct_read=$read ipv$fam: NO_SOCKET in netns B equals datagrams the rule let through" \
				$((seen - dropped)) "$got"
			# No socket anywhere: each datagram sent is dropped exactly once, in A (on the way
			# out) or in B (NETFILTER_DROP, NO_SOCKET, or a queue on the way in). Normally this is
			# NO_SOCKET == sent - dropped; it stays exact even if a datagram is lost in between.
			got=$(delta "$TMP/m1.before" "$TMP/m1.after" \
				"^${M}[{]reason=\"[^\"]*\",family=\"ipv$fam\",protocol=\"udp\",netns=\"($INO_A|$INO_B)\"[}]\$")
			check_eq "direct_read=$read ipv$fam: all udp drops in netns A and B equal datagrams sent" "$sent" "$got"
		done
		# No [sampling]: not one event sampled (the compat program used to sample regardless).
		check "direct_read=$read: sampling off, no drop sampled" \
			grep -qx 'netstack_events_sampled_total{type="drop"} 0' "$TMP/m1.after"
		stop_exporter
	else
		not_ok "direct_read=$read: netns config: exporter starts"
	fi
done

# ---------------------------------------------------------------------------------------------
# Test 4 (and 6): every optional label.

if start_exporter --config "$(config all \
	'labels = reason,family,protocol,function,netns,interface')"; then
	check "all-labels config: drops collector attached" \
		grep -q '^netstack_collector_up{collector="drops"} 1$' <(metrics)
	nft_snapshot "$NS_B" >"$TMP/nft4.before"
	scrape "$TMP/m4.before"
	sent4=$(flood "$NS_A" 10.99.0.2 "$N")
	sent6=$(flood "$NS_A" fd99::2 "$N")
	settle "$NS_B" $(($(nft_get "$TMP/nft4.before" "$NS_B" seen4) + sent4)) \
		$(($(nft_get "$TMP/nft4.before" "$NS_B" seen6) + sent6))
	scrape "$TMP/m4.after"
	nft_snapshot "$NS_B" >"$TMP/nft4.after"

	for fam in 4 6; do
		dropped=$(nft_delta "$TMP/nft4.before" "$TMP/nft4.after" "$NS_B" "drop$fam")
		# Every NETFILTER_DROP series of this family in netns B, whatever its other labels.
		lines=$(grep -E "^$M\\{reason=\"NETFILTER_DROP\",family=\"ipv$fam\",protocol=\"udp\",function=\"[^\"]*\",netns=\"$INO_B\"," \
			"$TMP/m4.after")
		if [ -n "$lines" ]; then
			ok "ipv$fam: NETFILTER_DROP series with netns=\"$INO_B\" exist"
		else
			not_ok "ipv$fam: NETFILTER_DROP series with netns=\"$INO_B\" exist" \
				"drop series scraped: $(grep -c "^$M{" "$TMP/m4.after")"
		fi
		bad=$(grep -v "interface=\"$DEV_B\"}" <<<"$lines")
		if [ -n "$lines" ] && [ -z "$bad" ]; then
			ok "ipv$fam: they carry interface=\"$DEV_B\""
		else
			not_ok "ipv$fam: they carry interface=\"$DEV_B\"" "${bad:-no series}"
		fi
		fns=$(sed -n 's/.*,function="\([^"]*\)",.*/\1/p' <<<"$lines" | sort -u)
		badfn=""
		for fn in $fns; do
			case $fn in
			*+0x* | 0x* | __overflow__ | __unknown__) badfn+=" $fn" ;;
			*) awk -v f="$fn" '$3 == f && ($2 == "t" || $2 == "T") { found = 1; exit }
				END { exit !found }' /proc/kallsyms || badfn+=" $fn" ;;
			esac
		done
		if [ -n "$fns" ] && [ -z "$badfn" ]; then
			ok "ipv$fam: function label is a kernel text symbol: ${fns//$'\n'/ }"
		else
			not_ok "ipv$fam: function label is a kernel text symbol" \
				"not in /proc/kallsyms or an address/offset:${badfn:- (no series)}"
		fi
		got=$(delta "$TMP/m4.before" "$TMP/m4.after" \
			"$(series NETFILTER_DROP "ipv$fam" udp "function=\"[^\"]*\",netns=\"$INO_B\",interface=\"$DEV_B\"")")
		check_eq "ipv$fam: NETFILTER_DROP summed over function equals the nft drop counter" \
			"$dropped" "$got"
	done
	# Names only: no series anywhere renders a symbol+offset.
	n=$(grep -c "^$M{.*function=\"[^\"]*+0x" "$TMP/m4.after")
	check_eq "no function label has a +0x offset" 0 "$n"
	promtool_ok "promtool check metrics: all labels" "$TMP/m4.after"
	stop_exporter
else
	not_ok "all-labels config: exporter starts"
fi

# ---------------------------------------------------------------------------------------------
# Test 3 (and 6): default labels, no configuration file.

if start_exporter; then
	check "default config: drops collector attached" \
		grep -q '^netstack_collector_up{collector="drops"} 1$' <(metrics)
	scrape "$TMP/m3.before"
	# 127.0.0.1 in a namespace of our own: loopback, and certainly no socket on the port.
	sent=$(ip netns exec "$NS_L" "$UDPFLOOD" 127.0.0.1 "$PORT" "$N")
	sent=${sent:-0}
	sleep 0.1
	scrape "$TMP/m3.after"
	check_eq "loopback: udpflood sent all datagrams" "$N" "$sent"
	# Other host traffic can add NO_SOCKET drops, never take them away.
	ge "loopback: NO_SOCKET ipv4/udp counts every datagram to the closed port" \
		"$(delta "$TMP/m3.before" "$TMP/m3.after" "$(series NO_SOCKET ipv4 udp)")" "$sent"
	total=$(grep -c "^$M{" "$TMP/m3.after")
	plain=$(grep -cE "^$M\\{reason=\"[^\"]+\",family=\"[^\"]+\",protocol=\"[^\"]+\"\\} [0-9]+\$" \
		"$TMP/m3.after")
	if [ "$total" -gt 0 ] && [ "$total" -eq "$plain" ]; then
		ok "default labels: $total series with only reason, family, protocol"
	else
		not_ok "default labels: only reason, family, protocol" \
			"$plain of $total series: $(grep "^$M{" "$TMP/m3.after" | head -5)"
	fi
	promtool_ok "promtool check metrics: default labels" "$TMP/m3.after"
	stop_exporter
else
	not_ok "default config: exporter starts"
fi

# ---------------------------------------------------------------------------------------------
# Test 5 (and 6): max_series = 2 with netns and interface. Drops in B (vb) and D (vd) give at
# least four distinct label tuples, so the hash overflows.

if start_exporter --config "$(config small 'labels = reason,family,protocol,netns,interface' \
	'max_series = 2')"; then
	check "max_series=2: drops collector attached" \
		grep -q '^netstack_collector_up{collector="drops"} 1$' <(metrics)
	# The sums by reason below take in every namespace: other scripts running alongside drop
	# UDP with nftables too. A watching exporter (netns label) brackets the window; one where
	# it saw such drops outside B and D is measured again.
	drop_watch_start || not_ok "max_series=2: the watching exporter starts"
	# The other build's drops.sh reaches this window at the same moment and floods alike, so
	# each measured the other's floods eight times over: one window on the host at a time, and
	# a random pause before measuring again.
	mkdir -p /run/netstack-tests
	exec {window_lock}>/run/netstack-tests/drops-max-series.lock
	flock "$window_lock"
	for try in 1 2 3 4 5 6 7 8; do
		drop_watch "$TMP/w5.before"
		nft_snapshot "$NS_B" "$NS_D" >"$TMP/nft5.before"
		scrape "$TMP/m5.before"
		sentb=$(flood "$NS_A" 10.99.0.2 "$N")
		sentd=$(flood "$NS_C" 10.98.0.2 "$N")
		settle "$NS_B" $(($(nft_get "$TMP/nft5.before" "$NS_B" seen4) + sentb)) 0
		settle "$NS_D" $(($(nft_get "$TMP/nft5.before" "$NS_D" seen4) + sentd)) 0
		scrape "$TMP/m5.after"
		nft_snapshot "$NS_B" "$NS_D" >"$TMP/nft5.after"
		drop_watch "$TMP/w5.after"
		foreign=$(foreign_drops "$TMP/w5.before" "$TMP/w5.after" \
			'reason="NETFILTER_DROP",family="ipv4",protocol="udp"' "$INO_B" "$INO_D")
		[ "$foreign" -eq 0 ] && break
		echo "# max_series=2, window $try: $foreign NETFILTER_DROP ipv4/udp elsewhere: measured again"
		sleep "$((RANDOM % 3)).$((RANDOM % 10))"
	done
	flock -u "$window_lock"

	ovf='^netstack_map_overflow_total[{]map="skb_drops"[}]$'
	gt "max_series=2: netstack_map_overflow_total{map=\"skb_drops\"} grows" \
		"$(delta "$TMP/m5.before" "$TMP/m5.after" "$ovf")" 0
	# With labels the array counts only what the hash had no room for (bpf/drops.bpf.c count).
	check_eq "max_series=2: the overflow count is the sum of the __overflow__ series" \
		"$(fsum "$TMP/m5.after" "$ovf")" \
		"$(fsum "$TMP/m5.after" "^$M[{].*interface=\"__overflow__\"[}]$")"
	n=$(grep -c "^$M{.*,netns=\"__overflow__\",interface=\"__overflow__\"}" "$TMP/m5.after")
	gt "max_series=2: overflow series carry netns and interface \"__overflow__\"" "$n" 0
	n=$(grep "^$M{" "$TMP/m5.after" | grep -c '"__overflow__"')
	m=$(grep "^$M{" "$TMP/m5.after" | grep -c 'netns="__overflow__",interface="__overflow__"}')
	check_eq "max_series=2: __overflow__ always in both optional labels" "$n" "$m"
	n=$(grep "^$M{" "$TMP/m5.after" | grep -vc 'interface="__overflow__"}')
	if [ "$n" -le 2 ]; then
		ok "max_series=2: at most 2 series with real optional labels ($n)"
	else
		not_ok "max_series=2: at most 2 series with real optional labels" \
			"$(grep "^$M{" "$TMP/m5.after" | grep -v '__overflow__')"
	fi
	# Sums by reason are exact even with the hash full (the array keeps them). This counts every
	# NETFILTER_DROP ipv4/udp drop on the host, not only B and D: judged on a window where the
	# watching exporter saw none elsewhere.
	dropped=$(($(nft_delta "$TMP/nft5.before" "$TMP/nft5.after" "$NS_B" drop4) +
		$(nft_delta "$TMP/nft5.before" "$TMP/nft5.after" "$NS_D" drop4)))
	seen=$(($(nft_delta "$TMP/nft5.before" "$TMP/nft5.after" "$NS_B" seen4) +
		$(nft_delta "$TMP/nft5.before" "$TMP/nft5.after" "$NS_D" seen4)))
	gt "max_series=2: nft dropped some datagrams in B and D" "$dropped" 0
	check_eq "max_series=2: NETFILTER_DROP ipv4/udp over all series equals the nft counters" \
		"$dropped" "$(delta "$TMP/m5.before" "$TMP/m5.after" "$(series_any NETFILTER_DROP ipv4 udp)")"
	# NO_SOCKET is common on a host (stray UDP to closed ports), so only a lower bound here.
	ge "max_series=2: NO_SOCKET ipv4/udp over all series counts what the rules let through" \
		"$(delta "$TMP/m5.before" "$TMP/m5.after" "$(series_any NO_SOCKET ipv4 udp)")" \
		$((seen - dropped))
	promtool_ok "promtool check metrics: overflow series" "$TMP/m5.after"
	stop_exporter
else
	not_ok "max_series=2: exporter starts"
fi

# ---------------------------------------------------------------------------------------------
# Test 7: drop_reason = false, the program a kernel without the reason argument gets.

if start_exporter --config "$(config noreason \
	'labels = reason,family,protocol,function,netns,interface' 'drop_reason = false')"; then
	check "drop_reason=false: program count_drop_noreason attached" \
		grep -q "attached count_drop_noreason to" "$EXPORTER_LOG"
	prog_xlated count_drop_noreason >"$TMP/noreason.xlated"
	# Linux 5.10's verifier refuses BPF_XCHG, BPF_CMPXCHG and BPF_FETCH (5.12); a slot is
	# claimed with a hash insert and counted with a plain atomic add (BPF_XADD) instead.
	check "drop_reason=false: count_drop_noreason has no atomic exchange or fetch" \
		bash -c '! grep -qE "atomic(64)?_(xchg|cmpxchg|fetch)" "$1"' _ "$TMP/noreason.xlated"
	check "drop_reason=false: count_drop_noreason counts claims with a plain atomic add" \
		grep -qE 'lock \*\(u32 \*\)\(r[0-9] \+0\) \+= r[0-9]' "$TMP/noreason.xlated"
	nft_snapshot "$NS_B" >"$TMP/nft7.before"
	scrape "$TMP/m7.before"
	sent4=$(flood "$NS_A" 10.99.0.2 "$N")
	sent6=$(flood "$NS_A" fd99::2 "$N")
	settle "$NS_B" $(($(nft_get "$TMP/nft7.before" "$NS_B" seen4) + sent4)) \
		$(($(nft_get "$TMP/nft7.before" "$NS_B" seen6) + sent6))
	scrape "$TMP/m7.after"
	nft_snapshot "$NS_B" >"$TMP/nft7.after"
	n=$(grep "^$M{" "$TMP/m7.after" | grep -vc '^[^{]*{reason="NOT_SPECIFIED",')
	check_eq "drop_reason=false: every series has reason NOT_SPECIFIED" 0 "$n"
	for fam in 4 6; do
		seen=$(nft_delta "$TMP/nft7.before" "$TMP/nft7.after" "$NS_B" "seen$fam")
		dropped=$(nft_delta "$TMP/nft7.before" "$TMP/nft7.after" "$NS_B" "drop$fam")
		gt "drop_reason=false ipv$fam: nft dropped some datagrams" "$dropped" 0
		hook=$(sed -n "s/^$M{reason=\"NOT_SPECIFIED\",family=\"ipv$fam\",protocol=\"udp\",function=\"\(nf_hook_slow\|nft_do_chain\)\",netns=\"$INO_B\",.*/\1/p" \
			"$TMP/m7.after" | sort -u)
		got=$(delta "$TMP/m7.before" "$TMP/m7.after" \
			"$(series NOT_SPECIFIED "ipv$fam" udp "function=\"(nf_hook_slow|nft_do_chain)\",netns=\"$INO_B\",interface=\"$DEV_B\"")")
		check_eq "drop_reason=false ipv$fam: at the netfilter hook (${hook:-none}) in B equals the nft drop counter" \
			"$dropped" "$got"
		got=$(delta "$TMP/m7.before" "$TMP/m7.after" \
			"$(series NOT_SPECIFIED "ipv$fam" udp "function=\"__udp${fam}_lib_rcv\",netns=\"$INO_B\",interface=\"$DEV_B\"")")
		check_eq "drop_reason=false ipv$fam: at __udp${fam}_lib_rcv in B equals what the rule let through" \
			$((seen - dropped)) "$got"
	done
	promtool_ok "promtool check metrics: drop_reason=false" "$TMP/m7.after"
	stop_exporter
else
	not_ok "drop_reason=false: exporter starts"
fi

# max_series = 2: the slots count_drop_noreason claims run out as the others do (test 5's checks,
# but for the sums by reason, which count every kfree_skb on the host here).
if start_exporter --config "$(config noreason-small \
	'labels = reason,family,protocol,netns,interface' 'max_series = 2' 'drop_reason = false')"; then
	scrape "$TMP/m8.before"
	# Four label sets at least: each family in B and in D.
	for addr in 10.99.0.2 fd99::2; do flood "$NS_A" "$addr" 1000 >/dev/null; done
	for addr in 10.98.0.2 fd98::2; do flood "$NS_C" "$addr" 1000 >/dev/null; done
	overflowed() { metrics | grep -q "^$M{.*interface=\"__overflow__\"}"; }
	wait_until 3 overflowed
	scrape "$TMP/m8.after"
	ovf='^netstack_map_overflow_total[{]map="skb_drops"[}]$'
	gt "drop_reason=false, max_series=2: netstack_map_overflow_total{map=\"skb_drops\"} grows" \
		"$(delta "$TMP/m8.before" "$TMP/m8.after" "$ovf")" 0
	check_eq "drop_reason=false, max_series=2: the overflow count is the sum of the __overflow__ series" \
		"$(fsum "$TMP/m8.after" "$ovf")" \
		"$(fsum "$TMP/m8.after" "^${M}[{].*interface=\"__overflow__\"[}]$")"
	n=$(grep "^$M{" "$TMP/m8.after" | grep -vc 'interface="__overflow__"}')
	if [ "$n" -ge 1 ] && [ "$n" -le 2 ]; then
		ok "drop_reason=false, max_series=2: one or two series with real optional labels ($n)"
	else
		not_ok "drop_reason=false, max_series=2: one or two series with real optional labels" \
			"$(grep "^$M{" "$TMP/m8.after" | grep -v '__overflow__')"
	fi
	stop_exporter
else
	not_ok "drop_reason=false, max_series=2: exporter starts"
fi

finish
