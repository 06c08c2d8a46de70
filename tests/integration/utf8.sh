#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Hostile names end to end: bytes that are not UTF-8 in everything the exporter reads from
# outside, and valid multi-byte names, through every output.
#
#   Namespace B is a "pod" (a cgroup shaped like kubelet's, listed by tests/tools/fake_apiserver
#   with multi-byte namespace, pod and container names, the pod's name also holding a raw 0xff)
#   whose one process renamed itself through prctl(PR_SET_NAME) to "\xff\xfeq", with two veths
#   named "\xff\xfex" and "\xfe\xffx". Namespace C has a veth named "é€<i>". Namespace D is a
#   pod whose every name is hostile: its namespace, pod and container names from the API hold
#   every byte 0x00-0x1f and 0x7f between them, the bytes the pod-label fold once joined label
#   sets with (0x1e, 0x1f), quotes, backslashes, braces and a whole metric line; its process
#   renamed itself to control bytes, quotes, backslash and braces, its veth holds the same (but
#   white space, which the kernel refuses). nftables drops UDP from A in B, C and D; drops carry
#   interface and the pod labels (process included), and every drop is sampled.
#
#   1. Text 0.0.4: promtool check metrics passes, the scrape is valid UTF-8; the two invalid
#      interface names are one series (each maximal invalid subpart became U+FFFD: "��x") whose
#      count is both nft counters together; the valid name is unchanged; the pod labels are
#      namespace="tëam-ü", pod="wéb-�-😀", container="äpp-€", process="��q".
#      D's drops are one series, every control byte U+FFFD, the rest escaped, counting what nft
#      dropped; no line but the exporter's own families' samples and comments.
#   2. OpenMetrics: prometheus_client's strict parser accepts it and reads the same values; the
#      same check of D and of foreign lines.
#   3. /events, /events/top and the JSON lines on stdout: every line valid UTF-8 and strict JSON,
#      the interface names as above (valid UTF-8 raw, not \u00XX per byte).
#   4. The status page: valid UTF-8, the names shown with U+FFFD and "<" escaped.
# schedule: parallel each
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
require_root_bpf
APISERVER=$BUILD/tests/fake_apiserver
UDPFLOOD=$BUILD/tests/udpflood
PARSE=tests/tools/strict_parse.py
for t in "$APISERVER" "$UDPFLOOD"; do
	[ -x "$t" ] || skip_all "$t not built (make tools)"
done
for tool in nft curl openssl promtool /usr/bin/python3; do
	command -v "$tool" >/dev/null || skip_all "needs $tool"
done
/usr/bin/python3 -c 'import prometheus_client.openmetrics.parser' 2>/dev/null ||
	skip_all "needs python3-prometheus-client"
CG=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
[ -n "$CG" ] || skip_all "no cgroup2 hierarchy mounted"
parse() { /usr/bin/python3 "$PARSE" "$@"; }

M=netstack_skb_drops_total
N=200 # datagrams per destination
PORT=5555
NODE=node-$$
R=$'\xef\xbf\xbd' # U+FFFD
# Interface names are per namespace: no suffix needed against parallel tests.
IF_B1=$'\xff\xfex' IF_B2=$'\xfe\xffx' IF_C=$'\xc3\xa9\xe2\x82\xac<i>'
NS=tëam-ü POD=$'w\xc3\xa9b-\xff-\xf0\x9f\x98\x80' CONTAINER=äpp-€
COMM=$'\xff\xfeq'
# D's names. Within the kernel's limits: 15 bytes, no NUL, and an interface name no white
# space. The API's names are JSON: \u0000 ends a C string, so the container name stops there.
IF_D=$'\x1e\x1f\x01"\\{}\x7f'
COMM_D=$'\x1e}\n\x1f"\\{\x02\x7f'
jesc() { for ((i = $1; i <= $2; i++)); do printf '\\u%04x' "$i"; done; }
NS_D_JSON="n$(jesc 1 15)\\u007f" # every control byte once between namespace and container
CONTAINER_D_JSON="c$(jesc 16 31)\\\"\\\\{}\\u0000cut"
POD_D_JSON='p\u001e} 1\nnetstack_injected_total 1\n#\u001fb\"\\{}'
# What they become as label values (U+FFFD for each control byte), escaped as in the text.
rr() { for ((i = 0; i < $1; i++)); do printf '%s' "$R"; done; }
NS_D="n$(rr 16)" CONTAINER_D="c$(rr 16)\\\"\\\\{}"
POD_D="p$R} 1${R}netstack_injected_total 1$R#${R}b\\\"\\\\{}"
COMM_D_L="$R}$R$R\\\"\\\\{$R$R" IF_D_L="$R$R$R\\\"\\\\{}$R"

NSA=u8a$$ NSB=u8b$$ NSC=u8c$$ NSD=u8d$$
for ns in "$NSA" "$NSB" "$NSC" "$NSD"; do
	netns_add "$ns" || skip_all "cannot create network namespaces"
done
# link NS_PEER PEER_NAME SUBNET: a veth from A to NS_PEER, A at .1, the peer at .2.
link() {
	ip link add "ua$3$$" netns "$NSA" type veth peer name "$2" netns "$1" || return 1
	ip -n "$NSA" addr add "10.$3.0.1/24" dev "ua$3$$"
	ip -n "$1" addr add "10.$3.0.2/24" dev "$2"
	ip -n "$NSA" link set "ua$3$$" up
	ip -n "$1" link set "$2" up
}
if ! { link "$NSB" "$IF_B1" 91 && link "$NSB" "$IF_B2" 92 && link "$NSC" "$IF_C" 93 &&
	link "$NSD" "$IF_D" 94; }; then
	skip_all "ip cannot name a veth with these bytes"
fi
check "ip kept the invalid bytes of the interface name" \
	bash -c "ip -n $NSB -o link | grep -qF \"\$1\"" _ "$IF_B1"
for ns in "$NSB" "$NSC" "$NSD"; do
	ip netns exec "$ns" nft -f - <<-EOF || skip_all "cannot load the nftables rules"
		table inet u8test {
			counter d91 { }
			counter d92 { }
			counter d93 { }
			counter d94 { }
			chain input {
				type filter hook input priority filter; policy accept;
				ip daddr 10.91.0.2 udp dport $PORT counter name "d91" drop
				ip daddr 10.92.0.2 udp dport $PORT counter name "d92" drop
				ip daddr 10.93.0.2 udp dport $PORT counter name "d93" drop
				ip daddr 10.94.0.2 udp dport $PORT counter name "d94" drop
			}
		}
	EOF
done
nft_drops() { ip netns exec "$1" nft list counter inet u8test "$2" | awk '/packets/ { print $2 }'; }

# B and D are pods: the only process of each sits in a kubelet-shaped cgroup and renamed itself
# via prctl. pod NS COMM: sets UID and CID.
pod() {
	local cgdir proc
	UID_=$(cat /proc/sys/kernel/random/uuid)
	CID=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
	cgdir=$CG/kubepods/burstable/pod$UID_/$CID
	mkdir -p "$cgdir" && on_exit "rmdir -p --ignore-fail-on-non-empty $cgdir"
	ip netns exec "$1" /usr/bin/python3 -c '
import ctypes, os, sys, time
ctypes.CDLL(None).prctl(15, os.fsencode(sys.argv[1]), 0, 0, 0)  # PR_SET_NAME
time.sleep(1000)' "$2" &
	proc=$!
	on_exit "kill $proc"
	echo "$proc" >"$cgdir/cgroup.procs"
	for _ in $(seq 50); do
		[ "$(cat "/proc/$proc/comm")" = "$2" ] && break
		sleep 0.05
	done
	check "prctl(PR_SET_NAME) set the bytes in $1" [ "$(cat "/proc/$proc/comm")" = "$2" ]
}
pod "$NSB" "$COMM"
UID_B=$UID_ CID_B=$CID
pod "$NSD" "$COMM_D"
UID_D=$UID_ CID_D=$CID

openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
	-addext subjectAltName=IP:127.0.0.1 -keyout "$TMP/key.pem" -out "$TMP/cert.pem" \
	>/dev/null 2>&1 || skip_all "openssl cannot make a certificate"
TOKEN=tok$$$RANDOM
echo "$TOKEN" >"$TMP/token"
podjson() { # NAME NAMESPACE UID CONTAINER CID, JSON-escaped
	printf '{"kind":"Pod","apiVersion":"v1","metadata":{"name":"%s","namespace":"%s","uid":"%s","resourceVersion":"7"},"spec":{"nodeName":"%s"},"status":{"phase":"Running","containerStatuses":[{"name":"%s","containerID":"containerd://%s","ready":true}]}}' \
		"$1" "$2" "$3" "$NODE" "$4" "$5"
}
printf '{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"100"},"items":[%s,%s]}\n' \
	"$(podjson "$POD" "$NS" "$UID_B" "$CONTAINER" "$CID_B")" \
	"$(podjson "$POD_D_JSON" "$NS_D_JSON" "$UID_D" "$CONTAINER_D_JSON" "$CID_D")" \
	>"$TMP/podlist.json"
check "the pod list is JSON" jq -e . "$TMP/podlist.json" >/dev/null
: >"$TMP/events.jsonl"
APIPORT=$(free_port)
"$APISERVER" "$APIPORT" "$TMP/cert.pem" "$TMP/key.pem" "$TMP/podlist.json" "$TMP/events.jsonl" \
	ok "$TOKEN" >"$TMP/api.log" 2>&1 &
on_exit "kill $!"
for _ in $(seq 100); do
	grep -q listening "$TMP/api.log" && break
	sleep 0.05
done

printf '%s\n' '[collector.retrans]' 'enabled = false' '[collector.rtt]' 'enabled = false' \
	'[collector.drops]' 'labels = reason,family,protocol,netns,interface' \
	'pod_labels = namespace,pod,container,process,netns' '[pods]' 'source = kubernetes' \
	"api_url = https://127.0.0.1:$APIPORT" "token_file = $TMP/token" "ca_file = $TMP/cert.pem" \
	"node_name = $NODE" 'refresh_seconds = 1' '[sampling]' 'drop_sample_rate = 1' \
	'drop_max_events_per_second = 0' 'ring_buffer_bytes = 4194304' 'max_events = 100000' \
	'stdout = true' 'stdout_max_per_second = 1000000' \
	>"$TMP/u8.ini"
start_exporter --config "$TMP/u8.ini" || exit 1
for _ in $(seq 100); do
	[ "$(scrape_sum '^netstack_pods_known$')" -ge 2 ] && break
	sleep 0.1
done
INO_B=$(netns_inode "$NSB") INO_C=$(netns_inode "$NSC") INO_D=$(netns_inode "$NSD")
# named NS INO: wait until a scan after the list has named NS's pod, so that its first drops are
# scraped with the pod's labels: a datagram at a time to a closed port on NS's loopback (a
# NO_SOCKET drop: no check here counts those) until its series carries a pod name. A
# fixed pause was a guess at how late a busy machine runs the scan.
# shellcheck disable=SC2317 # called through check
named() {
	probe_until "$1" \
		"^${M}[{]reason=\"NO_SOCKET\",.*netns=\"$2\",interface=\"[^\"]*\",namespace=\"[^\"]"
}
check "pod B named before its first drop" named "$NSB" "$INO_B"
check "pod D named before its first drop" named "$NSD" "$INO_D"
for d in 91 92 93 94; do
	ip netns exec "$NSA" "$UDPFLOOD" "10.$d.0.2" "$PORT" "$N" >/dev/null
done
# Until nft counted them all (the drop is counted in the same softirq pass as the rule).
nft_all() {
	[ "$(($(nft_drops "$NSB" d91) + $(nft_drops "$NSB" d92) + $(nft_drops "$NSC" d93) +
		$(nft_drops "$NSD" d94)))" -ge "$((4 * N))" ]
}
wait_until 10 nft_all
D91=$(nft_drops "$NSB" d91) D92=$(nft_drops "$NSB" d92) D93=$(nft_drops "$NSC" d93)
D94=$(nft_drops "$NSD" d94)
check_eq "nft dropped every datagram" "$((4 * N))" "$((D91 + D92 + D93 + D94))"
D_SERIES="${M}{reason=\"NETFILTER_DROP\",family=\"ipv4\",protocol=\"udp\",netns=\"$INO_D\",interface=\"$IF_D_L\",namespace=\"$NS_D\",pod=\"$POD_D\",container=\"$CONTAINER_D\",process=\"$COMM_D_L\"}"
# fixed FILE SERIES: the values of the samples written exactly SERIES, summed (label values
# may hold spaces and braces: the value is the first field after SERIES).
fixed() {
	S="$2 " awk 'index($0, ENVIRON["S"]) == 1 {
		split(substr($0, length(ENVIRON["S"]) + 1), f, " "); n += f[1] }
	END { print n + 0 }' "$1" # not -v, which would undo the escapes
}
# d_series NAME FILE: D's series as expected, counting what nft dropped (else D's lines shown)
d_series() {
	local got
	got=$(fixed "$2" "$D_SERIES")
	if [ "$got" = "$D94" ]; then
		ok "$1 ($got)"
	else
		not_ok "$1" "expected $D94, got $got: $D_SERIES in" \
			"$(grep -F "netns=\"$INO_D\"" "$2" | cut -c 1-400)"
	fi
}
# foreign FILE: every line that is neither a comment of a family nor a sample of one of the
# families the file declares ("# EOF" aside).
foreign() {
	awk '$1 == "#" && ($2 == "TYPE" || $2 == "HELP") { if ($2 == "TYPE") fam[$3] = 1; next }
	$0 == "# EOF" { next }
	{ n = $0; sub(/[{ ].*/, "", n); b = n; sub(/_(bucket|sum|count|total|created)$/, "", b)
	  if (!(n in fam) && !(b in fam)) print }' "$1"
}
# no_foreign NAME FILE: the check of foreign(), showing what it found
no_foreign() {
	local lines
	lines=$(foreign "$2" | head -n 5 | cat -A | cut -c 1-200)
	if [ -z "$lines" ]; then ok "$1"; else not_ok "$1" "$lines"; fi
}

# -- 1. Prometheus text ----------------------------------------------------------------------
scrape "$TMP/m.prom"
promtool_ok "promtool check metrics accepts the scrape" "$TMP/m.prom"
check "the text scrape is valid UTF-8" parse utf8 "$TMP/m.prom"
PODLABELS="namespace=\"$NS\",pod=\"w\xc3\xa9b-$R-\xf0\x9f\x98\x80\",container=\"$CONTAINER\",process=\"$R${R}q\""
PODLABELS=$(printf '%b' "$PODLABELS")
B_SERIES="^${M}[{]reason=\"NETFILTER_DROP\",family=\"ipv4\",protocol=\"udp\",netns=\"$INO_B\",interface=\"$R${R}x\",${PODLABELS}[}]"
check_eq "both invalid interface names are one series (\"$R${R}x\")" 1 \
	"$(grep -c "$B_SERIES" "$TMP/m.prom")"
check_eq "which counts the drops of both, with the pod labels made valid" "$((D91 + D92))" \
	"$(fsum "$TMP/m.prom" "$B_SERIES")"
check_eq "a valid multi-byte interface name passes unchanged" "$D93" \
	"$(fsum "$TMP/m.prom" "^${M}[{]reason=\"NETFILTER_DROP\",family=\"ipv4\",protocol=\"udp\",netns=\"$INO_C\",interface=\"$IF_C\",")"
check_eq "no byte of the invalid names reached the scrape" 0 \
	"$(LC_ALL=C grep -c $'[\xfe\xff]' "$TMP/m.prom")"
d_series "D's hostile names are one series, each control byte U+FFFD, counting nft's drops" \
	"$TMP/m.prom"
check_eq "no control byte reached the scrape" 0 "$(LC_ALL=C grep -c $'[\x01-\x09\x0b-\x1f\x7f]' "$TMP/m.prom")"
no_foreign "no line but the exporter's own families' comments and samples" "$TMP/m.prom"

# -- 2. OpenMetrics ----------------------------------------------------------------------------
metrics "$EXPORTER_URL" -H 'Accept: application/openmetrics-text; version=1.0.0' \
	>"$TMP/m.om"
if parse openmetrics "$TMP/m.om" >"$TMP/m.om.samples" 2>"$TMP/m.om.err"; then
	ok "prometheus_client's OpenMetrics parser accepts the scrape"
else
	not_ok "prometheus_client's OpenMetrics parser accepts the scrape" "$(cat "$TMP/m.om.err")"
fi
check_eq "OpenMetrics: the parsed labels are the valid names" "$((D91 + D92))" \
	"$(fsum "$TMP/m.om.samples" "^${M}[{]reason=\"NETFILTER_DROP\",family=\"ipv4\",protocol=\"udp\",netns=\"$INO_B\",interface=\"$R${R}x\",${PODLABELS}[}]")"
check "OpenMetrics: with exemplars, which name the flow" grep -q " # {saddr=" "$TMP/m.om"
d_series "OpenMetrics: D's series counts nft's drops" "$TMP/m.om"
no_foreign "OpenMetrics: no line but the exporter's own families' comments and samples" \
	"$TMP/m.om"
metrics "$EXPORTER_URL" -H 'Accept-Encoding: gzip' | gzip -dc >"$TMP/m.gz.prom"
promtool_ok "promtool accepts the gzipped scrape" "$TMP/m.gz.prom"

# -- 3. JSON -----------------------------------------------------------------------------------
curl -sf "$EXPORTER_URL/events" >"$TMP/events"
n=$(parse jsonl "$TMP/events" 2>"$TMP/events.err")
check_eq "every /events line is strict JSON in valid UTF-8 $(cat "$TMP/events.err")" \
	"$(wc -l <"$TMP/events")" "${n:-0}"
# ifcount FILE NAME NETNS: the test's drops among the events (JSON lines) on interface NAME of
# NETNS (another instance of this test may run alongside, with the same names).
ifcount() {
	/usr/bin/python3 -c '
import json, sys
n = 0
for line in open(sys.argv[1], encoding="utf-8"):
    if not line.startswith("{"):
        continue
    e = json.loads(line)
    if e.get("interface") == sys.argv[2] and e.get("reason") == "NETFILTER_DROP" and \
            e.get("dport") == int(sys.argv[3]) and e.get("netns") == int(sys.argv[4]):
        n += 1
print(n)' "$1" "$2" "$PORT" "$3"
}
check_eq "/events: the invalid names as U+FFFD" "$((D91 + D92))" \
	"$(ifcount "$TMP/events" "$R${R}x" "$INO_B")"
check_eq "/events: the valid multi-byte name raw" "$D93" "$(ifcount "$TMP/events" "$IF_C" "$INO_C")"
curl -sf "$EXPORTER_URL/events/top" >"$TMP/top"
check "/events/top is strict JSON in valid UTF-8" parse json "$TMP/top"
n=$(parse jsonl "$EXPORTER_LOG" 2>"$TMP/log.err")
ge "stdout: every event line is strict JSON in valid UTF-8 $(cat "$TMP/log.err")" "${n:-0}" \
	"$((3 * N))"
check_eq "stdout: the invalid names as U+FFFD" "$((D91 + D92))" \
	"$(ifcount "$EXPORTER_LOG" "$R${R}x" "$INO_B")"

# -- 4. the status page ------------------------------------------------------------------------
# It lists the latest 20 events of the host, where other traffic is sampled too (a script
# alongside may drop a thousand packets a second for a minute): each view is taken while drops
# on both names keep coming, until views showed each name, in our namespace (a row a line).
SHOW_B=" on $R${R}x</td>" SHOW_C=" on $(printf '\xc3\xa9\xe2\x82\xac')&lt;i&gt;</td>"
shows() { # FILE NETNS TEXT: a row of NETNS's with TEXT
	T=$3 awk -v ns="<td>$2</td>" 'index($0, ns) && index($0, ENVIRON["T"]) { f = 1 } END { exit !f }' "$1"
}
: >"$TMP/status.all"
for i in $(seq 120); do # long enough to outlast a flood of a script alongside
	# 20 drops a name at a time until the view is taken, 0.3 s on (the consumer polls the
	# ring buffer every 100 ms).
	ip netns exec "$NSA" bash -c 'while :; do
		for d in 91 93; do "$1" "10.$d.0.2" "$2" 20 >/dev/null; done
	done' _ "$UDPFLOOD" "$PORT" &
	flow=$!
	sleep 0.3
	curl -sf "$EXPORTER_URL/" >"$TMP/status.html"
	kill "$flow" 2>/dev/null
	wait "$flow" 2>/dev/null
	parse utf8 "$TMP/status.html" || cp "$TMP/status.html" "$TMP/status.bad"
	cat "$TMP/status.html" >>"$TMP/status.all"
	shows "$TMP/status.all" "$INO_B" "$SHOW_B" && shows "$TMP/status.all" "$INO_C" "$SHOW_C" && break
done
check "every view of the status page is valid UTF-8" [ ! -e "$TMP/status.bad" ]
check "the status page shows the invalid name with U+FFFD" shows "$TMP/status.all" "$INO_B" "$SHOW_B"
check "the status page shows the valid name, '<' escaped" shows "$TMP/status.all" "$INO_C" "$SHOW_C"
finish
