#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# [sampling] stdout = true with a stdout nobody reads (a FIFO held open, never read: a stalled
# log pipe, a paused container log driver):
#
#   1. /metrics, /healthz, / and /events each answer within 1 s throughout, while sampled drops
#      keep coming.
#   2. The events stdout did not take are counted in netstack_events_lost_total{type="drop"}
#      (and logged once); /events still has them.
#   3. Once read again, stdout carries new events, and whole JSON lines.
#   4. SIGTERM still stops the exporter at once.
# schedule: parallel each
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
require_root_bpf
UDPFLOOD=$BUILD/tests/udpflood
[ -x "$UDPFLOOD" ] || skip_all "$UDPFLOOD not built (make tools)"
for tool in curl jq timeout; do
	command -v "$tool" >/dev/null || skip_all "needs $tool"
done

NS=evo$$
netns_add "$NS" || skip_all "cannot create a network namespace"
INO=$(netns_inode "$NS")
printf '%s\n' '[sampling]' 'drop_sample_rate = 1' 'drop_max_events_per_second = 0' \
	'ring_buffer_bytes = 1048576' 'stdout = true' 'stdout_max_per_second = 1000000' \
	>"$TMP/run.ini"
mkfifo "$TMP/out"
exec 3<>"$TMP/out" # a reader that never reads: the pipe (64 KiB) fills and stays full
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
EXPORTER_URL=$URL
"$EXPORTER" --web.listen-address "127.0.0.1:$PORT" --config "$TMP/run.ini" \
	>"$TMP/out" 2>"$TMP/log" &
PID=$!
on_exit "kill -9 $PID"
wait_healthy "$URL" "$PID" "$TMP/log" exporter || exit 1

# -- 1. scrapes while the pipe is full --------------------------------------------------------
# Each datagram to a closed port in $NS is a sampled NO_SOCKET drop: a JSON line of ~450 bytes.
# Rounds of 2000 a few times a second, not a flood that starves the clients of CPU.
(while :; do
	ip netns exec "$NS" "$UDPFLOOD" 127.0.0.1 9 2000 >/dev/null
	sleep 0.2
done) &
FLOOD=$!
on_exit "kill $FLOOD"
slow=0 failed=0 n=0 worst=0
deadline=$((SECONDS + 10))
while [ $SECONDS -lt $deadline ]; do
	for path in /metrics /healthz / '/events?max_events=1'; do
		t=$(curl -sf -m 1 -o /dev/null -w '%{time_total}' "$URL$path") || failed=$((failed + 1))
		ms=$(awk -v t="${t:-1}" 'BEGIN { printf "%d", t * 1000 }')
		[ "$ms" -gt "$worst" ] && worst=$ms
		n=$((n + 1))
	done
	sleep 0.1
done
check_eq "$n requests while stdout is stalled: none failed or took 1 s (slowest ${worst} ms)" \
	0 "$failed"

# -- 2. counted, logged, kept ---------------------------------------------------------------------
curl -sf -m 2 "$URL/metrics" >"$TMP/m"
gt "netstack_events_lost_total{type=\"drop\"} counts what stdout did not take" \
	"$(fsum "$TMP/m" '^netstack_events_lost_total\{type="drop"\}$')" 0
check "logged once" test "$(grep -c 'stdout does not take the events' "$TMP/log")" -eq 1
# The store (1000) keeps the host's latest: a script alongside flooding a closed port can fill
# it for seconds. Our rounds go on meanwhile: wait for one of them to show (up to 30 s).
for _ in $(seq 150); do
	n=$(curl -sf -m 2 "$URL/events?netns=$INO" | grep -c NO_SOCKET)
	[ "$n" -gt 0 ] && break
	sleep 0.2
done
gt "/events still holds the netns' drops" "$n" 0
kill "$FLOOD"
wait "$FLOOD" 2>/dev/null

# -- 3. read again: whole lines, and new events get through --------------------------------------
cat <&3 >"$TMP/drained" &
READER=$!
on_exit "kill $READER"
# A drop to port 4242 now and then, until one arrives (what was pending goes first).
resumed() { grep -q "\"netns\":$INO,.*\"dport\":4242," "$TMP/drained"; }
for _ in $(seq 50); do
	ip netns exec "$NS" "$UDPFLOOD" 127.0.0.1 4242 1 >/dev/null
	sleep 0.1
	resumed && break
done
check "read again, stdout carries new drops" resumed
kill "$READER"
wait "$READER" 2>/dev/null
# Whole lines: a line cut in two would not parse.
jq_lines() { jq -e . "$1" >/dev/null; }
check "every line read is one JSON object ($(wc -l <"$TMP/drained") lines)" jq_lines "$TMP/drained"

# -- 4. SIGTERM with the pipe full again ------------------------------------------------------------
ip netns exec "$NS" "$UDPFLOOD" 127.0.0.1 9 5000 >/dev/null
kill "$PID"
for _ in $(seq 50); do
	kill -0 "$PID" 2>/dev/null || break
	sleep 0.1
done
if kill -0 "$PID" 2>/dev/null; then
	not_ok "SIGTERM with stdout stalled: the exporter stops within 5 s"
else
	wait "$PID"
	check_eq "SIGTERM with stdout stalled: the exporter stops within 5 s, exit code" 0 $?
fi
finish
