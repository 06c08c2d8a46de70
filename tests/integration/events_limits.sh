#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Bounded requests around sampled events:
#
#   1. [sampling] max_events above its maximum (100000) is a config error naming the file, the
#      line, the key and the maximum; the maximum itself is accepted.
#   2. GET /events?max_events=N: the last N stored events, oldest first; 0, negative, not a
#      number, empty or above 100000 is a 400 naming max_events and the maximum.
#   3. Memory per connection: with 30000 events stored (a full /events is 13 MB), 24 clients
#      that request /events and never read make the exporter's RSS grow by at most 128 KiB
#      each (256 under ASan; the response is streamed in pieces of 16 KiB), /healthz still
#      answers meanwhile; a slow reader gets whole lines in order.
# schedule: serial each
# why: its store holds the host's latest 1000 drops: floods alongside evict its own for long
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
require_root_bpf
UDPFLOOD=$BUILD/tests/udpflood
[ -x "$UDPFLOOD" ] || skip_all "$UDPFLOOD not built (make tools)"
for tool in curl /usr/bin/python3; do
	command -v "$tool" >/dev/null || skip_all "needs $tool"
done

# -- 1. the configuration's maximum --------------------------------------------------------------
printf '[sampling]\ndrop_sample_rate = 1\n\nmax_events = 100001\n' >"$TMP/over.ini"
"$EXPORTER" --config "$TMP/over.ini" --check-config >"$TMP/over.out" 2>&1
check_eq "max_events = 100001: --check-config fails" 1 $?
check "the error names file, line, key and the maximum" grep -qF \
	"$TMP/over.ini:4: max_events: expected a whole number from 1 to 100000, got '100001'" \
	"$TMP/over.out"
printf '[sampling]\nmax_events = 100000\n' >"$TMP/max.ini"
check "max_events = 100000 is accepted" "$EXPORTER" --config "$TMP/max.ini" --check-config

# -- 2. /events?max_events= ------------------------------------------------------------------------
NS=evl$$
netns_add "$NS" || skip_all "cannot create a network namespace"
INO=$(netns_inode "$NS")
# Every UDP datagram to a closed port in $NS is a sampled NO_SOCKET drop. More than the store
# keeps: it is full, so later events (the host's, sampled too) reuse its memory, not add to it.
E=30000
printf '%s\n' '[web]' 'max_connections_per_ip = 64' '[sampling]' 'drop_sample_rate = 1' \
	'drop_max_events_per_second = 0' 'ring_buffer_bytes = 16777216' "max_events = $E" \
	>"$TMP/run.ini"
start_exporter --config "$TMP/run.ini" || exit 1
mine() { grep -c "\"netns\":$INO,.*\"reason\":\"NO_SOCKET\"" "$1"; }
# Until the consumer has caught up: the store full, the flood's events in it, the newest of
# them the same 0.2 s later (a loaded machine's ASan build reads a burst for seconds). Full
# without ours: a script alongside flooding a closed port evicted them all, so flood again.
flood() { ip netns exec "$NS" "$UDPFLOOD" 127.0.0.1 9 $((E + E / 10)) >/dev/null; }
settle() {
	local last=
	flood
	for try in $(seq 100); do
		sleep 0.2 # the consumer polls every 100 ms
		curl -sf "$EXPORTER_URL/events" >"$TMP/full"
		curl -sf "$EXPORTER_URL/events?netns=$INO" >"$TMP/all"
		[ "$(wc -l <"$TMP/full")" -eq "$E" ] || continue
		if [ "$(mine "$TMP/all")" -gt 0 ]; then
			[ "$(tail -n 1 "$TMP/all")" = "$last" ] && return
			last=$(tail -n 1 "$TMP/all")
			continue
		fi
		echo "# try $try: other drops on the host evicted the flood's events: again"
		flood
	done
}
settle
check_eq "the store is full ($(wc -c <"$TMP/full") bytes)" "$E" "$(wc -l <"$TMP/full")"
gt "with the flood's events" "$(mine "$TMP/all")" 0

# The flood is over: none of ours comes any more, the host's own sampled drops only push the
# oldest of ours out of the full store. So every answer is the end of the one read before it:
# reads of all of ours around the two asked for bound them, whatever was evicted meanwhile.
# ends A B: B is the last lines of A.
ends() { tail -n "$(wc -l <"$2")" "$1" | cmp -s - "$2"; }
for try in $(seq 5); do
	curl -sf "$EXPORTER_URL/events?netns=$INO" >"$TMP/all"
	curl -sf "$EXPORTER_URL/events?netns=$INO&max_events=5" >"$TMP/five"
	curl -sf "$EXPORTER_URL/events?netns=$INO&max_events=100000" >"$TMP/max"
	curl -sf "$EXPORTER_URL/events?netns=$INO" >"$TMP/all2"
	[ "$(wc -l <"$TMP/all2")" -ge 100 ] && break
	echo "# try $try: the host's drops evicted nearly all of ours: flood again"
	settle
done
gt "ours still in the store after the reads" "$(wc -l <"$TMP/all2")" 99
check_eq "max_events=5: five lines" 5 "$(wc -l <"$TMP/five")"
check "max_events=5: the last five, oldest first" ends "$TMP/all" "$TMP/five"
check "max_events=5: ... still the last five after" ends "$TMP/all2" "$TMP/five"
check "max_events=100000: the end of what was there before" ends "$TMP/all" "$TMP/max"
check "max_events=100000: every event kept ($(wc -l <"$TMP/max"), $(wc -l <"$TMP/all2") after)" \
	ends "$TMP/max" "$TMP/all2"
for v in 0 -1 abc '' 1e3 100001 99999999999999999999; do
	code=$(curl -s -o "$TMP/body" -w '%{http_code}' "$EXPORTER_URL/events?max_events=$v")
	check_eq "max_events=$v is a 400 ($(head -c 80 "$TMP/body"))" 400 "$code"
	check "max_events=$v: the answer names the parameter and the maximum" \
		grep -q "max_events.*100000" "$TMP/body"
done

# -- 3. memory per connection --------------------------------------------------------------------
C=24
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$EXPORTER_PID/status"; }
FULL=$(($(wc -c <"$TMP/all") / 1024)) # KiB of one full /events response (of the netns)
# Clients that ask for /events and then read nothing (small receive buffers), until killed.
/usr/bin/python3 - "${EXPORTER_URL#http://}" "$C" "$TMP/held" <<'EOF' &
import socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
socks = []
for _ in range(int(sys.argv[2])):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect((host, int(port)))
    s.sendall(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
    socks.append(s)
open(sys.argv[3], "w").write("held\n")
time.sleep(60)
EOF
HOLDER=$!
on_exit "kill $HOLDER"
BEFORE=$(rss)
for _ in $(seq 100); do
	[ -s "$TMP/held" ] && break
	sleep 0.1
done
sleep 2 # every request answered as far as the clients' windows go
AFTER=$(rss)
GROWTH=$((AFTER - BEFORE))
check "/healthz answers while they are held" curl -sf -m 2 "$EXPORTER_URL/healthz" -o /dev/null
# ASan's redzones and its quarantine of freed memory double what the pieces take.
PER=128
ldd "$EXPORTER" 2>/dev/null | grep -q libasan && PER=256
le "RSS growth for $C unread /events responses of $FULL KiB each (KiB)" "$GROWTH" \
	$((C * PER))
kill "$HOLDER"
wait "$HOLDER" 2>/dev/null
# A slow reader (2 s) gets whole lines, in order.
curl -sf --limit-rate 400k "$EXPORTER_URL/events?max_events=2000" >"$TMP/slow"
check_eq "a slow reader gets every line" 2000 "$(wc -l <"$TMP/slow")"
check "each one JSON object, seq increasing" /usr/bin/python3 -c '
import json, sys
seqs = [json.loads(l)["seq"] for l in open(sys.argv[1])]
sys.exit(any(b <= a for a, b in zip(seqs, seqs[1:])))' "$TMP/slow"
finish
