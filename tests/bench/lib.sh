# SPDX-License-Identifier: GPL-2.0-only
# Shared by the benchmarks (sourced after the caller sets TMP, EXPORTER, FLOOR_CMD (the floor
# program's loader and its arguments, an array) and PROG (our program's name per variant)).
# A variant is attached alone; "floor" is the empty program, anything else the exporter with
# $TMP/VARIANT.ini. Figures come from the kernel's bpf_stats: bpftool for the floor, the
# exporter's own /metrics for ours.

die() {
	echo "${0##*/}: $*" >&2
	exit 1
}

stop_variant() {
	[ -n "$PID" ] || return 0
	kill "$PID" 2>/dev/null
	wait "$PID" 2>/dev/null
	PID=
}

free_tcp_port() {
	local p
	for p in $(shuf -i 20000-60000 -n 50); do
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# start_variant NAME: attach it alone; sets PID and, for the exporter, URL, for the floor,
# PROG_ID. Fails, with the reason in $TMP/why, when the program does not load.
start_variant() {
	local v=$1 port
	if [ "$v" = floor ]; then
		"${FLOOR_CMD[@]}" >"$TMP/floor.out" 2>"$TMP/floor.err" &
		PID=$!
		for _ in $(seq 100); do
			PROG_ID=$(head -n1 "$TMP/floor.out")
			[ -n "$PROG_ID" ] && return 0
			kill -0 "$PID" 2>/dev/null || break
			sleep 0.05
		done
		head -n1 "$TMP/floor.err" >"$TMP/why"
		stop_variant
		return 1
	fi
	for _ in 1 2 3; do
		port=$(free_tcp_port) || die "no free TCP port on loopback"
		URL=http://127.0.0.1:$port
		# --strict: exit rather than serve without the collector.
		"$EXPORTER" --config "$TMP/$v.ini" --web.listen-address "127.0.0.1:$port" --strict \
			>"$TMP/exporter.log" 2>&1 &
		PID=$!
		for _ in $(seq 100); do
			curl -sf "$URL/healthz" >/dev/null 2>&1 && return 0
			kill -0 "$PID" 2>/dev/null || break
			sleep 0.05
		done
		stop_variant
		# Another process may have taken the port meanwhile: then try another.
		grep -q 'level=error' "$TMP/exporter.log" && ! grep -qi 'listen\|bind\|address' \
			"$TMP/exporter.log" && break
	done
	grep -m1 'level=error' "$TMP/exporter.log" | sed 's/.*msg="\(.*\)"/\1/' >"$TMP/why"
	[ -s "$TMP/why" ] || echo "exporter did not start" >"$TMP/why"
	return 1
}

# read_stats NAME: "run_time_ns run_cnt" of the variant's program, nothing if bpf_stats is off.
read_stats() {
	if [ "$1" = floor ]; then
		# bpftool leaves the fields out while they are zero.
		bpftool prog show id "$PROG_ID" -j | awk -F '[{},]' '{
			t = c = 0
			for (i = 1; i <= NF; i++) {
				split($i, kv, ":")
				if (kv[1] == "\"run_time_ns\"")
					t = kv[2]
				if (kv[1] == "\"run_cnt\"")
					c = kv[2]
			}
			print t, c
		}'
		return
	fi
	curl -sf "$URL/metrics" | awk -v p="{program=\"${PROG[$1]}\"}" '
		$1 == "netstack_bpf_program_run_seconds_total" p { t = $2; n++ }
		$1 == "netstack_bpf_program_runs_total" p { c = $2; n++ }
		END { if (n == 2) printf "%.0f %.0f\n", t * 1e9, c }'
}
