#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Debian 13 (trixie): the exporter built with trixie's compilers and libraries (gcc 14,
# clang 19, libbpf 1.5.0, libmicrohttpd 1.0.1) and run on this machine's kernel.
#   root:  a trixie root with scripts/deps.sh's build packages, made once per package set with
#          mmdebstrap and reused by every clone (tests/container/lib.sh, ctr_root);
#   build: make run's build (make deps all) and the unit tests, in that root (chroot, the clone
#          at /mnt, the root itself read-only), then the unit tests run there;
#   run:   that exporter, still in the root (chroot in a mount namespace of its own, the
#          host's network, /sys, /proc and /tmp), under tests/integration/drops.sh (every drop
#          counted exactly against nftables' counters) and seccomp_reload.sh (every collector
#          up, every reload path under its own seccomp filter, no call denied).
# Usage: tests/container/trixie.sh [root|build|run] (default: all three; make test runs them as
# three jobs: the root from the start, the build beside the others, the run as one of the
# integration scripts).
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/container/lib.sh
source tests/container/lib.sh
SUITE=$CTR_SUITE
PHASES=${1:-root build run}
[ "$(id -u)" -eq 0 ] || skip_all "needs root"
command -v mmdebstrap >/dev/null || skip_all "mmdebstrap not installed (scripts/deps.sh test)"
command -v unshare >/dev/null || skip_all "needs unshare"
# The build directory inside the clone: the root sees the clone at /mnt.
TB=$(realpath -m --relative-to=. "$BUILD")/$SUITE
case $TB in ../* | /*) skip_all "BUILD ($BUILD) must be inside the checkout" ;; esac

T0=$(date +%s)
ROOT=$(ctr_build_root 2>"$TMP/root.log")
if [ -z "$ROOT" ]; then
	not_ok "a $SUITE root from mmdebstrap" "$(tail -n 20 "$TMP/root.log")"
	finish
fi
case $PHASES in *root*)
	ok "$SUITE root ($(grep -o '^# \(made\|reused\).*' "$TMP/root.log" | tail -n 1 | cut -c3-), $(($(date +%s) - T0)) s)"
	;;
esac

# in_root COMMAND...: COMMAND in the root, from the clone (/mnt), in a mount namespace of its
# own: the root read-only, the host's /proc, /sys (with tracefs), /dev and /tmp.
in_root() {
	unshare -m --propagation private sh -c '
		R=$0 SRC=$1
		shift
		mount --bind "$R" "$R" && mount -o remount,bind,ro "$R" &&
			mount -t proc proc "$R/proc" && mount --rbind /sys "$R/sys" &&
			mount --rbind /dev "$R/dev" && mount --rbind /tmp "$R/tmp" &&
			mount --bind "$SRC" "$R/mnt" || exit 125
		[ -e "$R/sys/kernel/tracing/events" ] ||
			mount -t tracefs tracefs "$R/sys/kernel/tracing" 2>/dev/null
		exec chroot "$R" /usr/bin/env PATH=/usr/sbin:/usr/bin:/sbin:/bin \
			sh -c "cd /mnt && exec \"\$@\"" sh "$@"' "$ROOT" "$PWD" "$@"
}
# versions: what the root builds with
versions() {
	# shellcheck disable=SC2016 # the root's shell expands them
	in_root sh -c 'printf "gcc %s, clang %s, libbpf %s, libmicrohttpd %s" "$(gcc -dumpfullversion)" \
		"$(clang -dumpversion)" "$(dpkg-query -W -f "\${Version}" libbpf-dev)" \
		"$(dpkg-query -W -f "\${Version}" libmicrohttpd-dev)"'
}

case $PHASES in *build*)
	t0=$(date +%s)
	if in_root make --no-print-directory -s -j"$(nproc)" BUILD="$TB" deps all unit \
		>"$TMP/build.log" 2>&1; then
		ok "make deps all unit in $SUITE ($(versions); $(($(date +%s) - t0)) s)"
	else
		not_ok "make deps all unit in $SUITE" "$(tail -n 30 "$TMP/build.log")"
		finish
	fi
	for t in "$TB"/tests/test_*; do
		[ -x "$t" ] && [ "${t%.d}" = "$t" ] || continue
		in_root "$t" >"$TMP/unit.log" 2>&1
		rc=$?
		n=$(grep -c '^ok - ' "$TMP/unit.log")
		if [ "$rc" -eq 0 ] && ! grep -q '^not ok' "$TMP/unit.log"; then
			ok "$SUITE: unit ${t##*/} ($n passed)"
		else
			not_ok "$SUITE: unit ${t##*/} (exit $rc)" "$(grep -v '^ok - ' "$TMP/unit.log" | tail -n 20)"
		fi
	done
	;;
esac

case $PHASES in *run*)
	for tool in udpflood seccomp_deny fake_apiserver; do
		[ -x "$BUILD/tests/$tool" ] || skip_all "$BUILD/tests/$tool not built (make tools)"
	done
	[ -x "$TB/netstack_exporter" ] || skip_all "$TB/netstack_exporter not built ($0 build)"
	# A build directory for the integration scripts: the root's exporter behind a wrapper that
	# execs it in the root (same PID), this clone's test tools.
	RUN=$TMP/run
	mkdir -p "$RUN"
	ln -s "$PWD/$BUILD/tests" "$RUN/tests"
	{
		echo '#!/usr/bin/env bash'
		echo "# $SUITE's build of the exporter, run in its root (tests/container/trixie.sh)."
		declare -f in_root | sed 's/^\( *\)unshare -m/\1exec unshare -m/'
		echo "ROOT=$ROOT"
		echo "cd $PWD || exit 1"
		echo "in_root $TB/netstack_exporter \"\$@\""
	} >"$RUN/netstack_exporter"
	chmod +x "$RUN/netstack_exporter"
	# The wrapper's PID is the exporter's (every step on the way is an exec): the scripts
	# signal it, stop it and look for its PID in the kernel's records.
	"$RUN/netstack_exporter" --config /dev/null --check >"$TMP/check.log" 2>&1
	check_eq "$SUITE: the wrapped exporter runs (--check)" 0 "$?"
	EXPORTER=$RUN/netstack_exporter
	if start_exporter --config /dev/null; then
		check_eq "$SUITE: the wrapper's PID is the exporter's" netstack_export \
			"$(cat "/proc/$EXPORTER_PID/comm")"
		stop_exporter
	fi
	for t in drops seccomp_reload; do
		t0=$(date +%s)
		BUILD=$RUN bash "tests/integration/$t.sh" >"$TMP/$t.log" 2>&1
		rc=$?
		sed -n 's/^\(not ok\|ok\) - /\1 - '"$SUITE"': '"$t"': /p; /^  /p; /^#/p' "$TMP/$t.log"
		if [ "$rc" -eq 77 ]; then
			echo "ok - $SUITE: $t # SKIP $(grep -m1 SKIPPED "$TMP/$t.log")"
		elif [ "$rc" -ne 0 ] && ! grep -q '^not ok' "$TMP/$t.log"; then
			not_ok "$SUITE: $t exited $rc" "$(tail -n 20 "$TMP/$t.log")"
		elif [ "$rc" -ne 0 ]; then
			FAILED=1
			: >"$TMP/not_ok"
		fi
		echo "# $SUITE: $t took $(($(date +%s) - t0)) s"
	done
	;;
esac
finish
