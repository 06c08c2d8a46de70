#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The pod source's Kubernetes API client against tests/tools/fake_apiserver, one misbehaviour
# per mode, the requests it logs (with their times) checked against client-go's reflector:
#
#   1. Paging: LIST rv=0&limit=500, continue pages without rv, then a WATCH from the list's rv
#      with bookmarks; an expired continue token: the whole list at once; a server that
#      ignores limit (the watch cache at rv=0): one request.
#   2. Side by side for WINDOW s, one exporter per mode: a watch closing at once, an empty 200, 410
#      as the watch's status and in an ERROR event, an ERROR 500, a NUL byte, a 429: a handful
#      of LISTs, spaced by the back-off (0.8 s doubling, jitter up to 2x); relists at the last
#      resourceVersion, unpaged (a 410 there: at once from etcd, paged); a 429 watches again
#      without listing; BOOKMARKs move the next watch's resourceVersion and watches the server
#      ends are renewed without a list; events cut in 7-byte chunks apply.
#   3. TLS: in a mount namespace whose system CA store trusts the fake server, a missing
#      ca_file or another CA fails closed (nothing sent); an http:// URL while a token would be
#      sent is refused naming the key; http:// without a token works.
#   4. Metrics: requests by verb and code (counted on across a reload that restarts the
#      resolver), the watch's age; promtool accepts them.
#   5. Peak memory (VmHWM) with 10 000 pods on the node, and with 10 000 in the list of which
#      100 are the node's, against the exporter's with 2 pods.
# schedule: serial each
# why: back-off gaps and a relist 'at once' (< 500 ms) are timed
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
require_root_bpf
[ -x "$BUILD/tests/fake_apiserver" ] || skip_all "$BUILD/tests/fake_apiserver not built (make tools)"
for tool in curl openssl promtool unshare; do
	command -v "$tool" >/dev/null || skip_all "needs $tool"
done

NODE=node-$$
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
	-addext subjectAltName=IP:127.0.0.1 -keyout "$TMP/key.pem" -out "$TMP/cert.pem" \
	>/dev/null 2>&1 || skip_all "openssl cannot make a certificate"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=other -keyout "$TMP/other.key" \
	-out "$TMP/other.pem" >/dev/null 2>&1 || skip_all "openssl cannot make a certificate"
TOKEN=tok$$$RANDOM
echo "$TOKEN" >"$TMP/token"

# podlist FILE COUNT ON_NODE: a PodList (rv 100) of COUNT pods, the first ON_NODE of them on
# $NODE, each with ~2 KB of managedFields-like bulk as real pods carry; FILE.pods: one a line.
podlist() {
	awk -v n="$2" -v on="$3" -v node="$NODE" 'BEGIN {
		bulk = "\"managedFields\":[{\"manager\":\"kubelet\",\"fieldsV1\":{\"f:status\":\""
		for (i = 0; i < 40; i++) bulk = bulk "f:conditions.k:{type:Ready}.f:lastProbeTime "
		bulk = bulk "\"}}]"
		for (i = 0; i < n; i++)
			printf "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"p%d\",\"namespace\":\"ns%d\",\"uid\":\"%08x-0000-4000-8000-%012x\",\"resourceVersion\":\"%d\",%s},\"spec\":{\"nodeName\":\"%s\"},\"status\":{\"phase\":\"Running\",\"containerStatuses\":[{\"name\":\"c\",\"containerID\":\"containerd://%064x\"}]}}\n",
				i, i % 50, i, i, 50 + i, bulk, i < on ? node : "other", i
	}' >"$1.pods"
	{
		printf '{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"100"},"items":['
		paste -sd, "$1.pods"
		printf ']}\n'
	} >"$1"
}
podlist "$TMP/two.json" 2 2
: >"$TMP/none.jsonl"

# api NAME MODE [PODLIST] [EVENTS] [CERT]: a fake API server; sets API_URL, API_LOG.
api() {
	local port cert=${5:-$TMP/cert.pem} scheme=https token=$TOKEN
	[ "$cert" = - ] && scheme=http token=
	port=$(free_port)
	API_URL=$scheme://127.0.0.1:$port
	API_LOG=$TMP/api.$1.log
	# shellcheck disable=SC2086 # no token: no argument
	fake_api "$API_LOG" "$port" "$cert" "$TMP/key.pem" "${3:-$TMP/two.json}" \
		"${4:-$TMP/none.jsonl}" "$2" $token
}

# exporter NAME URL [INI LINES...]: an exporter following URL; sets EXPORTER_*.
exporter() {
	local f=$TMP/$1.ini url=$2
	shift 2
	printf '%s\n' '[collector.retrans]' 'enabled = false' '[collector.rtt]' 'enabled = false' \
		'[collector.drops]' 'labels = reason,family,protocol,netns' \
		'pod_labels = namespace,pod,netns' '[pods]' 'source = kubernetes' "api_url = $url" \
		"token_file = $TMP/token" "ca_file = $TMP/cert.pem" "node_name = $NODE" \
		'refresh_seconds = 1' 'timeout_seconds = 2' "$@" >"$f"
	start_exporter --config "$f"
}

# Part 2 measures request rates over time, so it keeps a window, as short as its checks allow:
# the back-off's upper bound (jitter 2x) puts a third list at most 1.6 + 3.2 s after the first,
# and 10 s leave room for the exporters started one after another and a loaded machine. The
# bounds follow the window exactly: BACKOFF_MAX requests at most (the back-off's lower bound,
# 0.8 s * 2^i between them, fits no more in WINDOW s: 5 in 20 s, 4 in 10 s), and watches that a
# server ends every 2 s renewed at least 8 times in 20 s, i.e. 2 * WINDOW / 5.
WINDOW=10
BACKOFF_MAX=$(awk -v w="$WINDOW" 'BEGIN { n = 1; t = 0.8; while (t <= w) { n++; t += 0.8 * 2 ^ (n - 1) } print n }')
# reqs LOG VERB: that verb's request lines; within LOG VERB: the times (t=) of those in the
# WINDOW s from the first.
reqs() { grep "^GET $2 " "$1"; }
within() {
	reqs "$1" "$2" | sed 's/.* t=\([0-9.]*\).*/\1/' |
		awk -v w="$WINDOW" 'NR == 1 { t0 = $1 } $1 - t0 <= w'
}
# spaced NAME LOG VERB MAX: at most MAX such requests in WINDOW s, each gap at least the
# back-off's lower bound 0.8 s * 2^i, and longer than the one before (the jittered ranges do
# not overlap).
spaced() {
	local n gaps
	n=$(within "$2" "$3" | wc -l)
	le "$1: at most $4 ${3}s in $WINDOW s" "$n" "$4"
	gaps=$(within "$2" "$3" | awk 'NR > 1 { printf "%.3f ", $1 - prev } { prev = $1 }')
	check "$1: ${3}s spaced by a growing back-off (gaps: $gaps)" awk -v g="$gaps" 'BEGIN {
		n = split(g, d, " ")
		if (n < 2) exit 1
		for (i = 1; i <= n; i++) {
			if (d[i] < 0.8 * 2 ^ (i - 1) - 0.05) exit 1
			if (i > 1 && d[i] < d[i - 1] - 0.1) exit 1
		}
	}'
}

# -- 1. paging -------------------------------------------------------------------------------------
podlist "$TMP/1200.json" 1200 1200
api paging paging "$TMP/1200.json" || skip_all "fake API server did not start"
exporter paging "$API_URL" || exit 1
check "paging: 1200 pods known" wait_for '^netstack_pods_known$' 1200
wait_for '^netstack_pods_watch_age_seconds$' 1 5
scrape "$TMP/p1"
check_eq "paging: the first page from the cache (rv=0), then continue pages without rv" \
	"rv=0 limit=500 continue=- rv=- limit=500 continue=c500 rv=- limit=500 continue=c1000" \
	"$(reqs "$API_LOG" list | head -n 3 | awk '{ printf "%s%s %s %s", (NR > 1 ? " " : ""), $3, $4, $5 }')"
# shellcheck disable=SC2016
check "paging: then a watch from the list's rv with bookmarks, timeout in [300, 600)" \
	awk '$2 == "watch" { split($5, t, "="); exit !($3 == "rv=100" && $4 == "bookmarks=true" &&
		t[2] >= 300 && t[2] < 600) }' <(reqs "$API_LOG" watch | head -n 1)
check_eq "paging: list requests counted by verb and code" 3 \
	"$(fsum "$TMP/p1" '^netstack_pods_api_requests_total[{]verb="list",code="200"[}]')"
ge "paging: the watch's age" "$(fsum "$TMP/p1" '^netstack_pods_watch_age_seconds$')" 1
check_eq "paging: no errors" 0 "$(fsum "$TMP/p1" '^netstack_pods_api_errors_total')"
promtool_ok "paging: promtool accepts the API metrics" "$TMP/p1"
# A reload that restarts the resolver (another refresh_seconds): a new client counts on.
sed -i 's/^refresh_seconds = 1$/refresh_seconds = 2/' "$TMP/paging.ini"
kill -HUP "$EXPORTER_PID"
check "reload: the resolver restarted" bash -c "for _ in \$(seq 100); do
	grep -q 'resolving network namespaces every 2s' '$EXPORTER_LOG' && exit; sleep 0.05; done; exit 1"
check "reload: the three pages again, counted on from 3" \
	wait_for '^netstack_pods_api_requests_total[{]verb="list",code="200"[}]' 6
stop_exporter

api expire paging,expire "$TMP/1200.json" || exit 1
exporter expire "$API_URL" || exit 1
check "expired continue token: 1200 pods known" wait_for '^netstack_pods_known$' 1200
check_eq "expired continue token: the whole list at the list's rv, in one" \
	"rv=0 limit=500 continue=- rv=- limit=500 continue=c500 rv=0 limit=- continue=-" \
	"$(reqs "$API_LOG" list | head -n 3 | awk '{ printf "%s%s %s %s", (NR > 1 ? " " : ""), $3, $4, $5 }')"
check_eq "expired continue token: counted as gone" 1 \
	"$(scrape_sum '^netstack_pods_api_errors_total[{]kind="gone"[}]')"
stop_exporter

api cache ok "$TMP/1200.json" || exit 1
exporter cache "$API_URL" || exit 1
check "limit ignored (the watch cache at rv=0): 1200 pods known" wait_for '^netstack_pods_known$' 1200
# Past the list: once it watches, a second list would be a retry of a list that worked.
wait_grep "$API_LOG" '^GET watch '
check_eq "limit ignored: one list request" 1 "$(reqs "$API_LOG" list | wc -l)"
stop_exporter

# -- 2. misbehaving watches, side by side ------------------------------------------------------------
declare -A URL PID ALOG
run() { # NAME MODE [EVENTS]
	api "$1" "$2" "$TMP/two.json" "${3:-$TMP/none.jsonl}" || return 1
	exporter "$1" "$API_URL" || return 1
	URL[$1]=$EXPORTER_URL PID[$1]=$EXPORTER_PID ALOG[$1]=$API_LOG
}
: >"$TMP/split.jsonl"
MODES=(close empty gone gone_event error_event nul throttle bookmark split relist_gone)
for m in "${MODES[@]}"; do
	case $m in
	bookmark) run "$m" bookmark,watch_seconds=2 ;;
	relist_gone) run "$m" gone,list_gone ;;
	split) run "$m" split "$TMP/split.jsonl" ;;
	*) run "$m" "$m" ;;
	esac || exit 1
done
T0=$(date +%s.%N)
# Split: a new pod, then a deletion, each event in 7-byte chunks 20 ms apart.
EXPORTER_URL=${URL[split]}
wait_for '^netstack_pods_known$' 2 5
podlist "$TMP/three.json" 3 3
echo "{\"type\":\"ADDED\",\"object\":$(sed -n 3p "$TMP/three.json.pods")}" >>"$TMP/split.jsonl"
check "split chunks: an ADDED event applies" wait_for '^netstack_pods_known$' 3 10
echo "{\"type\":\"DELETED\",\"object\":$(sed -n 1p "$TMP/three.json.pods")}" >>"$TMP/split.jsonl"
for _ in $(seq 100); do
	[ "$(scrape_sum '^netstack_pods_known$')" -eq 2 ] && break
	sleep 0.1
done
check_eq "split chunks: a DELETED event applies" 2 "$(scrape_sum '^netstack_pods_known$')"
sleep "$(awk -v t0="$T0" -v now="$(date +%s.%N)" -v w="$WINDOW" 'BEGIN { d = w - (now - t0); print (d > 0 ? d : 0) }')"
for m in "${MODES[@]}"; do
	scrape "$TMP/m.$m" "${URL[$m]}"
	kill "${PID[$m]}"
	wait "${PID[$m]}"
done
err() { fsum "$TMP/m.$1" "^netstack_pods_api_errors_total[{]kind=\"$2\"[}]"; }
for m in close empty; do
	spaced "watch closing at once ($m)" "${ALOG[$m]}" list "$BACKOFF_MAX"
	ge "watch closing at once ($m): at least 3 lists in $WINDOW s (back-off not stuck)" \
		"$(within "${ALOG[$m]}" list | wc -l)" 3
	le "watch closing at once ($m): no more watches than lists" \
		"$(reqs "${ALOG[$m]}" watch | wc -l)" "$(reqs "${ALOG[$m]}" list | wc -l)"
	ge "watch closing at once ($m): counted as closed" "$(err "$m" closed)" 3
done
for m in gone gone_event error_event; do
	spaced "$m" "${ALOG[$m]}" list "$BACKOFF_MAX"
	check_eq "$m: relists at the last resourceVersion, unpaged" "rv=100 limit=-" \
		"$(reqs "${ALOG[$m]}" list | sed -n 2p | awk '{ print $3, $4 }')"
done
check_eq "410 on a relist: listed again from etcd (no rv), paged" "rv=100 limit=- rv=- limit=500" \
	"$(reqs "${ALOG[relist_gone]}" list | sed -n 2,3p | awk '{ printf "%s%s %s", (NR > 1 ? " " : ""), $3, $4 }')"
lt "410 on a relist: at once (ms)" "$(within "${ALOG[relist_gone]}" list | sed -n 2,3p |
	awk 'NR == 2 { printf "%d", ($1 - prev) * 1000 } { prev = $1 }')" 500
ge "HTTP 410 on the watch: counted as gone" "$(err gone gone)" 3
ge "ERROR event 410: counted as gone" "$(err gone_event gone)" 3
ge "ERROR event 500: counted as http" "$(err error_event http)" 3
check_eq "NUL byte: one undecodable event" 1 "$(err nul parse)"
check_eq "NUL byte: listed again once" 2 "$(reqs "${ALOG[nul]}" list | wc -l)"
check_eq "NUL byte: then watching" 1 "$(fsum "$TMP/m.nul" '^netstack_pods_watch_age_seconds$' | awk '{ print ($1 > 0) }')"
check_eq "429: never listed again" 1 "$(reqs "${ALOG[throttle]}" list | wc -l)"
spaced "429" "${ALOG[throttle]}" watch "$BACKOFF_MAX"
check_eq "429: counted by verb and code" "$(reqs "${ALOG[throttle]}" watch | wc -l)" \
	"$(fsum "$TMP/m.throttle" '^netstack_pods_api_requests_total[{]verb="watch",code="429"[}]')"
check_eq "bookmarks: one list only" 1 "$(reqs "${ALOG[bookmark]}" list | wc -l)"
ge "bookmarks: watches the server ended (every 2 s) renewed at once" \
	"$(reqs "${ALOG[bookmark]}" watch | wc -l)" $((2 * WINDOW / 5))
# shellcheck disable=SC2016
check "bookmarks: each watch from the previous one's bookmark" awk '
	{ split($3, rv, "=") } NR == 1 && rv[2] != 100 { exit 1 }
	NR > 1 && rv[2] != 999 + NR { exit 1 } END { exit NR < 2 }' <(reqs "${ALOG[bookmark]}" watch)
check_eq "bookmarks, split: no errors" 0 \
	"$(cat "$TMP/m.bookmark" "$TMP/m.split" | awk '/^netstack_pods_api_errors_total/ { s += $NF } END { print s + 0 }')"
for m in "${MODES[@]}"; do
	promtool_ok "$m: promtool accepts the exposition" "$TMP/m.$m"
done

# -- 3. TLS ----------------------------------------------------------------------------------------
# A system CA store (bundle and hashed directory) that trusts the fake server, in a mount
# namespace of the exporter's own.
mkdir -p "$TMP/sysca"
cp "$TMP/cert.pem" "$TMP/sysca/ca-certificates.crt"
ln -s ca-certificates.crt "$TMP/sysca/$(openssl x509 -hash -noout -in "$TMP/cert.pem").0"
# shellcheck disable=SC2016
printf '#!/bin/sh\nexec unshare -m --propagation private sh -c '\''mount --bind %s /etc/ssl/certs && exec "$0" "$@"'\'' %s "$@"\n' \
	"$TMP/sysca" "$EXPORTER" >"$TMP/wrap"
chmod +x "$TMP/wrap"
REAL=$EXPORTER
EXPORTER=$TMP/wrap
api tls ok || exit 1
exporter sysca "$API_URL" 'ca_file =' || exit 1
check "an empty ca_file trusts the system store (here: the fake server)" \
	wait_for '^netstack_pods_known$' 2
stop_exporter
for c in missing other; do
	seen=$(wc -l <"$API_LOG")
	ca=$TMP/missing.pem
	[ $c = other ] && ca=$TMP/other.pem
	exporter "ca_$c" "$API_URL" "ca_file = $ca" || exit 1
	wait_for '^netstack_pods_api_errors_total[{]kind="tls"[}]' 1 5
	scrape "$TMP/tls.$c"
	ge "ca_file $c: a TLS error" "$(fsum "$TMP/tls.$c" '^netstack_pods_api_errors_total[{]kind="tls"[}]')" 1
	check_eq "ca_file $c: the system store is not used instead (no sync)" 0 \
		"$(fsum "$TMP/tls.$c" '^netstack_pods_last_sync_timestamp_seconds$')"
	check_eq "ca_file $c: no request got through" "" "$(tail -n +$((seen + 1)) "$API_LOG" | grep GET)"
	[ $c = other ] ||
		check "ca_file missing: the log names it" grep -q "ca_file $ca: No such file" "$EXPORTER_LOG"
	stop_exporter
done
EXPORTER=$REAL
api plain ok "$TMP/two.json" "$TMP/none.jsonl" - || exit 1
for key in api_url kubelet_url; do
	extra=()
	[ $key = kubelet_url ] && extra=('source = kubelet' "kubelet_url = $API_URL/api/v1/pods")
	exporter "http_$key" "$API_URL" "${extra[@]}" || exit 1
	check "http:// $key with a token: refused, naming the key" wait_grep "$EXPORTER_LOG" \
		"\\[pods\\] $key is http:// while token_file $TMP/token holds a bearer token"
	stop_exporter
done
check_eq "http:// with a token: nothing sent" 0 "$(grep -c GET "$API_LOG")"
exporter http_kubelet "" 'source = kubelet' "kubelet_url = $API_URL/api/v1/pods" 'token_file =' ||
	exit 1
check "http:// kubelet_url without a token: pods known" wait_for '^netstack_pods_known$' 2
check "... polled with verb get" wait_for '^netstack_pods_api_requests_total[{]verb="get",code="200"[}]' 1
check_eq "... and no Authorization header" 0 "$(grep -c 'auth=yes' "$API_LOG")"
stop_exporter

# -- 5. peak memory --------------------------------------------------------------------------------
podlist "$TMP/10k.json" 10000 10000
podlist "$TMP/10k_100.json" 10000 100
hwm() { awk '/^VmHWM/ { print $2 }' "/proc/$EXPORTER_PID/status"; }
for l in two:2 10k:10000 10k_100:100; do
	api "mem_${l%:*}" ok "$TMP/${l%:*}.json" || exit 1
	exporter "mem_${l%:*}" "$API_URL" || exit 1
	check "memory, ${l%:*}: ${l#*:} pods known" wait_for '^netstack_pods_known$' "${l#*:}" 30
	# The peak after the list is in: the client has gone on to watch.
	wait_grep "$API_LOG" '^GET watch ' 5
	declare "HWM_${l%:*}=$(hwm)"
	stop_exporter
done
SIZE=$(($(stat -c %s "$TMP/10k.json") / 1024))
# shellcheck disable=SC2154
echo "# peak RSS: 2 pods ${HWM_two} kB; 10 000 pods on the node (${SIZE} kB of JSON)" \
	"${HWM_10k} kB; 10 000 in the list, 100 on the node ${HWM_10k_100} kB"
if ldd "$EXPORTER" 2>/dev/null | grep -q libasan; then
	echo "# (bounds not checked under ASan: its quarantine keeps freed memory resident)"
else
	le "10 000 pods in the list, 100 on the node: peak RSS within 4 MB of 2 pods'" \
		$((HWM_10k_100 - HWM_two)) 4096
	le "10 000 pods on the node: peak RSS within 64 MB of 2 pods' (the store: 2.5 kB a pod)" \
		$((HWM_10k - HWM_two)) 65536
fi
finish
