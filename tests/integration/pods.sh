#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Pod attribution end to end: two "pods" = network namespaces whose process sits in a real
# cgroup v2 directory shaped like kubelet's (cgroupfs layout for one, systemd for the other), a
# PodList + watch served over HTTPS by tests/tools/fake_apiserver, nftables drops in each pod.
#
#   1. Drops carry the right namespace/pod/container labels and equal the nft counters; host
#      drops carry namespace="" pod="".
#   2. A watch DELETED event: after grace_seconds the pod's series are gone, the remainder
#      series (__gone__) took its count, the node total is unchanged.
#   3. API unreachable, slow, garbage, 403: /metrics still served with empty pod labels, the
#      error counted by kind, logged once.
#   4. Cap: more label sets than max_series: exactly max_series ordinary series plus
#      __overflow__ ones, overflow counted, the node total equals the sum of the nft counters.
#   5. RTT and retransmits: pod B's TCP traffic (with losses) carries its namespace/pod labels.
#   6. SIGHUP: rejected or accepted, pod B's series keep their labels; [sampling] applies (events
#      start and stop); keys only a restart applies are named in the log.
#   7. The pod-labels overlay's privileges, rendered by kustomize: the exporter with exactly its
#      capabilities, as uid 65534, in a PID namespace of its own (no hostPID), names both pods'
#      namespace, pod, container and process: the kernel walks the processes, not /proc; again
#      with the walk of kernels without bpf_loop (NETSTACK_TASK_WALK=chunked: tail calls).
# schedule: serial each
# why: the node-wide __gone__ remainder takes other scripts' namespaces
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
require_root_bpf
APISERVER=$BUILD/tests/fake_apiserver
TCPBULK=$BUILD/tests/tcpbulk
UDPFLOOD=$BUILD/tests/udpflood
for t in "$APISERVER" "$UDPFLOOD"; do
	[ -x "$t" ] || skip_all "$t not built (make tools)"
done
for tool in nft curl openssl promtool; do
	command -v "$tool" >/dev/null || skip_all "needs $tool"
done
CG=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
[ -n "$CG" ] || skip_all "no cgroup2 hierarchy mounted"

M=netstack_skb_drops_total
N=300 # datagrams per pod, all dropped by nft in the pod's netns
PORT=5555
NODE=node-$$

uuid() { cat /proc/sys/kernel/random/uuid; }
cid() { od -An -N32 -tx1 /dev/urandom | tr -d ' \n'; }

# pod_netns NS CGROUP_DIR: a namespace with loopback, an nft table that drops UDP to $PORT
# (counter "dropped"), and a sleeping process placed in CGROUP_DIR.
pod_netns() {
	netns_add "$1"
	ip netns exec "$1" nft -f - <<-EOF
		table inet podtest {
			counter dropped { }
			chain input {
				type filter hook input priority filter; policy accept;
				udp dport $PORT counter name "dropped" drop
			}
		}
	EOF
	[ -n "$2" ] || return 0
	mkdir -p "$2" && on_exit "rmdir -p --ignore-fail-on-non-empty $2"
	# Its command name (the process label) is the namespace's: sleep, through a link. It is the
	# namespace's only process whenever a check reads `process` (the label names the
	# lowest-numbered one, and process IDs wrap); it sleeps for as long as the script runs.
	ln -sf "$(command -v sleep)" "$TMP/$1"
	ip netns exec "$1" "$TMP/$1" infinity &
	local pid=$!
	on_exit "kill $pid"
	echo "$pid" >"$2/cgroup.procs"
}
nft_drops() { ip netns exec "$1" nft list counter inet podtest dropped | awk '/packets/ { print $2 }'; }
flood() { ip netns exec "$1" "$UDPFLOOD" 127.0.0.1 "$PORT" "$2" >/dev/null; }
# named NS INO NAMESPACE POD: wait until a scan after the pod list has named NS's pod, so that
# the drops that follow are scraped with its labels: a datagram at a time to a closed port in NS
# (a NO_SOCKET drop: the checks count NETFILTER_DROP) until its series carries them. The list
# starts a scan at once, but a busy machine keeps no fixed pause.
# shellcheck disable=SC2317 # called through check
named() {
	probe_until "$1" "^$M[{]reason=\"NO_SOCKET\".*netns=\"$2\",namespace=\"$3\",pod=\"$4\""
}

# -- fixtures ----------------------------------------------------------------------------------
UID_A=$(uuid) UID_B=$(uuid) CID_A=$(cid) CID_B=$(cid)
NSA=podA$$ NSB=podB$$
# The test's own directories under the cgroup2 root, shaped like kubelet's two drivers.
CGA=$CG/kubepods/burstable/pod$UID_A/$CID_A
SLICE=$CG/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${UID_B//-/_}.slice
CGB=$SLICE/cri-containerd-$CID_B.scope
pod_netns "$NSA" "$CGA"
pod_netns "$NSB" "$CGB"

openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
	-addext subjectAltName=IP:127.0.0.1 -keyout "$TMP/key.pem" -out "$TMP/cert.pem" \
	>/dev/null 2>&1 || skip_all "openssl cannot make a certificate"
TOKEN=tok$$$RANDOM
echo "$TOKEN" >"$TMP/token"

pod_json() { # UID NAMESPACE NAME CONTAINER CID RUNTIME
	printf '{"kind":"Pod","apiVersion":"v1","metadata":{"name":"%s","namespace":"%s","uid":"%s","resourceVersion":"%s"},"spec":{"nodeName":"%s"},"status":{"phase":"Running","containerStatuses":[{"name":"%s","containerID":"%s://%s","ready":true}]}}' \
		"$3" "$2" "$1" "$RANDOM" "$NODE" "$4" "$6" "$5"
}
POD_A=$(pod_json "$UID_A" team-a web-a app-a "$CID_A" containerd)
POD_B=$(pod_json "$UID_B" team-b db-b app-b "$CID_B" containerd)
printf '{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"100"},"items":[%s,%s]}\n' \
	"$POD_A" "$POD_B" >"$TMP/podlist.json"
: >"$TMP/events.jsonl"

# start_api MODE: the fake API server on a free port; sets API_URL, API_LOG.
start_api() {
	local port
	port=$(free_port)
	API_URL=https://127.0.0.1:$port
	API_LOG=$TMP/api.$1.log
	fake_api "$API_LOG" "$port" "$TMP/cert.pem" "$TMP/key.pem" "$TMP/podlist.json" \
		"$TMP/events.jsonl" "$1" "$TOKEN"
}

# config NAME URL [EXTRA LINES...]: drops only, netns folded into pod labels.
config() {
	local f=$TMP/$1.ini url=$2
	shift 2
	printf '%s\n' '[collector.retrans]' 'enabled = false' '[collector.rtt]' 'enabled = false' \
		'[collector.drops]' 'labels = reason,family,protocol,netns' \
		'pod_labels = namespace,pod,container,netns' '[pods]' 'source = kubernetes' \
		"api_url = $url" "token_file = $TMP/token" "ca_file = $TMP/cert.pem" \
		"node_name = $NODE" 'refresh_seconds = 1' 'timeout_seconds = 2' "$@" >"$f"
	echo "$f"
}

# -- 1. labels from the API ----------------------------------------------------------------------
start_api ok || skip_all "fake API server did not start"
start_exporter --config "$(config main "$API_URL" 'grace_seconds = 3')" || exit 1
check "pod list fetched and both pods known" wait_for '^netstack_pods_known$' 2
INO_A=$(netns_inode "$NSA")
INO_B=$(netns_inode "$NSB")
# Both namespaces resolved before any drop: the series are born with their pod labels.
check "pod A named before its drops" named "$NSA" "$INO_A" team-a web-a
check "pod B named before its drops" named "$NSB" "$INO_B" team-b db-b
flood "$NSA" $N
flood "$NSB" $((N * 2))
DA=$(nft_drops "$NSA")
DB=$(nft_drops "$NSB")
# Until both pods' drops are exported (the checks below want them equal, not just there).
wait_for "^$M[{]reason=\"NETFILTER_DROP\".*netns=\"$INO_A\",namespace=\"team-a\",pod=\"web-a\",container=\"app-a\"[}]" "$DA" 5
wait_for "^$M[{]reason=\"NETFILTER_DROP\".*netns=\"$INO_B\",namespace=\"team-b\",pod=\"db-b\",container=\"app-b\"[}]" "$DB" 5
scrape "$TMP/s1"
check_eq "nft dropped every datagram in pod A" "$N" "$DA"
check_eq "pod A (cgroupfs layout) drops carry its labels, equal nft" "$DA" \
	"$(fsum "$TMP/s1" "^$M[{]reason=\"NETFILTER_DROP\".*netns=\"$INO_A\",namespace=\"team-a\",pod=\"web-a\",container=\"app-a\"[}]")"
check_eq "pod B (systemd layout) drops carry its labels, equal nft" "$DB" \
	"$(fsum "$TMP/s1" "^$M[{]reason=\"NETFILTER_DROP\".*netns=\"$INO_B\",namespace=\"team-b\",pod=\"db-b\",container=\"app-b\"[}]")"
check_eq "no pod A drops under other labels" "$DA" \
	"$(fsum "$TMP/s1" "^$M[{]reason=\"NETFILTER_DROP\".*netns=\"$INO_A\"")"
# Host: UDP to a closed port on the host's loopback is NO_SOCKET in the host namespace.
"$UDPFLOOD" 127.0.0.1 9 $N >/dev/null
wait_for "^$M[{]reason=\"NO_SOCKET\",family=\"ipv4\",protocol=\"udp\",netns=\"$(stat -L -c %i /proc/self/ns/net)\",namespace=\"\",pod=\"\",container=\"\"[}]" $N 5
scrape "$TMP/s2"
ge "host drops carry namespace=\"\" pod=\"\"" \
	"$(fsum "$TMP/s2" "^$M[{]reason=\"NO_SOCKET\",family=\"ipv4\",protocol=\"udp\",netns=\"$(stat -L -c %i /proc/self/ns/net)\",namespace=\"\",pod=\"\",container=\"\"[}]")" $N
promtool_ok "promtool accepts the pod-labelled exposition" "$TMP/s2"
check_eq "no API errors" 0 "$(fsum "$TMP/s2" '^netstack_pods_api_errors_total')"
gt "last sync time set" "$(fsum "$TMP/s2" '^netstack_pods_last_sync_timestamp_seconds$')" 0
check "the exporter listed once, then watched from the list's resourceVersion" \
	grep -q 'GET watch rv=100' "$API_LOG"

# -- 2. pod deletion through the watch -----------------------------------------------------------
# The pods' total: host series (namespace="") also count other nftables drops on the machine.
PODS='.*namespace="[^"]'
TOTAL=$(fsum "$TMP/s2" "^$M[{]reason=\"NETFILTER_DROP\"$PODS")
printf '{"type":"DELETED","object":%s}\n' "$(pod_json "$UID_A" team-a web-a app-a "$CID_A" containerd)" \
	>>"$TMP/events.jsonl"
T_DEL=$EPOCHREALTIME
wait_until 5 sum_is '^netstack_pods_known$' 1
scrape "$TMP/s3"
check_eq "within the grace period pod A is still exported" "$DA" \
	"$(fsum "$TMP/s3" "^$M[{]reason=\"NETFILTER_DROP\".*pod=\"web-a\"")"
check_eq "pods known after the DELETED event" 1 "$(fsum "$TMP/s3" '^netstack_pods_known$')"
# Gone by 5 s after the event at the latest (grace_seconds 3, a scan a second), as soon as gone.
a_gone() { ! metrics | grep -q 'pod="web-a"'; }
wait_until "$(awk -v t="$T_DEL" -v now="$EPOCHREALTIME" 'BEGIN { print 5 - (now - t) }')" a_gone
scrape "$TMP/s4"
check_eq "after the grace period pod A's series are gone" 0 \
	"$(grep -c 'pod="web-a"' "$TMP/s4")"
check_eq "its count moved to the __gone__ remainder" "$DA" \
	"$(fsum "$TMP/s4" "^$M[{]reason=\"NETFILTER_DROP\".*pod=\"__gone__\"")"
check_eq "total over the pods and the remainder unchanged" "$TOTAL" \
	"$(fsum "$TMP/s4" "^$M[{]reason=\"NETFILTER_DROP\"$PODS")"
check_eq "pod B untouched" "$DB" "$(fsum "$TMP/s4" "^$M[{]reason=\"NETFILTER_DROP\".*pod=\"db-b\"")"
# New drops in the deleted pod's namespace keep counting into the remainder.
flood "$NSA" 50
wait_for "^$M[{]reason=\"NETFILTER_DROP\".*pod=\"__gone__\"" $((DA + 50)) 5
scrape "$TMP/s5"
check_eq "later drops of the deleted pod go to the remainder" "$((DA + 50))" \
	"$(fsum "$TMP/s5" "^$M[{]reason=\"NETFILTER_DROP\".*pod=\"__gone__\"")"
stop_exporter

# -- 2b. the kubelet's pods endpoint instead of the API server --------------------------------------
seen=$(wc -l <"$API_LOG")
start_exporter --config "$(config kubelet "" 'source = kubelet' "kubelet_url = $API_URL/api/v1/pods")" ||
	exit 1
check "kubelet source: pods known" wait_for '^netstack_pods_known$' 2
check "kubelet source: pod B named" named "$NSB" "$INO_B" team-b db-b
flood "$NSB" 40
wait_for "^$M[{]reason=\"NETFILTER_DROP\".*netns=\"$INO_B\",namespace=\"team-b\",pod=\"db-b\",container=\"app-b\"[}]" 40 5
scrape "$TMP/k1"
check_eq "kubelet source: pod B's drops carry its labels" 40 \
	"$(fsum "$TMP/k1" "^$M[{]reason=\"NETFILTER_DROP\".*netns=\"$INO_B\",namespace=\"team-b\",pod=\"db-b\",container=\"app-b\"[}]")"
# A second poll a refresh_seconds (1 s) after the first: waited for, not assumed by now.
polls() { tail -n +$((seen + 1)) "$API_LOG" | grep -c '^GET list'; }
wait_until 5 eval '[ "$(polls)" -ge 2 ]'
ge "kubelet source: polled every refresh_seconds" "$(polls)" 2
check_eq "kubelet source: never watched" 0 "$(tail -n +$((seen + 1)) "$API_LOG" | grep -c '^GET watch')"
stop_exporter

# -- 3. a broken API server ----------------------------------------------------------------------
# failing KIND MODE|URL: serving goes on with empty pod labels, errors counted, logged once.
failing() {
	local kind=$1 url=$2 before n
	if [ "${url#https}" = "$url" ]; then
		start_api "$url" || return
		url=$API_URL
	fi
	start_exporter --config "$(config "$kind" "$url")" || return
	flood "$NSB" 100
	# Two failures: the second after the back-off (0.8 to 1.6 s), a 2 s timeout when slow.
	wait_for "^netstack_pods_api_errors_total[{]kind=\"$kind\"[}]" 2 10
	scrape "$TMP/f.$kind"
	ge "API $kind: errors counted by kind" \
		"$(fsum "$TMP/f.$kind" "^netstack_pods_api_errors_total[{]kind=\"$kind\"[}]")" 2
	check_eq "API $kind: drops still served, netns only" 100 \
		"$(fsum "$TMP/f.$kind" "^$M[{]reason=\"NETFILTER_DROP\".*netns=\"$INO_B\",namespace=\"\",pod=\"\",container=\"\"[}]")"
	n=$(grep -c "pod source failed ($kind)" "$EXPORTER_LOG")
	check_eq "API $kind: logged once" 1 "$n"
	check_eq "API $kind: no sync" 0 "$(fsum "$TMP/f.$kind" '^netstack_pods_last_sync_timestamp_seconds$')"
	stop_exporter
}
failing connect "https://127.0.0.1:$(free_port)"
failing timeout slow
failing parse garbage
failing forbidden forbidden

# -- 4. the series cap ---------------------------------------------------------------------------
# Five namespaces with drops, max_series = 3, no pod source: labels are netns + process.
MAXS=3
CAPNS=()
for i in 1 2 3 4 5; do
	pod_netns "cap$i$$" ""
	CAPNS+=("cap$i$$")
done
cfg=$TMP/cap.ini
printf '%s\n' '[collector.retrans]' 'enabled = false' '[collector.rtt]' 'enabled = false' \
	'[collector.drops]' 'labels = reason,family,protocol,netns' 'pod_labels = namespace,pod' \
	'[pods]' 'source = none' "max_series = $MAXS" 'refresh_seconds = 1' >"$cfg"
start_exporter --config "$cfg" || exit 1
# A first walk done (the namespaces have no process: it names none of them).
check "cap: the resolver walked" wait_for '^netstack_pods_resolver_up$' 1
# Totals as deltas over a short window: other nftables drops on the host stay out of it.
scrape "$TMP/c0"
for ns in "${CAPNS[@]}"; do flood "$ns" 20; done
want=0
for ns in "${CAPNS[@]}"; do want=$((want + $(nft_drops "$ns"))); done
NODE_RE="^$M[{]reason=\"NETFILTER_DROP\",family=\"ipv4\",protocol=\"udp\""
wait_for "$NODE_RE" $(($(fsum "$TMP/c0" "$NODE_RE") + want)) 5
scrape "$TMP/c1"
check_eq "exactly max_series ordinary series" "$MAXS" \
	"$(grep "^$M{" "$TMP/c1" | grep -vc '__overflow__')"
ge "overflow series present" "$(grep -c "^$M{.*netns=\"__overflow__\",namespace=\"__overflow__\",pod=\"__overflow__\"" "$TMP/c1")" 1
ge "netstack_series_overflow_total counts the folded label sets" \
	"$(fsum "$TMP/c1" "^netstack_series_overflow_total[{]metric=\"$M\"[}]")" 2
check_eq "node total equals the sum of the nft counters" "$want" \
	"$(delta "$TMP/c0" "$TMP/c1" "^$M[{]reason=\"NETFILTER_DROP\",family=\"ipv4\",protocol=\"udp\"")"
promtool_ok "promtool accepts the capped exposition" "$TMP/c1"

# -- 5. RTT and retransmits carry pod labels too ---------------------------------------------------
# Pod B (untouched by the DELETED event above) runs a bulk TCP transfer on its loopback, with
# an nftables rule dropping 1 in 20 of its segments so that some are retransmitted.
start_api ok || exit 1
cfg=$TMP/tcp.ini
printf '%s\n' '[collector.drops]' 'enabled = false' \
	'[collector.retrans]' 'labels = family,kind,state,netns' 'pod_labels = namespace,pod' \
	'[collector.rtt]' 'labels = family,netns' 'pod_labels = namespace,pod' \
	'[pods]' 'source = kubernetes' "api_url = $API_URL" "token_file = $TMP/token" \
	"ca_file = $TMP/cert.pem" "node_name = $NODE" 'refresh_seconds = 1' >"$cfg"
start_exporter --config "$cfg" || exit 1
check "TCP collectors: pod B known" wait_for '^netstack_pods_known$' 1
TPORT=5600
ip netns exec "$NSB" nft add rule inet podtest input tcp dport $TPORT numgen random mod 20 == 0 drop
ip netns exec "$NSB" "$TCPBULK" sink 127.0.0.1 $TPORT >"$TMP/sink.out" &
SINK=$!
on_exit "kill $SINK 2>/dev/null"
wait_grep "$TMP/sink.out" '^listening' 5
ip netns exec "$NSB" "$TCPBULK" send 127.0.0.1 $TPORT 2 >/dev/null
check "RTT samples in pod B carry its namespace and pod" \
	wait_for '^netstack_tcp_rtt_seconds_count[{].*namespace="team-b",pod="db-b"' 1
check "retransmits in pod B carry its namespace and pod" \
	wait_for '^netstack_tcp_retransmits_total[{].*namespace="team-b",pod="db-b"' 1
scrape "$TMP/t1"
check "no TCP series keeps the raw netns label" bash -c "! grep -q '^netstack_tcp_r.*netns=' '$TMP/t1'"
promtool_ok "promtool accepts the pod-labelled TCP exposition" "$TMP/t1"
stop_exporter
# Pod B's namespace keeps only the pod's process: a sink still there would name the `process`
# label of the overlay's checks whenever its process ID is the lower (after a wrap of them).
kill "$SINK"
wait "$SINK" 2>/dev/null

# -- 6. reloads keep pod labels; [sampling] applies; restart-only keys are named ---------------------
: >"$TMP/events.jsonl" # no DELETED event this time
start_api ok || exit 1
RCFG=$(config reload "$API_URL")
cp "$RCFG" "$TMP/reload.base"
start_exporter --config "$RCFG" || exit 1
check "reload: pod B known" wait_for '^netstack_pods_known$' 2
check "reload: pod B named" named "$NSB" "$INO_B" team-b db-b
hup() { # wait until the log has one more reload verdict
	local n
	n=$(grep -c 'reload: .*\(applied\|keeping the running\)' "$EXPORTER_LOG")
	kill -HUP "$EXPORTER_PID"
	for _ in $(seq 200); do
		[ "$(grep -c 'reload: .*\(applied\|keeping the running\)' "$EXPORTER_LOG")" -gt "$n" ] &&
			return 0
		sleep 0.05
	done
	return 1
}
B_SERIES="^$M[{]reason=\"NETFILTER_DROP\".*netns=\"$INO_B\",namespace=\"team-b\",pod=\"db-b\",container=\"app-b\"[}]"
B_BARE="^$M[{]reason=\"NETFILTER_DROP\".*netns=\"$INO_B\",namespace=\"\""
# labelled NAME N: N more of pod B's drops all carry its labels, none lost them.
labelled() {
	local before
	scrape "$TMP/r0"
	flood "$NSB" "$2"
	wait_for "$B_SERIES" $(($(fsum "$TMP/r0" "$B_SERIES") + $2)) 5
	scrape "$TMP/r1"
	check_eq "$1: pod B's new drops carry namespace/pod" "$2" "$(delta "$TMP/r0" "$TMP/r1" "$B_SERIES")"
	check_eq "$1: no series of pod B without them" 0 "$(grep -c "$B_BARE" "$TMP/r1")"
}
labelled "before any reload" 30
# Rejected: an error at the end of the file, after a [pods] section that parsed.
{ cat "$TMP/reload.base"; printf '[sampling]\ndrop_sample_rate = lots\n'; } >"$RCFG"
hup
check "rejected reload: logged" grep -q "reload: $RCFG:[0-9]*: drop_sample_rate: expected a whole number.*keeping the running configuration" "$EXPORTER_LOG"
check_eq "rejected reload: netstack_config_last_reload_successful 0" 0 "$(scrape_sum '^netstack_config_last_reload_successful$')"
labelled "after a rejected reload" 25
curl -sf "$EXPORTER_URL/events" >"$TMP/ev0"
check_eq "sampling off: /events empty" 0 "$(grep -c '"type":"drop"' "$TMP/ev0")"
# Accepted: sampling on, plus keys only a restart applies.
{
	cat "$TMP/reload.base"
	printf '[sampling]\ndrop_sample_rate = 1\ndrop_max_events_per_second = 0\n'
	printf '[web]\nlisten_address = 127.0.0.1:1\n[labels]\nnode = elsewhere\n'
	printf '[security]\nuser = nobody\n[bpf]\npin_path = /sys/fs/bpf/elsewhere\n'
} >"$RCFG"
hup
check "accepted reload: applied" grep -q "reload: $RCFG applied" "$EXPORTER_LOG"
check "accepted reload: drops restarted for [sampling]" grep -q 'reload: collector drops (re)started (\[sampling\] changed)' "$EXPORTER_LOG"
for key in '[bpf] pin_path' '[labels] node' '[security] user'; do
	check "the log names $key as needing a restart" \
		grep -qF "reload: $key changed; it needs a restart" "$EXPORTER_LOG"
done
check "the verdict lists them" grep -qF 'applied; needs a restart: [bpf] pin_path, [labels] node, [security] user' "$EXPORTER_LOG"
check "listen_address in the file under --web.listen-address: the flag wins, nothing to name" \
	bash -c "! grep -q 'listen_address changed' '$EXPORTER_LOG'"
check_eq "accepted reload: netstack_config_last_reload_successful 1" 1 "$(scrape_sum '^netstack_config_last_reload_successful$')"
check_eq "the node label was not applied live" 0 "$(metrics | grep -c 'node="elsewhere"')"
labelled "after an accepted reload" 40
# The events come through the ring buffer, which the consumer reads every 100 ms.
b_events() {
	curl -sf "$EXPORTER_URL/events?type=drop" >"$TMP/ev1"
	[ "$(grep -c "\"type\":\"drop\",.*\"netns\":$INO_B," "$TMP/ev1")" -ge "$1" ]
}
wait_until 5 b_events 40
ge "[sampling] drop_sample_rate = 1 by SIGHUP: /events receives pod B's drops" \
	"$(grep -c "\"type\":\"drop\",.*\"netns\":$INO_B," "$TMP/ev1")" 40
last=$(tail -n 1 "$TMP/ev1" | sed 's/^{"seq":\([0-9]*\),.*/\1/')
# Sampling off again, and a smaller store: the newest events stay, no more come.
{ cat "$TMP/reload.base"; printf '[sampling]\nmax_events = 5\n'; } >"$RCFG"
hup
curl -sf "$EXPORTER_URL/events?type=drop" >"$TMP/ev2"
check_eq "max_events 1000 -> 5 by SIGHUP: 5 events kept" 5 "$(wc -l <"$TMP/ev2")"
# (Host drops sampled meanwhile may be newer still; the oldest would be far below.)
ge "... the newest of them" "$(head -n 1 "$TMP/ev2" | sed 's/^{"seq":\([0-9]*\),.*/\1/')" $((last - 4))
n=$(wc -l <"$TMP/ev2")
labelled "after sampling went off again" 20
sleep 0.5 # a wrongly sampled drop would be in /events by now (the consumer polls every 100 ms)
check_eq "drop_sample_rate back to 0: no new events" "$n" "$(curl -sf "$EXPORTER_URL/events?type=drop" | wc -l)"
# Restarted onto a source that has not answered yet (30 s): what the old one listed still holds.
OK_URL=$API_URL
if start_api slow; then
	sed "s|^api_url = .*|api_url = $API_URL|" "$TMP/reload.base" >"$RCFG"
	hup
	check "api_url changed: the resolver restarted with it" \
		grep -qF "pod source: Kubernetes API $API_URL " "$EXPORTER_LOG"
	labelled "restarted onto a source that has not listed yet" 15
else
	not_ok "a slow fake API server starts"
fi
API_URL=$OK_URL
# Another resolver setting: the resolver restarts with it, labels come back once it listed.
sed 's/^refresh_seconds = 1$/refresh_seconds = 2/' "$TMP/reload.base" >"$RCFG"
hup
check "refresh_seconds changed: the resolver restarted with it" \
	grep -q 'pods: resolving network namespaces every 2s' "$EXPORTER_LOG"
check "... pod B known again" wait_for '^netstack_pods_known$' 2
check "... pod B named again" named "$NSB" "$INO_B" team-b db-b
labelled "after the resolver restarted" 15
# pod_labels narrowed: new filters, the drops collector itself untouched.
sed -e 's/^refresh_seconds = 1$/refresh_seconds = 2/' \
	-e 's/^pod_labels = .*/pod_labels = namespace,pod/' "$TMP/reload.base" >"$RCFG"
hup
check "pod_labels changed: applied without restarting the collector" \
	grep -q 'pods: pod_labels changed, applied' "$EXPORTER_LOG"
flood "$NSB" 10
wait_for "^$M[{]reason=\"NETFILTER_DROP\",family=\"ipv4\",protocol=\"udp\",namespace=\"team-b\",pod=\"db-b\"[}]" 10 5
scrape "$TMP/r2"
ge "pod_labels namespace,pod: pod B's series carry just those" \
	"$(fsum "$TMP/r2" "^$M[{]reason=\"NETFILTER_DROP\",family=\"ipv4\",protocol=\"udp\",namespace=\"team-b\",pod=\"db-b\"[}]")" 10
check_eq "... no series with container or netns any more" 0 "$(grep -c "^$M[{].*\(container\|netns\)=" "$TMP/r2")"
promtool_ok "... and the exposition parses" "$TMP/r2"
check "exporter still running after the reloads" kill -0 "$EXPORTER_PID"
stop_exporter

# -- 7. the pod-labels overlay's privileges ------------------------------------------------------
overlay_pod() { # [chunked]: the walk kernels without bpf_loop run (NETSTACK_TASK_WALK)
	local ovl caps exp ds O=overlay
	[ "${1:-}" = chunked ] && O="overlay, chunked walk"
	for tool in kubectl jq unshare setpriv capsh; do
		command -v "$tool" >/dev/null || {
			echo "!!!!! overlay: needs $tool !!!!!" >&2
			ok "overlay privileges # SKIP needs $tool"
			return
		}
	done
	# What uid 65534 reads (the token, CA and configuration), where it can ($TMP is 0700).
	ovl=$(mktemp -d /tmp/netstack-overlay.XXXXXX) && chmod 755 "$ovl" && on_exit "rm -r $ovl"
	ds=$(kubectl kustomize deploy/kubernetes/overlays/pod-labels | yaml2json |
		jq -c '.[] | select(.kind == "DaemonSet") | .spec.template.spec')
	check_eq "$O: no hostPID" false "$(jq '.hostPID // false' <<<"$ds")"
	caps=$(jq -r '.containers[0].securityContext.capabilities.add | map("+" + ascii_downcase) |
		join(",")' <<<"$ds")
	check_eq "$O: adds capabilities ($caps), drops" '["ALL"]' \
		"$(jq -c '.containers[0].securityContext.capabilities.drop' <<<"$ds")"
	install -m 644 "$TMP/token" "$TMP/cert.pem" "$ovl/"
	sed -e "s|$TMP/|$ovl/|" -e 's/^pod_labels = .*/pod_labels = namespace,pod,container,process,netns/' \
		"$(config overlay "$API_URL")" >"$ovl/overlay.ini"
	chmod 644 "$ovl/overlay.ini"
	printf '#!/bin/sh\nexec unshare --pid --kill-child --mount-proc setpriv --reuid=65534 \\\n' \
		>"$ovl/run"
	printf '\t--regid=65534 --clear-groups --inh-caps=-all,%s --ambient-caps=-all,%s \\\n' \
		"$caps" "$caps" >>"$ovl/run"
	printf '\t--bounding-set=-all,%s --no-new-privs %s "$@"\n' "$caps" "$(realpath "$EXPORTER")" \
		>>"$ovl/run"
	chmod +x "$ovl/run"
	NETSTACK_TASK_WALK=${1:-} EXPORTER=$ovl/run start_exporter --config "$ovl/overlay.ini" || {
		not_ok "$O: the exporter starts with the overlay's privileges"
		return
	}
	# unshare forked it: the exporter is its only child, init of the new PID namespace. unshare
	# blocks SIGTERM while it waits: the exporter is the one to stop.
	exp=$(cat "/proc/$EXPORTER_PID/task/$EXPORTER_PID/children")
	exp=${exp% }
	on_exit "kill $exp"
	check_eq "$O: runs as uid 65534" 65534 "$(awk '$1 == "Uid:" { print $2 }' "/proc/$exp/status")"
	check_eq "$O: holds exactly the overlay's capabilities" \
		"$(tr , '\n' <<<"${caps//+/cap_}" | sort | paste -sd,)" \
		"$(capsh --decode="$(awk '$1 == "CapEff:" { print $2 }' "/proc/$exp/status")" |
			sed 's/.*=//' | tr , '\n' | sort | paste -sd,)"
	check "$O: in a PID namespace of its own" \
		test "$(readlink "/proc/$exp/ns/pid")" != "$(readlink /proc/self/ns/pid)"
	check "$O: pods known" wait_for '^netstack_pods_known$' 2
	check "$O: the kernel's process walk works" wait_for '^netstack_pods_resolver_up$' 1
	[ "${1:-}" = chunked ] && check "$O: the walk runs in chunks of tail calls" \
		grep -q 'pods: no bpf_loop .*chunks of tail calls' "$EXPORTER_LOG"
	# Until a walk after the pod list has named both pods: a datagram at a time, until its drop
	# carries the pod's labels (a fixed pause was too short on a busy machine).
	for ns in "$NSA:$INO_A:team-a:web-a:app-a" "$NSB:$INO_B:team-b:db-b:app-b"; do
		IFS=: read -r p_ns p_ino p_nsp p_pod p_ctr <<<"$ns"
		re="^$M[{]reason=\"NETFILTER_DROP\".*netns=\"$p_ino\",namespace=\"$p_nsp\",pod=\"$p_pod\",container=\"$p_ctr\",process=\"$p_ns\"[}]"
		for _ in $(seq 50); do
			sum_ge "$re" 1 && break
			flood "$p_ns" 1
			sleep 0.2
		done
		check "$O: $p_pod's drops carry its labels once a walk has named it" sum_ge "$re" 1
	done
	scrape "$TMP/o0"
	flood "$NSA" 20
	flood "$NSB" 30
	wait_for "^$M[{]reason=\"NETFILTER_DROP\".*netns=\"$INO_A\",namespace=\"team-a\",pod=\"web-a\",container=\"app-a\",process=\"$NSA\"[}]" $(($(fsum "$TMP/o0" "^$M[{]reason=\"NETFILTER_DROP\".*netns=\"$INO_A\",namespace=\"team-a\",pod=\"web-a\",container=\"app-a\",process=\"$NSA\"[}]") + 20)) 5
	wait_for "^$M[{]reason=\"NETFILTER_DROP\".*netns=\"$INO_B\",namespace=\"team-b\",pod=\"db-b\",container=\"app-b\",process=\"$NSB\"[}]" $(($(fsum "$TMP/o0" "^$M[{]reason=\"NETFILTER_DROP\".*netns=\"$INO_B\",namespace=\"team-b\",pod=\"db-b\",container=\"app-b\",process=\"$NSB\"[}]") + 30)) 5
	scrape "$TMP/o1"
	check_eq "$O: pod A's drops carry its namespace, pod, container and process" 20 \
		"$(delta "$TMP/o0" "$TMP/o1" "^$M[{]reason=\"NETFILTER_DROP\".*netns=\"$INO_A\",namespace=\"team-a\",pod=\"web-a\",container=\"app-a\",process=\"$NSA\"[}]")"
	check_eq "$O: pod B's drops carry its namespace, pod, container and process" 30 \
		"$(delta "$TMP/o0" "$TMP/o1" "^$M[{]reason=\"NETFILTER_DROP\".*netns=\"$INO_B\",namespace=\"team-b\",pod=\"db-b\",container=\"app-b\",process=\"$NSB\"[}]")"
	check_eq "$O: no walk failed" 0 "$(fsum "$TMP/o1" '^netstack_pods_scan_errors_total')"
	kill "$exp"
	wait "$EXPORTER_PID"
}
: >"$TMP/events.jsonl"
start_api ok || exit 1
overlay_pod
# The same with the walk of kernels before 5.17 (no bpf_loop: tail-called chunks).
overlay_pod chunked
finish
