#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The exporter's own seccomp filter ([security] seccomp), and what the log says when a filter
# or a cgroup v1 path stops a collector:
#   1. every thread has the filter (Seccomp: 2, one filter more than this shell), no_new_privs;
#   2. every collector attached; drops counted exactly under the filter (nft's counter);
#   3. a SIGHUP reload that restarts the drops collector works under it, and counts again;
#   4. /metrics over TLS; the exporter exits with status 0 (with sanitizers: the leak check ran);
#   5. seccomp = false: no filter of its own;
#   6. under a filter that denies bpf() with EPERM while the capabilities are held, the log
#      names seccomp, securityContext.seccompProfile and the docs, and no capability;
#   7. rtt pointed at a cgroup path that is not cgroup2: the log says so.
# schedule: parallel each
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
require_root_bpf
UDPFLOOD=$BUILD/tests/udpflood DENY=$BUILD/tests/seccomp_deny
for tool in "$UDPFLOOD" "$DENY"; do
	[ -x "$tool" ] || skip_all "$tool not built (make tools)"
done
for tool in nft curl openssl; do
	command -v "$tool" >/dev/null || skip_all "needs $tool"
done
N=5000
PORT=5556
M=netstack_skb_drops_total

# filters PID_OR_TASK_STATUS: the Seccomp and Seccomp_filters fields of a status file
filters() { awk '$1 == "Seccomp:" { m = $2 } $1 == "Seccomp_filters:" { f = $2 }
	END { print m " " f }' "$1"; }
SHELL_FILTERS=$(filters /proc/$$/status | cut -d' ' -f2)

# every_thread PID MODE FILTERS NNP: how many threads of PID do not show exactly that
every_thread() {
	local t bad=0
	for t in /proc/"$1"/task/*/status; do
		[ "$(filters "$t")" = "$2 $3" ] && grep -q "^NoNewPrivs:[[:space:]]*$4$" "$t" ||
			bad=$((bad + 1))
	done
	echo "$bad"
}
threads() { ls /proc/"$1"/task | wc -l; }
# wait_log REGEX: up to 5 s for a line of the exporter's log
wait_log() {
	for _ in $(seq 100); do
		grep -q "$1" "$EXPORTER_LOG" && return 0
		sleep 0.05
	done
	return 1
}

NS_A=nssecc-a$$ NS_B=nssecc-b$$
netns_add "$NS_A" || skip_all "cannot create network namespaces"
netns_add "$NS_B" || skip_all "cannot create network namespaces"
veth_pair "$NS_A" "$NS_B" || skip_all "cannot create a veth pair"
# B drops every UDP datagram to $PORT in an nft rule that counts them: the reference.
ip netns exec "$NS_B" nft -f - <<-EOF || skip_all "cannot load the nftables rules"
	table inet nssecc {
		counter dropped { }
		chain input {
			type filter hook input priority filter; policy accept;
			meta nfproto ipv4 udp dport $PORT counter name "dropped" drop
		}
	}
EOF
INO_B=$(netns_inode "$NS_B")
nft_dropped() { ip netns exec "$NS_B" nft list counter inet nssecc dropped |
	awk '$1 == "packets" { print $2 }'; }
SERIES="^${M}[{]reason=\"NETFILTER_DROP\",family=\"ipv4\",protocol=\"udp\",netns=\"$INO_B\"[}]\$"

# exact_drops NAME: a flood from A to B, NETFILTER_DROP in B equals nft's counter and all sent
exact_drops() {
	local before after n0 n1 sent
	scrape "$TMP/before"
	n0=$(nft_dropped)
	sent=$(ip netns exec "$NS_A" "$UDPFLOOD" 10.99.0.2 "$PORT" "$N")
	for _ in $(seq 60); do
		[ "$(nft_dropped)" -ge $((n0 + ${sent:-0})) ] && break
		sleep 0.05
	done
	scrape "$TMP/after"
	n1=$(nft_dropped)
	check_eq "$1: udpflood sent every datagram" "$N" "${sent:-0}"
	check_eq "$1: NETFILTER_DROP in netns B equals the nft drop counter" $((n1 - n0)) \
		"$(delta "$TMP/before" "$TMP/after" "$SERIES")"
}

# TLS material: a CA and a server certificate for 127.0.0.1
(cd "$TMP" && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-keyout ca.key -out ca.crt -subj /CN=ca -days 1 2>/dev/null &&
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout srv.key \
		-out srv.csr -subj /CN=127.0.0.1 2>/dev/null &&
	openssl x509 -req -in srv.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 \
		-extfile <(echo subjectAltName=IP:127.0.0.1) -out srv.crt 2>/dev/null) ||
	skip_all "openssl cannot make the test certificates"

INI=$TMP/on.ini
write_ini() { # MAX_SERIES [SECCOMP]
	printf '%s\n' '[web]' "tls_cert_file = $TMP/srv.crt" "tls_key_file = $TMP/srv.key" \
		'[security]' "seccomp = ${2:-true}" \
		'[collector.drops]' 'labels = reason,family,protocol,netns' "max_series = $1" >"$INI"
}

CURL=(curl -sf -m 5 --cacert "$TMP/ca.crt")
scrape() { "${CURL[@]}" "$EXPORTER_URL/metrics" >"$1" || : >"$1"; }
# start_tls [WRAPPER...]: the exporter on $INI over TLS, as start_exporter does over HTTP
start_tls() {
	local port
	port=$(free_port)
	EXPORTER_URL=https://127.0.0.1:$port
	EXPORTER_LOG=$TMP/exporter.$port.log
	"$@" "$EXPORTER" --config "$INI" --web.listen-address "127.0.0.1:$port" >"$EXPORTER_LOG" 2>&1 &
	EXPORTER_PID=$!
	on_exit "kill $EXPORTER_PID; wait $EXPORTER_PID"
	for _ in $(seq 100); do
		"${CURL[@]}" "$EXPORTER_URL/healthz" >/dev/null 2>&1 && return 0
		kill -0 "$EXPORTER_PID" 2>/dev/null || break
		sleep 0.05
	done
	not_ok "the exporter answers over TLS" "$(cat "$EXPORTER_LOG")"
	return 1
}

# ---- 1 to 4: the filter on (the default) ----------------------------------------------------
write_ini 4096
if start_tls; then
	check "the log says the filter is installed" grep -q 'seccomp filter installed on every thread' \
		"$EXPORTER_LOG"
	ge "several threads run" "$(threads "$EXPORTER_PID")" 2
	check_eq "every thread: Seccomp 2, one filter more than this shell, NoNewPrivs 1" 0 \
		"$(every_thread "$EXPORTER_PID" 2 $((SHELL_FILTERS + 1)) 1)"
	scrape "$TMP/m"
	check_eq "/metrics over TLS: every collector up" \
		"connections=1 drops=1 resets=1 retrans=1 rtt=1" \
		"$(sed -n 's/^netstack_collector_up{collector="\([a-z]*\)"} \([0-9]\)$/\1=\2/p' "$TMP/m" |
			sort | paste -sd' ')"
	exact_drops "filter on"

	# 3. A reload that restarts the drops collector (max_series changed) under the filter.
	write_ini 2048
	kill -HUP "$EXPORTER_PID"
	check "reload: the drops collector restarted" wait_log 'reload: collector drops (re)started'
	check "reload: applied" wait_log "reload: $INI applied"
	check_eq "reload: no collector failed" "" "$(grep 'reload: collector .* failed' "$EXPORTER_LOG")"
	exact_drops "after the reload"
	check_eq "after the reload, every thread still confined" 0 \
		"$(every_thread "$EXPORTER_PID" 2 $((SHELL_FILTERS + 1)) 1)"

	# 4. A clean exit under the filter; with sanitizers the leak check needs its own calls.
	kill "$EXPORTER_PID"
	wait "$EXPORTER_PID"
	check_eq "exits with status 0 under the filter" 0 "$?"
	check "the log says it shut down" grep -q 'received SIGTERM, shutting down' "$EXPORTER_LOG"
	check_eq "no sanitizer error at exit" "" "$(grep -m1 'Sanitizer' "$EXPORTER_LOG")"
	stop_exporter
fi

# ---- 5: seccomp = false ---------------------------------------------------------------------
write_ini 4096 false
if start_tls; then
	check_eq "seccomp = false: every thread has only this shell's filters" 0 \
		"$(every_thread "$EXPORTER_PID" "$(filters /proc/$$/status | cut -d' ' -f1)" \
			"$SHELL_FILTERS" 1)"
	check "seccomp = false: no filter installed in the log" \
		bash -c "! grep -q 'seccomp filter installed' '$EXPORTER_LOG'"
	stop_exporter
fi

# ---- 6: a runtime's profile denying bpf() although the capabilities are held -----------------
write_ini 4096
start_tls "$DENY" bpf,perf_event_open
check "denied bpf(): drops cannot load" wait_log 'drops: cannot load BPF programs: Operation not permitted'
scrape "$TMP/m"
check_eq "denied bpf(): no collector up" "" "$(grep '^netstack_collector_up{.*} 1$' "$TMP/m")"
line=$(grep -m1 'drops: cannot load BPF programs' "$EXPORTER_LOG")
check "denied bpf(): the line names a seccomp filter" grep -q 'seccomp filter denies' <<<"$line"
check "denied bpf(): the line names securityContext.seccompProfile and docs/deploy.md#seccomp" \
	grep -q 'securityContext.seccompProfile.*docs/deploy.md#seccomp' <<<"$line"
check "denied bpf(): no load error blames a capability" \
	bash -c "! grep 'cannot load\|cannot attach' '$EXPORTER_LOG' | grep -qi 'capabilit\|CAP_'"
stop_exporter

# ---- 7: rtt on a cgroup path that is not cgroup2 ---------------------------------------------
# /sys/fs/cgroup itself on a hybrid or legacy host (a tmpfs of v1 hierarchies), else a v1
# hierarchy if one is mounted, else a directory here.
V1=/sys/fs/cgroup
[ "$(stat -f -c %T "$V1")" = cgroup2fs ] &&
	V1=$(awk '$3 == "cgroup" { print $2; exit }' /proc/mounts)
[ -n "$V1" ] || V1=$TMP
printf '%s\n' '[collector.rtt]' "cgroup = $V1" >"$TMP/v1.ini"
if start_exporter --config "$TMP/v1.ini"; then
	line=$(grep -m1 "rtt: cgroup $V1 " "$EXPORTER_LOG")
	check "rtt on $V1 ($(stat -f -c %T "$V1")): the log says it is not a cgroup2 mount" \
		grep -q "is not a cgroup2 mount" <<<"$line"
	check "rtt on $V1: the log says what to set" grep -q '\[collector.rtt\] cgroup' <<<"$line"
	check_eq "rtt on $V1: no attach was tried" "" "$(grep 'cannot attach sockops' "$EXPORTER_LOG")"
	stop_exporter
fi
finish
