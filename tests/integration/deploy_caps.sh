#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The DaemonSet's privileges, exercised on the real exporter without a container engine: a
# "pod" here is the exporter run as uid 0 with exactly the DaemonSet's capabilities (every other
# one dropped, no_new_privs as allowPrivilegeEscalation: false), in a cgroup and a cgroup
# namespace of its own, with the root filesystem read-only and the node's cgroup2 root
# bind-mounted read-only where the ConfigMap's INI says (its path moved into our temporary
# directory). Asserted:
#   - with the DaemonSet's capabilities every collector in the binary attaches;
#   - without any one of them, some collector does not (none is superfluous);
#   - the RTT collector in the pod measures TCP traffic of processes outside the pod's cgroup;
#     with `cgroup = auto` and a pod-style cgroup2 mount it would not (why the INI sets it);
#   - drops of traffic in other network namespaces are counted (no hostNetwork needed).
# schedule: parallel each
source "$(dirname "$0")/../lib.sh"
require_root_bpf
for tool in setpriv unshare jq perl; do
	command -v "$tool" >/dev/null || skip_all "needs $tool"
done
perl -MYAML::XS -e 1 2>/dev/null || skip_all "needs YAML::XS (libyaml-libyaml-perl)"
TCPBULK=$BUILD/tests/tcpbulk
UDPFLOOD=$BUILD/tests/udpflood
[ -x "$TCPBULK" ] && [ -x "$UDPFLOOD" ] || skip_all "$TCPBULK and $UDPFLOOD not built"
CG2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
[ -n "$CG2" ] || skip_all "needs a cgroup2 mount"

K=deploy/kubernetes
if command -v kubectl >/dev/null && kubectl kustomize "$K" >"$TMP/base.yaml" 2>/dev/null; then
	:
else
	cp "$K/base/daemonset.yaml" "$TMP/base.yaml"
fi
yaml2json <"$TMP/base.yaml" | jq '.[] | select(.kind == "DaemonSet")' >"$TMP/ds.json"
CAPS=$(jq -r '.spec.template.spec.containers[0].securityContext.capabilities.add | map(ascii_downcase) | join(" ")' "$TMP/ds.json")
check "DaemonSet adds capabilities ($CAPS)" test -n "$CAPS"
jq -e '.spec.template.spec.containers[0].securityContext.allowPrivilegeEscalation == false' \
	"$TMP/ds.json" >/dev/null && NNP=--no-new-privs || NNP=

# The INI as the pod gets it, for the collectors this binary has, cgroup path moved under $SIM.
SIM=$TMP/sim
mkdir -p "$SIM/host/sys/fs/cgroup"
ini_in=$K/base/netstack_exporter.ini
pod_cgroup=$(awk '/^\[/ { s = $0 } s == "[collector.rtt]" && $1 == "cgroup" { print $3 }' "$ini_in")
cp "$ini_in" "$TMP/pod.ini"
for c in $(sed -n 's/^\[collector\.\(.*\)\]$/\1/p' "$ini_in"); do
	printf '[collector.%s]\n' "$c" >"$TMP/probe.ini"
	if ! "$EXPORTER" --check-config --config "$TMP/probe.ini" >/dev/null 2>&1; then
		echo "  note: $EXPORTER has no collector '$c' yet: left out"
		MISSING="${MISSING:-}$c "
		awk -v s="[collector.$c]" '/^\[/ { skip = ($0 == s) } !skip' "$TMP/pod.ini" >"$TMP/p.ini"
		mv "$TMP/p.ini" "$TMP/pod.ini"
	fi
done
[ -n "$pod_cgroup" ] && sed -i "s|^cgroup = $pod_cgroup\$|cgroup = $SIM$pod_cgroup|" "$TMP/pod.ini"
sed 's|^cgroup = .*|cgroup = auto|' "$TMP/pod.ini" >"$TMP/pod-auto.ini"

POD_CG=$CG2/netstack-pod-$$
mkdir "$POD_CG" && on_exit "rmdir $POD_CG"

# pod_start CAPS INI [auto]: start the exporter as a pod; sets POD_URL, POD_PID, POD_LOG.
# "auto": also mount a fresh cgroup2 over /sys/fs/cgroup, as a container runtime does.
pod_start() {
	local caps=$1 ini=$2 mode=${3:-} port bset
	bset=-all
	for c in $caps; do bset="$bset,+$c"; done
	port=$(free_port)
	POD_URL=http://127.0.0.1:$port
	POD_LOG=$TMP/pod.$port.log
	# shellcheck disable=SC2016
	CAPSET=$bset INI=$ini PORT=$port MODE=$mode CG=$POD_CG SIMDIR=$SIM HOSTCG=$CG2 EXP=$EXPORTER \
		NNP=$NNP sh -c '
		echo $$ >"$CG/cgroup.procs" || exit 1
		exec unshare --mount --cgroup --propagation private sh -c "
			mount --bind \"\$HOSTCG\" \"\$SIMDIR/host/sys/fs/cgroup\" &&
			mount -o remount,bind,ro \"\$SIMDIR/host/sys/fs/cgroup\" || exit 1
			if [ \"\$MODE\" = auto ]; then mount -t cgroup2 none /sys/fs/cgroup || exit 1; fi
			mount -o remount,bind,ro / || exit 1
			exec setpriv --bounding-set=\"\$CAPSET\" --inh-caps=-all --ambient-caps=-all \$NNP \
				\"\$EXP\" --config \"\$INI\" --web.listen-address 127.0.0.1:\$PORT"
	' >"$POD_LOG" 2>&1 &
	POD_PID=$!
	on_exit "kill $POD_PID; wait $POD_PID"
	wait_healthy "$POD_URL" "$POD_PID" "$POD_LOG" pod
}
pod_stop() {
	kill "$POD_PID" 2>/dev/null
	wait "$POD_PID" 2>/dev/null
}
# collectors_up URL: "name=0|1 ..." from netstack_collector_up.
collectors_up() {
	curl -sf "$1/metrics" | sed -n 's/^netstack_collector_up{collector="\([^"]*\)"} \([01]\)$/\1=\2/p' |
		sort | paste -sd' '
}
msum() { # URL REGEX: sum of the samples whose name{labels} matches REGEX
	curl -sf "$1/metrics" | RE=$2 awk 'BEGIN { re = ENVIRON["RE"] } /^#/ { next }
		{ v = $NF; $NF = ""; sub(/ +$/, ""); if ($0 ~ re) s += v } END { printf "%.0f\n", s }'
}

# ---- traffic outside the pod: two namespaces, a veth ----------------------------------------
NS_A=nscap-a$$ NS_B=nscap-b$$
netns_add "$NS_A" && netns_add "$NS_B" && veth_pair "$NS_A" "$NS_B" || {
	not_ok "network namespaces and veth set up"
	finish
}
ip netns exec "$NS_B" "$TCPBULK" sink 10.99.0.2 5201 >/dev/null 2>&1 &
on_exit "kill $!"

# ---- the DaemonSet's capabilities: everything attaches, from a read-only root ----------------
if pod_start "$CAPS" "$TMP/pod.ini"; then
	up=$(collectors_up "$POD_URL")
	check "pod with [$CAPS]: every collector attached ($up)" bash -c "[ -n '$up' ] && ! grep -q '=0' <<<'$up'"
	check "the pod's exporter runs with exactly those capabilities" \
		test "$(awk '/^CapEff/ { print $2 }' "/proc/$POD_PID/status")" = \
		"$(awk '/^CapBnd/ { print $2 }' "/proc/$POD_PID/status")"
	check "the pod's exporter is in its own cgroup namespace" \
		test "$(readlink "/proc/$POD_PID/ns/cgroup")" != "$(readlink /proc/self/ns/cgroup)"
	# Drops in other network namespaces: a UDP flood to a closed port from A to B.
	before=$(msum "$POD_URL" '^netstack_skb_drops_total\{reason="NO_SOCKET",family="ipv4",protocol="udp"')
	ip netns exec "$NS_A" "$UDPFLOOD" 10.99.0.2 9 0 1 >"$TMP/flood.out" 2>&1
	sent=$(tail -n 1 "$TMP/flood.out")
	after=$(msum "$POD_URL" '^netstack_skb_drops_total\{reason="NO_SOCKET",family="ipv4",protocol="udp"')
	# At least 90% of them: a flood can also lose a few datagrams before UDP (backlog full).
	check "the pod counts NO_SOCKET drops in other namespaces ($((after - before)) for $sent sent)" \
		test "$sent" -gt 0 -a $((after - before)) -ge $((sent * 9 / 10))
	if grep -qw 'rtt=1' <<<"$up"; then
		before=$(msum "$POD_URL" '^netstack_tcp_rtt_seconds_count')
		ip netns exec "$NS_A" "$TCPBULK" send 10.99.0.2 5201 1 >/dev/null 2>&1
		after=$(msum "$POD_URL" '^netstack_tcp_rtt_seconds_count')
		# A second of bulk transfer gives thousands of samples; the scrape connections, a few.
		check "the pod measures RTT of connections outside its cgroup ($((after - before)) samples)" \
			test $((after - before)) -ge 100
	fi
	pod_stop
else
	not_ok "pod with the DaemonSet's capabilities starts" "$(cat "$POD_LOG")"
fi

# ---- why the INI names the cgroup: "auto" in a pod finds the pod's own cgroup2 mount ---------
if grep -q '^\[collector.rtt\]' "$TMP/pod.ini"; then
	if pod_start "$CAPS" "$TMP/pod-auto.ini" auto; then
		before=$(msum "$POD_URL" '^netstack_tcp_rtt_seconds_count')
		ip netns exec "$NS_A" "$TCPBULK" send 10.99.0.2 5201 1 >/dev/null 2>&1
		after=$(msum "$POD_URL" '^netstack_tcp_rtt_seconds_count')
		check "with cgroup = auto it would measure only its own sockets ($((after - before)) samples: our scrapes)" \
			test $((after - before)) -lt 100
		pod_stop
	else
		not_ok "pod with cgroup = auto starts" "$(cat "$POD_LOG")"
	fi
fi

# ---- none of the capabilities is superfluous ------------------------------------------------
for drop in $CAPS; do
	rest=$(tr ' ' '\n' <<<"$CAPS" | grep -vx "$drop" | paste -sd' ')
	if pod_start "$rest" "$TMP/pod.ini"; then
		up=$(collectors_up "$POD_URL")
		if ! grep -q '=0' <<<"$up" && [ -n "${MISSING:-}" ]; then
			# Strict again once every collector of the INI is in the binary.
			ok "without ${drop^^} this binary's collectors attach ($up): kept for the ones it lacks (${MISSING% })"
		else
			check "without ${drop^^} some collector cannot attach ($up)" grep -q '=0' <<<"$up"
		fi
		pod_stop
	else
		not_ok "pod without $drop starts (it should serve, with the collector down)"
	fi
done

finish
