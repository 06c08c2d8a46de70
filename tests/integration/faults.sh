#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Real start-up faults, no test-only code: the drops collector's map cannot be created (a
# memory cgroup too small for max_series = 1048576), the rtt collector loads but cannot attach
# (its cgroup is a plain directory). The other collectors must keep working and the failures
# show as netstack_collector_up 0; --strict turns a failure into exit 1. Every start-up error
# path (collectors, busy port, broken TLS key, unknown user) must exit with nothing leaked:
# run under the ASan build (BUILD=build/asan) for LeakSanitizer to check that.
# schedule: parallel each
source "$(dirname "$0")/../lib.sh"
require_root_bpf

NS=nsfault$$
netns_add "$NS" || {
	not_ok "network namespace"
	finish
}
drop() { ip netns exec "$NS" bash -c "for i in \$(seq $1); do echo x >/dev/udp/127.0.0.1/9; done" 2>/dev/null; }

# ---- a memory cgroup the exporter runs in (v2, else v1) ----
# Its limit: what this build of the exporter peaks at with the default configuration (an
# ASan build takes far more) plus 16 MiB. The drops map at max_series = 1048576 needs about
# 117 MiB of kernel memory, charged to the cgroup: its creation must fail, nothing else.
if grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
	CGROOT=/sys/fs/cgroup LIMIT=memory.max PEAK=memory.peak
elif [ -d /sys/fs/cgroup/memory ]; then
	CGROOT=/sys/fs/cgroup/memory LIMIT=memory.limit_in_bytes PEAK=memory.max_usage_in_bytes
else
	skip_all "needs a memory cgroup (v1 or v2)"
fi
new_cgroup() { # NAME: a fresh memory cgroup, removed at exit; sets CG
	CG=$CGROOT/$1
	mkdir "$CG" || return 1
	on_exit "for _ in \$(seq 50); do rmdir $CG && break; sleep 0.1; done"
}

# run_in_cgroup LOG ARGS...: the exporter in $CG, in the background; sets PID.
run_in_cgroup() {
	local log=$1
	shift
	sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$CG" "$EXPORTER" "$@" \
		>"$log" 2>&1 &
	PID=$!
}
# exit_of PID: RC = its exit status, waiting at most 30 s (not in $(): wait needs the parent).
exit_of() {
	for _ in $(seq 300); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$1" 2>/dev/null && kill -9 "$1"
	wait "$1"
	RC=$?
}

new_cgroup "netstack-base$$" || skip_all "cannot create a memory cgroup"
PORT=$(free_port)
run_in_cgroup "$TMP/base.log" --web.listen-address "127.0.0.1:$PORT"
wait_healthy "http://127.0.0.1:$PORT" "$PID" "$TMP/base.log" exporter &&
	curl -sf "http://127.0.0.1:$PORT/metrics" >/dev/null
kill "$PID"
exit_of "$PID"
peak=$(cat "$CG/$PEAK")
echo "# peak memory of this build with the defaults: $((peak >> 20)) MiB"
new_cgroup "netstack-fault$$" && echo $((peak + (16 << 20))) >"$CG/$LIMIT" || {
	not_ok "memory cgroup with a limit"
	finish
}

cat >"$TMP/faults.ini" <<EOF
[collector.drops]
max_series = 1048576
labels = reason,family,protocol,netns
[collector.rtt]
cgroup = $TMP
EOF

# ---- without --strict: serve what works ----
PORT=$(free_port)
EXPORTER_URL=http://127.0.0.1:$PORT
LOG=$TMP/faults.log
run_in_cgroup "$LOG" --config "$TMP/faults.ini" --web.listen-address "127.0.0.1:$PORT"
on_exit "kill $PID"
wait_healthy "$EXPORTER_URL" "$PID" "$LOG" exporter || {
	not_ok "exporter starts with failing collectors"
	finish
}
check "drops: map creation failed (logged)" grep -q 'drops: cannot load.*Cannot allocate memory' "$LOG"
check "rtt: attach failed: not a cgroup2 mount (logged)" grep -q "rtt: cgroup $TMP is not a cgroup2 mount" "$LOG"
metrics >"$TMP/m1.prom"
check_eq "netstack_collector_up drops 0" 0 "$(fsum "$TMP/m1.prom" '^netstack_collector_up\{collector="drops"\}$')"
check_eq "netstack_collector_up rtt 0" 0 "$(fsum "$TMP/m1.prom" '^netstack_collector_up\{collector="rtt"\}$')"
check_eq "netstack_collector_up retrans 1" 1 "$(fsum "$TMP/m1.prom" '^netstack_collector_up\{collector="retrans"\}$')"
check "no drop series from the failed collector" bash -c "! grep -q '^netstack_skb_drops_total' '$TMP/m1.prom'"
promtool_ok "scrape with failed collectors parses" "$TMP/m1.prom"
# retrans really works: a retransmitting connection must be counted. A SYN to an address
# nobody answers is retransmitted (SYN retransmits, kind syn) after 1 s.
before=$(fsum "$TMP/m1.prom" '^netstack_tcp_retransmits_total\{')
ip -n "$NS" addr add 10.98.0.1/24 dev lo
ip netns exec "$NS" nft add table inet t$$ 2>/dev/null &&
	ip netns exec "$NS" nft add chain inet t$$ in '{ type filter hook input priority 0; }' &&
	ip netns exec "$NS" nft add rule inet t$$ in tcp dport 7 tcp flags syn drop
ip netns exec "$NS" timeout 2.5 bash -c 'exec 3<>/dev/tcp/10.98.0.1/7' 2>/dev/null
metrics >"$TMP/m2.prom"
after=$(fsum "$TMP/m2.prom" '^netstack_tcp_retransmits_total\{')
gt "the working collector counts (SYN retransmits $before -> $after)" "$after" "$before"
kill "$PID"
exit_of "$PID"
check_eq "SIGTERM: exit 0" 0 "$RC"
sanitizer_clean "failed collectors, then SIGTERM" "$LOG"

# ---- --strict: the first failure exits 1, after freeing what was created ----
LOG=$TMP/strict.log
run_in_cgroup "$LOG" --strict --config "$TMP/faults.ini" --web.listen-address "127.0.0.1:$PORT"
exit_of "$PID"
check_eq "--strict with a failing collector: exit 1" 1 "$RC"
check "--strict: log says why" grep -q 'collector drops failed to start; exiting (--strict)' "$LOG"
sanitizer_clean "--strict exit" "$LOG"
printf '[collector.rtt]\ncgroup = %s\n' "$TMP" >"$TMP/rtt.ini"
LOG=$TMP/strict-rtt.log
run_in_cgroup "$LOG" --strict --config "$TMP/rtt.ini" --web.listen-address "127.0.0.1:$PORT"
exit_of "$PID"
check_eq "--strict, failing after two collectors started: exit 1" 1 "$RC"
check "... after drops and retrans attached" grep -q 'retrans: attached' "$LOG"
sanitizer_clean "--strict exit after two collectors started" "$LOG"

# ---- other start-up errors: exit 1, nothing leaked ----
start_exporter || {
	not_ok "a first exporter to hold a port"
	finish
}
busy=${EXPORTER_URL#http://}
"$EXPORTER" --web.listen-address "$busy" >"$TMP/busy.log" 2>&1 &
exit_of $!
check_eq "port in use: exit 1" 1 "$RC"
check "port in use: logged" grep -q "cannot serve on $busy" "$TMP/busy.log"
sanitizer_clean "port in use" "$TMP/busy.log"

printf 'not a certificate\n' >"$TMP/bad.pem"
printf '[web]\ntls_cert_file = %s\ntls_key_file = %s\n' "$TMP/bad.pem" "$TMP/bad.pem" >"$TMP/tls.ini"
"$EXPORTER" --config "$TMP/tls.ini" --web.listen-address "127.0.0.1:$(free_port)" >"$TMP/tls.log" 2>&1 &
exit_of $!
check_eq "broken TLS certificate: exit 1" 1 "$RC"
sanitizer_clean "broken TLS certificate" "$TMP/tls.log"

printf '[security]\nuser = no-such-user-%s\n' "$$" >"$TMP/user.ini"
"$EXPORTER" --config "$TMP/user.ini" --web.listen-address "127.0.0.1:$(free_port)" >"$TMP/user.log" 2>&1 &
exit_of $!
check_eq "unknown user: exit 1" 1 "$RC"
check "unknown user: logged" grep -q "no-such-user-$$" "$TMP/user.log"
sanitizer_clean "unknown user" "$TMP/user.log"
finish
