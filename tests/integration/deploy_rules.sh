#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Prometheus rules and Grafana files, without a running server (deploy_promql.sh runs their
# queries against a real Prometheus):
#   - promtool check rules and promtool test rules pass; every alert has a unit test where it
#     fires and one where it does not;
#   - the tests can fail: the rules with the spike's absolute floor removed, its baseline factor
#     removed, or the new-reason alert's "monitored a day ago" condition removed, fail them
#     (the quiet node, the busy node and the new node cases), and so do rules that leave
#     NOT_SPECIFIED out (the 5.10 node, where every drop has that reason); the same for the reset spike
#     (and its baseline without the 0 for a new reason, or without "monitored an hour before"),
#     and the connection failure ratio without its minimum of attempts or its 0, and the slow
#     handshakes without their minimum rate or their threshold;
#   - the PrometheusRule of the Kubernetes component holds exactly the rules file;
#   - the Grafana dashboard and provisioning files parse, are well formed, use only defined
#     template variables; the Grafana alert matches the Prometheus alert it mirrors.
# schedule: parallel once
# why: promtool, jq and perl on deploy/ files: no exporter runs
source "$(dirname "$0")/../lib.sh"
for tool in promtool jq perl; do
	command -v "$tool" >/dev/null || skip_all "needs $tool (scripts/deps.sh test)"
done
perl -MYAML::XS -e 1 2>/dev/null || skip_all "needs YAML::XS (libyaml-libyaml-perl)"

R=deploy/prometheus/netstack.rules.yml
T=deploy/prometheus/netstack.rules.test.yml
PR=deploy/kubernetes/components/prometheus-operator/prometheusrule.yaml
DASH=deploy/grafana/netstack-dashboard.json
GALERT=deploy/grafana/provisioning/alerting/netstack-alerts.yaml
yaml2json() {
	perl -MYAML::XS -MJSON::PP -e '$YAML::XS::Boolean = "JSON::PP"; local $/;
		my @d = grep { defined } YAML::XS::Load(<STDIN>);
		print JSON::PP->new->canonical->encode(@d == 1 ? $d[0] : \@d), "\n"'
}
jqc() { # NAME FILTER FILE: ok when the filter gives true
	local out
	out=$(jq -r "$2" "$3" 2>&1)
	if [ "$out" = true ]; then ok "$1"; else not_ok "$1" "jq '$2' gave: $(head -c 400 <<<"$out")"; fi
}

# ---- promtool -------------------------------------------------------------------------------
out=$(promtool check rules "$R" 2>&1)
check "promtool check rules $R" grep -q SUCCESS <<<"$out"
out=$(promtool test rules "$T" 2>&1)
if grep -q SUCCESS <<<"$out"; then ok "promtool test rules $T"; else not_ok "promtool test rules $T" "$out"; fi

yaml2json <"$R" >"$TMP/rules.json"
yaml2json <"$T" >"$TMP/tests.json"
for a in $(jq -r '.groups[].rules[] | .alert // empty' "$TMP/rules.json"); do
	fires=$(jq --arg a "$a" '[.tests[].alert_rule_test[]? | select(.alertname == $a and ((.exp_alerts // []) | length) > 0)] | length' "$TMP/tests.json")
	quiet=$(jq --arg a "$a" '[.tests[].alert_rule_test[]? | select(.alertname == $a and ((.exp_alerts // []) | length) == 0)] | length' "$TMP/tests.json")
	check "$a has unit tests where it fires ($fires) and where it does not ($quiet)" \
		test "$fires" -gt 0 -a "$quiet" -gt 0
done

# mutant NAME PERL-SUBSTITUTION WANT GROUP: the rules changed by the substitution must fail the
# unit tests, and the failure must name WANT (the case that catches it). Only the test group
# GROUP runs (the rest of the file proves nothing about this mutant, and promtool evaluates
# every group for hours of series): failing it, the mutant fails the whole file too.
mutant() {
	local dir=$TMP/mutant.$RANDOM
	mkdir -p "$dir"
	# JSON is YAML: the file with only GROUP's tests.
	jq --arg g "$4" '.tests |= map(select(.name == $g))' "$TMP/tests.json" >"$dir/$(basename "$T")"
	if [ "$(jq '.tests | length' "$dir/$(basename "$T")")" != 1 ]; then
		not_ok "mutant '$1': one test group named '$4' in $T"
		return
	fi
	perl -0pe "$2" "$R" >"$dir/netstack.rules.yml"
	if cmp -s "$R" "$dir/netstack.rules.yml"; then
		not_ok "mutant '$1': the substitution changed nothing"
		return
	fi
	out=$(promtool test rules "$dir/$(basename "$T")" 2>&1)
	if ! grep -q SUCCESS <<<"$out" && grep -q -- "$3" <<<"$out"; then
		ok "unit tests catch: $1"
	else
		not_ok "unit tests catch: $1" "$(head -n 20 <<<"$out")"
	fi
}
mutant "spike without the absolute floor (quiet node b pages)" \
	's/(instance_reason:netstack_skb_drops:rate5m) > 1\n/$1 > 0\n/' 'instance="b"' 'drop reason spike'
mutant "spike without the baseline factor (busy node c pages)" \
	's/> 5 \* instance_reason:netstack_skb_drops:rate5m_baseline6h/> 0 * instance_reason:netstack_skb_drops:rate5m_baseline6h/' \
	'instance="c"' 'drop reason spike'
mutant "drops by reason without NOT_SPECIFIED (5.10 node k510 never pages)" \
	's/\(rate\(netstack_skb_drops_total\[5m\]\)\)/(rate(netstack_skb_drops_total{reason!="NOT_SPECIFIED"}[5m]))/' \
	'instance="k510"' 'drop spike on a kernel without drop reasons (5.10)'
mutant "new reason without 'monitored a day ago' (new node b pages)" \
	's/\n\s*and on \(job, instance, node\)\n\s*max_over_time\(netstack_collector_up\{collector="drops"\}\[1h\] offset 1d\) == 1//' \
	'instance="b"' 'new drop reason'
mutant "reset spike without the absolute floor (quiet node b pages)" \
	's/(instance_reason:netstack_tcp_resets_sent:rate5m) > 1\n/$1 > 0\n/' 'instance="b"' 'tcp reset reason spike'
mutant "reset spike without the baseline factor (busy node c pages)" \
	's/> 5 \* (instance_reason:netstack_tcp_resets_sent:rate5m_baseline6h)/> 0 * $1/' 'instance="c"' 'tcp reset reason spike'
mutant "reset baseline without its 0 for a reason never seen (new reason e is late)" \
	's/\n\s*or\n\s*0 \* instance_reason:netstack_tcp_resets_sent:rate5m\n/\n/' 'instance="e"' 'tcp reset reason spike'
mutant "reset baseline without 'monitored an hour before' (new node f pages)" \
	's/\n\s*and on \(job, instance, node\)\n\s*max_over_time\(instance:netstack_tcp_resets_collector:up\[10m\] offset 1h\)//' \
	'instance="f"' 'tcp reset reason spike'
mutant "failure ratio without its minimum of attempts (node b pages)" \
	's/(instance_direction:netstack_tcp_connection_attempts:rate5m) > 1\n/$1 > 0\n/' 'instance="b"' 'tcp connection failure ratio'
mutant "failure ratio without its 0 where nothing failed (a's passive side missing)" \
	's/\n\s*or\n\s*0 \* instance_direction:netstack_tcp_connection_attempts:rate5m\n/\n/' \
	'direction="passive"' 'tcp connection failure ratio'
mutant "slow handshakes without their minimum rate (node b pages)" \
	's/(instance_direction:netstack_tcp_handshakes:rate5m) > 1\n/$1 > 0\n/' 'instance="b"' 'tcp slow handshakes'
mutant "slow handshakes without the 5% threshold (node c pages)" \
	's/slower_than_rto:ratio_rate5m > 0.05/slower_than_rto:ratio_rate5m > 0/' 'instance="c"' 'tcp slow handshakes'

# ---- the PrometheusRule is the rules file -----------------------------------------------------
yaml2json <"$PR" >"$TMP/pr.json"
check_eq "PrometheusRule kind" "monitoring.coreos.com/v1 PrometheusRule" \
	"$(jq -r '"\(.apiVersion) \(.kind)"' "$TMP/pr.json")"
if jq -e --slurpfile r "$TMP/rules.json" '.spec == $r[0]' "$TMP/pr.json" >/dev/null; then
	ok "PrometheusRule spec = $R"
else
	not_ok "PrometheusRule spec = $R" "regenerate it: see the comment at the top of $PR"
fi

# ---- Grafana dashboard --------------------------------------------------------------------------
if jq -e . "$DASH" >/dev/null 2>&1; then ok "dashboard is JSON"; else
	not_ok "dashboard is JSON"
	finish
fi
jqc "dashboard has uid, title, schemaVersion" '(.uid | length > 0) and (.title | length > 0) and (.schemaVersion >= 36)' "$DASH"
check_eq "template variables" "datasource job node reason namespace pod" \
	"$(jq -r '[.templating.list[].name] | join(" ")' "$DASH")"
jqc "datasource variable is a Prometheus data source picker" \
	'.templating.list[0] | .type == "datasource" and .query == "prometheus"' "$DASH"
jq '[.panels[] | ., (.panels // [])[]] | map(select(.type != "row"))' "$DASH" >"$TMP/panels.json"
jqc "panel ids are unique" '[.[].id] | length == (unique | length)' "$TMP/panels.json"
jqc "every panel has a title, a type and targets" \
	'map((.title | length > 0) and (.type | length > 0) and ((.targets // []) | length > 0)) | all' "$TMP/panels.json"
jqc "every panel and target uses the datasource variable" \
	'map(.datasource.uid == "${datasource}" and (.targets | map(.datasource.uid == "${datasource}") | all)) | all' \
	"$TMP/panels.json"
jqc "every target has an expr and a refId unique in its panel" \
	'map(.targets | (map(.expr | length > 0) | all) and (map(.refId) | length == (unique | length))) | all' \
	"$TMP/panels.json"
jqc "panels fit the 24-column grid" '[.[] | .gridPos | .x + .w <= 24 and .w > 0 and .h > 0] | all' "$TMP/panels.json"
used=$(jq -r '.[].targets[].expr' "$TMP/panels.json" | grep -o '\$[{]*[A-Za-z_][A-Za-z_0-9]*' | tr -d '${' |
	sort -u | grep -v '^__' | paste -sd' ')
check_eq "queries use only defined variables" "job namespace node pod reason" "$used"
for want in 'Drops by reason' 'Top drop reasons' 'kernel function' 'network namespace' 'pod' \
	'Retransmit' 'RTT (heatmap)' 'Collectors attached' 'Scrape duration' 'BPF program' 'overflow' \
	'TCP resets sent by reason' 'Top reset reasons' 'TCP resets received' 'Reset rate against its' \
	'TCP connections by direction and outcome' 'Connection failure ratio' 'TCP resets sent by pod'; do
	jqc "dashboard has a panel on: $want" "map(.title) | any(contains(\"$want\"))" "$TMP/panels.json"
done
jqc "drops by reason is stacked" \
	'map(select(.title == "Drops by reason"))[0].fieldConfig.defaults.custom.stacking.mode == "normal"' "$TMP/panels.json"
jqc "resets sent by reason is stacked" \
	'map(select(.title == "TCP resets sent by reason"))[0].fieldConfig.defaults.custom.stacking.mode == "normal"' "$TMP/panels.json"
jqc "the failure ratio is failed / (established + failed), a ratio from 0 to 1" \
	'map(select(.title == "Connection failure ratio"))[0] | (.targets[0].expr | contains("outcome=\"failed\"") and contains("outcome=~\"established|failed\"")) and .fieldConfig.defaults.unit == "percentunit" and .fieldConfig.defaults.max == 1' \
	"$TMP/panels.json"
jqc "the RTT heatmap reads histogram buckets" \
	'map(select(.type == "heatmap"))[0].targets[0] | .format == "heatmap" and (.expr | contains("netstack_tcp_rtt_seconds_bucket"))' \
	"$TMP/panels.json"

# ---- Grafana provisioning -----------------------------------------------------------------------
for f in deploy/grafana/provisioning/*/*.yaml; do
	if yaml2json <"$f" >"$TMP/prov.json" 2>"$TMP/prov.err" && jq -e '.apiVersion == 1' "$TMP/prov.json" >/dev/null; then
		ok "$f parses (apiVersion 1)"
	else
		not_ok "$f parses (apiVersion 1)" "$(cat "$TMP/prov.err")"
	fi
done
yaml2json <"$GALERT" >"$TMP/galert.json"
check_eq "Grafana alert rules" "NetstackDropReasonSpike NetstackTCPResetReasonSpike" \
	"$(jq -r '[.groups[].rules[].title] | join(" ")' "$TMP/galert.json")"
# grafana_rule TITLE: the Grafana rule is well formed and says what the Prometheus alert of the
# same name says.
grafana_rule() {
	local t=$1
	jq --arg t "$t" '.groups[].rules[] | select(.title == $t)' "$TMP/galert.json" >"$TMP/grule.json"
	jqc "$t (Grafana): uid, title, condition among its refIds" \
		'(.uid | length > 0) and (.title | length > 0) and (.condition as $c | [.data[].refId] | index($c) != null)' \
		"$TMP/grule.json"
	refs_ok=$(jq -r '.data as $d | [$d | to_entries[] | select(.value.datasourceUid == "__expr__") |
		.key as $i | .value.model.expression as $e | ([$d[:$i][] | .refId] | index($e) != null)] | all' "$TMP/grule.json")
	check_eq "$t (Grafana): every expression refers to an earlier query" true "$refs_ok"
	jqc "$t (Grafana): the query has a PromQL expr and a data source uid" \
		'.data[0] | (.model.expr | length > 0) and (.datasourceUid | length > 0) and .datasourceUid != "__expr__"' \
		"$TMP/grule.json"
	jqc "$t (Grafana): no data means no spike (noDataState OK), errors alert" \
		'.noDataState == "OK" and .execErrState == "Error"' "$TMP/grule.json"
	jqc "$t (Grafana): its time range covers the 6 h 10 min baseline" \
		'.data[0].relativeTimeRange.from >= 6*3600 + 10*60 + 5*60' "$TMP/grule.json"
	jq --arg t "$t" '.groups[].rules[] | select(.alert == $t)' "$TMP/rules.json" >"$TMP/prule.json"
	for f in for labels.severity annotations.summary annotations.runbook; do
		check_eq "$t: Grafana and Prometheus say the same $f" "$(jq -r ".$f" "$TMP/prule.json")" \
			"$(jq -r ".$f" "$TMP/grule.json")"
	done
	check_eq "$t: Grafana and Prometheus have the same description but for the value's syntax" \
		"$(jq -r .annotations.description "$TMP/prule.json" | sed 's/{{ \$value | humanize }}/VALUE/')" \
		"$(jq -r .annotations.description "$TMP/grule.json" | sed 's/{{ humanize \$values.B.Value }}/VALUE/')"
	gexpr=$(jq -r '.data[0].model.expr' "$TMP/grule.json" | tr -s ' \n' ' ')
}
# The thresholds of the Grafana queries are the Prometheus rules': floor 1/s, factor 5, 6 h,
# 10 min (and for resets: the reason's time without a series as 0, monitored an hour before).
grafana_rule NetstackDropReasonSpike
for want in ' > 1 and' '> 5 * avg_over_time(' '[6h:1m] offset 10m)' 'rate(netstack_skb_drops_total[5m])'; do
	check "Grafana drop query has '$want'" grep -qF -- "$want" <<<"$gexpr"
done
grafana_rule NetstackTCPResetReasonSpike
for want in ' > 1 and' '> 5 * ( ( sum_over_time(' ')[6h:1m] offset 10m) or 0 * sum by' \
	'count_over_time( max by (job, instance, node) ( netstack_collector_up{collector="resets"} == 1 )[6h:1m] offset 10m)' \
	'[10m] offset 1h) == 1' 'rate(netstack_tcp_resets_sent_total[5m])'; do
	check "Grafana reset query has '$want'" grep -qF -- "$want" <<<"$gexpr"
done
for want in 'skb_drops:rate5m > 1' '> 5 * instance_reason:netstack_skb_drops' \
	'resets_sent:rate5m > 1' '> 5 * instance_reason:netstack_tcp_resets_sent'; do
	check "Prometheus rule has '$want'" grep -qF -- "$want" "$R"
done
for a in NetstackDropReasonSpike NetstackTCPResetReasonSpike; do
	check_eq "$a: for 5m" 5m "$(jq -r --arg a "$a" '.groups[].rules[] | select(.alert == $a) | .for' "$TMP/rules.json")"
done
check "Prometheus drop baseline: 6 h, offset 10 min" \
	grep -qF 'avg_over_time(instance_reason:netstack_skb_drops:rate5m[6h] offset 10m)' "$R"
check "Prometheus reset baseline: 6 h, offset 10 min" \
	grep -qF 'sum_over_time(instance_reason:netstack_tcp_resets_sent:rate5m[6h] offset 10m)' "$R"

finish
