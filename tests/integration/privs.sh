#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Least privilege: after start-up the exporter holds exactly the capabilities the README
# names, with no_new_privs; it starts and collects as an unprivileged user given only those.
source "$(dirname "$0")/../lib.sh"
require_root_bpf

want=000000c400001000 # CAP_BPF(39) CAP_PERFMON(38) CAP_SYSLOG(34) CAP_NET_ADMIN(12)
caps=+bpf,+perfmon,+net_admin,+syslog

status_of() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
collectors_up() {
	curl -sf "$EXPORTER_URL/metrics" | awk '/^netstack_collector_up/ { n++; up += $2 }
		END { print (n && n == up) ? "all" : up "/" n }'
}

start_exporter || { not_ok "exporter starts as root"; finish; }
for set in CapEff CapPrm CapBnd; do
	check_eq "as root: $set after start-up" "$want" "$(status_of "$EXPORTER_PID" "$set")"
done
check_eq "as root: no inheritable capabilities" 0000000000000000 \
	"$(status_of "$EXPORTER_PID" CapInh)"
check_eq "as root: no_new_privs" 1 "$(status_of "$EXPORTER_PID" NoNewPrivs)"
check_eq "as root: every collector up" all "$(collectors_up)"
kill "$EXPORTER_PID"

printf '[security]\nuser = nobody\n' >"$TMP/user.ini"
start_exporter --config "$TMP/user.ini" || { not_ok "exporter starts with user = nobody"; finish; }
check_eq "user = nobody: runs as uid 65534" 65534 "$(status_of "$EXPORTER_PID" Uid)"
check_eq "user = nobody: CapEff" "$want" "$(status_of "$EXPORTER_PID" CapEff)"
check_eq "user = nobody: every collector up" all "$(collectors_up)"
"$BUILD/tests/udpflood" 127.0.0.1 9 5 >/dev/null
check "user = nobody: still scrapes drops" \
	grep -q '^netstack_skb_drops_total{reason="NO_SOCKET"' <(curl -sf "$EXPORTER_URL/metrics")
kill "$EXPORTER_PID"

# Started unprivileged with only the four capabilities: it must attach everything. setpriv
# execs, so the pid start_exporter records is the exporter's.
printf '#!/bin/sh\nexec setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all,%s \\\n\t--ambient-caps=-all,%s --bounding-set=-all,%s %s "$@"\n' \
	"$caps" "$caps" "$caps" "$(realpath "$EXPORTER")" >"$TMP/unprivileged"
chmod +x "$TMP/unprivileged"
EXPORTER=$TMP/unprivileged
if start_exporter; then
	check_eq "setpriv, four capabilities: every collector up" all "$(collectors_up)"
	check_eq "setpriv: runs as uid 65534" 65534 "$(status_of "$EXPORTER_PID" Uid)"
	check_eq "setpriv: CapEff" "$want" "$(status_of "$EXPORTER_PID" CapEff)"
else
	not_ok "exporter starts under setpriv with only $caps"
fi
finish
