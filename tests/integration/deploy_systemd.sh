#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The hardened systemd unit, without a running systemd (none here): placeholders substituted as
# `make install` does, then
#   - systemd-analyze verify is clean and systemd-analyze security --offline rates it, with its
#     drop-in syscall-filter.conf, <= 2.5;
#   - the exporter runs as an unprivileged user (DynamicUser) with exactly the unit's ambient
#     capabilities and no_new_privs: every collector attaches and function labels resolve;
#     without any one capability, a collector does not attach or function labels are addresses;
#   - under strace, every system call it makes is in the unit's SystemCallFilter, every socket
#     family in RestrictAddressFamilies, setns only for network namespaces, and it opens no
#     file for writing (ProtectSystem=strict, and the DaemonSet's readOnlyRootFilesystem).
# schedule: parallel each
source "$(dirname "$0")/../lib.sh"
require_root_bpf
for tool in systemd-analyze setpriv strace; do
	command -v "$tool" >/dev/null || skip_all "needs $tool (scripts/deps.sh test)"
done

SRC_UNIT=deploy/systemd/netstack_exporter.service
P=$TMP/prefix
UNIT=$P/lib/systemd/system/netstack_exporter.service
install -D -m 0755 "$EXPORTER" "$P/bin/netstack_exporter"
install -D -m 0644 conf/netstack_exporter.ini "$P/etc/netstack_exporter.ini"
install -D -m 0644 "$SRC_UNIT" "$UNIT"
DROPIN=deploy/systemd/netstack_exporter.service.d/syscall-filter.conf
install -D -m 0644 "$DROPIN" "$UNIT.d/syscall-filter.conf"
# The substitution of the Makefile's install target (tests/integration/install.sh runs the real one).
sed -i "s|@PREFIX@|$P|g; s|@SYSCONFDIR@|$P/etc|g" "$UNIT"
check "the source unit keeps its placeholders" grep -q '@PREFIX@/bin/netstack_exporter --config @SYSCONFDIR@/' "$SRC_UNIT"
check "no other @ in the installed unit (make install's test checks that)" bash -c "! grep -q @ '$UNIT'"

out=$(systemd-analyze verify "$UNIT" 2>&1)
check_eq "systemd-analyze verify: no complaint" "" "$out"
out=$(systemd-analyze security --offline=yes --threshold=25 "$UNIT" 2>&1)
rc=$?
exposure=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' <<<"$out")
check "systemd-analyze security: exposure $exposure <= 2.5" test "$rc" -eq 0 -a -n "$exposure"

# unit_values KEY: every value of KEY, in order, space-separated (repeated keys concatenated).
unit_values() { sed -n "s/^$1=//p" "$UNIT" "$UNIT.d/syscall-filter.conf" | paste -sd' '; }
bounding=$(unit_values CapabilityBoundingSet | tr ' ' '\n' | sort | paste -sd' ')
ambient=$(unit_values AmbientCapabilities | tr ' ' '\n' | sort | paste -sd' ')
check_eq "ambient capabilities = bounding set" "$bounding" "$ambient"
check_eq "DynamicUser" yes "$(unit_values DynamicUser)"
check_eq "NoNewPrivileges" yes "$(unit_values NoNewPrivileges)"
check_eq "ProtectSystem" strict "$(unit_values ProtectSystem)"

caps=$(sed 's/CAP_//g' <<<"$ambient" | tr 'A-Z' 'a-z')
# run_user CAPS LOG [strace]: the exporter as uid/gid 65534 with ambient CAPS and no_new_privs
# (what DynamicUser= and AmbientCapabilities= give it), every label of the drop collector on.
# Sets RUN_URL and RUN_PID (the exporter's pid).
# A directory the unprivileged user can read and write ($TMP is root's, mode 0700).
U=$(mktemp -d /tmp/netstack-user.XXXXXX)
on_exit "rm -rf $U"
chown 65534:65534 "$U"
printf '[collector.drops]\nlabels = reason,family,protocol,function,netns,interface\n' >"$U/all.ini"
run_user() {
	local set=-all port c trace=()
	for c in $1; do set="$set,+$c"; done
	port=$(free_port)
	RUN_URL=http://127.0.0.1:$port
	[ "${3:-}" = strace ] && trace=(strace -f -qq -o "$U/strace.txt")
	setpriv --reuid=65534 --regid=65534 --clear-groups --no-new-privs --inh-caps="$set" \
		--ambient-caps="$set" --bounding-set="$set" "${trace[@]}" "$EXPORTER" --config "$U/all.ini" \
		--web.listen-address "127.0.0.1:$port" >"$2" 2>&1 &
	RUN_PID=$!
	on_exit "kill $RUN_PID; wait $RUN_PID"
	for _ in $(seq 200); do
		curl -sf "$RUN_URL/healthz" >/dev/null 2>&1 && break
		kill -0 "$RUN_PID" 2>/dev/null || return 1
		sleep 0.05
	done
	if [ "${3:-}" = strace ]; then # the exporter is strace's child
		RUN_PID=$(cat "/proc/$RUN_PID/task/$RUN_PID/children" 2>/dev/null | awk '{ print $1 }')
		[ -n "$RUN_PID" ] && on_exit "kill $RUN_PID"
	fi
	curl -sf "$RUN_URL/healthz" >/dev/null
}
# One drop on loopback (a datagram to a closed port) so that a function label appears.
poke() { echo x >/dev/udp/127.0.0.1/9; }
functions_named() { # URL: "yes" when some function label is a symbol name, not an address
	curl -sf "$1/metrics" | grep -o 'function="[^"]*"' | grep -qv 'function="__unknown__"' && echo yes || echo no
}
collectors_up() {
	curl -sf "$1/metrics" | sed -n 's/^netstack_collector_up{collector="\([^"]*\)"} \([01]\)$/\1=\2/p' |
		sort | paste -sd' '
}

# ---- with the unit's capabilities, under strace ----------------------------------------------
if run_user "$caps" "$TMP/user.log" strace; then
	up=$(collectors_up "$RUN_URL")
	check "as uid 65534 with [$caps]: every collector attached ($up)" \
		bash -c "[ -n '$up' ] && ! grep -q '=0' <<<'$up'"
	poke
	check_eq "function labels are symbol names (CAP_SYSLOG works for a non-root user)" yes \
		"$(functions_named "$RUN_URL")"
	# Everything the HTTP side does: both formats, gzip, HEAD, landing page, errors.
	curl -s "$RUN_URL/metrics" >/dev/null
	curl -s -H 'Accept: application/openmetrics-text; version=1.0.0' -H 'Accept-Encoding: gzip' \
		"$RUN_URL/metrics" >/dev/null
	curl -s -I "$RUN_URL/metrics" >/dev/null
	curl -s "$RUN_URL/" "$RUN_URL/nope" >/dev/null
	curl -s -X POST -d x "$RUN_URL/metrics" >/dev/null
	kill "$RUN_PID"
	for _ in $(seq 100); do
		kill -0 "$RUN_PID" 2>/dev/null || break
		sleep 0.05
	done
	check "stopped on SIGTERM" bash -c "! kill -0 $RUN_PID 2>/dev/null"
	check "stopped cleanly" grep -q 'shutting down' "$TMP/user.log"
else
	not_ok "exporter starts as uid 65534 with [$caps]" "$(cat "$TMP/user.log")"
	finish
fi

# The allowed system calls: SystemCallFilter lines in order (unit, then its drop-in) (an allow list, then ~ removes and
# plain entries add), groups expanded with systemd-analyze syscall-filter.
systemd-analyze syscall-filter >"$TMP/groups.txt"
expand() { # NAMES...: the syscalls of these groups and names
	SETS="$*" awk '
		/^@/ { g = $1; next }
		/^ +#/ { next }
		/^ +[@a-z0-9_-]+$/ { m[g] = m[g] " " $1 }
		END {
			n = split(ENVIRON["SETS"], todo, " ")
			while (n > 0) {
				x = todo[n--]
				if (x in seen) continue
				seen[x] = 1
				if (x ~ /^@/) { k = split(m[x], p, " "); for (i = 1; i <= k; i++) todo[++n] = p[i] }
				else print x
			}
		}' "$TMP/groups.txt" | sort -u
}
: >"$TMP/allowed.txt"
while read -r line; do
	if [ "${line#\~}" != "$line" ]; then
		# shellcheck disable=SC2086
		expand ${line#\~} | comm -23 "$TMP/allowed.txt" - >"$TMP/a.txt"
	else
		# shellcheck disable=SC2086
		expand $line | sort -u - "$TMP/allowed.txt" >"$TMP/a.txt"
	fi
	mv "$TMP/a.txt" "$TMP/allowed.txt"
done < <(sed -n 's/^SystemCallFilter=//p' "$UNIT" "$UNIT.d/syscall-filter.conf")
check "SystemCallFilter allows something ($(wc -l <"$TMP/allowed.txt") calls)" test -s "$TMP/allowed.txt"
# The exporter's own allow-list (exporter/kernel/confine.c, without the sanitizer builds' part) is
# narrower: nothing on it that the unit denies.
sed -n '/allowed\[\] = {/,/^#if defined(__SANITIZE/p' exporter/kernel/confine.c | grep -o '"[a-z0-9_]*"' |
	tr -d '"' | sort -u >"$TMP/own.txt"
check_eq "every call on the exporter's own list ($(wc -l <"$TMP/own.txt")) is allowed by SystemCallFilter" "" \
	"$(comm -23 "$TMP/own.txt" "$TMP/allowed.txt" | paste -sd' ')"
awk '{ s = $2; sub(/\(.*/, "", s); if (s ~ /^[a-z_0-9]+$/) print s }' "$U/strace.txt" | sort -u >"$TMP/used.txt"
check "strace saw the exporter's system calls ($(wc -l <"$TMP/used.txt"))" grep -qx bpf "$TMP/used.txt"
check_eq "every system call is allowed by SystemCallFilter" "" \
	"$(comm -23 "$TMP/used.txt" "$TMP/allowed.txt" | paste -sd' ')"
families=$(grep -o 'socket(AF_[A-Z0-9]*' "$U/strace.txt" | sed 's/socket(//' | sort -u | paste -sd' ')
allowed_families=$(unit_values RestrictAddressFamilies)
extra=$(for f in $families; do grep -qw "$f" <<<"$allowed_families" || echo "$f"; done)
check_eq "socket families ($families) within RestrictAddressFamilies" "" "$extra"
check_eq "setns only into network namespaces (RestrictNamespaces=net)" "" \
	"$(grep 'setns(' "$U/strace.txt" | grep -v 'CLONE_NEWNET\|= -1' | head -n 3)"
check_eq "no file opened for writing, created, removed or renamed" "" \
	"$(grep -E '^[0-9]+ +(open(at)?\(.*(O_WRONLY|O_RDWR|O_CREAT)|(mkdir|unlink|rename|rmdir|f?truncate|link|symlink)(at|at2)?\()' \
		"$U/strace.txt" | grep -v '= -1 ' | head -n 5)"

# ---- none of the unit's capabilities is superfluous --------------------------------------------
for drop in $caps; do
	rest=$(tr ' ' '\n' <<<"$caps" | grep -vx "$drop" | paste -sd' ')
	if ! run_user "$rest" "$TMP/user-$drop.log"; then
		not_ok "exporter starts without $drop (it should serve without the collector)"
		continue
	fi
	up=$(collectors_up "$RUN_URL")
	poke
	named=$(functions_named "$RUN_URL")
	if [ "$drop" = syslog ]; then
		check_eq "without SYSLOG function labels are addresses" no "$named"
	else
		check "without ${drop^^} some collector cannot attach ($up)" grep -q '=0' <<<"$up"
	fi
	kill "$RUN_PID"
	wait "$RUN_PID" 2>/dev/null
done

finish
