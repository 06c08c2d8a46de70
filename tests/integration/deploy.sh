#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# deploy/kubernetes and deploy/docker, checked statically and against the real binary:
#   - `kubectl kustomize` renders the base and the prometheus-operator overlay (parsed as YAML,
#     then every assertion on the parsed objects with jq);
#   - the DaemonSet's least-privilege points: limits on every container, nothing privileged,
#     the exact capability list, read-only root and host mounts, probes on paths the exporter
#     serves (asked of a running exporter), tolerations, rolling updates;
#   - the ConfigMap's INI, taken from the rendered ConfigMap, passes `--check-config`.
# The image itself is built and checked by tests/container/image.sh.
# tests/integration/deploy_caps.sh runs the exporter with the DaemonSet's privileges.
# schedule: parallel once
# why: the manifests and their kustomize renders, which no build flavour changes
source "$(dirname "$0")/../lib.sh"
[ -x "$EXPORTER" ] || skip_all "$EXPORTER not built"
for tool in jq perl curl; do
	command -v "$tool" >/dev/null || skip_all "needs $tool (scripts/deps.sh test)"
done
perl -MYAML::XS -e 1 2>/dev/null || skip_all "needs YAML::XS (libyaml-libyaml-perl)"

K=deploy/kubernetes
# The capabilities the exporter needs, measured by deploy_caps.sh: drops and retrans load
# tracing programs (BPF, PERFMON); rtt loads a sockops program (NET_ADMIN).
EXPECTED_CAPS="BPF NET_ADMIN PERFMON"

# jqc NAME FILTER FILE: ok when the jq filter's output is `true`.
jqc() {
	local out
	out=$(jq -r "$2" "$3" 2>&1)
	if [ "$out" = true ]; then ok "$1"; else not_ok "$1" "jq '$2' gave: $out"; fi
}
# has_collector NAME: the binary knows collector NAME (its config section is accepted).
has_collector() {
	printf '[collector.%s]\nenabled = true\n' "$1" >"$TMP/probe.ini"
	"$EXPORTER" --check-config --config "$TMP/probe.ini" >/dev/null 2>&1
}

# ---- render -------------------------------------------------------------------------------
RENDERED=0
if command -v kubectl >/dev/null && kubectl kustomize --help >/dev/null 2>&1; then
	RENDERED=1
	for what in base:"$K" full:"$K/overlays/prometheus-operator"; do
		name=${what%%:*} dir=${what#*:}
		if kubectl kustomize "$dir" >"$TMP/$name.yaml" 2>"$TMP/$name.err"; then
			ok "kubectl kustomize $dir renders"
		else
			not_ok "kubectl kustomize $dir renders" "$(cat "$TMP/$name.err")"
			finish
		fi
		yaml2json <"$TMP/$name.yaml" >"$TMP/$name.json" || {
			not_ok "rendered $dir parses as YAML"
			finish
		}
	done
else
	# No kubectl: the files themselves, without kustomize's namespace and generated ConfigMap.
	echo "!!!!! kubectl kustomize not available: checking the raw manifests only !!!!!" >&2
	for f in namespace serviceaccount daemonset service; do
		cat "$K/base/$f.yaml"
		echo ---
	done >"$TMP/base.yaml"
	{
		cat "$TMP/base.yaml" $K/components/prometheus-operator/servicemonitor.yaml
		echo ---
		cat $K/components/prometheus-operator/prometheusrule.yaml
	} >"$TMP/full.yaml"
	for name in base full; do
		yaml2json <"$TMP/$name.yaml" | jq --rawfile ini "$K/base/netstack_exporter.ini" \
			'. + [{kind: "ConfigMap", metadata: {name: "netstack-exporter",
			namespace: "netstack"}, data: {"netstack_exporter.ini": $ini}}]' >"$TMP/$name.json"
	done
fi
B=$TMP/base.json F=$TMP/full.json

check_eq "base kinds" "ConfigMap DaemonSet Namespace Service ServiceAccount" \
	"$(jq -r '[.[].kind] | sort | join(" ")' "$B")"
check_eq "overlay adds ServiceMonitor and PrometheusRule" \
	"ConfigMap DaemonSet Namespace PrometheusRule Service ServiceAccount ServiceMonitor" \
	"$(jq -r '[.[].kind] | sort | join(" ")' "$F")"
if [ "$RENDERED" = 1 ]; then
	jqc "every namespaced object is in namespace netstack" \
		'[.[] | select(.kind != "Namespace") | .metadata.namespace == "netstack"] | all' "$F"
fi
jqc "namespace allows the pod (PSA privileged: added capabilities and hostPath)" \
	'.[] | select(.kind == "Namespace") | .metadata.labels["pod-security.kubernetes.io/enforce"] == "privileged"' "$B"

# ---- DaemonSet ----------------------------------------------------------------------------
jq '.[] | select(.kind == "DaemonSet")' "$B" >"$TMP/ds.json"
POD='.spec.template.spec'
CONTAINERS="[$POD | (.containers // [])[], (.initContainers // [])[]]"
jqc "one container" "$POD.containers | length == 1" "$TMP/ds.json"
jqc "every container has CPU and memory requests and limits" \
	"$CONTAINERS | map(.resources | .limits.cpu and .limits.memory and .requests.cpu and .requests.memory) | all" \
	"$TMP/ds.json"
check "nothing anywhere says privileged: true" bash -c "! grep -q 'privileged: true' '$TMP/base.yaml'"
jqc "every container: privileged false, no privilege escalation, read-only root" \
	"$CONTAINERS | map(.securityContext | .privileged == false and .allowPrivilegeEscalation == false and .readOnlyRootFilesystem == true) | all" \
	"$TMP/ds.json"
jqc "every container drops ALL capabilities" \
	"$CONTAINERS | map(.securityContext.capabilities.drop == [\"ALL\"]) | all" "$TMP/ds.json"
check_eq "capabilities added: exactly the measured set" "$EXPECTED_CAPS" \
	"$(jq -r "$POD.containers[0].securityContext.capabilities.add | sort | join(\" \")" "$TMP/ds.json")"
# The runtime's profile is off because the exporter installs its own (tests/integration/seccomp.sh);
# the annotation is what podman kube play reads, and the API requires it to agree with the field.
jqc "seccomp: the container Unconfined in the field and the annotation, nothing pod-wide" \
	"($POD.securityContext.seccompProfile == null) and ($CONTAINERS | map(.securityContext.seccompProfile.type == \"Unconfined\") | all) and ([$POD.containers[].name | \"container.seccomp.security.alpha.kubernetes.io/\" + .] as \$k | .spec.template.metadata.annotations as \$a | \$k | map(\$a[.] == \"unconfined\") | all)" \
	"$TMP/ds.json"
check_eq "the exporter's own filter is on in the shipped configuration" "" \
	"$(grep -E '^[[:space:]]*seccomp[[:space:]]*=' deploy/kubernetes/base/netstack_exporter.ini | grep -v 'true' || true)"
# The exporter cannot drop to another user after attaching: claiming runAsNonRoot would be false.
jqc "runs as uid 0 and does not claim runAsNonRoot" \
	"$POD.containers[0].securityContext | .runAsUser == 0 and .runAsNonRoot != true" "$TMP/ds.json"
jqc "no hostNetwork, hostPID, hostIPC" \
	"$POD | (.hostNetwork // false) == false and (.hostPID // false) == false and (.hostIPC // false) == false" \
	"$TMP/ds.json"
jqc "no API token mounted" "$POD.automountServiceAccountToken == false" "$TMP/ds.json"
check_eq "host paths: BTF and the cgroup2 root only" "/sys/fs/cgroup /sys/kernel/btf" \
	"$(jq -r "[$POD.volumes[] | .hostPath.path // empty] | sort | join(\" \")" "$TMP/ds.json")"
jqc "every volume mount is read-only" "$CONTAINERS | map(.volumeMounts[] | .readOnly == true) | all" \
	"$TMP/ds.json"
jqc "tolerates every taint (runs on every node)" \
	"[$POD.tolerations[] | select(.operator == \"Exists\" and (.key // \"\") == \"\" and (.effect // \"\") == \"\")] | length == 1" \
	"$TMP/ds.json"
jqc "rolling update with maxUnavailable" \
	'.spec.updateStrategy.type == "RollingUpdate" and (.spec.updateStrategy.rollingUpdate.maxUnavailable != null)' \
	"$TMP/ds.json"
jqc "selector matches the pod template's labels" \
	'. as $d | .spec.selector.matchLabels | to_entries | map(.value == $d.spec.template.metadata.labels[.key]) | all' \
	"$TMP/ds.json"
sa=$(jq -r "$POD.serviceAccountName" "$TMP/ds.json")
jqc "service account $sa exists" "[.[] | select(.kind == \"ServiceAccount\" and .metadata.name == \"$sa\")] | length == 1" "$B"

# ---- the INI: from the rendered ConfigMap, through the exporter's own parser ---------------
cm_vol=$(jq -r "$POD.volumes[] | select(.configMap) | .name" "$TMP/ds.json")
cm_name=$(jq -r "$POD.volumes[] | select(.configMap) | .configMap.name" "$TMP/ds.json")
cm_mount=$(jq -r "$POD.containers[0].volumeMounts[] | select(.name == \"$cm_vol\") | .mountPath" "$TMP/ds.json")
jq -r ".[] | select(.kind == \"ConfigMap\" and .metadata.name == \"$cm_name\") | .data | to_entries[0] | .key, .value" \
	"$B" >"$TMP/cm.txt"
cm_key=$(head -n 1 "$TMP/cm.txt")
tail -n +2 "$TMP/cm.txt" >"$TMP/configmap.ini"
check "the DaemonSet's ConfigMap $cm_name exists and holds an INI" test -s "$TMP/configmap.ini"
check_eq "--config points at the mounted INI" "--config $cm_mount/$cm_key" \
	"$(jq -r "$POD.containers[0].args | join(\" \")" "$TMP/ds.json")"
# Collectors the binary does not have yet: their sections are checked once they land.
cp "$TMP/configmap.ini" "$TMP/check.ini"
for c in $(sed -n 's/^\[collector\.\(.*\)\]$/\1/p' "$TMP/configmap.ini"); do
	if ! has_collector "$c"; then
		echo "  note: $EXPORTER has no collector '$c' yet: its section is left out of the check"
		awk -v s="[collector.$c]" '/^\[/ { skip = ($0 == s) } !skip' "$TMP/check.ini" >"$TMP/c.ini"
		mv "$TMP/c.ini" "$TMP/check.ini"
	fi
done
out=$("$EXPORTER" --check-config --config "$TMP/check.ini" 2>&1)
check_eq "exporter --check-config accepts the ConfigMap's INI" 0 "$?"
[ -n "$out" ] && echo "  $out"
printf '[web]\nbogus = 1\n' >>"$TMP/check.ini"
"$EXPORTER" --check-config --config "$TMP/check.ini" >/dev/null 2>&1
check_eq "and rejects it with a bad key added (the check can fail)" 1 "$?"
ini_get() { # SECTION KEY: the value in the ConfigMap's INI ("" when absent)
	awk -v s="[$1]" -v k="$2" '/^\[/ { in_s = ($0 == s) }
		in_s && $1 == k && $2 == "=" { sub(/^[^=]*= */, ""); print; exit }' "$TMP/configmap.ini"
}
if ini_get collector.drops labels | grep -q function; then
	check "function label enabled: SYSLOG granted" grep -qw SYSLOG <<<"$EXPECTED_CAPS"
fi
if [ "$(ini_get collector.rtt existing_sockets)" != false ] && grep -q '^\[collector.rtt\]' "$TMP/configmap.ini"; then
	not_ok "rtt existing_sockets on needs SYS_ADMIN, SYS_PTRACE and hostPID, which the DaemonSet does not grant"
fi
rtt_cgroup=$(ini_get collector.rtt cgroup)
if [ -n "$rtt_cgroup" ]; then
	check_eq "rtt cgroup is the mounted host cgroup2 root" "$rtt_cgroup" \
		"$(jq -r "$POD.containers[0].volumeMounts[] | select(.name == \"cgroup\") | .mountPath" "$TMP/ds.json")"
fi

# ---- ports and probes: asked of a running exporter with the ConfigMap's INI ----------------
listen=$(ini_get web listen_address)
metrics_path=$(ini_get web metrics_path)
port=${listen##*:}
check_eq "containerPort = the INI's listen port" "$port" \
	"$(jq -r "$POD.containers[0].ports[] | select(.name == \"metrics\") | .containerPort" "$TMP/ds.json")"
jq -r "$POD.containers[0] | (.livenessProbe, .readinessProbe) | .httpGet | \"\(.path) \(.port)\"" \
	"$TMP/ds.json" >"$TMP/probes.txt"
check_eq "liveness and readiness probes: httpGet /healthz on port metrics" \
	"/healthz metrics,/healthz metrics" "$(paste -sd, "$TMP/probes.txt")"
# The exporter with the ConfigMap's INI (collectors that start or not; only HTTP matters here).
awk '/^\[/ { skip = ($0 ~ /^\[collector\./) } !skip' "$TMP/check.ini" | grep -v '^bogus' >"$TMP/http.ini"
if start_exporter --config "$TMP/http.ini"; then
	while read -r path _; do
		check_eq "probe path $path answers 200" 200 \
			"$(curl -s -o /dev/null -w '%{http_code}' "$EXPORTER_URL$path")"
	done <"$TMP/probes.txt"
	check_eq "metrics_path $metrics_path answers 200" 200 \
		"$(curl -s -o /dev/null -w '%{http_code}' "$EXPORTER_URL$metrics_path")"
else
	not_ok "exporter starts with the ConfigMap's INI"
fi

# ---- Service and ServiceMonitor -----------------------------------------------------------
jq '.[] | select(.kind == "Service")' "$B" >"$TMP/svc.json"
jqc "Service is headless" '.spec.clusterIP == "None"' "$TMP/svc.json"
sel_ok=$(jq -r --slurpfile ds "$TMP/ds.json" \
	'.spec.selector | to_entries | map(.value == $ds[0].spec.template.metadata.labels[.key]) | all' "$TMP/svc.json")
check_eq "Service selects the DaemonSet's pods" true "$sel_ok"
check_eq "Service port metrics -> container port metrics" "9437 metrics" \
	"$(jq -r '.spec.ports[] | select(.name == "metrics") | "\(.port) \(.targetPort)"' "$TMP/svc.json")"
jq '.[] | select(.kind == "ServiceMonitor")' "$F" >"$TMP/sm.json"
sm_ok=$(jq -r --slurpfile svc "$TMP/svc.json" \
	'.spec.selector.matchLabels | to_entries | map(.value == $svc[0].metadata.labels[.key]) | all' "$TMP/sm.json")
check_eq "ServiceMonitor selects the Service" true "$sm_ok"
check_eq "ServiceMonitor scrapes port metrics at the INI's metrics_path" "metrics $metrics_path" \
	"$(jq -r '.spec.endpoints[0] | "\(.port) \(.path)"' "$TMP/sm.json")"
jqc "ServiceMonitor sets node (and instance) from the pod's node name" \
	'[.spec.endpoints[0].relabelings[] | select(.sourceLabels == ["__meta_kubernetes_pod_node_name"]) | .targetLabel] | sort == ["instance", "node"]' \
	"$TMP/sm.json"
check_eq "job label = Service name = the job the rules expect" "netstack-exporter" \
	"$(jq -r 'if .spec.jobLabel then "jobLabel set" else .metadata.name end' "$TMP/svc.json")"
grep -q 'job="netstack-exporter"' deploy/prometheus/netstack.rules.yml
check_eq "rules use job=\"netstack-exporter\"" 0 "$?"

# ---- pod-labels overlay --------------------------------------------------------------------
# The base's least privilege plus exactly what pod attribution needs (components/pod-labels).
if [ "$RENDERED" = 1 ]; then
	if kubectl kustomize "$K/overlays/pod-labels" >"$TMP/pods.yaml" 2>"$TMP/pods.err" &&
		yaml2json <"$TMP/pods.yaml" >"$TMP/pods.json"; then
		ok "kubectl kustomize $K/overlays/pod-labels renders"
		PS='.[] | select(.kind == "DaemonSet") | .spec.template.spec'
		jqc "pod-labels: no hostPID (the kernel walks the processes, not /proc)" \
			"$PS | (.hostPID // false) == false" "$TMP/pods.json"
		jqc "pod-labels: service account token mounted" \
			"$PS.automountServiceAccountToken == true" "$TMP/pods.json"
		jqc "pod-labels: NODE_NAME from the downward API" \
			"[$PS.containers[0].env[] | select(.name == \"NODE_NAME\") | .valueFrom.fieldRef.fieldPath] == [\"spec.nodeName\"]" \
			"$TMP/pods.json"
		jqc "pod-labels: securityContext exactly the base's (no SYS_PTRACE, nothing added)" \
			"[$PS.containers[0].securityContext] == [$(jq -c '.[] | select(.kind == "DaemonSet") | .spec.template.spec.containers[0].securityContext' "$B")]" \
			"$TMP/pods.json"
		# What else it may change: the token mount, NODE_NAME, its own ConfigMap (renamed).
		strip='del(.automountServiceAccountToken, .containers[0].env) |
			(.volumes[] | select(.configMap) | .configMap.name) |= "config"'
		jqc "pod-labels: the pod spec is otherwise the base's (no host namespace or path added)" \
			"[$PS | $strip] == [$(jq -c ".[] | select(.kind == \"DaemonSet\") | .spec.template.spec | $strip" "$B")]" \
			"$TMP/pods.json"
		jqc "pod-labels: ClusterRole grants list and watch on pods and nothing else (no get: the client never reads one pod)" \
			'[.[] | select(.kind == "ClusterRole") | .rules[]] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]}]' \
			"$TMP/pods.json"
		jqc "pod-labels: bound to the DaemonSet's service account" \
			"[.[] | select(.kind == \"ClusterRoleBinding\") | .subjects[] | \"\(.kind)/\(.namespace)/\(.name)\"] == [\"ServiceAccount/netstack/$sa\"]" \
			"$TMP/pods.json"
		jq -r '.[] | select(.kind == "ConfigMap") | .data | to_entries[0].value' "$TMP/pods.json" \
			>"$TMP/pods.ini"
		check "pod-labels: its INI sets pod_labels" grep -q '^pod_labels = ' "$TMP/pods.ini"
		check "pod-labels: its INI passes --check-config" \
			"$EXPORTER" --check-config --config "$TMP/pods.ini"
	else
		not_ok "kubectl kustomize $K/overlays/pod-labels renders" "$(cat "$TMP/pods.err")"
	fi
fi

# ---- memlock overlay -----------------------------------------------------------------------
# For nodes on kernels before 5.11 (components/memlock): the base plus CAP_SYS_RESOURCE, with
# which the exporter raises its RLIMIT_MEMLOCK at start (the kernel matrix's pod-memlock
# profile runs it); nothing else. It composes with the other components.
if [ "$RENDERED" = 1 ]; then
	if kubectl kustomize "$K/overlays/memlock" >"$TMP/memlock.yaml" 2>"$TMP/memlock.err" &&
		yaml2json <"$TMP/memlock.yaml" >"$TMP/memlock.json"; then
		ok "kubectl kustomize $K/overlays/memlock renders"
		add='.spec.template.spec.containers[0].securityContext.capabilities.add'
		caps=".[] | select(.kind == \"DaemonSet\") | $add"
		check_eq "memlock: capabilities added: the base's and SYS_RESOURCE" \
			"$EXPECTED_CAPS SYS_RESOURCE" "$(jq -r "$caps | sort | join(\" \")" "$TMP/memlock.json")"
		strip="map(if .kind == \"DaemonSet\" then del($add) else . end)"
		jq -S "$strip" "$B" >"$TMP/base.strip" && jq -S "$strip" "$TMP/memlock.json" >"$TMP/memlock.strip"
		if diff -u "$TMP/base.strip" "$TMP/memlock.strip" >"$TMP/memlock.diff"; then
			ok "memlock: everything else is the base's"
		else
			not_ok "memlock: everything else is the base's" "$(head -n 20 "$TMP/memlock.diff")"
		fi
	else
		not_ok "kubectl kustomize $K/overlays/memlock renders" "$(cat "$TMP/memlock.err")"
	fi
	mkdir "$TMP/both"
	rel=$(realpath --relative-to="$TMP/both" "$K")
	printf 'resources: [%s/base]\ncomponents: [%s/components/pod-labels, %s/components/memlock]\n' \
		"$rel" "$rel" "$rel" >"$TMP/both/kustomization.yaml"
	if kubectl kustomize "$TMP/both" 2>"$TMP/both.err" | yaml2json >"$TMP/both.json"; then
		check_eq "memlock with pod-labels: SYS_RESOURCE added and NODE_NAME set" \
			"$EXPECTED_CAPS SYS_RESOURCE NODE_NAME" \
			"$(jq -r "($caps | sort | join(\" \")) + \" \" + ([.[] | select(.kind == \"DaemonSet\") | .spec.template.spec.containers[0].env[].name] | join(\" \"))" "$TMP/both.json")"
	else
		not_ok "memlock with pod-labels renders" "$(cat "$TMP/both.err")"
	fi
fi

finish
