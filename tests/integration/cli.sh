#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Command line and configuration file: every error path exits non-zero with a message naming
# the flag, or FILE:LINE and the key; flags override the file; startup failures are explicit.
# Runs without root; only the checks that need the drops collector attached are skipped then.
# schedule: parallel each
source "$(dirname "$0")/../lib.sh"
[ -x "$EXPORTER" ] || skip_all "$EXPORTER not built"

IS_ROOT=false
[ "$(id -u)" -eq 0 ] && IS_ROOT=true
HAVE_BPF=false
$IS_ROOT && [ -r /sys/kernel/btf/vmlinux ] && HAVE_BPF=true
skip() { echo "ok - $1 # SKIP $2"; }

# run ARGS...: the exporter with ARGS; stdout in $TMP/out, stderr in $TMP/err, status in RC.
# The timeout only guards against an error path that starts serving instead of exiting.
run() {
	timeout 10 "$EXPORTER" "$@" >"$TMP/out" 2>"$TMP/err"
	RC=$?
}
# expect NAME RC NEEDLE...: the last run exited RC and its stderr contains every NEEDLE.
expect() {
	local name=$1 rc=$2 n missing=
	shift 2
	check_eq "$name: exit status" "$rc" "$RC"
	for n in "$@"; do
		grep -qF -- "$n" "$TMP/err" || missing+=" '$n'"
	done
	if [ -z "$missing" ]; then
		ok "$name: message names $*"
	else
		not_ok "$name: message names $*" "missing$missing in: $(cat "$TMP/err")"
	fi
}
# one_message NAME: exactly one line on stderr, nothing on stdout.
one_message() {
	local lines
	lines=$(wc -l <"$TMP/err")
	if [ "$lines" -eq 1 ] && [ ! -s "$TMP/out" ]; then
		ok "$1: one error line, nothing on stdout"
	else
		not_ok "$1: one error line, nothing on stdout" \
			"stderr ($lines lines): $(cat "$TMP/err") stdout: $(cat "$TMP/out")"
	fi
}

# absent PATTERN: stdin has no line matching PATTERN.
absent() { ! grep -q -- "$1"; }

# ---- flags ----
run --nope
expect "unknown flag --nope" 2 "--nope"
one_message "unknown flag --nope"
run --check-config --nope=1
expect "unknown flag --nope=1 after a good flag" 2 "--nope"
run --config
expect "missing value for --config" 2 "--config"
one_message "missing value for --config"
run --web.listen-address
expect "missing value for --web.listen-address" 2 "--web.listen-address"
run --log-level
expect "missing value for --log-level" 2 "--log-level"
run --log-level loud
expect "bad --log-level value" 2 "--log-level" "loud"
one_message "bad --log-level value"
run --check-config --log-level loud
expect "bad --log-level value with --check-config" 2 "--log-level" "loud"
run stray
expect "stray argument" 2 "stray"
one_message "stray argument"
run --check-config -- stray2
expect "stray argument after --" 2 "stray2"

run --version
check_eq "--version: exit status" 0 "$RC"
check "--version prints 'netstack_exporter VERSION' ($(head -n 1 "$TMP/out"))" \
	grep -qE '^netstack_exporter [0-9]+\.[0-9]+' "$TMP/out"
check_eq "--version: one line" 1 "$(wc -l <"$TMP/out")"
check "--version: nothing on stderr" test ! -s "$TMP/err"

run --help
check_eq "--help: exit status" 0 "$RC"
missing=
for f in --config --web.listen-address --check-config --strict --log-level --version --help; do
	grep -qF -- "$f" "$TMP/out" || missing+=" $f"
done
check_eq "--help lists every flag" "" "$missing"
check "--help starts with a usage line" grep -qi '^usage' "$TMP/out"
check "--help: nothing on stderr" test ! -s "$TMP/err"

run --check-config
check_eq "--check-config with built-in defaults: exit status" 0 "$RC"

# ---- the shipped configuration ----
SHIPPED=conf/netstack_exporter.ini
if [ -f "$SHIPPED" ]; then
	run --check-config --config "$SHIPPED"
	check_eq "--check-config $SHIPPED: exit status" 0 "$RC"
	check "--check-config $SHIPPED: nothing on stderr" test ! -s "$TMP/err"
	missing=
	for k in listen_address metrics_path max_connections connection_timeout level enabled \
		labels max_series; do
		grep -qE "^[[:space:]]*${k}[[:space:]]*=" "$SHIPPED" || missing+=" $k"
	done
	check_eq "$SHIPPED sets every key" "" "$missing"
else
	not_ok "$SHIPPED exists" "the default configuration is missing"
fi

# ---- configuration errors: exit 1, FILE:LINE: and the key ----
N=0
# conf_case NAME LINE NEEDLE... < FILE CONTENT: --check-config reports FILE:LINE and NEEDLEs.
conf_case() {
	local name="config: $1" line=$2 f
	shift 2
	N=$((N + 1))
	f=$TMP/c$N.ini
	cat >"$f"
	run --check-config --config "$f"
	expect "$name" 1 "$f:$line:" "$@"
	one_message "$name"
}

conf_case "unknown section" 5 bogus <<'EOF'
; comment
[web]
max_connections = 8

[bogus]
key = value
EOF
conf_case "unknown section without keys" 2 bogus <<'EOF'
[web]
[bogus]
[log]
level = info
EOF
conf_case "unknown collector section" 1 collector.nope <<'EOF'
[collector.nope]
enabled = true
EOF
conf_case "unknown key in [web]" 3 colour <<'EOF'
[web]
listen_address = :9437
colour = blue
EOF
conf_case "unknown key in [log]" 2 format <<'EOF'
[log]
format = json
EOF
conf_case "unknown key in [collector.drops]" 4 sample_rate <<'EOF'
[collector.drops]
enabled = true
; a comment
sample_rate = 10
EOF
conf_case "bad bool" 2 enabled maybe <<'EOF'
[collector.drops]
enabled = maybe
EOF
conf_case "max_series = -1" 3 max_series -1 <<'EOF'
[collector.drops]
labels = reason,family,protocol
max_series = -1
EOF
conf_case "max_series = 12x" 2 max_series 12x <<'EOF'
[collector.drops]
max_series = 12x
EOF
conf_case "max_series = 0" 2 max_series <<'EOF'
[collector.drops]
max_series = 0
EOF
conf_case "max_series too large" 2 max_series 99999999999 <<'EOF'
[collector.drops]
max_series = 99999999999
EOF
conf_case "max_connections = 0" 2 max_connections <<'EOF'
[web]
max_connections = 0
EOF
conf_case "connection_timeout not a number" 3 connection_timeout <<'EOF'
[web]
max_connections = 8
connection_timeout = soon
EOF
conf_case "metrics_path without /" 2 metrics_path <<'EOF'
[web]
metrics_path = metrics
EOF
conf_case "bad log level" 2 level loud <<'EOF'
[log]
level = loud
EOF
conf_case "unknown label" 2 labels pod <<'EOF'
[collector.drops]
labels = reason,family,protocol,pod
EOF
conf_case "labels missing required ones" 3 labels <<'EOF'
[collector.drops]
enabled = true
labels = reason,function
EOF
conf_case "syntax error: line without =" 4 <<'EOF'
[web]
max_connections = 8

this line has no equals sign
EOF
conf_case "key outside any section" 2 listen_address <<'EOF'
; leading comment
listen_address = :9437
[web]
EOF
# Several errors: the first one is reported, whatever its kind.
conf_case "first error: unknown key before syntax error" 2 colour <<'EOF'
[web]
colour = blue
not a key value line
[bogus]
EOF
conf_case "first error: syntax error before unknown key" 2 <<'EOF'
[web]
not a key value line
colour = blue
EOF
conf_case "first error: unknown section before bad value" 1 bogus <<'EOF'
[bogus]
x = 1
[collector.drops]
enabled = maybe
EOF
conf_case "first error: bad value before unknown section" 2 max_series <<'EOF'
[collector.drops]
max_series = 0
labels = reason
[bogus]
EOF
# inih reads at most 200 bytes a line by default; a long comment is still one line.
conf_case "error after a 300-character comment line" 4 colour < <(
	printf '[web]\n; %0300d\n' 0
	printf 'max_connections = 8\ncolour = blue\n'
)
# --check-config should catch what would make the exporter fail at startup.
conf_case "listen_address that cannot be parsed" 2 listen_address <<'EOF'
[web]
listen_address = nonsense
EOF

run --check-config --config "$TMP/does-not-exist.ini"
expect "nonexistent config file" 1 "$TMP/does-not-exist.ini"
one_message "nonexistent config file"
mkdir "$TMP/a-directory"
run --check-config --config "$TMP/a-directory"
expect "config path is a directory" 1 "$TMP/a-directory"

# A bad configuration stops a real start too, before anything listens.
port=$(free_port)
printf '[web]\nmax_connections = 8\ncolour = blue\n' >"$TMP/bad-start.ini"
run --config "$TMP/bad-start.ini" --web.listen-address "127.0.0.1:$port"
expect "bad config without --check-config" 1 "$TMP/bad-start.ini:3:" colour

# ---- valid configurations ----
cat >"$TMP/full.ini" <<'EOF'
; every key
# hash comments too
[web]
listen_address = 127.0.0.1:9437
metrics_path = /metrics
max_connections = 16
connection_timeout = 5

[log]
level = debug

[collector.drops]
enabled = true
labels = reason, family, protocol, function, netns, interface
max_series = 1024
EOF
run --check-config --config "$TMP/full.ini"
check_eq "valid config with every key: exit status" 0 "$RC"
check "valid config with every key: nothing on stderr" test ! -s "$TMP/err"
check "valid config with every key: stdout names the file" grep -qF "$TMP/full.ini" "$TMP/out"
sed 's/$/\r/' "$TMP/full.ini" >"$TMP/crlf.ini"
run --check-config --config "$TMP/crlf.ini"
check_eq "valid config with CRLF line endings: exit status" 0 "$RC"
printf '[collector.drops]\nmax_series = 1\n[web]\nmax_connections = 65536\nconnection_timeout = 3600\n' \
	>"$TMP/bounds.ini"
run --check-config --config "$TMP/bounds.ini"
check_eq "valid config at the bounds: exit status" 0 "$RC"

# ---- flags override the file (runs the exporter; without root the drops collector fails
# to attach and the exporter serves without it) ----
printf '[web]\nlisten_address = 127.0.0.1:1\n[log]\nlevel = error\n' >"$TMP/override.ini"
if start_exporter --config "$TMP/override.ini"; then
	ok "--web.listen-address overrides listen_address (serving on ${EXPORTER_URL##*:})"
	check "[log] level = error: no info lines" bash -c "! grep -q 'level=info' '$EXPORTER_LOG'"
	if $HAVE_BPF; then
		check_eq "drops collector up" 1 "$(scrape_sum '^netstack_collector_up\{collector="drops"\}$')"
	else
		check_eq "without root: drops collector down" 0 \
			"$(scrape_sum '^netstack_collector_up\{collector="drops"\}$')"
		check "without root: the failure is logged" grep -q 'drops' "$EXPORTER_LOG"
	fi
else
	not_ok "--web.listen-address overrides listen_address" "$(cat "$EXPORTER_LOG")"
fi
# Same with a free port in the file: nothing may answer there.
fileport=$(free_port)
printf '[web]\nlisten_address = 127.0.0.1:%s\n[log]\nlevel = error\n' "$fileport" >"$TMP/override2.ini"
if start_exporter --config "$TMP/override2.ini" --log-level info; then
	check "--log-level info overrides [log] level = error" grep -q 'level=info' "$EXPORTER_LOG"
	check "nothing listens on the file's port $fileport" \
		bash -c "! curl -s -m 1 http://127.0.0.1:$fileport/healthz >/dev/null"
else
	not_ok "exporter starts with --log-level info"
fi

# drops disabled: serves with no collector at all, even without root or BPF.
printf '[collector.drops]\nenabled = false\n' >"$TMP/disabled.ini"
if start_exporter --config "$TMP/disabled.ini"; then
	body=$(metrics)
	check "enabled = false: no netstack_skb_drops_total family" \
		absent netstack_skb_drops_total <<<"$body"
	check "enabled = false: no series for the drops collector" \
		absent 'collector="drops"' <<<"$body"
	check "enabled = false: build_info still served" grep -q '^netstack_exporter_build_info{' <<<"$body"
else
	not_ok "exporter starts with the drops collector disabled" "$(cat "$EXPORTER_LOG")"
fi

# ---- --strict ----
if $HAVE_BPF; then
	if start_exporter --strict; then
		ok "--strict starts when the collector attaches"
		check_eq "--strict: drops collector up" 1 \
			"$(scrape_sum '^netstack_collector_up\{collector="drops"\}$')"
	else
		not_ok "--strict starts when the collector attaches"
	fi
else
	skip "--strict starts when the collector attaches" "needs root and kernel BTF"
fi

# Unprivileged: as root, drop to nobody to exercise the "collector cannot start" path.
UNPRIV=()
if $IS_ROOT; then
	if command -v setpriv >/dev/null &&
		setpriv --reuid=nobody --regid=nogroup --clear-groups test -x "$EXPORTER" 2>/dev/null; then
		UNPRIV=(setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all)
	else
		UNPRIV=(none)
	fi
fi
if [ "${UNPRIV[0]:-}" = none ]; then
	skip "unprivileged start" "setpriv missing or nobody cannot run $EXPORTER"
else
	port=$(free_port)
	"${UNPRIV[@]}" "$EXPORTER" --web.listen-address "127.0.0.1:$port" >"$TMP/unpriv.log" 2>&1 &
	pid=$!
	on_exit "kill $pid"
	for _ in $(seq 100); do
		curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	body=$(curl -sf "http://127.0.0.1:$port/metrics")
	check "unprivileged: serves /metrics without --strict" grep -q '^netstack_exporter_build_info{' <<<"$body"
	check "unprivileged: netstack_collector_up{collector=\"drops\"} 0" \
		grep -qx 'netstack_collector_up{collector="drops"} 0' <<<"$body"
	check "unprivileged: netstack_scrape_collector_success{collector=\"drops\"} 0" \
		grep -qx 'netstack_scrape_collector_success{collector="drops"} 0' <<<"$body"
	check "unprivileged: the failure is logged naming the collector" \
		grep -q 'level=error.*drops' "$TMP/unpriv.log"
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null

	port=$(free_port)
	timeout 10 "${UNPRIV[@]}" "$EXPORTER" --strict --web.listen-address "127.0.0.1:$port" \
		>"$TMP/strict.log" 2>&1
	rc=$?
	check "unprivileged --strict: exits non-zero ($rc)" test "$rc" -ne 0 -a "$rc" -ne 124
	check "unprivileged --strict: log names the collector" grep -q 'drops' "$TMP/strict.log"
	check "unprivileged --strict: never served" \
		bash -c "! curl -s -m 1 http://127.0.0.1:$port/healthz >/dev/null"
fi

# ---- a port that is already taken ----
if start_exporter; then
	busy=${EXPORTER_URL#http://}
	run --web.listen-address "$busy"
	check "port in use: exits non-zero ($RC)" test "$RC" -ne 0 -a "$RC" -ne 124
	check "port in use: log names $busy" grep -qF "$busy" "$TMP/err"
	check "port in use: the first exporter still serves" curl -sf -o /dev/null "$EXPORTER_URL/metrics"
else
	not_ok "exporter starts (for the port-in-use test)"
fi
run --web.listen-address "nonsense"
check "unparsable listen address: exits non-zero ($RC)" test "$RC" -ne 0 -a "$RC" -ne 124
check "unparsable listen address: log names it" grep -qF nonsense "$TMP/err"

finish
