#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Every PromQL expression we ship, run against a real Prometheus (Debian's 2.42) that scrapes the
# real exporter every second and evaluates deploy/prometheus/netstack.rules.yml every second:
# the dashboard's queries (template variables substituted, label_values() as count by), the
# Grafana alert's query, and every recording and alerting rule as Prometheus loaded it.
#   - every expression parses and evaluates (status success);
#   - each is classified below: `data` must return series for the traffic we generate, `empty`
#     must return none on this healthy exporter, `data-if COND` must return series whenever the
#     PromQL COND does (e.g. a collector that is not in the binary yet: strict once it lands),
#     `any` only has to evaluate. An expression without a class, or a class without its
#     expression, fails the test.
# Traffic, only between two network namespaces of our own: a UDP flood to a closed port
# (NO_SOCKET), a bulk TCP transfer with 10% of its data packets dropped by nftables
# (NETFILTER_DROP, retransmits, RTT samples), SYNs to a port nftables drops, and connections
# to a closed TCP port (resets sent with NO_SOCKET, resets received in SYN_SENT, failed active
# connections).
# The alerts that compare with history get one from a backfill written before Prometheus
# starts (promtool tsdb create-blocks-from openmetrics): NO_SOCKET drops at 1/s and NO_SOCKET
# resets at 0.1/s for the 7 hours before the last 11 minutes, and the exporter up since 25
# hours. So the flood and the refused connections are real spikes, and NETFILTER_DROP a real new
# reason: the alert expressions must return them, and Prometheus must hold the alerts pending.
# schedule: parallel once
# why: dashboard and rule queries in Prometheus; the code it drives is ASan-checked elsewhere
source "$(dirname "$0")/../lib.sh"
require_root_bpf
for tool in prometheus promtool jq perl nft; do
	command -v "$tool" >/dev/null || skip_all "needs $tool (scripts/deps.sh test)"
done
perl -MYAML::XS -e 1 2>/dev/null || skip_all "needs YAML::XS (libyaml-libyaml-perl)"
UDPFLOOD=$BUILD/tests/udpflood
TCPBULK=$BUILD/tests/tcpbulk
[ -x "$UDPFLOOD" ] && [ -x "$TCPBULK" ] || skip_all "$UDPFLOOD and $TCPBULK not built"

RULES=deploy/prometheus/netstack.rules.yml
DASH=deploy/grafana/netstack-dashboard.json
GALERT=deploy/grafana/provisioning/alerting/netstack-alerts.yaml
JOB=netstack-exporter
RATE_INTERVAL=15s # $__rate_interval: Grafana's is at least 4 scrape intervals (1 s here)
yaml2json() {
	perl -MYAML::XS -MJSON::PP -e '$YAML::XS::Boolean = "JSON::PP"; local $/;
		my @d = grep { defined } YAML::XS::Load(<STDIN>);
		print JSON::PP->new->canonical->encode(@d == 1 ? $d[0] : \@d), "\n"'
}

# ---- what each expression must return --------------------------------------------------------
RETRANS='netstack_collector_up{collector="retrans"} == 1'
RTT='netstack_collector_up{collector="rtt"} == 1'
TCP="$RETRANS and on (instance) $RTT"
RESETS='netstack_collector_up{collector="resets"} == 1'
CONNS='netstack_collector_up{collector="connections"} == 1'
HANDSHAKES='count(netstack_tcp_handshake_seconds_count)'
declare -A CLASS=(
	["var:job"]=data
	["var:node"]=data
	["var:reason"]=data
	["var:namespace"]=data
	["var:pod"]=data
	["dash:Drops by reason:A"]=data
	["dash:Top drop reasons (last 5 minutes):A"]=data
	["dash:Drops by node:A"]=data
	["dash:Drop rate against its 6-hour baseline:A"]=data
	["dash:Drop rate against its 6-hour baseline:B"]=data
	["dash:Drops by family and protocol:A"]=data
	["dash:Drops by kernel function (function label):A"]=data
	["dash:Drops by network namespace and interface (netns, interface labels):A"]=data
	["dash:Drops by network namespace and interface (netns, interface labels):B"]=data
	["dash:Drops by pod (pod attribution):A"]='data-if count(netstack_skb_drops_total{pod!=""})'
	["dash:Retransmitted segments by pod (pod attribution):A"]='data-if count(netstack_tcp_retransmitted_segments_total{pod!=""})'
	["dash:Retransmitted segments:A"]="data-if $RETRANS"
	["dash:Retransmits by kind and TCP state:A"]="data-if $RETRANS"
	["dash:Retransmitted segments per round trip:A"]="data-if $TCP"
	["dash:TCP RTT (heatmap):A"]="data-if $RTT"
	["dash:TCP RTT quantiles and mean:A"]="data-if $RTT"
	["dash:TCP RTT quantiles and mean:B"]="data-if $RTT"
	["dash:TCP RTT quantiles and mean:C"]="data-if $RTT"
	["dash:TCP RTT quantiles and mean:D"]="data-if $RTT"
	["dash:TCP handshake time (heatmap):A"]="data-if $HANDSHAKES"
	["dash:Retransmits by cause:A"]="data-if $RETRANS"
	["dash:TCP resets sent by reason:A"]="data-if $RESETS"
	["dash:Top reset reasons (last 5 minutes):A"]="data-if $RESETS"
	["dash:TCP resets received:A"]="data-if $RESETS"
	["dash:Reset rate against its 6-hour baseline:A"]="data-if $RESETS"
	["dash:Reset rate against its 6-hour baseline:B"]="data-if $RESETS"
	["dash:TCP connections by direction and outcome:A"]="data-if $CONNS"
	["dash:Connection failure ratio:A"]="data-if $CONNS"
	["dash:Connection failure ratio:B"]="data-if $CONNS"
	["dash:TCP resets sent by pod (pod attribution):A"]='data-if count(netstack_tcp_resets_sent_total{pod!=""})'
	["dash:Collectors attached:A"]=data
	["dash:Collectors attached:B"]=data
	["dash:Scrape duration:A"]=data
	["dash:Scrape duration:B"]=data
	["dash:Scrape duration:C"]=data
	["dash:BPF program CPU time:A"]='data-if count(netstack_bpf_program_runs_total)'
	["dash:BPF program CPU time:B"]='data-if count(netstack_bpf_program_runs_total)'
	["dash:Map overflow and lost events:A"]=data
	["dash:Map overflow and lost events:B"]='data-if count(netstack_events_lost_total)'
	["dash:Map overflow and lost events:C"]='data-if count(netstack_series_overflow_total)'
	["dash:Exporter process:A"]=data
	["dash:Exporter process:B"]=data
	["grafana:NetstackDropReasonSpike:A"]=data
	["grafana:NetstackTCPResetReasonSpike:A"]="data-if $RESETS"
	["rule:instance_reason:netstack_skb_drops:rate5m"]=data
	["rule:instance_reason:netstack_skb_drops:rate5m_baseline6h"]=data
	["rule:reason:netstack_skb_drops:rate5m"]=data
	["rule:instance:netstack_tcp_retransmitted_segments:rate5m"]="data-if $RETRANS"
	["rule:instance_kind:netstack_tcp_retransmits:rate5m"]="data-if $RETRANS"
	["rule:instance:netstack_tcp_rtt_samples:rate5m"]="data-if $RTT"
	["rule:instance_le:netstack_tcp_rtt_seconds_bucket:rate5m"]="data-if $RTT"
	["rule:instance:netstack_tcp_rtt_seconds:p99_rate5m"]="data-if $RTT"
	["rule:instance:netstack_tcp_retransmitted_segments_per_rtt_sample:ratio_rate5m"]="data-if $TCP"
	["rule:instance_reason:netstack_tcp_resets_sent:rate5m"]="data-if $RESETS"
	["rule:instance:netstack_tcp_resets_collector:up"]="data-if $RESETS"
	["rule:instance_reason:netstack_tcp_resets_sent:rate5m_baseline6h"]="data-if $RESETS"
	["rule:instance_state:netstack_tcp_resets_received:rate5m"]="data-if $RESETS"
	["rule:instance_direction_outcome:netstack_tcp_connections:rate5m"]="data-if $CONNS"
	["rule:instance_direction:netstack_tcp_connection_attempts:rate5m"]="data-if $CONNS"
	["rule:instance_direction:netstack_tcp_connection_failures:ratio_rate5m"]="data-if $CONNS"
	["rule:instance_direction:netstack_tcp_handshakes:rate5m"]="data-if $HANDSHAKES"
	["rule:instance_direction:netstack_tcp_handshakes_slower_than_rto:ratio_rate5m"]="data-if $HANDSHAKES"
	["rule:NetstackDropReasonSpike"]=data
	["rule:NetstackNewDropReason"]=data
	["rule:NetstackTCPRetransmitRatioHigh"]="data-if $TCP"
	["rule:NetstackTCPResetReasonSpike"]="data-if $RESETS"
	["rule:NetstackTCPConnectionFailureRatioHigh"]="data-if $CONNS"
	["rule:NetstackTCPRTTHigh"]=empty
	["rule:NetstackTCPHandshakesSlow"]=empty
	["rule:NetstackExporterDown"]=empty
	["rule:NetstackExporterAbsent"]=empty
	["rule:NetstackCollectorDown"]=empty
	["rule:NetstackCollectorScrapeFailing"]=empty
	["rule:NetstackConfigReloadFailed"]=empty
	["rule:NetstackMapOverflow"]=empty
	["rule:NetstackEventsLost"]=empty
)

# ---- two namespaces, traffic rules --------------------------------------------------------------
NS_A=nspql-a$$ NS_B=nspql-b$$
netns_add "$NS_A" && netns_add "$NS_B" && veth_pair "$NS_A" "$NS_B" || {
	not_ok "network namespaces and veth set up"
	finish
}
ip netns exec "$NS_B" nft -f - <<EOF || skip_all "cannot load nftables rules"
table inet pql {
	chain input {
		type filter hook input priority filter; policy accept;
		tcp dport 5201 meta length > 200 numgen random mod 100 < 10 drop
		tcp dport 5202 drop
	}
}
EOF

# ---- exporter: every optional drop label (the dashboard has panels for them) ------------------
printf '[collector.drops]\nlabels = reason,family,protocol,function,netns,interface\n' >"$TMP/exporter.ini"
start_exporter --config "$TMP/exporter.ini" || {
	not_ok "exporter starts"
	finish
}
TARGET=${EXPORTER_URL#http://}
# The BPF run-time panels need kernel.bpf_stats_enabled=1 while we run.
bpf_stats_on || not_ok "kernel.bpf_stats_enabled = 1"

# ---- history, backfilled -------------------------------------------------------------------------
now=$(date +%s)
awk -v now="$now" -v job="$JOB" -v inst="$TARGET" 'BEGIN {
	l = sprintf("job=\"%s\",instance=\"%s\"", job, inst)
	print "# TYPE netstack_collector_up gauge"
	for (t = now - 25 * 3600; t <= now - 660; t += 60) {
		printf "netstack_collector_up{%s,collector=\"drops\"} 1 %d\n", l, t
		printf "netstack_collector_up{%s,collector=\"resets\"} 1 %d\n", l, t
	}
	print "# TYPE instance:netstack_tcp_resets_collector:up gauge"
	for (t = now - 7 * 3600; t <= now - 660; t += 60)
		printf "instance:netstack_tcp_resets_collector:up{%s} 1 %d\n", l, t
	print "# TYPE instance_reason:netstack_tcp_resets_sent:rate5m gauge"
	for (t = now - 7 * 3600; t <= now - 660; t += 60)
		printf "instance_reason:netstack_tcp_resets_sent:rate5m{%s,reason=\"NO_SOCKET\"} 0.1 %d\n", l, t
	print "# TYPE instance_reason:netstack_skb_drops:rate5m gauge"
	for (t = now - 7 * 3600; t <= now - 660; t += 60)
		printf "instance_reason:netstack_skb_drops:rate5m{%s,reason=\"NO_SOCKET\"} 1 %d\n", l, t
	print "# TYPE netstack_skb_drops counter"
	for (t = now - 7 * 3600; t <= now - 660; t += 60)
		printf "netstack_skb_drops_total{%s,reason=\"NO_SOCKET\",family=\"ipv4\",protocol=\"udp\",interface=\"backfill\"} %d %d\n", l, v += 60, t
	print "# EOF"
}' >"$TMP/history.om"
if promtool tsdb create-blocks-from openmetrics "$TMP/history.om" "$TMP/prom-data" >"$TMP/backfill.log" 2>&1; then
	ok "history backfilled ($(grep -c '^[a-z]' "$TMP/history.om") samples)"
else
	not_ok "history backfilled" "$(tail -n 5 "$TMP/backfill.log")"
	finish
fi

# ---- Prometheus ----------------------------------------------------------------------------------
cp "$RULES" "$TMP/netstack.rules.yml"
PROM_PORT=$(free_port)
PROM_URL=http://127.0.0.1:$PROM_PORT
cat >"$TMP/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - $TMP/netstack.rules.yml
scrape_configs:
  - job_name: $JOB
    static_configs:
      - targets: ['$TARGET']
EOF
prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/prom-data" \
	--web.listen-address="127.0.0.1:$PROM_PORT" >"$TMP/prometheus.log" 2>&1 &
PROM_PID=$!
on_exit "kill $PROM_PID; wait $PROM_PID"
for _ in $(seq 100); do
	prom_get /api/v1/targets | grep -q '"health":"up"' && break
	kill -0 "$PROM_PID" 2>/dev/null || break
	sleep 0.2
done
if prom_get /api/v1/targets | grep -q '"health":"up"'; then ok "Prometheus scrapes the exporter"; else
	not_ok "Prometheus scrapes the exporter" "$(tail -n 20 "$TMP/prometheus.log")"
	finish
fi
check_eq "Prometheus sees the backfilled history" 1 \
	"$(prom_query "max_over_time(netstack_collector_up{instance=\"$TARGET\"}[1h] offset 1d)" | jq -r '.data.result[0].value[1]')"

# ---- traffic (all between our namespaces) ---------------------------------------------------------
ip netns exec "$NS_B" "$TCPBULK" sink 10.99.0.2 5201 >"$TMP/sink.out" 2>&1 &
on_exit "kill $!"
wait_grep "$TMP/sink.out" '^listening' 5
ip netns exec "$NS_A" "$UDPFLOOD" 10.99.0.2 9 0 25 >/dev/null 2>&1 &
on_exit "kill $!"
ip netns exec "$NS_A" "$TCPBULK" send 10.99.0.2 5201 25 >/dev/null 2>&1 &
on_exit "kill $!"
ip netns exec "$NS_A" timeout 25 "$TCPBULK" send 10.99.0.2 5202 20 >/dev/null 2>&1 &
on_exit "kill $!"
# Connections refused: nothing listens on 5203 (up to 40 a second, with bash's /dev/tcp; more
# would take CPU time from the bulk transfer, whose retransmit ratio an alert must see).
ip netns exec "$NS_A" timeout 25 bash -c 'while :; do
	for _ in 1 2 3 4; do : </dev/tcp/10.99.0.2/5203; done
	sleep 0.1
done' >/dev/null 2>&1 &
on_exit "kill $!"

# ---- the expressions --------------------------------------------------------------------------------
# One JSON object per line: {key, expr}.
subst() { # Grafana's variables, as a dashboard showing our exporter would have them
	sed -e "s/\\\$__rate_interval/$RATE_INTERVAL/g; s/\\\${__rate_interval}/$RATE_INTERVAL/g" \
		-e "s/\\\$job/$JOB/g; s/\\\${job}/$JOB/g" \
		-e "s/\\\$node/$TARGET/g; s/\\\${node}/$TARGET/g" \
		-e 's/\$reason/NO_SOCKET/g; s/\${reason}/NO_SOCKET/g' \
		-e 's/\$namespace/.*/g; s/\${namespace}/.*/g; s/\$pod/.*/g; s/\${pod}/.*/g'
}
{
	jq -c '.templating.list[] | select(.type == "query") | {key: "var:\(.name)", expr: .query.query}' "$DASH" |
		sed 's/"label_values(\(.*\), *\([a-z_]*\))"}$/"count by (\2) (\1)"}/'
	jq -c '.panels[] | ., (.panels // [])[] | select(.type != "row") | .title as $t |
		.targets[] | {key: "dash:\($t):\(.refId)", expr: .expr}' "$DASH"
	yaml2json <"$GALERT" | jq -c '.groups[].rules[] | .title as $t | .data[] |
		select(.datasourceUid != "__expr__") | {key: "grafana:\($t):\(.refId)", expr: .model.expr}'
	prom_get /api/v1/rules | jq -c '.data.groups[].rules[] | {key: "rule:\(.name)", expr: .query}'
} | subst >"$TMP/exprs.jsonl"
n_rules=$(yaml2json <"$RULES" | jq '[.groups[].rules[]] | length')
check_eq "Prometheus loaded every rule of $RULES" "$n_rules" "$(grep -c '"key":"rule:' "$TMP/exprs.jsonl")"
check "no Grafana variable left unsubstituted" bash -c "! grep -q '\\\$[a-z_{]' '$TMP/exprs.jsonl'"

# The keys and expressions as arrays (NUL-separated: an expression spans lines), read once:
# the loops below would otherwise start a jq per expression and pass.
mapfile -d '' -t KEYS < <(jq -j '.key + "\u0000"' "$TMP/exprs.jsonl")
mapfile -d '' -t EXPRS < <(jq -j '.expr + "\u0000"' "$TMP/exprs.jsonl")
check_eq "every expression read once" "$(wc -l <"$TMP/exprs.jsonl") $(wc -l <"$TMP/exprs.jsonl")" \
	"${#KEYS[@]} ${#EXPRS[@]}"

# Unclassified expressions and classes without an expression.
declare -A SEEN=()
for key in "${KEYS[@]}"; do
	SEEN[$key]=1
	[ -n "${CLASS[$key]:-}" ] || not_ok "expression '$key' has a class" "add it to CLASS in $0"
done
for key in "${!CLASS[@]}"; do
	[ -n "${SEEN[$key]:-}" ] || not_ok "class '$key' has an expression" "stale entry in CLASS"
done

# result_count EXPR: number of series in the answer, or "error: ..." when it does not evaluate.
result_count() {
	local out
	out=$(prom_query "$1")
	# One jq: a success's count, an error's message; not JSON at all: the answer itself.
	jq -r 'if .status == "success" then .data.result | if type == "array" then length else 1 end
		else "error: \(.error // "")" end' <<<"$out" 2>/dev/null || echo "error: $out"
}
# Evaluate until every expression that must return data does (bounded: 40 s), then judge all.
# Prometheus scrapes and evaluates every second: a pass a second sees each new evaluation.
declare -A RESULT=() WANT=()
deadline=$((SECONDS + 40))
while :; do
	pending=0
	for i in "${!KEYS[@]}"; do
		key=${KEYS[i]}
		[ -n "${CLASS[$key]:-}" ] || continue
		[ "${RESULT[$key]:-0}" != 0 ] && [ "${RESULT[$key]#error}" = "${RESULT[$key]}" ] &&
			[ -n "${WANT[$key]:-}" ] && continue
		expr=${EXPRS[i]}
		RESULT[$key]=$(result_count "$expr")
		class=${CLASS[$key]}
		case $class in
		data) WANT[$key]=data ;;
		data-if*)
			c=$(result_count "${class#data-if }")
			if [ "$c" = 0 ]; then WANT[$key]=any; elif [ "${c#error}" != "$c" ]; then WANT[$key]="bad condition: $c"; else WANT[$key]=data; fi
			;;
		*) WANT[$key]=$class ;;
		esac
		[ "${WANT[$key]}" = data ] && [ "${RESULT[$key]}" = 0 ] && pending=$((pending + 1))
	done
	[ "$pending" = 0 ] || [ "$SECONDS" -ge "$deadline" ] && break
	sleep 1
done
for i in "${!KEYS[@]}"; do
	key=${KEYS[i]}
	[ -n "${CLASS[$key]:-}" ] || continue
	r=${RESULT[$key]} w=${WANT[$key]}
	if [ "${r#error}" != "$r" ]; then
		not_ok "$key evaluates" "${EXPRS[i]}" "$r"
		continue
	fi
	case $w in
	data) check "$key returns data ($r series)" test "$r" -gt 0 ;;
	empty) check "$key returns nothing on a healthy exporter ($r series)" test "$r" -eq 0 ;;
	any) ok "$key evaluates ($r series; data not required: ${CLASS[$key]})" ;;
	*) not_ok "$key: $w" ;;
	esac
done

# ---- the history-based alerts: on the series we made them for, and held by Prometheus -------------
spike=$(prom_query "$(jq -r 'select(.key == "rule:NetstackDropReasonSpike") | .expr' "$TMP/exprs.jsonl")")
check_eq "spike alert expression: NO_SOCKET of our exporter" "NO_SOCKET $TARGET" \
	"$(jq -r '.data.result[] | select(.metric.reason == "NO_SOCKET") | "\(.metric.reason) \(.metric.instance)"' <<<"$spike")"
gspike=$(prom_query "$(jq -r 'select(.key == "grafana:NetstackDropReasonSpike:A") | .expr' "$TMP/exprs.jsonl")")
check_eq "Grafana spike query: the same series as the Prometheus alert" \
	"$(jq -c '[.data.result[].metric | del(.__name__)] | sort' <<<"$spike")" \
	"$(jq -c '[.data.result[].metric | del(.__name__)] | sort' <<<"$gspike")"
new=$(prom_query "$(jq -r 'select(.key == "rule:NetstackNewDropReason") | .expr' "$TMP/exprs.jsonl")")
reasons=$(jq -r '[.data.result[].metric.reason] | sort | join(" ")' <<<"$new")
check "new-reason alert expression: NETFILTER_DROP ($reasons)" grep -qw NETFILTER_DROP <<<"$reasons"
check "new-reason alert expression: not NO_SOCKET, which has history" bash -c "! grep -qw NO_SOCKET <<<'$reasons'"
# The reset spike, once the collector is in the binary. (The connection failure alert's class
# asks for data: the refused connections make more than 10% of the machine's active attempts.)
if [ "$(result_count "$RESETS")" -gt 0 ] 2>/dev/null; then
	rspike=$(prom_query "$(jq -r 'select(.key == "rule:NetstackTCPResetReasonSpike") | .expr' "$TMP/exprs.jsonl")")
	check_eq "reset spike alert expression: NO_SOCKET of our exporter" "NO_SOCKET $TARGET" \
		"$(jq -r '.data.result[] | select(.metric.reason == "NO_SOCKET") | "\(.metric.reason) \(.metric.instance)"' <<<"$rspike")"
	grspike=$(prom_query "$(jq -r 'select(.key == "grafana:NetstackTCPResetReasonSpike:A") | .expr' "$TMP/exprs.jsonl")")
	# NO_SOCKET only: the exporter counts every namespace of the machine, and another reason
	# near the floor may cross it between the two queries.
	check_eq "Grafana reset spike query: the same NO_SOCKET series as the Prometheus alert" \
		"$(jq -c '[.data.result[].metric | select(.reason == "NO_SOCKET") | del(.__name__)]' <<<"$rspike")" \
		"$(jq -c '[.data.result[].metric | select(.reason == "NO_SOCKET") | del(.__name__)]' <<<"$grspike")"
else
	ok "reset spike alert expression: not checked, no resets collector in this binary"
fi
alerts=$(prom_get /api/v1/alerts)
check "Prometheus holds NetstackDropReasonSpike for NO_SOCKET pending (for: 5m)" jqe \
	'[.data.alerts[] | select(.labels.alertname == "NetstackDropReasonSpike" and .labels.reason == "NO_SOCKET" and .state == "pending")] | length == 1' \
	<<<"$alerts"
check "Prometheus holds NetstackNewDropReason for NETFILTER_DROP" jqe \
	'[.data.alerts[] | select(.labels.alertname == "NetstackNewDropReason" and .labels.reason == "NETFILTER_DROP")] | length == 1' \
	<<<"$alerts"
if [ "$(result_count "$RESETS")" -gt 0 ] 2>/dev/null; then
	check "Prometheus holds NetstackTCPResetReasonSpike for NO_SOCKET pending (for: 5m)" jqe \
		'[.data.alerts[] | select(.labels.alertname == "NetstackTCPResetReasonSpike" and .labels.reason == "NO_SOCKET" and .state == "pending")] | length == 1' \
		<<<"$alerts"
fi
check_eq "rule evaluation errors" "" \
	"$(prom_get /api/v1/rules | jq -r '.data.groups[].rules[] | select(.health != "ok") | "\(.name): \(.lastError)"')"
check "exporter still running" kill -0 "$EXPORTER_PID"

finish
