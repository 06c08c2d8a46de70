#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Sampling turned off by a reload frees the ring buffer (up to ring_buffer_bytes of memory),
# and turned on again makes a new one that carries events.
# schedule: parallel each
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
require_root_bpf

SIZE=67108864
INI=$TMP/off.ini
on() { printf '%s\n' '[sampling]' 'drop_sample_rate = 1' "ring_buffer_bytes = $SIZE" >"$INI"; }
off() { printf '%s\n' '[sampling]' "ring_buffer_bytes = $SIZE" >"$INI"; }
# rings: the exporter's descriptors of ring buffers of $SIZE bytes (its own, the drops program's)
rings() {
	grep -l "^map_type:[[:space:]]*27$" /proc/"$EXPORTER_PID"/fdinfo/* 2>/dev/null |
		xargs -r grep -l "^max_entries:[[:space:]]*$SIZE$" | wc -l
}
hup() { # wait until the log has one more "reload: ... applied" line
	local n
	n=$(grep -c 'reload: .* applied' "$EXPORTER_LOG")
	kill -HUP "$EXPORTER_PID"
	for _ in $(seq 100); do
		[ "$(grep -c 'reload: .* applied' "$EXPORTER_LOG")" -gt "$n" ] && return 0
		sleep 0.1
	done
	return 1
}

on
start_exporter --config "$INI" || exit 1
gt "sampling on: descriptors of a ring buffer of $SIZE bytes" "$(rings)" 0
off
check "sampling off: reload applied" hup
check_eq "sampling off: the ring buffer is gone" 0 "$(rings)"
on
check "sampling on again: reload applied" hup
gt "sampling on again: a ring buffer" "$(rings)" 0
before=$(curl -sf "$EXPORTER_URL/events" | wc -l)
for _ in $(seq 50); do
	echo x >/dev/udp/127.0.0.1/9
	[ "$(curl -sf "$EXPORTER_URL/events" | wc -l)" -gt "$before" ] && break
	sleep 0.1
done
gt "... and it carries events (/events grows)" "$(curl -sf "$EXPORTER_URL/events" | wc -l)" \
	"$before"
finish
