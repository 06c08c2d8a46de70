#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The DaemonSet's pod as a container runtime runs it: `kubectl kustomize` renders the base and
# the pod-labels overlay, the DaemonSet's pod template becomes a Pod (its ConfigMap the INI
# file) and `podman kube play` runs it with runc. The test changes only what this machine needs
# (each change is printed): the image name, and the cgroup hostPath where /sys/fs/cgroup is not
# cgroup2; for the overlay, what the kubelet would add (the service account's token and CA,
# KUBERNETES_SERVICE_HOST/PORT) and, where podman lacks that downward API field, NODE_NAME's
# value. Checked from outside, in /proc and through the pod's IP:
#   - every collector up; NO_SOCKET drops made in a namespace of the test's own equal that
#     namespace's Udp NoPorts;
#   - the process's and every thread's capability sets are exactly the manifest's list;
#     no_new_privs, seccomp, user, host namespaces, mounts, read-only root, cgroup limits;
#   - a reload (SIGHUP) after the ConfigMap's file changed restarts every collector with the
#     netns label: all up, drops exact per namespace, no call denied by the exporter's filter;
#   - the probes answer as the kubelet asks them; the log is logfmt;
#   - SIGTERM (`podman pod stop`: 4.3's `kube down` kills at once) ends it within
#     terminationGracePeriodSeconds with exit 0; none of its BPF programs, links or maps
#     outlive it;
#   - overlay: with tests/tools/fake_apiserver as the API server, drops in a pod-shaped cgroup's
#     namespace carry that pod's namespace and pod labels.
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/container/lib.sh
source tests/container/lib.sh
require_root_bpf
for tool in podman kubectl jq capsh bpftool curl openssl python3; do
	command -v "$tool" >/dev/null || skip_all "needs $tool (scripts/deps.sh test)"
done
perl -MYAML::XS -e 1 2>/dev/null || skip_all "needs YAML::XS (libyaml-libyaml-perl)"
UDPFLOOD=$BUILD/tests/udpflood
APISERVER=$BUILD/tests/fake_apiserver
for t in "$UDPFLOOD" "$APISERVER"; do
	[ -x "$t" ] || skip_all "$t not built (make tools)"
done
CG2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
[ -n "$CG2" ] || skip_all "no cgroup2 hierarchy mounted"

START=$(date +%s)
M=netstack_skb_drops_total
N=200 # datagrams per measurement
NODE=node-$$
ctr_env
case $? in
0) ;;
77) skip_all "podman's environment is incomplete (scripts/deps.sh test)" ;;
*)
	not_ok "podman's environment (tests/container/lib.sh)"
	finish
	;;
esac
# The image as deploy/docker/Dockerfile builds it (make image), under a name of this run's own.
IMAGE=localhost/netstack-exporter:pod$$
if { ctr_bases && ctr_image "$(dpkg --print-architecture)" "$IMAGE"; } >"$TMP/image.log" 2>&1; then
	on_exit "ctr_teardown $IMAGE"
	# A base this test made itself (image.sh may be making the other one meanwhile).
	grep -E '^# (made|mmdebstrap)' "$TMP/image.log"
else
	not_ok "the image builds" "$(tail -n 20 "$TMP/image.log")"
	finish
fi

# ---- the Pod, from the rendered DaemonSet ------------------------------------------------------
# render NAME DIR: DIR rendered; $TMP/NAME.pod.json is the DaemonSet's pod template as a Pod
# named NAME-$$, with the image and cgroup changes, $TMP/NAME.cm.json its ConfigMap.
render() {
	local name=$1 dir=$2 j=$TMP/$1 old
	kubectl kustomize "$dir" >"$j.yaml" 2>"$j.err" && yaml2json <"$j.yaml" >"$j.json" || {
		not_ok "kubectl kustomize $dir renders" "$(cat "$j.err")"
		return 1
	}
	jq '.[] | select(.kind == "ConfigMap")' "$j.json" >"$j.cm.json"
	jq --arg name "$name-$$" '.[] | select(.kind == "DaemonSet") | {apiVersion: "v1",
		kind: "Pod", metadata: (.spec.template.metadata + {name: $name,
		namespace: .metadata.namespace}), spec: .spec.template.spec}' "$j.json" >"$j.pod.json"
	old=$(jq -r '.spec.containers[0].image' "$j.pod.json")
	edit "$name" '.spec.containers[0].image = $v' "$IMAGE"
	echo "# $name: changed containers[0].image: $old -> $IMAGE (built here)"
	if [ "$(stat -f -c %T /sys/fs/cgroup)" != cgroup2fs ]; then
		edit "$name" '.spec.volumes |= map(if .hostPath.path == "/sys/fs/cgroup"
			then .hostPath.path = $v else . end)' "$CG2"
		echo "# $name: changed the hostPath /sys/fs/cgroup -> $CG2 (cgroup v1 at /sys/fs/cgroup" \
			"here; nodes have cgroup2 there)"
	fi
}
# edit NAME JQ VALUE: apply the jq filter (VALUE as $v) to NAME's Pod.
edit() {
	jq --arg v "$3" "$2" "$TMP/$1.pod.json" >"$TMP/$1.tmp" && mv "$TMP/$1.tmp" "$TMP/$1.pod.json"
}
# spec NAME FILTER: jq -r FILTER on NAME's Pod.
spec() { jq -r "$2" "$TMP/$1.pod.json"; }

# play NAME: podman kube play; sets PID (the exporter), POD_IP, URL, READY_MS.
play() {
	local name=$1 ctr t0 t1 started port
	ctr=$name-$$-$(spec "$name" '.spec.containers[0].name')
	t0=$(date +%s%N)
	if ! podman kube play --configmap "$TMP/$name.cm.json" "$TMP/$name.pod.json" \
		>"$TMP/$name.play" 2>&1; then
		not_ok "$name: podman kube play starts the pod" "$(cat "$TMP/$name.play")"
		podman kube down "$TMP/$name.pod.json" >/dev/null 2>&1
		return 1
	fi
	on_exit "podman pod rm -f -t 0 $name-$$"
	ok "$name: podman kube play starts the pod"
	CTR=$ctr
	PID=$(podman inspect -f '{{.State.Pid}}' "$ctr")
	POD_IP=$(podman inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' \
		"$(podman pod inspect -f '{{.InfraContainerID}}' "$name-$$")")
	port=$(probe_port "$name" .readinessProbe)
	URL=http://$POD_IP:$port
	EXPORTER_URL=$URL # for scrape_sum and wait_for
	# Ready as the kubelet sees it: the readiness probe answers (within a minute: the
	# exporter parses the kernel's BTF on a machine that may be busy).
	for _ in $(seq 1200); do
		probe "$name" .readinessProbe && break
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.05
	done
	t1=$(date +%s%N)
	READY_MS=$(((t1 - t0) / 1000000))
	started=$(podman inspect -f '{{.State.StartedAt.UnixNano}}' "$ctr")
	check "$name: ready (readiness probe answered) ${READY_MS} ms after kube play, $(((t1 -
		started) / 1000000)) ms after the container started" probe "$name" .readinessProbe
}
# probe_port NAME PROBE: the probe's port, a name resolved through the container's ports.
probe_port() {
	spec "$1" ".spec.containers[0] as \$c | \$c$2.httpGet.port as \$p |
		if (\$p | type) == \"number\" then \$p
		else \$c.ports[] | select(.name == \$p) | .containerPort end"
}
# probe NAME PROBE: an HTTP probe as the kubelet runs it, from the node to the pod's IP.
probe() {
	curl -sf -o /dev/null -m "$(spec "$1" ".spec.containers[0]$2.timeoutSeconds // 1")" \
		"http://$POD_IP:$(probe_port "$1" "$2")$(spec "$1" ".spec.containers[0]$2.httpGet.path")"
}

# ---- checks from outside -------------------------------------------------------------------------
# statuses: the status file of the process and of each of its threads.
statuses() { echo "/proc/$PID/status" /proc/"$PID"/task/*/status; }
# field_all FIELD: the distinct values of FIELD over the process and its threads.
field_all() {
	local f
	for f in $(statuses); do awk -v k="$1:" '$1 == k { print $2 }' "$f"; done | sort -u |
		paste -sd' '
}
# in_root PATH: PATH with its symlinks resolved inside the container (/var/run is /run there).
in_root() {
	python3 -c 'import os, sys; os.chroot(sys.argv[1]); print(os.path.realpath(sys.argv[2]))' \
		"/proc/$PID/root" "$1"
}
caps_of() { capsh --decode="$1" | sed 's/.*=//' | tr , '\n' | grep . | sort | paste -sd,; }

checks() {
	local name=$1 want f set vals root mp ro path stat_in stat_out cg lim
	local nthreads
	nthreads=$(find "/proc/$PID/task" -mindepth 1 -maxdepth 1 | wc -l)
	# Capabilities: exactly the manifest's added list (all others dropped), every thread.
	check_eq "$name: manifest drops ALL" ALL "$(spec "$name" \
		'.spec.containers[0].securityContext.capabilities.drop | join(",")')"
	want=$(spec "$name" '.spec.containers[0].securityContext.capabilities.add[] |
		"cap_" + ascii_downcase' | sort | paste -sd,)
	for set in CapEff CapPrm CapBnd; do
		vals=$(field_all "$set")
		if [ "$(wc -w <<<"$vals")" -ne 1 ]; then
			not_ok "$name: $set the same in all $nthreads threads" "$vals"
			continue
		fi
		check_eq "$name: $set of the process and its $nthreads threads is the manifest's list" \
			"$want" "$(caps_of "$vals")"
	done
	for set in CapInh CapAmb; do
		check_eq "$name: $set empty in every thread" 0000000000000000 "$(field_all "$set")"
	done
	check_eq "$name: no_new_privs in every thread (allowPrivilegeEscalation: $(spec "$name" \
		'.spec.containers[0].securityContext.allowPrivilegeEscalation'))" 1 "$(field_all NoNewPrivs)"
	check_eq "$name: a seccomp filter in force in every thread ($(field_all Seccomp_filters) filters)" \
		2 "$(field_all Seccomp)"
	check "$name: ... the exporter's own among them (its log)" grep -q \
		'security: seccomp filter installed on every thread' <(podman logs "$CTR" 2>&1)
	check_eq "$name: uid (runAsUser)" "$(spec "$name" '.spec.containers[0].securityContext.runAsUser')" \
		"$(awk '$1 == "Uid:" { print $2 $3 $4 $5 == $2 $2 $2 $2 ? $2 : "mixed" }' "/proc/$PID/status")"
	check_eq "$name: gid (runAsGroup)" "$(spec "$name" '.spec.containers[0].securityContext.runAsGroup')" \
		"$(awk '$1 == "Gid:" { print $2 $3 $4 $5 == $2 $2 $2 $2 ? $2 : "mixed" }' "/proc/$PID/status")"
	for ns in net:hostNetwork pid:hostPID ipc:hostIPC; do
		check_eq "$name: ${ns#*:} $(spec "$name" ".spec.${ns#*:} // false")" \
			"$(spec "$name" ".spec.${ns#*:} // false")" \
			"$([ "$(readlink "/proc/$PID/ns/${ns%:*}")" = "$(readlink /proc/1/ns/"${ns%:*}")" ] &&
				echo true || echo false)"
	done
	# Mounts: read-only root; each volume where the manifest puts it, read-only if it says so.
	root=$(awk '$5 == "/" { print $6 }' "/proc/$PID/mountinfo" | tail -n 1)
	check_eq "$name: root filesystem read-only (readOnlyRootFilesystem)" \
		"$(spec "$name" '.spec.containers[0].securityContext.readOnlyRootFilesystem')" \
		"$([[ ,$root, == *,ro,* ]] && echo true || echo false)"
	while read -r vol mp ro; do
		mp=$(in_root "$mp")
		f=$(awk -v m="$mp" '$5 == m { print $6 }' "/proc/$PID/mountinfo" | tail -n 1)
		check_eq "$name: volume $vol mounted at $mp, read-only $ro" "$ro" \
			"$([ -z "$f" ] && echo missing || { [[ ,$f, == *,ro,* ]] && echo true || echo false; })"
		path=$(spec "$name" ".spec.volumes[] | select(.name == \"$vol\") | .hostPath.path // empty")
		if [ -n "$path" ]; then
			stat_out=$(stat -L -c %d:%i "$path")
			stat_in=$(stat -L -c %d:%i "/proc/$PID/root$mp")
			check_eq "$name: $mp is the host's $path" "$stat_out" "$stat_in"
		fi
	done < <(spec "$name" '.spec.containers[0].volumeMounts[] |
		"\(.name) \(.mountPath) \(.readOnly // false)"')
	cm=$(spec "$name" '.spec.volumes[] | select(.configMap) | .name')
	mp=$(in_root "$(spec "$name" ".spec.containers[0].volumeMounts[] | select(.name == \"$cm\") |
		.mountPath")")
	for key in $(jq -r '.data | keys[]' "$TMP/$name.cm.json"); do
		check "$name: the ConfigMap's $key is the file $mp/$key" cmp -s \
			<(jq -j --arg k "$key" '.data[$k]' "$TMP/$name.cm.json") "/proc/$PID/root$mp/$key"
	done
	# Resources: the limits in the container's own cgroup (v1 controllers or the v2 unified).
	lim=$(spec "$name" '.spec.containers[0].resources.limits.memory' | numfmt --from=auto)
	cg=$(awk -F: '$2 == "memory" { print $3 }' "/proc/$PID/cgroup")
	if [ -n "$cg" ]; then
		f=$(cat "/sys/fs/cgroup/memory$cg/memory.limit_in_bytes")
	else
		f=$(cat "$CG2$(awk -F: '$1 == 0 { print $3 }' "/proc/$PID/cgroup")/memory.max")
	fi
	check_eq "$name: memory limit in the container's cgroup" "$lim" "$f"
	lim=$(spec "$name" '.spec.containers[0].resources.limits.cpu | tostring |
		if endswith("m") then .[:-1] | tonumber else tonumber * 1000 end')
	cg=$(awk -F: '$2 ~ /(^|,)cpu(,|$)/ { print $3 }' "/proc/$PID/cgroup")
	if [ -n "$cg" ]; then
		f=$(($(cat "/sys/fs/cgroup/cpu$cg/cpu.cfs_quota_us") * 1000 /
			$(cat "/sys/fs/cgroup/cpu$cg/cpu.cfs_period_us")))
	else
		read -r q p <"$CG2$(awk -F: '$1 == 0 { print $3 }' "/proc/$PID/cgroup")/cpu.max"
		f=$((q * 1000 / p))
	fi
	check_eq "$name: CPU limit in the container's cgroup (millicores)" "$lim" "$f"
	# Probes as the kubelet runs them; podman's own healthcheck for the record.
	for p in .readinessProbe .livenessProbe; do
		check "$name: ${p#.} GET $(spec "$name" ".spec.containers[0]$p.httpGet.path") answers" \
			probe "$name" "$p"
	done
	echo "# $name: podman healthcheck: $(spec "$name" '.spec.containers[0].livenessProbe | tojson') became" \
		"$(podman inspect -f '{{json .Config.Healthcheck.Test}}' "$CTR");" \
		"podman healthcheck run: $(podman healthcheck run "$CTR" 2>&1 | head -n 1 || true)"
	# Collectors.
	scrape "$TMP/$name.m0" "$URL"
	for c in drops retrans resets rtt connections; do
		check_eq "$name: collector $c up" 1 \
			"$(fsum "$TMP/$name.m0" "^netstack_collector_up[{]collector=\"$c\"[}]")"
	done
}

# noports NS FAMILY: the namespace's Udp NoPorts (ipv4) or Udp6NoPorts (ipv6) counter.
noports() {
	if [ "$2" = ipv4 ]; then
		ip netns exec "$1" awk '$1 == "Udp:" { if (n++) { print $(i); exit } else
			for (i = 1; i <= NF; i++) if ($i == "NoPorts") break }' /proc/net/snmp
	else
		ip netns exec "$1" awk '$1 == "Udp6NoPorts" { print $2 }' /proc/net/snmp6
	fi
}
# drops_equal NAME NS FAMILY [LABELS]: N datagrams to a closed port on NS's loopback; the
# NO_SOCKET drops counted for FAMILY (and LABELS) equal NS's NoPorts. Without a label naming
# NS the series also count other namespaces' drops: up to 10 windows, until one had none.
drops_equal() {
	local name=$1 ns=$2 fam=$3 re a0 a1 want got addr=127.0.0.1
	re="^${M}[{]reason=\"NO_SOCKET\",family=\"$fam\",protocol=\"udp\"${4:+,$4}[}]"
	[ "$fam" = ipv6 ] && addr=::1
	for try in $(seq 10); do
		scrape "$TMP/d0" "$URL"
		a0=$(noports "$ns" "$fam")
		ip netns exec "$ns" "$UDPFLOOD" "$addr" 9 "$N" >/dev/null
		a1=$(noports "$ns" "$fam")
		want=$((a1 - a0))
		# The kernel counts at once; the scrape sums the per-CPU maps: wait for the total.
		for _ in $(seq 100); do
			scrape "$TMP/d1" "$URL"
			got=$(delta "$TMP/d0" "$TMP/d1" "$re")
			[ "$got" -ge "$want" ] && break
			sleep 0.05
		done
		[ "$got" -gt "$want" ] || break
		echo "# $name: window $try: $got $fam drops counted, $want NoPorts in $ns: other" \
			"namespaces dropped meanwhile, again"
	done
	check_eq "$name: NO_SOCKET $fam drops equal Udp NoPorts in $ns ($N sent, try $try)" \
		"$want" "$got"
	DROPS_SEEN="$DROPS_SEEN $name:$fam:$want/$got"
}
DROPS_SEEN=

# logfmt NAME: every line the container logged is a logfmt line.
logfmt() {
	podman logs "$CTR" >"$TMP/$1.log" 2>&1
	gt "$1: the exporter logged" "$(wc -l <"$TMP/$1.log")" 0
	check_eq "$1: every log line is logfmt (ts, level, msg)" 0 \
		"$(grep -cvE '^ts=[0-9T:.-]+Z level=(error|warn|info|debug) msg="[^"]*"$' "$TMP/$1.log")"
}

# down NAME: SIGTERM (podman pod stop), then podman kube down: time, exit code, nothing of its
# left in the kernel.
down() {
	local name=$1 grace t0 ms left
	grace=$(spec "$name" '.spec.terminationGracePeriodSeconds // 30')
	# What the exporter holds in the kernel: its programs, links and maps.
	cat /proc/"$PID"/fdinfo/* 2>/dev/null | awk -F'[_:\t ]+' \
		'$1 ~ /^(prog|link|map)$/ && $2 == "id" { print $1, $3 }' | sort -u >"$TMP/$name.held"
	gt "$name: the exporter holds BPF programs (its fdinfo)" "$(grep -c '^prog' "$TMP/$name.held")" 0
	# podman 4.3's kube down kills at once (SIGKILL); pod stop sends SIGTERM and waits the
	# container's stop timeout, which kube play took from terminationGracePeriodSeconds.
	check_eq "$name: podman's stop timeout is terminationGracePeriodSeconds" "$grace" \
		"$(podman inspect -f '{{.Config.StopTimeout}}' "$CTR")"
	t0=$(date +%s%N)
	podman pod stop "$name-$$" >"$TMP/$name.down" 2>&1
	# The exporter's end, not podman's own work around it (the pause container, cleanup).
	ms=$((($(podman inspect -f '{{.State.FinishedAt.UnixNano}}' "$CTR") - t0) / 1000000))
	le "$name: SIGTERM (podman pod stop) ended it within terminationGracePeriodSeconds, ms" \
		"$ms" $((grace * 1000))
	echo "# $name: podman pod stop took $((($(date +%s%N) - t0) / 1000000)) ms"
	check_eq "$name: exit code" 0 "$(podman inspect -f '{{.State.ExitCode}}' "$CTR")"
	check "$name: the exporter logged the SIGTERM" grep -q 'received SIGTERM, shutting down' \
		<(podman logs "$CTR" 2>&1)
	podman kube down "$TMP/$name.pod.json" >>"$TMP/$name.down" 2>&1
	check "$name: the process is gone" bash -c "! kill -0 $PID 2>/dev/null"
	left=$(while read -r obj oid; do
		bpftool "$obj" show id "$oid" >/dev/null 2>&1 && echo "$obj $oid"
	done <"$TMP/$name.held" | paste -sd,)
	check_eq "$name: none of its $(wc -l <"$TMP/$name.held") programs, links and maps is left" \
		"" "$left"
	DOWN_MS="$DOWN_MS $name:$ms"
}
DOWN_MS=

# reload NAME NS: the ConfigMap's file changed where the runtime keeps the volume's data (as
# the kubelet updates a mounted ConfigMap), then SIGHUP: every collector takes the netns label
# and restarts, with the pod's privileges and under the exporter's own seccomp filter. Then
# every collector up, NS's NO_SOCKET drops exact under its netns label, and no kernel record of
# a call the filter denied (docs/security.md#seccomp).
reload() {
	local name=$1 ns=$2 cm mp src ini serial c n
	cm=$(spec "$name" '.spec.volumes[] | select(.configMap) | .name')
	mp=$(spec "$name" ".spec.containers[0].volumeMounts[] | select(.name == \"$cm\") | .mountPath")
	src=$(podman inspect -f '{{range .Mounts}}{{.Destination}} {{.Source}}{{"\n"}}{{end}}' "$CTR" |
		awk -v m="$mp" '$1 == m { print $2 }')
	ini=$src/$(jq -r '.data | keys[] | select(endswith(".ini"))' "$TMP/$name.cm.json")
	if [ -z "$src" ] || [ ! -w "$ini" ]; then
		not_ok "$name: the ConfigMap's volume ($mp) on the host" "$src"
		return 1
	fi
	# Each collector's default labels and netns: its section's labels line replaced, or added.
	awk -v spec="drops=reason,family,protocol retrans=family,kind,cause,state
		resets=family,reason,state connections=family,direction,outcome rtt=family" '
		BEGIN {
			n = split(spec, a, /[ \t\n]+/)
			for (i = 1; i <= n; i++) if (split(a[i], kv, "=") == 2) want[kv[1]] = kv[2]
		}
		/^\[/ {
			sec = $0
			if (!sub(/^\[collector\./, "", sec) || !sub(/\].*/, "", sec)) sec = ""
			print
			if (sec in want) { print "labels = " want[sec] ",netns"; seen[sec] = 1 }
			next
		}
		(sec in want) && /^labels[ \t]*=/ { next }
		{ print }
		END {
			for (c in want) if (!(c in seen))
				printf "[collector.%s]\nlabels = %s,netns\n", c, want[c]
		}' "$ini" >"$TMP/$name.reload.ini" && cat "$TMP/$name.reload.ini" >"$ini"
	serial=$(dmesg | sed -n 's/.*audit([0-9.]*:\([0-9]*\)).*/\1/p' | tail -n 1)
	n=$(podman logs "$CTR" 2>&1 | grep -c 'reload: .* applied')
	kill -HUP "$PID"
	for _ in $(seq 300); do
		[ "$(podman logs "$CTR" 2>&1 | grep -c 'reload: .* applied')" -gt "$n" ] && break
		sleep 0.1
	done
	check "$name: reload (SIGHUP) applied" bash -c "podman logs $CTR 2>&1 | tail -n 20 |
		grep -q 'reload: .* applied\"\$'"
	check_eq "$name: reload: every collector restarted" 5 \
		"$(podman logs "$CTR" 2>&1 | grep -c 'reload: collector .* (re)started')"
	scrape "$TMP/$name.m1" "$URL"
	for c in drops retrans resets rtt connections; do
		check_eq "$name: reload: collector $c up" 1 \
			"$(fsum "$TMP/$name.m1" "^netstack_collector_up[{]collector=\"$c\"[}]")"
	done
	drops_equal "$name: reload" "$ns" ipv6 "netns=\"$(netns_inode "$ns")\""
	check_eq "$name: reload: no call denied (type=1326 audit records of PID $PID)" "" \
		"$(dmesg | grep -a 'type=1326' | grep -a " pid=$PID " |
			awk -v s="${serial:-0}" 'match($0, /audit\([0-9.]*:[0-9]*\)/) {
				a = substr($0, RSTART, RLENGTH); sub(/.*:/, "", a)
				if (a + 0 > s + 0 && match($0, / syscall=[0-9]+/)) print substr($0, RSTART + 1, RLENGTH - 1)
			}' | paste -sd' ')"
}

# ---- 1. the base -----------------------------------------------------------------------------------
netns_add "pq$$"
if render base deploy/kubernetes && play base; then
	checks base
	# The shipped labels name no namespace: IPv6, where other tests on the host drop less.
	drops_equal base "pq$$" ipv6
	reload base "pq$$"
	logfmt base
	down base
	BASE_READY=$READY_MS
fi

# ---- 2. the pod-labels overlay against a fake API server ---------------------------------------
# A pod-shaped cgroup (kubelet's cgroupfs layout) holding a process in a namespace of its own.
PUID=$(cat /proc/sys/kernel/random/uuid)
PCID=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
PCG=$CG2/kubepods/burstable/pod$PUID/$PCID
netns_add "pp$$"
mkdir -p "$PCG" && on_exit "rmdir -p --ignore-fail-on-non-empty $PCG"
ip netns exec "pp$$" sleep 1000 &
on_exit "kill $!"
echo $! >"$PCG/cgroup.procs"
# The API server where the pod reaches the host: the gateway of kube play's network.
GW=$(podman network inspect podman-default-kube-network -f '{{range .Subnets}}{{.Gateway}}{{end}}')
SA=$TMP/serviceaccount
mkdir -p "$SA"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=$GW" \
	-addext "subjectAltName=IP:$GW" -keyout "$TMP/key.pem" -out "$SA/ca.crt" >/dev/null 2>&1
TOKEN=tok$$$RANDOM
echo "$TOKEN" >"$SA/token"
echo netstack >"$SA/namespace"
printf '{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"100"},"items":[%s]}\n' \
	"$(printf '{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web-p","namespace":"team-p","uid":"%s","resourceVersion":"7"},"spec":{"nodeName":"%s"},"status":{"phase":"Running","containerStatuses":[{"name":"app-p","containerID":"containerd://%s","ready":true}]}}' \
		"$PUID" "$NODE" "$PCID")" >"$TMP/podlist.json"
: >"$TMP/events.jsonl"
APORT=$(free_port)
if ! fake_api "$TMP/api.log" "$APORT" "$SA/ca.crt" "$TMP/key.pem" "$TMP/podlist.json" \
	"$TMP/events.jsonl" ok "$TOKEN"; then
	not_ok "the fake API server starts"
elif render labels deploy/kubernetes/overlays/pod-labels; then
	# What the kubelet adds to every pod with automountServiceAccountToken.
	mp=/var/run/secrets/kubernetes.io/serviceaccount
	edit labels '.spec.volumes += [{name: "sa", hostPath: {path: $v, type: "Directory"}}]' "$SA"
	edit labels ".spec.containers[0].volumeMounts += [{name: \"sa\", mountPath: \"$mp\",
		readOnly: true}] | .spec.containers[0].env += [{name: \"KUBERNETES_SERVICE_HOST\",
		value: \"$GW\"}, {name: \"KUBERNETES_SERVICE_PORT\", value: \"$APORT\"}]" ""
	echo "# labels: added the kubelet's part: the token and CA (hostPath $SA) at $mp," \
		"KUBERNETES_SERVICE_HOST=$GW KUBERNETES_SERVICE_PORT=$APORT (tests/tools/fake_apiserver)"
	# NODE_NAME from the downward API, unless podman refuses the field: then its value.
	field=$(spec labels '.spec.containers[0].env[] | select(.name == "NODE_NAME") |
		.valueFrom.fieldRef.fieldPath')
	if ! podman kube play --start=false --configmap "$TMP/labels.cm.json" \
		"$TMP/labels.pod.json" >"$TMP/labels.try" 2>&1; then
		grep -q "$field" "$TMP/labels.try" || cat "$TMP/labels.try" >&2
		podman pod rm -f -t 0 "labels-$$" >/dev/null 2>&1
		edit labels '.spec.containers[0].env |= map(if .name == "NODE_NAME"
			then {name, value: $v} else . end)' "$NODE"
		echo "# labels: podman refuses NODE_NAME from the downward API ($field):" \
			"$(tail -n 1 "$TMP/labels.try"); set to the node's name, $NODE"
	else
		podman kube down "$TMP/labels.pod.json" >/dev/null 2>&1
		echo "# labels: NODE_NAME from the downward API ($field)"
	fi
	if play labels; then
		checks labels
		check_eq "labels: NODE_NAME in the process's environment" "NODE_NAME=$NODE" \
			"$(tr '\0' '\n' <"/proc/$PID/environ" | grep '^NODE_NAME=')"
		check "labels: the pod list was fetched" wait_for '^netstack_pods_known$' 1
		# The pod's namespace is known once one of its drops carries the pod's labels.
		P_LABELS='namespace="team-p",pod="web-p"'
		P_RE="^${M}[{]reason=\"NO_SOCKET\",family=\"ipv4\",protocol=\"udp\",${P_LABELS}[}]"
		for _ in $(seq 100); do
			ip netns exec "pp$$" "$UDPFLOOD" 127.0.0.1 9 1 >/dev/null
			[ "$(scrape_sum "$P_RE")" -gt 0 ] && break
			sleep 0.1
		done
		drops_equal labels "pp$$" ipv4 "$P_LABELS"
		check "labels: the exporter listed with the mounted token" grep -q '^GET list' "$TMP/api.log"
		logfmt labels
		down labels
	fi
fi
echo "# figures: ready after kube play (ms): base ${BASE_READY:-?} labels ${READY_MS:-?};" \
	"NO_SOCKET drops compared:$DROPS_SEEN; exited after SIGTERM (ms):$DOWN_MS; test $(($(date +%s) - START)) s"
finish
