#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Every reload path under the exporter's own seccomp filter, failing on any call it denies. The
# filter fails a call off its list with EPERM and has the kernel log it (SECCOMP_FILTER_FLAG_LOG:
# an audit record type=1326 with the PID and the call's number, in dmesg or the audit log), so a
# denied call shows even where the code that made it falls back or says nothing.
#   0. control: a filter with the same flag denying chdir() leaves such a record here;
#   1. with [bpf] pin_path: each collector turned off (its pin directory removed), on again (up,
#      pinned), its labels changed (restarted, pins replaced), back; sampling on and off (a
#      ring buffer made and freed, the consumer thread); the pod source on and off (the task
#      iterator, libcurl and GnuTLS to an API server); pin_path unset (needs a restart);
#   2. without pin_path: the same for every collector; then --unpin removes what run 1 pinned;
#   after each step no record of a denied call for the exporter's PID, and every collector up.
# BUILD may hold another build's exporter (tests/container/trixie.sh: Debian 13's libbpf).
# schedule: parallel each
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
require_root_bpf
DENY=$BUILD/tests/seccomp_deny
for tool in "$DENY" "$BUILD/tests/fake_apiserver"; do
	[ -x "$tool" ] || skip_all "$tool not built (make tools)"
done
for tool in dmesg openssl gcc; do
	command -v "$tool" >/dev/null || skip_all "needs $tool"
done
COLLECTORS="drops retrans resets connections rtt"
declare -A LABELS=([drops]="reason,family,protocol" [retrans]="family,kind,cause,state"
	[resets]="family,reason,state" [connections]="family,direction,outcome" [rtt]="family")

# audit_records: every seccomp audit record the kernel logged (dmesg; the audit log if auditd
# takes them).
audit_records() {
	{
		dmesg 2>/dev/null
		cat /var/log/audit/audit.log 2>/dev/null
	} | grep -a 'type=1326\|type=SECCOMP'
}
# serial_of PID: the highest audit serial among PID's records ("" if none)
serial_of() { audit_records | grep -a " pid=$1 " | sed -n 's/.*audit([0-9.]*:\([0-9]*\)).*/\1/p' |
	sort -n | tail -n 1; }
# Names of system call numbers, from this machine's headers.
gcc -dM -E - <<<'#include <sys/syscall.h>' 2>/dev/null |
	sed -n 's/^#define __NR_\([a-z0-9_]*\) \([0-9]*\)$/\2 \1/p' >"$TMP/syscalls"
# last_serial: the highest audit serial logged so far
last_serial() { audit_records | sed -n 's/.*audit([0-9.]*:\([0-9]*\)).*/\1/p' | sort -n | tail -n 1; }
# denied PID [SERIAL]: the calls denied to PID in records after SERIAL (default: the first
# control's), "name(nr)" each, once
denied() {
	local nr
	audit_records | grep -a " pid=$1 " | awk -v base="${2:-$BASE}" '
		match($0, /audit\([0-9.]*:[0-9]*\)/) {
			s = substr($0, RSTART, RLENGTH); sub(/.*:/, "", s); sub(/\)/, "", s)
			if (s + 0 > base + 0 && match($0, / syscall=[0-9]+/))
				print substr($0, RSTART + 9, RLENGTH - 9)
		}' | sort -un | while read -r nr; do
		echo "$(awk -v n="$nr" '$1 == n { print $2; exit }' "$TMP/syscalls")($nr)"
	done | paste -sd' '
}

# ---- 0. the kernel logs a denied call of a filter with the exporter's flags ----------------
has_record() { [ -n "$(serial_of "$1")" ]; }
# control: a process under a filter with the exporter's flags makes a denied chdir(); waits for
# its record, and prints its PID. kauditd logs records in order, so once it is there, every
# earlier one is too. printk lets through 10 audit lines in 5 s: tried again within 15 s.
control() {
	local pid
	for _ in 1 2 3; do
		# shellcheck disable=SC2016 # the inner shell's $$ and $0
		"$DENY" -l chdir sh -c 'echo $$ >"$0"; cd / 2>/dev/null' "$TMP/control.pid"
		pid=$(cat "$TMP/control.pid")
		wait_until 5 has_record "$pid" && echo "$pid" && return 0
	done
	return 1
}
CONTROL=$(control)
# Audit off (audit=0), or an auditd whose log is elsewhere: nothing here would tell.
[ -n "$CONTROL" ] ||
	skip_all "no audit record of a denied call (type=1326) in dmesg or /var/log/audit/audit.log"
BASE=$(serial_of "$CONTROL")
ok "control: a denied call is logged (audit serial $BASE: $(BASE=0 denied "$CONTROL"))"

# The pod source: a fake API server listing one pod.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
	-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -keyout "$TMP/key.pem" \
	-out "$TMP/cert.pem" >/dev/null 2>&1 || skip_all "openssl cannot make a certificate"
TOKEN=tok$$$RANDOM NODE=node-$$
echo "$TOKEN" >"$TMP/token"
printf '{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"100"},"items":[{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"n","uid":"%s","resourceVersion":"7"},"spec":{"nodeName":"%s"},"status":{"phase":"Running","containerStatuses":[{"name":"c","containerID":"containerd://%s","ready":true}]}}]}\n' \
	"$(cat /proc/sys/kernel/random/uuid)" "$NODE" "$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')" \
	>"$TMP/podlist.json"
: >"$TMP/events.jsonl"
APIPORT=$(free_port)
fake_api "$TMP/api.log" "$APIPORT" "$TMP/cert.pem" "$TMP/key.pem" "$TMP/podlist.json" \
	"$TMP/events.jsonl" ok "$TOKEN" || skip_all "fake API server did not start"

mkdir "$TMP/bpffs" && mount -t bpf bpf "$TMP/bpffs" || skip_all "cannot mount a bpf filesystem"
on_exit "umount $TMP/bpffs"
PIN=$TMP/bpffs/netstack-test$$
INI=$TMP/reload.ini

# write_ini PIN_PATH [SECTION KEY=VALUE]...: every collector on with its default labels, the
# pairs given on top (later ones win).
write_ini() {
	local pin=$1 c kv
	shift
	{
		echo '[bpf]'
		echo "pin_path = $pin"
		for c in $COLLECTORS; do
			echo "[collector.$c]"
			echo "labels = ${LABELS[$c]}"
			for kv in "$@"; do
				[ "${kv%%:*}" = "$c" ] && echo "${kv#*:}"
			done
		done
		echo '[sampling]'
		for kv in "$@"; do [ "${kv%%:*}" = sampling ] && echo "${kv#*:}"; done
		echo '[pods]'
		for kv in "$@"; do [ "${kv%%:*}" = pods ] && echo "${kv#*:}"; done
	} >"$INI"
}
PODS=("pods:source = kubernetes" "pods:api_url = https://127.0.0.1:$APIPORT"
	"pods:token_file = $TMP/token" "pods:ca_file = $TMP/cert.pem" "pods:node_name = $NODE"
	"pods:refresh_seconds = 1" "drops:pod_labels = namespace,pod,netns"
	"drops:labels = reason,family,protocol,netns")

verdicts() { grep -c 'reload: .*\(applied\|keeping the running\)' "$EXPORTER_LOG"; }
more_verdicts() { [ "$(verdicts)" -gt "$1" ]; }
hup() { # wait until the log has one more "reload:" verdict line
	local n
	n=$(verdicts)
	kill -HUP "$EXPORTER_PID"
	wait_until 30 more_verdicts "$n"
}
up_of() { scrape_sum "^netstack_collector_up\\{collector=\"$1\"\\}$"; }
all_up() {
	local c s=
	for c in $COLLECTORS; do s="$s $c=$(up_of "$c")"; done
	echo "${s# }"
}
ALL_UP="drops=1 retrans=1 resets=1 connections=1 rtt=1"
# step NAME [PAIRS...]: write the file, reload; check that it was applied whole and that no
# call was denied meanwhile.
step() {
	local name=$1 since verdict
	shift
	since=$(last_serial)
	write_ini "$PINNED" "$@"
	if ! hup; then
		not_ok "$name: the reload ends" "$(tail -n 5 "$EXPORTER_LOG")"
		return 1
	fi
	verdict=$(grep 'reload: .*\(applied\|keeping the running\)' "$EXPORTER_LOG" | tail -n 1)
	if grep -q "reload: $INI applied\(; needs a restart.*\)\?\"\$" <<<"$verdict"; then
		ok "$name: applied"
	else
		not_ok "$name: applied" "$(grep 'level=error' "$EXPORTER_LOG" | tail -n 4)"
	fi
	check_eq "$name: no call denied" "" "$(denied "$EXPORTER_PID" "$since")"
}

# run PIN_PATH: one exporter through every reload path
run() {
	local c what n
	PINNED=$1
	write_ini "$PINNED"
	start_exporter --config "$INI" || return 1
	check "${PINNED:+pinned: }the filter is on" \
		grep -q 'seccomp filter installed on every thread' "$EXPORTER_LOG"
	for c in $COLLECTORS; do
		what="${PINNED:+pinned: }$c"
		step "$what off" "$c:enabled = false"
		check_eq "$what off: down" "" "$(metrics | grep "collector_up{collector=\"$c\"}")"
		[ -n "$PINNED" ] && check "$what off: its pin directory is gone" test ! -e "$PINNED/$c"
		step "$what on" && check_eq "$what on: every collector up" "$ALL_UP" "$(all_up)"
		# Its counting maps (map_*): whether an object has read-only data is the compiler's
		# (clang 19 leaves none in connections, clang 14 does).
		[ -n "$PINNED" ] && check "$what on: pinned again" \
			sh -c "ls '$PINNED/$c' | grep -q '^map_'"
		n=$(grep -c "reload: collector $c (re)started" "$EXPORTER_LOG")
		step "$what labels" "$c:labels = ${LABELS[$c]},netns"
		check "$what labels: restarted" \
			test "$(grep -c "reload: collector $c (re)started" "$EXPORTER_LOG")" -gt "$n"
		check_eq "$what labels: every collector up" "$ALL_UP" "$(all_up)"
		step "$what back"
	done
	what=${PINNED:+pinned: }
	step "${what}sampling on" sampling:{drop,retrans,reset,rtt}_sample_rate=1
	check_eq "${what}sampling on: every collector up" "$ALL_UP" "$(all_up)"
	step "${what}sampling off"
	n=$(last_serial)
	step "${what}pods on" "${PODS[@]}"
	check "${what}pods on: the pod is listed" wait_for '^netstack_pods_known$' 1
	check "${what}pods on: the resolver walked" wait_for '^netstack_pods_resolver_up$' 1
	check_eq "${what}pods on: the resolver's walks and requests: no call denied" "" \
		"$(denied "$EXPORTER_PID" "$n")"
	step "${what}pods off"
	check_eq "${what}pods off: every collector up" "$ALL_UP" "$(all_up)"
	if [ -n "$PINNED" ]; then
		PINNED='' step "pin_path unset" &&
			check "pin_path unset: needs a restart" grep -q 'pin_path changed' "$EXPORTER_LOG"
	fi
	local pid=$EXPORTER_PID
	stop_exporter
	control >/dev/null || not_ok "${what}control: a denied call is logged again"
	check_eq "${what}stopped: no call denied" "" "$(denied "$pid")"
}

run "$PIN"
run ""
write_ini "$PIN"
"$EXPORTER" --config "$INI" --unpin >"$TMP/unpin.log" 2>&1 ||
	not_ok "--unpin exits 0" "$(cat "$TMP/unpin.log")"
check "--unpin removes the pins of run 1" test ! -e "$PIN"
finish
