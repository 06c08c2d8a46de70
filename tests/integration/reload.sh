#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# SIGHUP reloads the configuration: a bad file is rejected with FILE:LINE and the running
# configuration goes on (counters included); a good one enables and disables collectors
# without a restart, restarts only the collectors whose section changed, and no scrape taken
# during a storm of reloads ever sees a half-applied state.
# schedule: parallel each
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
check_eq "rtt still off (not listed)" "" "$(metrics | grep 'collector_up{collector="rtt"}')"
drop 10
after=$(scrape_sum "$NOSOCK")
ge "drops counter went on through rejected reloads ($before -> $after)" "$after" $((before + 10))

# ---- a good file: rtt on, drops off; retrans untouched ----
printf '[collector.drops]\nenabled = false\n[collector.rtt]\nenabled = true\n' >"$INI"
hup
check "good file applied" grep -q "reload: $INI applied" "$EXPORTER_LOG"
metrics >"$TMP/s1.prom"
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
metrics >"$TMP/s2.prom"
check_eq "drops re-enabled" 1 "$(fsum "$TMP/s2.prom" '^netstack_collector_up\{collector="drops"\}$')"
check_eq "drops attached again: one count_drop_n program (netns label)" 1 "$(programs_of "$EXPORTER_PID" count_drop_n)"
check "drops series now carry netns" grep -q '^netstack_skb_drops_total{reason="NO_SOCKET",.*netns="' "$TMP/s2.prom"
check "rtt unchanged section: not restarted" bash -c "[ \$(grep -c 'collector rtt' '$EXPORTER_LOG') -eq 1 ]"

# ---- a storm of reloads while scraping: never a half-applied state ----
# Between stop and start a collector would show up=0, or drop series without its up line.
A='[collector.drops]\nenabled = false\n'
B='[collector.drops]\nlabels = reason,family,protocol,interface\n'
# At least 30 reloads, and on until 10 scrapes have seen the storm (a loaded machine scrapes
# slower), at most 300.
rm -f "$TMP/storm.enough"
(
	for ((i = 1; i <= 300; i++)); do
		((i > 30)) && [ -e "$TMP/storm.enough" ] && break
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
	((n >= 10)) && : >"$TMP/storm.enough"
	up=$(grep '^netstack_collector_up{collector="drops"}' "$TMP/storm.prom" | awk '{ print $2 }')
	series=$(grep -c '^netstack_skb_drops_total' "$TMP/storm.prom")
	# Consistent: drops on and up, or drops off and no series of it.
	if ! { [ "$up" = 1 ] || { [ -z "$up" ] && [ "$series" -eq 0 ]; }; }; then
		bad=$((bad + 1))
		cp "$TMP/storm.prom" "$TMP/bad.prom"
	fi
done
wait "$STORM"
echo "# $n scrapes during the storm"
ge "scrapes during the storm" "$n" 10
check_eq "failed scrapes during the storm" 0 "$failed"
check_eq "half-applied states seen" 0 "$bad"
promtool_ok "last storm scrape parses" "$TMP/storm.prom"

# ---- a collector failing at reload: the reload is reported failed, the collector runs on with
# its previous settings, never an exit (even with --strict) ----
stop_exporter
printf '[collector.drops]\nenabled = true\n' >"$INI"
start_exporter --strict --config "$INI" || {
	not_ok "exporter starts with --strict"
	finish
}
printf '[collector.drops]\nenabled = true\n[collector.rtt]\ncgroup = %s\n' "$TMP" >"$INI"
hup
check "--strict, rtt failing at reload: logged" grep -q 'reload: collector rtt failed' "$EXPORTER_LOG"
check_eq "... netstack_config_last_reload_successful 0" 0 \
	"$(scrape_sum '^netstack_config_last_reload_successful$')"
check "... rtt runs on with its previous settings (logged)" \
	grep -q 'reload: collector rtt runs on with its previous settings' "$EXPORTER_LOG"
check_eq "... netstack_collector_up rtt 1" 1 "$(up_of rtt)"
check_eq "... drops untouched, up" 1 "$(up_of drops)"
printf '[collector.drops]\nenabled = true\n' >"$INI"
hup
check_eq "once its section is fixed, the reload succeeds" 1 \
	"$(scrape_sum '^netstack_config_last_reload_successful$')"
check_eq "... rtt up" 1 "$(up_of rtt)"
check "exporter still running" kill -0 "$EXPORTER_PID"
stop_exporter

# ---- a reload mid-certificate-rotation: rejected whole, the old certificate keeps serving ----
# Two self-signed certificates for 127.0.0.1 with their own keys; the config names one pair of
# paths, and the test rotates the files under them as a certificate manager would, one at a
# time: certificate first (no longer matching the key), then the key.
if ! command -v openssl >/dev/null; then
	not_ok "TLS reloads" "needs openssl"
	finish
fi
for n in 1 2; do
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
		-subj "/CN=reload$n" -addext subjectAltName=IP:127.0.0.1 \
		-keyout "$TMP/k$n.pem" -out "$TMP/c$n.pem" 2>/dev/null || {
		not_ok "openssl makes the test certificates"
		finish
	}
done
cp "$TMP/c1.pem" "$TMP/cert.pem"
cp "$TMP/k1.pem" "$TMP/key.pem"
PORT=$(free_port)
# The address from the file this time (no flag), to see a change of it named at reload.
tls_ini() { # LISTEN_PORT
	printf '[web]\nlisten_address = 127.0.0.1:%s\ntls_cert_file = %s\ntls_key_file = %s\n[collector.retrans]\nenabled = false\n[collector.rtt]\nenabled = false\n' \
		"$1" "$TMP/cert.pem" "$TMP/key.pem" >"$INI"
}
tls_ini "$PORT"
spawn_exporter "$TMP/tls.log" --config "$INI"
TLS_URL=https://127.0.0.1:$PORT
for _ in $(seq 100); do
	curl -skf "$TLS_URL/healthz" >/dev/null && break
	sleep 0.05
done
# fingerprint: SHA-256 of the certificate the server presents; fp_of FILE: of a PEM file.
fingerprint() {
	openssl s_client -connect "127.0.0.1:$PORT" </dev/null 2>/dev/null |
		openssl x509 -noout -fingerprint -sha256 2>/dev/null
}
fp_of() { openssl x509 -noout -fingerprint -sha256 -in "$1"; }
FP1=$(fp_of "$TMP/c1.pem") FP2=$(fp_of "$TMP/c2.pem")
# reload_metric NAME: the value of netstack_config_last_reload_NAME over TLS ("" if none).
reload_metric() {
	curl -sk -m 5 "$TLS_URL/metrics" |
		awk -v n="netstack_config_last_reload_$1" '$1 == n { printf "%.0f\n", $2 }'
}
check_eq "TLS: serving the first certificate" "$FP1" "$(fingerprint)"
check_eq "start-up counts as a successful load" 1 "$(reload_metric successful)"
t0=$(reload_metric success_timestamp_seconds)
ge "... with its time" "$t0" $(($(date +%s) - 60))

cp "$TMP/c2.pem" "$TMP/cert.pem" # the new certificate, the old key still in place
sleep 1.1 # a later success shows as a later timestamp
hup
check "mismatched pair: rejected, the reason logged" \
	grep -q "reload: \[web\] tls_cert_file $TMP/cert.pem with tls_key_file $TMP/key.pem: The certificate and the given key do not match.*keeping the running configuration" "$EXPORTER_LOG"
check_eq "mismatched pair: netstack_config_last_reload_successful 0" 0 "$(reload_metric successful)"
"$EXPORTER" --check-config --config "$INI" >/dev/null 2>"$TMP/check.err"
check_eq "mismatched pair: --check-config fails too" 1 "$?"
check "... naming the reason" grep -q 'do not match' "$TMP/check.err"
check_eq "... the success timestamp stays" "$t0" "$(reload_metric success_timestamp_seconds)"
check_eq "... the old certificate is still served" "$FP1" "$(fingerprint)"
check_eq "... and scrapes go on" 200 "$(curl -sk -m 5 -o /dev/null -w '%{http_code}' "$TLS_URL/metrics")"
# Three SIGHUPs in a row after the failure, then a burst (signals pending together merge into
# one): each handled one rejected, never a crash.
n=$(grep -c 'keeping the running configuration' "$EXPORTER_LOG")
hup && hup && hup
check_eq "three SIGHUPs in a row: three rejections" $((n + 3)) "$(grep -c 'keeping the running configuration' "$EXPORTER_LOG")"
for _ in 1 2 3; do kill -HUP "$EXPORTER_PID"; done
sleep 0.5
check "... then a burst of three: the exporter is alive" kill -0 "$EXPORTER_PID"
check_eq "... and serves the old certificate" "$FP1" "$(fingerprint)"

cp "$TMP/k2.pem" "$TMP/key.pem" # the rotation completes
hup
check "pair fixed: the reload applies" grep -q "reload: $INI applied" "$EXPORTER_LOG"
check_eq "pair fixed: netstack_config_last_reload_successful 1" 1 "$(reload_metric successful)"
check "pair fixed: --check-config passes" bash -c "\"$EXPORTER\" --check-config --config \"$INI\" >/dev/null"
gt "... a later success timestamp" "$(reload_metric success_timestamp_seconds)" "$t0"
check_eq "... the new certificate is served" "$FP2" "$(fingerprint)"

# A malformed PEM (a certificate manager's half-written file): rejected, nothing changes.
printf -- '-----BEGIN CERTIFICATE-----\nnot base64 at all!\n-----END CERTIFICATE-----\n' >"$TMP/cert.pem"
hup
check "malformed PEM: rejected with GnuTLS' reason" \
	grep -q "reload: \[web\] tls_cert_file $TMP/cert.pem: Base64.*keeping the running configuration" "$EXPORTER_LOG"
check_eq "malformed PEM: netstack_config_last_reload_successful 0" 0 "$(reload_metric successful)"
check_eq "... the certificate before it is still served" "$FP2" "$(fingerprint)"
cp "$TMP/c2.pem" "$TMP/cert.pem"
head -c 100 "$TMP/k2.pem" >"$TMP/key.pem" # a half-written key
hup
check "half-written key: rejected, naming tls_key_file" \
	grep -q "reload: \[web\] tls_key_file $TMP/key.pem: .*keeping the running configuration" "$EXPORTER_LOG"
check_eq "... the certificate before it is still served" "$FP2" "$(fingerprint)"
cp "$TMP/k2.pem" "$TMP/key.pem"
OTHER=$(free_port)
tls_ini "$OTHER" # and a new address, which only a restart applies
hup
check_eq "fixed again: netstack_config_last_reload_successful 1" 1 "$(reload_metric successful)"
check "a new listen_address: named as needing a restart" \
	grep -qF 'reload: [web] listen_address changed; it needs a restart' "$EXPORTER_LOG"
check "... in the verdict too" grep -qF "reload: $INI applied; needs a restart: [web] listen_address" "$EXPORTER_LOG"
check_eq "... nothing listens on the new one" 0 "$(ss -Hltn "sport = :$OTHER" | wc -l)"
check_eq "... the listening socket went through it all: one LISTEN socket" 1 \
	"$(ss -Hltn "sport = :$PORT" | wc -l)"
check "exporter still running after the TLS reloads" kill -0 "$EXPORTER_PID"

# ---- rtt restarted by a reload: connections open before start stay covered ----
# The start-up pass turned RTT callbacks on in every namespace (setns, before the capabilities
# were dropped); a reload cannot enter them again, but the callbacks are the sockets' own and
# stay on: the gauge must not say a gap that is not there, and the connection stays measured.
stop_exporter
NSR=nsrttrl$$
netns_add "$NSR" || not_ok "a second network namespace"
INO_R=$(netns_inode "$NSR")
# One connection, made before the exporter starts, then a byte there and back every 50 ms.
ip netns exec "$NSR" /usr/bin/python3 -c '
import socket, time
srv = socket.create_server(("127.0.0.1", 5431))
cli = socket.create_connection(("127.0.0.1", 5431))
peer, _ = srv.accept()
print("connected", flush=True)
while True:
	cli.sendall(b"x"); peer.recv(1); peer.sendall(b"y"); cli.recv(1); time.sleep(0.05)
' >"$TMP/pinger.out" 2>&1 &
on_exit "kill $!"
wait_until 10 grep -qs connected "$TMP/pinger.out" || not_ok "a connection before start"
RTTN="^netstack_tcp_rtt_seconds_count\\{family=\"ipv4\",netns=\"$INO_R\"\\}$"
COVERED='^netstack_tcp_rtt_existing_sockets_covered$'
printf '[collector.drops]\nenabled = false\n[collector.rtt]\nlabels = family,netns\n' >"$INI"
start_exporter --config "$INI" || not_ok "exporter with rtt starts"
check_eq "rtt at start: connections open before start covered" 1 "$(scrape_sum "$COVERED")"
check "... the one in $NSR is measured" wait_until 10 sum_ge "$RTTN" 1
printf '[collector.drops]\nenabled = false\n[collector.rtt]\nlabels = family,netns\nmax_series = 512\n' >"$INI"
hup
check_eq "a reload restarted rtt" 1 "$(grep -c 'reload: collector rtt (re)started' "$EXPORTER_LOG")"
check_eq "... connections open before start still covered" 1 "$(scrape_sum "$COVERED")"
check "... no warning from rtt" bash -c "! grep -q 'level=warn msg=\"rtt:' '$EXPORTER_LOG'"
check "... the log says what a reload covers" \
	grep -q 'rtt: restarted, its pass over open connections partial (.*CAP_SYS_ADMIN, dropped at start).*Connections open before the exporter started keep' \
	"$EXPORTER_LOG"
check "... and the connection in $NSR is still measured (counts restart with the collector)" \
	wait_until 10 sum_ge "$RTTN" 1
finish
