#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# SIGHUP reloads the configuration: a bad file is rejected with FILE:LINE and the running
# configuration goes on (counters included); a good one enables and disables collectors
# without a restart, restarts only the collectors whose section changed, and no scrape taken
# during a storm of reloads ever sees a half-applied state.
source "$(dirname "$0")/../lib.sh"
require_root_bpf

NS=nsreload$$
netns_add "$NS" || {
	not_ok "network namespace"
	finish
}
# drop N: N datagrams to a closed UDP port on the namespace's loopback (NO_SOCKET drops).
drop() { ip netns exec "$NS" bash -c "for i in \$(seq $1); do echo x >/dev/udp/127.0.0.1/9; done" 2>/dev/null; }
NOSOCK='^netstack_skb_drops_total\{reason="NO_SOCKET",family="ipv4",protocol="udp"\}$'
INI=$TMP/reload.ini
printf '[collector.drops]\nenabled = true\n[collector.rtt]\nenabled = false\n' >"$INI"
start_exporter --config "$INI" || {
	not_ok "exporter starts"
	finish
}
hup() { # wait until the log has one more "reload:" verdict line
	local n
	n=$(grep -c 'reload: .*\(applied\|keeping the running\)' "$EXPORTER_LOG")
	kill -HUP "$EXPORTER_PID"
	for _ in $(seq 100); do
		[ "$(grep -c 'reload: .*\(applied\|keeping the running\)' "$EXPORTER_LOG")" -gt "$n" ] &&
			return 0
		sleep 0.05
	done
	return 1
}
up_of() { scrape_sum "^netstack_collector_up\\{collector=\"$1\"\\}$"; }

drop 20
before=$(scrape_sum "$NOSOCK")
ge "NO_SOCKET drops counted before any reload" "$before" 20

# ---- a bad file: rejected with file:line, the old configuration goes on ----
printf '[collector.drops]\nenabled = true\nmax_series = lots\n' >"$INI"
hup
check "bad file: the log names $INI:3" grep -q "reload: $INI:3: max_series: expected a whole number" "$EXPORTER_LOG"
check "bad file: old configuration kept" grep -q 'keeping the running configuration' "$EXPORTER_LOG"
printf '[collector.drops]\nenabled = true\n[collector.nope]\n' >"$INI"
hup
check "unknown section: the log names $INI:3" grep -q "reload: $INI:3: unknown section \\[collector.nope\\]" "$EXPORTER_LOG"
check_eq "drops still up" 1 "$(up_of drops)"
check_eq "rtt still off (not listed)" "" "$(curl -sf "$EXPORTER_URL/metrics" | grep 'collector_up{collector="rtt"}')"
drop 10
after=$(scrape_sum "$NOSOCK")
ge "drops counter went on through rejected reloads ($before -> $after)" "$after" $((before + 10))

# ---- a good file: rtt on, drops off; retrans untouched ----
printf '[collector.drops]\nenabled = false\n[collector.rtt]\nenabled = true\n' >"$INI"
hup
check "good file applied" grep -q "reload: $INI applied" "$EXPORTER_LOG"
curl -sf "$EXPORTER_URL/metrics" >"$TMP/s1.prom"
check_eq "rtt enabled without restart" 1 "$(fsum "$TMP/s1.prom" '^netstack_collector_up\{collector="rtt"\}$')"
check "drops disabled: no collector_up series for it" \
	bash -c "! grep -q 'collector_up{collector=\"drops\"}' '$TMP/s1.prom'"
check "drops disabled: no drop series" bash -c "! grep -q '^netstack_skb_drops_total' '$TMP/s1.prom'"
check "retrans left alone (not restarted)" bash -c "! grep -q 'collector retrans' '$EXPORTER_LOG'"
# programs_of PID NAME: how many loaded BPF programs called NAME this process holds.
programs_of() {
	local id n=0
	for id in $(awk '/^prog_id:/ { print $2 }' /proc/"$1"/fdinfo/* 2>/dev/null | sort -u); do
		[ "$(bpftool -j prog show id "$id" | jq -r .name)" = "$2" ] && n=$((n + 1))
	done
	echo "$n"
}
check_eq "drops detached: our process holds no count_drop program" 0 "$(programs_of "$EXPORTER_PID" count_drop)"

# ---- drops back on with another label set: the new option is in force ----
printf '[collector.drops]\nlabels = reason,family,protocol,netns\n[collector.rtt]\nenabled = true\n' >"$INI"
hup
drop 5
curl -sf "$EXPORTER_URL/metrics" >"$TMP/s2.prom"
check_eq "drops re-enabled" 1 "$(fsum "$TMP/s2.prom" '^netstack_collector_up\{collector="drops"\}$')"
check_eq "drops attached again: one count_drop_n program (netns label)" 1 "$(programs_of "$EXPORTER_PID" count_drop_n)"
check "drops series now carry netns" grep -q '^netstack_skb_drops_total{reason="NO_SOCKET",.*netns="' "$TMP/s2.prom"
check "rtt unchanged section: not restarted" bash -c "[ \$(grep -c 'collector rtt' '$EXPORTER_LOG') -eq 1 ]"

# ---- a storm of reloads while scraping: never a half-applied state ----
# Between stop and start a collector would show up=0, or drop series without its up line.
A='[collector.drops]\nenabled = false\n'
B='[collector.drops]\nlabels = reason,family,protocol,interface\n'
(
	for i in $(seq 30); do
		if ((i % 2)); then printf "$A" >"$INI"; else printf "$B" >"$INI"; fi
		# Each one applied before the next: the storm lasts as long as 30 reloads take,
		# however slow the build (sanitizers) or the machine.
		hup
		sleep 0.1
	done
) &
STORM=$!
n=0 bad=0 failed=0
while kill -0 "$STORM" 2>/dev/null; do
	# Within Prometheus' default scrape_timeout (10 s): a scrape may wait for one reload's
	# collector restarts (seconds under ThreadSanitizer on a busy machine).
	if ! curl -sf -m 10 "$EXPORTER_URL/metrics" >"$TMP/storm.prom"; then
		failed=$((failed + 1))
		continue
	fi
	n=$((n + 1))
	up=$(grep '^netstack_collector_up{collector="drops"}' "$TMP/storm.prom" | awk '{ print $2 }')
	series=$(grep -c '^netstack_skb_drops_total' "$TMP/storm.prom")
	# Consistent: drops on and up, or drops off and no series of it.
	if ! { [ "$up" = 1 ] || { [ -z "$up" ] && [ "$series" -eq 0 ]; }; }; then
		bad=$((bad + 1))
		cp "$TMP/storm.prom" "$TMP/bad.prom"
	fi
done
wait "$STORM"
echo "# $n scrapes during 30 reloads"
ge "scrapes during the storm" "$n" 10
check_eq "failed scrapes during the storm" 0 "$failed"
check_eq "half-applied states seen" 0 "$bad"
promtool_ok "last storm scrape parses" "$TMP/storm.prom"

# ---- a collector failing at reload: up 0, never an exit (even with --strict) ----
kill "$EXPORTER_PID"
printf '[collector.drops]\nenabled = true\n' >"$INI"
start_exporter --strict --config "$INI" || {
	not_ok "exporter starts with --strict"
	finish
}
printf '[collector.drops]\nenabled = true\n[collector.rtt]\ncgroup = %s\n' "$TMP" >"$INI"
hup
check "--strict, rtt failing at reload: logged" grep -q 'reload: collector rtt failed' "$EXPORTER_LOG"
check_eq "... netstack_collector_up rtt 0" 0 "$(up_of rtt)"
check_eq "... drops untouched, up" 1 "$(up_of drops)"
printf '[collector.drops]\nenabled = true\n' >"$INI"
hup
check_eq "rtt up again once its section is fixed" 1 "$(up_of rtt)"
check "exporter still running" kill -0 "$EXPORTER_PID"
finish
