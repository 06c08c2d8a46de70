# SPDX-License-Identifier: GPL-2.0-only
# Shared helpers for integration tests (sourced). Each test prints "ok - name" or
# "not ok - name"; exit 77 means the whole script was skipped.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
BUILD=${BUILD:-build}
EXPORTER=$BUILD/netstack_exporter
TMP=$(mktemp -d /tmp/netstack-test.XXXXXX)
FAILED=0
CLEANUPS=()
# The ASan/UBSan pass: every exporter a test starts is checked when it stops (exporter_stopped).
SANITIZED=
grep -q __asan_init "$EXPORTER" 2>/dev/null && SANITIZED=1
EXPORTERS=() # "PID LOG" of each exporter started and not yet checked

cleanup() {
	local rc=$? i e
	# Exporters first, while their logs exist; a failure here fails the script.
	for e in "${EXPORTERS[@]}"; do
		stop_exporter "${e%% *}"
	done
	for ((i = ${#CLEANUPS[@]} - 1; i >= 0; i--)); do
		eval "${CLEANUPS[i]}" >/dev/null 2>&1
	done
	[ -e "$TMP/not_ok" ] && rc=1
	grep -lsx "$$" "$PORTS"/* | xargs -r rm -f
	[ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"
	exit "$rc"
}
trap cleanup EXIT
on_exit() { CLEANUPS+=("$*"); }

ok() { echo "ok - $1"; }
# not_ok NAME [DETAIL]: also from a subshell ($(...)), whose FAILED the script never sees.
not_ok() {
	echo "not ok - $1"
	shift
	[ $# -gt 0 ] && echo "  $*"
	FAILED=1
	: >"$TMP/not_ok"
}
# check NAME COMMAND...: ok when the command succeeds
check() {
	local name=$1
	shift
	if "$@"; then ok "$name"; else not_ok "$name" "command failed: $*"; fi
}
# check_eq NAME EXPECTED ACTUAL
check_eq() {
	if [ "$2" = "$3" ]; then ok "$1 ($3)"; else not_ok "$1" "expected '$2', got '$3'"; fi
}
finish() { exit "$FAILED"; } # cleanup turns a not ok seen only in a subshell into 1

skip_all() {
	echo "!!!!! SKIPPED: $* !!!!!" >&2
	exit 77
}
require_root_bpf() {
	[ "$(id -u)" -eq 0 ] || skip_all "needs root"
	[ -r /sys/kernel/btf/vmlinux ] || skip_all "needs kernel BTF (/sys/kernel/btf/vmlinux)"
	[ -x "$EXPORTER" ] || skip_all "$EXPORTER not built"
}

# What the running kernel offers, asked of its BTF as the exporter asks it (never of its version
# string). kernel_btf: bpftool's dump of /sys/kernel/btf/vmlinux, made once per script.
kernel_btf() {
	[ -s "$TMP/vmlinux.btf" ] ||
		bpftool btf dump file /sys/kernel/btf/vmlinux >"$TMP/vmlinux.btf" || return 1
	cat "$TMP/vmlinux.btf"
}
# kernel_has_kfunc NAME: true when the kernel has the kfunc (bpf_rdonly_cast: Linux 6.2+).
kernel_has_kfunc() { kernel_btf | grep -q "^\[[0-9]*\] FUNC '$1' "; }
# tracepoint_nargs NAME: the arguments a tp_btf/NAME program gets here, 0 without the tracepoint.
tracepoint_nargs() {
	kernel_btf | awk -v name="'btf_trace_$1'" '
		/^\[/ { t[$1] = $0 }
		$2 == "TYPEDEF" && $3 == name { split($4, a, "="); id = a[2] }
		END {
			# typedef -> pointer -> function prototype (void *ctx, then the arguments)
			split(t["[" id "]"], ptr); split(ptr[4], a, "=")
			if (id != "" && match(t["[" a[2] "]"], /vlen=[0-9]+/))
				print substr(t["[" a[2] "]"], RSTART + 5, RLENGTH - 5) - 1
			else
				print 0
		}'
}

# A free TCP port on loopback.
# Scripts run side by side: a port is first claimed in $PORTS (a file named after it holding
# the script's PID, made with O_EXCL; a dead script's claims lapse), so that two scripts never
# pick the same one between the check and the bind, nor one reach the other's exporter.
PORTS=/run/netstack-tests/ports
free_port() {
	local p owner
	mkdir -p "$PORTS"
	for p in $(shuf -i 20000-32767 -n 50); do # below ip_local_port_range: no client sockets there
		owner=$(cat "$PORTS/$p" 2>/dev/null) &&
			{ kill -0 "$owner" 2>/dev/null || rm -f "$PORTS/$p"; }
		(set -o noclobber && echo "$$" >"$PORTS/$p") 2>/dev/null || continue
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	return 1
}

# start_exporter [ARGS...]: run the exporter on a free loopback port, wait for /healthz.
# Sets EXPORTER_PID, EXPORTER_URL, EXPORTER_LOG.
start_exporter() {
	local port
	port=$(free_port)
	EXPORTER_URL=http://127.0.0.1:$port
	spawn_exporter "$TMP/exporter.$port.log" --web.listen-address "127.0.0.1:$port" "$@"
	wait_healthy "$EXPORTER_URL" "$EXPORTER_PID" "$EXPORTER_LOG" exporter
}
# spawn_exporter LOG [ARGS...]: the exporter in the background, its output in LOG, without
# waiting for it; sets EXPORTER_PID and EXPORTER_LOG. Stopped and checked at exit at the latest.
spawn_exporter() {
	EXPORTER_LOG=$1
	shift
	"$EXPORTER" "$@" >"$EXPORTER_LOG" 2>&1 &
	EXPORTER_PID=$!
	EXPORTERS+=("$EXPORTER_PID $EXPORTER_LOG")
}

# sanitizer_clean NAME LOG: under ASan, ok when LOG holds no ASan, LSan or UBSan report.
sanitizer_clean() {
	[ -n "$SANITIZED" ] || return 0
	if grep -aqE 'Sanitizer|runtime error:' "$2"; then
		not_ok "$1: no sanitizer report" "$(grep -aE -m 5 'Sanitizer|runtime error:|#[0-9]+ ' "$2")"
	else
		ok "$1: no sanitizer report"
	fi
}
# exporter_stopped PID RC: under ASan, the exporter PID (spawn_exporter), reaped with status RC,
# exited 0 (a leak or a sanitizer error at teardown makes it exit non-zero) and its log holds no
# report. RC 127: the test reaped it itself; its log still tells.
exporter_stopped() {
	local i log
	for i in "${!EXPORTERS[@]}"; do
		[ "${EXPORTERS[i]%% *}" = "$1" ] || continue
		log=${EXPORTERS[i]#* }
		unset 'EXPORTERS[i]'
		[ -n "$SANITIZED" ] || return 0
		if [ "$2" != 0 ] && [ "$2" != 127 ]; then
			not_ok "exporter $1 (${log##*/}): exit status 0" "it exited $2"
		fi
		sanitizer_clean "exporter $1 (${log##*/})" "$log"
	done
}

# wait_healthy URL PID LOG WHAT: up to 5 s for URL/healthz while PID lives; else show LOG.
wait_healthy() {
	# Up to 20 s: loading the connections programs with handshake timing and the netns label
	# takes the verifier about 3 s here, more on a machine busy with the other tests.
	for _ in $(seq 400); do
		curl -sf "$1/healthz" >/dev/null 2>&1 && return 0
		kill -0 "$2" 2>/dev/null || break
		sleep 0.05
	done
	echo "$4 did not start:" >&2
	cat "$3" >&2
	return 1
}

# metrics [URL [CURL ARGS...]]: one /metrics response of URL (default $EXPORTER_URL) on stdout.
# A failed scrape is a not ok (on stderr: callers read stdout), never an empty scrape that
# sums or deltas would read as zeros.
metrics() {
	local url=${1:-$EXPORTER_URL} rc
	shift $(($# > 0))
	# Into a file first: a reader that stops early (grep -q) must not turn into curl's write error.
	local body
	body=$(mktemp) || return 1
	curl -sf -m 10 -o "$body" "$@" "$url/metrics"
	rc=$?
	[ "$rc" -eq 0 ] || not_ok "scrape of $url/metrics" "curl exit status $rc" >&2
	cat "$body" 2>/dev/null
	rm -f "$body"
	return "$rc"
}
# scrape_sum REGEX: sum of the values of samples whose "name{labels}" part matches REGEX.
scrape_sum() {
	metrics | awk -v re="$1" '
		/^#/ { next }
		{ v = $NF; $NF = ""; sub(/ +$/, ""); if ($0 ~ re) s += v }
		END { printf "%d\n", s }'
}

# scrape FILE [URL]: one /metrics response into FILE (a failed scrape is a not ok).
scrape() { metrics "${2:-}" >"$1"; }

# fsum FILE REGEX: like scrape_sum, on a saved scrape (several sums from one consistent read).
fsum() {
	RE=$2 awk '
		BEGIN { re = ENVIRON["RE"] }
		/^#/ { next }
		{ v = $NF; $NF = ""; sub(/ +$/, ""); if ($0 ~ re) s += v }
		END { printf "%.0f\n", s }' "$1"
}
# delta FILE_BEFORE FILE_AFTER REGEX
delta() { echo $(($(fsum "$2" "$3") - $(fsum "$1" "$3"))); }

# promtool_ok NAME FILE: promtool check metrics exits 0 on the scrape in FILE.
promtool_ok() {
	local out rc
	if [ ! -s "$2" ]; then
		not_ok "$1" "empty scrape"
		return
	fi
	out=$(promtool check metrics <"$2" 2>&1)
	rc=$?
	if [ "$rc" -eq 0 ]; then ok "$1"; else not_ok "$1" "promtool exit $rc: $out"; fi
}

# ge NAME ACTUAL MIN / le NAME ACTUAL MAX / lt NAME ACTUAL BOUND / gt NAME ACTUAL BOUND
ge() { if [ "$2" -ge "$3" ]; then ok "$1 ($2 >= $3)"; else not_ok "$1" "$2 < $3"; fi; }
le() { if [ "$2" -le "$3" ]; then ok "$1 ($2 <= $3)"; else not_ok "$1" "$2 > $3"; fi; }
gt() { if [ "$2" -gt "$3" ]; then ok "$1 ($2 > $3)"; else not_ok "$1" "$2 <= $3"; fi; }
lt() { if [ "$2" -lt "$3" ]; then ok "$1 ($2 < $3)"; else not_ok "$1" "$2 >= $3"; fi; }

# netns_add NAME: a fresh network namespace removed at exit.
netns_add() {
	ip netns add "$1" && on_exit "ip netns del $1"
	ip -n "$1" link set lo up
}
netns_inode() { ip netns exec "$1" stat -L -c %i /proc/self/ns/net; }

# veth_pair NS_A NS_B: A=10.99.0.1/fd99::1, B=10.99.0.2/fd99::2 on a veth pair.
veth_pair() {
	ip link add "va$$" netns "$1" type veth peer name "vb$$" netns "$2" || return 1
	ip -n "$1" addr add 10.99.0.1/24 dev "va$$"
	ip -n "$2" addr add 10.99.0.2/24 dev "vb$$"
	ip -n "$1" addr add fd99::1/64 dev "va$$" nodad
	ip -n "$2" addr add fd99::2/64 dev "vb$$" nodad
	ip -n "$1" link set "va$$" up
	ip -n "$2" link set "vb$$" up
}

# netns_client_server PREFIX: namespaces NS_C=PREFIX-c$$ (10.99.0.1) and NS_S=PREFIX-s$$
# (10.99.0.2) joined by veth_pair, their inodes in INO_C and INO_S; skips the script if it cannot.
netns_client_server() {
	NS_C=$1-c$$ NS_S=$1-s$$
	netns_add "$NS_C" && netns_add "$NS_S" || skip_all "cannot create network namespaces"
	veth_pair "$NS_C" "$NS_S" || skip_all "cannot create a veth pair"
	INO_C=$(netns_inode "$NS_C") INO_S=$(netns_inode "$NS_S")
}

# yaml2json < YAML: every document of a YAML stream, as one JSON array (needs YAML::XS).
yaml2json() {
	perl -MYAML::XS -MJSON::PP -e '$YAML::XS::Boolean = "JSON::PP"; local $/;
		my @d = grep { defined } YAML::XS::Load(<STDIN>);
		print JSON::PP->new->canonical->encode(\@d), "\n"'
}

# stop_exporter [PID]: stop the exporter (default $EXPORTER_PID) now, its BPF programs detach;
# under ASan its exit status and log are checked (exporter_stopped).
stop_exporter() {
	local pid=${1:-$EXPORTER_PID} stat ppid

	# Only while it is our child: a PID the test reaped itself may be someone else's by now.
	stat=$(cat "/proc/$pid/stat" 2>/dev/null)
	read -r _ ppid _ <<<"${stat##*) }"
	[ "$ppid" = $$ ] && kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	exporter_stopped "$pid" $?
}

# For the tests that run tests/tools/httpabuse ($ABUSE) and read its phase lines.
# wait_line FILE WORD: wait up to 20 s for a line starting with WORD.
wait_line() { wait_until 20 grep -qs "^$2 " "$1"; }
# field FILE PHASE KEY: value of KEY=... on the line of FILE that starts with PHASE.
field() {
	awk -v p="$2" -v k="$3" '$1 == p { for (i = 2; i <= NF; i++)
		if (index($i, k "=") == 1) print substr($i, length(k) + 2) }' "$1"
}
# attack OUT ARGS...: run httpabuse ARGS in the background, output in OUT; sets ATTACK.
attack() {
	local out=$1
	shift
	"$ABUSE" "$@" >"$out" 2>&1 &
	ATTACK=$!
	on_exit "kill $ATTACK"
}

# For the tests of the pod source.
# fake_api LOG ARGS...: tests/tools/fake_apiserver ARGS (PORT CERT KEY PODLIST EVENTS MODE
# [TOKEN]) in the background, its output in LOG, stopped at exit; waits for it to listen.
fake_api() {
	local log=$1 pid
	shift
	"$BUILD/tests/fake_apiserver" "$@" >"$log" 2>&1 &
	pid=$!
	on_exit "kill $pid"
	for _ in $(seq 100); do
		grep -qs listening "$log" && return 0
		sleep 0.05
	done
	cat "$log" >&2
	return 1
}
# wait_for REGEX MIN [SECONDS]: until the sum of matching samples reaches MIN (up to 10 s).
wait_for() { wait_until "${3:-10}" sum_ge "$1" "$2"; }

# Scripts run side by side (tests/run.sh): what they share on the host.
#
# bpf_stats_on: kernel.bpf_stats_enabled = 1 until this script exits. The switch is the host's:
# each script holding it leaves a file named after its PID in $BPF_STATS_HOLDERS; the first
# in saves the value it found, the last out restores it (a holder that died is pruned).
BPF_STATS_HOLDERS=/run/netstack-tests/bpf_stats
bpf_stats_on() {
	mkdir -p "$BPF_STATS_HOLDERS" || return 1
	on_exit bpf_stats_hold release
	bpf_stats_hold hold
}
bpf_stats_hold() { # hold|release
	(
		flock 9 && cd "$BPF_STATS_HOLDERS" || exit 1
		for f in [0-9]*; do
			[ -e "$f" ] && ! kill -0 "$f" 2>/dev/null && rm -f "$f"
		done
		if [ "$1" = hold ]; then
			compgen -G '[0-9]*' >/dev/null || cat /proc/sys/kernel/bpf_stats_enabled >saved
			: >"$$"
			echo 1 >/proc/sys/kernel/bpf_stats_enabled
		else
			rm -f "$$"
			compgen -G '[0-9]*' >/dev/null || [ ! -e saved ] ||
				{ cat saved >/proc/sys/kernel/bpf_stats_enabled && rm -f saved; }
		fi
	) 9>>"$BPF_STATS_HOLDERS.lock"
}

# Exact sums over every namespace (a series cap folds namespaces into __overflow__, so no netns
# filter keeps out what other scripts drop meanwhile): a second exporter, the netns label on
# and no cap in reach, sees the same drops. drop_watch_start: start it (WATCH_URL);
# drop_watch FILE: one scrape of it; foreign_drops BEFORE AFTER SELECTOR INODE...: the drops
# of netstack_skb_drops_total{SELECTOR,...} between the two scrapes in any namespace but the
# INODEs (its own overflow included). Scrape it before and after the window judged: a window
# with foreign drops is measured again.
drop_watch_start() {
	local pid=$EXPORTER_PID url=$EXPORTER_URL log=$EXPORTER_LOG
	printf '%s\n' '[collector.drops]' 'labels = reason,family,protocol,netns' \
		'max_series = 65536' >"$TMP/drop_watch.ini"
	start_exporter --config "$TMP/drop_watch.ini" || return 1
	WATCH_URL=$EXPORTER_URL
	EXPORTER_PID=$pid EXPORTER_URL=$url EXPORTER_LOG=$log
}
drop_watch() { metrics "$WATCH_URL" >"$1"; }
foreign_drops() {
	local before=$1 after=$2 sel=$3 re
	shift 3
	re="^netstack_skb_drops_total[{]$sel,netns=\"($(
		IFS='|'
		echo "$*"
	))\"[}]\$"
	echo $(($(fsum "$after" "^netstack_skb_drops_total[{]$sel,") - $(fsum "$before" "^netstack_skb_drops_total[{]$sel,") -
		$(delta "$before" "$after" "$re")))
}

# wait_grep FILE ERE [SECONDS]: wait up to SECONDS (10) for a line of FILE matching ERE.
wait_grep() { wait_until "${3:-10}" grep -Eqs -- "$2" "$1"; }
# wait_until SECONDS COMMAND...: run COMMAND every 0.1 s until it succeeds, for up to SECONDS
# (a fraction too).
wait_until() {
	local n
	n=$(awk -v s="$1" 'BEGIN { printf "%d", s * 10 }')
	shift
	for _ in $(seq "$n"); do
		"$@" && return 0
		sleep 0.1
	done
	"$@"
}
# sum_is / sum_ge REGEX N: the sum of matching samples is N / at least N now (for wait_until).
sum_is() { [ "$(scrape_sum "$1")" -eq "$2" ]; }
sum_ge() { [ "$(scrape_sum "$1")" -ge "$2" ]; }
# probe_until NS REGEX: a datagram at a time to a closed port on NS's loopback (a NO_SOCKET
# drop) until the series matching REGEX show one (10 s): how a test waits until the pod
# resolver has named NS, instead of guessing how late a busy machine runs its scan.
probe_until() {
	for _ in $(seq 100); do
		sum_ge "$2" 1 && return 0
		ip netns exec "$1" "$BUILD/tests/udpflood" 127.0.0.1 9 1 >/dev/null
		sleep 0.1
	done
	sum_ge "$2" 1
}

# notrack PORT...: loopback TCP to and from PORT bypasses conntrack (a table of this script's,
# removed at exit). A container runtime's NAT rules turn conntrack on for the whole host, and a
# connection flood fills its table: the kernel then drops SYNs (any script's), and what is
# measured is the table, not the exporter.
notrack() {
	local t=notrack$$ p
	if ! nft list table inet "$t" >/dev/null 2>&1; then
		nft add table inet "$t" || return 1
		on_exit "nft delete table inet $t"
		nft add chain inet "$t" out '{ type filter hook output priority raw; }'
		nft add chain inet "$t" pre '{ type filter hook prerouting priority raw; }'
	fi
	for p in "$@"; do
		nft add rule inet "$t" out tcp dport "$p" notrack &&
			nft add rule inet "$t" out tcp sport "$p" notrack &&
			nft add rule inet "$t" pre tcp dport "$p" notrack &&
			nft add rule inet "$t" pre tcp sport "$p" notrack || return 1
	done
}

# prom_start NAME TARGET [FLAGS...]: a real Prometheus scraping TARGET (host:port; or several,
# separated by spaces: one job, an instance each) every second (every $PROM_INTERVAL if set,
# e.g. 500ms; the scrape timeout is the same), its data and log under $TMP/NAME; sets PROM_URL
# and PROM_LOG, returns once a target is up (1 when none is within 20 s).
prom_start() {
	local name=$1 target port pid interval=${PROM_INTERVAL:-1s}
	target=$(sed "s/ \+/', '/g" <<<"$2")
	shift 2
	port=$(free_port)
	PROM_URL=http://127.0.0.1:$port PROM_LOG=$TMP/$name.log
	mkdir -p "$TMP/$name"
	cat >"$TMP/$name/prometheus.yml" <<EOC
global:
  scrape_interval: $interval
  scrape_timeout: $interval
  evaluation_interval: 1s
scrape_configs:
  - job_name: $name
    static_configs:
      - targets: ['$target']
EOC
	prometheus --config.file="$TMP/$name/prometheus.yml" --storage.tsdb.path="$TMP/$name/data" \
		--web.listen-address="127.0.0.1:$port" "$@" >"$PROM_LOG" 2>&1 &
	pid=$!
	on_exit "kill $pid; wait $pid"
	wait_until 20 eval 'prom_get /api/v1/targets | grep -q "\"health\":\"up\""'
}
# prom_get PATH [CURL ARGS...]: GET from the Prometheus HTTP API at $PROM_URL.
prom_get() { curl -s -m 5 -G "$PROM_URL$1" "${@:2}"; }
# prom_query PROMQL: the JSON answer of an instant query.
prom_query() { prom_get /api/v1/query --data-urlencode "query=$1"; }
# jqe FILTER [ARGS...]: jq -e without its output (for check).
jqe() { jq -e "$@" >/dev/null; }
