#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Exemplars through the pod-label fold: OpenMetrics (what Prometheus asks for by default), every
# drop and every reset sampled, drops and resets with pod_labels (netns not kept). One "pod", a
# namespace whose process sits in a kubelet-shaped cgroup listed by tests/tools/fake_apiserver,
# drops UDP to itself with nftables and sends itself TCP resets (tests/tools/tcpreset.py).
#
#   1. No raw netns series gets past the fold: every sample of the drop and reset families
#      carries the pod labels, and none a netns label.
#   2. The pod's series count each event once: its drops equal nftables' rule counter, its sent
#      resets the namespace's TcpOutRsts (over the same interval).
#   3. The pod's series carry the exemplar of a sampled event of the pod (its flow); the scrape
#      passes the strict OpenMetrics parser, and the Prometheus text of the same moment promtool.
# On a busy host the kernel can skip a BPF program run (docs/collectors/retrans.md): a round
# whose counts are not exact runs again, up to three times, and the checks use the last round.
# schedule: parallel each
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
require_root_bpf
UDPFLOOD=$BUILD/tests/udpflood
PARSE=tests/tools/strict_parse.py
for t in "$BUILD/tests/fake_apiserver" "$UDPFLOOD"; do
	[ -x "$t" ] || skip_all "$t not built (make tools)"
done
for tool in nft nstat curl openssl promtool /usr/bin/python3; do
	command -v "$tool" >/dev/null || skip_all "needs $tool"
done
/usr/bin/python3 -c 'import prometheus_client.openmetrics.parser' 2>/dev/null ||
	skip_all "needs python3-prometheus-client"
CG=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
[ -n "$CG" ] || skip_all "no cgroup2 hierarchy mounted"
if [ "$(tracepoint_nargs tcp_send_reset)" -lt 3 ]; then
	# Before 6.10 resets sent without a full socket are not seen (docs/collectors/resets.md).
	skip_all "tcp_send_reset has no reason argument: TcpOutRsts is not the reference here"
fi

D=netstack_skb_drops_total S=netstack_tcp_resets_sent_total RCV=netstack_tcp_resets_received_total
DN="$D{reason=\"NETFILTER_DROP\"," # the nftables drops
OM='Accept: application/openmetrics-text; version=1.0.0'
PORT=5555 N=200 NODE=node-$$
NS=pom$$ POD=web-$$ PODNS=team-$$
POD_LABELS="namespace=\"$PODNS\",pod=\"$POD\",container=\"app\""

netns_add "$NS" || skip_all "cannot create a network namespace"
ip netns exec "$NS" nft -f - <<-EOF || skip_all "cannot load the nftables rule"
	table inet pomtest {
		counter dropped { }
		chain input {
			type filter hook input priority filter; policy accept;
			udp dport $PORT counter name "dropped" drop
		}
	}
EOF
nft_drops() { ip netns exec "$NS" nft list counter inet pomtest dropped | awk '/packets/ { print $2 }'; }
rsts() { ip netns exec "$NS" nstat -saz TcpOutRsts | awk '$1 == "TcpOutRsts" { print $2; f = 1 }
	END { if (!f) print 0 }'; }

UID_P=$(cat /proc/sys/kernel/random/uuid)
CID_P=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
CGP=$CG/kubepods/burstable/pod$UID_P/$CID_P
mkdir -p "$CGP" && on_exit "rmdir -p --ignore-fail-on-non-empty $CGP"
ip netns exec "$NS" sleep 1000 &
PROC=$!
on_exit "kill $PROC"
echo "$PROC" >"$CGP/cgroup.procs"

openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
	-addext subjectAltName=IP:127.0.0.1 -keyout "$TMP/key.pem" -out "$TMP/cert.pem" \
	>/dev/null 2>&1 || skip_all "openssl cannot make a certificate"
TOKEN=tok$$$RANDOM
echo "$TOKEN" >"$TMP/token"
printf '{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"100"},"items":[{"kind":"Pod","apiVersion":"v1","metadata":{"name":"%s","namespace":"%s","uid":"%s","resourceVersion":"7"},"spec":{"nodeName":"%s"},"status":{"phase":"Running","containerStatuses":[{"name":"app","containerID":"containerd://%s","ready":true}]}}]}\n' \
	"$POD" "$PODNS" "$UID_P" "$NODE" "$CID_P" >"$TMP/podlist.json"
: >"$TMP/events.jsonl"
APIPORT=$(free_port)
fake_api "$TMP/api.log" "$APIPORT" "$TMP/cert.pem" "$TMP/key.pem" "$TMP/podlist.json" \
	"$TMP/events.jsonl" ok "$TOKEN" || skip_all "fake API server did not start"

printf '%s\n' '[collector.retrans]' 'enabled = false' '[collector.rtt]' 'enabled = false' \
	'[collector.connections]' 'enabled = false' \
	'[collector.drops]' 'labels = reason,family,protocol,netns' \
	'pod_labels = namespace,pod,container' \
	'[collector.resets]' 'labels = family,reason,state,netns' \
	'pod_labels = namespace,pod,container' \
	'[pods]' 'source = kubernetes' "api_url = https://127.0.0.1:$APIPORT" \
	"token_file = $TMP/token" "ca_file = $TMP/cert.pem" "node_name = $NODE" \
	'refresh_seconds = 1' '[sampling]' 'drop_sample_rate = 1' 'drop_max_events_per_second = 0' \
	'reset_sample_rate = 1' 'reset_max_events_per_second = 0' 'max_events = 100000' \
	>"$TMP/pom.ini"
start_exporter --config "$TMP/pom.ini" || exit 1

om() { metrics "$EXPORTER_URL" -H "$OM" >"$1"; }
# psum FILE PREFIX: the pod's samples starting with PREFIX summed (the value follows "} ").
psum() {
	awk -v f="$2" -v p="$POD_LABELS}" 'index($0, f) == 1 && index($0, p) {
		split(substr($0, index($0, p) + length(p) + 1), v, " "); n += v[1] }
	END { print n + 0 }' "$1"
}
# The pod is resolved when a drop of its namespace shows in its series.
resolved() {
	ip netns exec "$NS" "$UDPFLOOD" 127.0.0.1 "$PORT" 1 >/dev/null
	om "$TMP/probe"
	[ "$(psum "$TMP/probe" "$DN")" -gt 0 ]
}
for _ in $(seq 100); do
	resolved && break
	sleep 0.1
done
check "the pod's namespace is resolved (its drops carry its labels)" resolved

# round: N drops and each reset case once per family, between two snapshots of the counters
# and the scrape; true when the exporter's deltas equal the kernel's.
round() {
	local c f
	om "$TMP/before.om"
	B_NFT=$(nft_drops) B_RST=$(rsts)
	ip netns exec "$NS" "$UDPFLOOD" 127.0.0.1 "$PORT" "$N" >/dev/null
	for c in closed abort linger0 timewait; do
		for f in 4 6; do
			ip netns exec "$NS" /usr/bin/python3 tests/tools/tcpreset.py "$c" "$f" >/dev/null ||
				echo "# tcpreset.py $c $f failed"
		done
	done
	A_NFT=$(nft_drops) A_RST=$(rsts)
	om "$TMP/after.om"
	scrape "$TMP/after.prom"
	NFT=$((A_NFT - B_NFT)) RST=$((A_RST - B_RST))
	DROPS=$(($(psum "$TMP/after.om" "$DN") - $(psum "$TMP/before.om" "$DN")))
	SENT=$(($(psum "$TMP/after.om" "$S{") - $(psum "$TMP/before.om" "$S{")))
	[ "$DROPS" -eq "$NFT" ] && [ "$SENT" -eq "$RST" ] && return
	echo "# round: nft +$NFT, pod drops +$DROPS; TcpOutRsts +$RST, pod resets sent +$SENT"
	return 1
}
for i in 1 2 3; do
	round && break
	[ "$i" -lt 3 ] && echo "# round $i was not exact, trying again"
done

# -- 1. nothing raw past the fold ----------------------------------------------------------------
for f in "$D" "$S" "$RCV"; do
	n=$(grep -c "^$f{" "$TMP/after.om")
	gt "OpenMetrics: $f has samples" "$n" 0
	check_eq "OpenMetrics: every sample of $f has the pod labels, none netns" 0 \
		"$(grep "^$f{" "$TMP/after.om" | grep -v 'namespace="[^"]*",pod="' -c)"
	check_eq "OpenMetrics: no sample of $f has a netns label" 0 \
		"$(grep "^$f{" "$TMP/after.om" | grep -c 'netns=')"
done

# -- 2. counted once -----------------------------------------------------------------------------
check_eq "nft dropped every datagram" "$N" "$NFT"
check_eq "the pod's NETFILTER_DROP drops equal nftables' counter" "$NFT" "$DROPS"
check_eq "the cases sent 8 resets in the namespace (TcpOutRsts)" 8 "$RST"
check_eq "the pod's sent resets equal TcpOutRsts" "$RST" "$SENT"
check_eq "Prometheus text of the same moment: the same drops" "$(psum "$TMP/after.om" "$DN")" \
	"$(psum "$TMP/after.prom" "$DN")"

# -- 3. exemplars and parsers --------------------------------------------------------------------
check "the pod's drops carry an exemplar (a UDP flow to $PORT)" \
	grep -q "^$D{reason=\"NETFILTER_DROP\",family=\"ipv4\",protocol=\"udp\",$POD_LABELS} [0-9]* # {saddr=\"127.0.0.1\",daddr=\"127.0.0.1\",sport=\"[0-9]*\",dport=\"$PORT\"} 1.0 [0-9.]*$" \
	"$TMP/after.om"
check "the pod's sent resets carry an exemplar" \
	grep -q "^$S{.*,$POD_LABELS} [0-9]* # {saddr=\"[0-9a-f.:]*\",daddr=" "$TMP/after.om"
if /usr/bin/python3 "$PARSE" openmetrics "$TMP/after.om" >/dev/null 2>"$TMP/om.err"; then
	ok "prometheus_client's OpenMetrics parser accepts the scrape"
else
	not_ok "prometheus_client's OpenMetrics parser accepts the scrape" "$(cat "$TMP/om.err")"
fi
promtool_ok "promtool check metrics accepts the text scrape" "$TMP/after.prom"
finish
