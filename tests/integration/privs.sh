#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Least privilege: after start-up the exporter holds exactly the capabilities docs/security.md
# names, with no_new_privs; it starts and collects as an unprivileged user given only those.
# Capabilities, the bounding set and no_new_privs are per thread: every thread is read (the
# HTTP thread, the event consumer, the pod resolver's), at start and after a reload.
# schedule: parallel each
source "$(dirname "$0")/../lib.sh"
require_root_bpf

want=000000c400001000 # CAP_BPF(39) CAP_PERFMON(38) CAP_SYSLOG(34) CAP_NET_ADMIN(12)
caps=+bpf,+perfmon,+net_admin,+syslog

status_of() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
collectors_up() {
	metrics | awk '/^netstack_collector_up/ { n++; up += $2 }
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

# off_threads PID FIELD WANT: "name/tid=value" of each thread whose FIELD is not WANT.
off_threads() {
	local st v bad=""
	for st in /proc/"$1"/task/*/status; do
		v=$(awk -v k="$2:" '$1 == k { print $2 }' "$st" 2>/dev/null)
		[ -n "$v" ] || continue # the thread ended meanwhile
		[ "$v" = "$3" ] ||
			bad+="$(awk '$1 == "Name:" { print $2 }' "$st")/$(basename "$(dirname "$st")")=$v "
	done
	echo "${bad% }"
}
# wait_threads PID N: up to 5 s for at least N threads.
wait_threads() {
	for _ in $(seq 50); do
		[ "$(ls /proc/"$1"/task | wc -l)" -ge "$2" ] && return 0
		sleep 0.1
	done
	return 1
}
# every_thread WHAT CAPS MIN_THREADS: all three sets at CAPS, nothing inheritable or ambient,
# no_new_privs, in every one of at least MIN_THREADS threads.
every_thread() {
	check "$1: at least $3 threads ($(ls /proc/"$EXPORTER_PID"/task | wc -l))" \
		wait_threads "$EXPORTER_PID" "$3"
	for set in CapEff CapPrm CapBnd; do
		check_eq "$1: $set $2 in every thread" "" "$(off_threads "$EXPORTER_PID" $set "$2")"
	done
	for set in CapInh CapAmb; do
		check_eq "$1: no $set in any thread" "" \
			"$(off_threads "$EXPORTER_PID" $set 0000000000000000)"
	done
	check_eq "$1: no_new_privs in every thread" "" "$(off_threads "$EXPORTER_PID" NoNewPrivs 1)"
}
# reload_applied: SIGHUP, then up to 5 s for the log to say it applied.
reload_applied() {
	local n
	n=$(grep -c 'reload: .* applied' "$EXPORTER_LOG")
	kill -HUP "$EXPORTER_PID"
	for _ in $(seq 50); do
		[ "$(grep -c 'reload: .* applied' "$EXPORTER_LOG")" -gt "$n" ] && return 0
		sleep 0.1
	done
	return 1
}

# Sampling on: the event consumer thread runs beside main and HTTP. The reload restarts drops
# (a changed section) and the HTTP daemon (every accepted reload): new threads, same state.
sampling() {
	printf '[collector.drops]\nmax_series = %s\n[sampling]\ndrop_sample_rate = 1\n' \
		"$1" >"$TMP/threads.ini"
	printf 'retrans_sample_rate = 1\nrtt_sample_rate = 1\n' >>"$TMP/threads.ini"
}
sampling 4096
if start_exporter --config "$TMP/threads.ini"; then
	check "sampling: consumer started" grep -q 'sampling: reading events' "$EXPORTER_LOG"
	every_thread "as root, sampling" "$want" 3
	sampling 2048
	check "sampling: reload applied" reload_applied
	every_thread "as root, sampling, after SIGHUP" "$want" 3
	check_eq "sampling, after SIGHUP: every collector up" all "$(collectors_up)"
	kill "$EXPORTER_PID"
else
	not_ok "exporter starts as root with sampling"
fi

# Pod attribution from a (fake) API server adds the resolver's threads (scan, watch) and no
# capability: the kernel walks the processes (a BPF iterator), no /proc/PID/ns/net to read.
APISERVER=$BUILD/tests/fake_apiserver
if [ -x "$APISERVER" ] && openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
	-addext subjectAltName=IP:127.0.0.1 -keyout "$TMP/key.pem" -out "$TMP/cert.pem" \
	>/dev/null 2>&1; then
	echo tok >"$TMP/token"
	printf '{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}\n' \
		>"$TMP/podlist.json"
	: >"$TMP/events.jsonl"
	api_port=$(free_port)
	"$APISERVER" "$api_port" "$TMP/cert.pem" "$TMP/key.pem" "$TMP/podlist.json" \
		"$TMP/events.jsonl" ok tok >"$TMP/api.log" 2>&1 &
	on_exit "kill $!"
	for _ in $(seq 100); do grep -q listening "$TMP/api.log" && break; sleep 0.05; done
	printf '%s\n' '[collector.drops]' 'max_series = 4096' \
		'labels = reason,family,protocol,netns' 'pod_labels = namespace,pod' \
		'[sampling]' 'drop_sample_rate = 1' 'retrans_sample_rate = 1' \
		'[pods]' 'source = kubernetes' "api_url = https://127.0.0.1:$api_port" \
		"token_file = $TMP/token" "ca_file = $TMP/cert.pem" 'node_name = node' \
		'refresh_seconds = 1' >"$TMP/threads.ini"
	if start_exporter --config "$TMP/threads.ini"; then
		check "pods: resolver started" grep -q 'pods: resolving' "$EXPORTER_LOG"
		every_thread "as root, sampling and pods" "$want" 5
		check_eq "pods: the process walk works with them" 1 \
			"$(scrape_sum '^netstack_pods_resolver_up$')"
		sed -i 's/^max_series = .*/max_series = 2048/' "$TMP/threads.ini"
		check "pods: reload applied" reload_applied
		every_thread "as root, sampling and pods, after SIGHUP" "$want" 5
		kill "$EXPORTER_PID"
	else
		not_ok "exporter starts as root with sampling and pods"
	fi
else
	not_ok "pods: fake API server or certificate unavailable (make tools; openssl)"
fi

printf '[security]\nuser = nobody\n[sampling]\ndrop_sample_rate = 1\n' >"$TMP/user.ini"
start_exporter --config "$TMP/user.ini" || { not_ok "exporter starts with user = nobody"; finish; }
check_eq "user = nobody: runs as uid 65534" 65534 "$(status_of "$EXPORTER_PID" Uid)"
check_eq "user = nobody: CapEff" "$want" "$(status_of "$EXPORTER_PID" CapEff)"
every_thread "user = nobody, sampling" "$want" 3
check_eq "user = nobody: uid 65534 in every thread" "" \
	"$(off_threads "$EXPORTER_PID" Uid 65534)"
check_eq "user = nobody: every collector up" all "$(collectors_up)"
"$BUILD/tests/udpflood" 127.0.0.1 9 5 >/dev/null
check "user = nobody: still scrapes drops" \
	grep -q '^netstack_skb_drops_total{reason="NO_SOCKET"' <(metrics)
kill "$EXPORTER_PID"

# user = nobody with pin_path: root pins at start, then hands the pins to the user, so that a
# reload starting (retrans) or restarting (drops) a collector can pin as nobody.
if mkdir "$TMP/bpffs" && mount -t bpf bpf "$TMP/bpffs"; then
	on_exit "umount $TMP/bpffs"
	PIN=$TMP/bpffs/privs$$
	pin_ini() { # LINES...
		printf '%s\n' '[security]' 'user = nobody' '[bpf]' "pin_path = $PIN" "$@" \
			>"$TMP/userpin.ini"
		chmod o+r "$TMP/userpin.ini"
	}
	chmod o+x "$TMP" # nobody reads the file at reload
	pin_ini '[collector.retrans]' 'enabled = false'
	on_exit "$EXPORTER --config $TMP/userpin.ini --unpin"
	if start_exporter --config "$TMP/userpin.ini"; then
		pin_ini '[collector.drops]' 'max_series = 2048'
		check "user = nobody, pin_path: reload applied" reload_applied
		check_eq "... netstack_config_last_reload_successful" 1 \
			"$(scrape_sum '^netstack_config_last_reload_successful$')"
		check_eq "... every collector up, retrans started and drops restarted" all \
			"$(collectors_up)"
		check_eq "... retrans pinned as nobody" 65534 \
			"$(stat -c %u "$PIN/retrans/link_count_retransmit" 2>/dev/null)"
		kill "$EXPORTER_PID"
		wait "$EXPORTER_PID"
	else
		not_ok "exporter starts with user = nobody and pin_path"
	fi
else
	not_ok "mount a bpf filesystem on $TMP/bpffs"
fi

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
