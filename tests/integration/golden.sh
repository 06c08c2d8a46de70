#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The /metrics contract: families, HELP, TYPE and label names on built-in defaults match
# tests/fixtures/metrics.golden, with values and volatile label values masked. A change to
# a metric name, type or label other projects rely on (deploy/, dashboards) fails here.
# Regenerate after an intended change: UPDATE_GOLDEN=1 bash tests/integration/golden.sh
# schedule: parallel once
# why: the /metrics contract (names, types, labels) is the same in every build flavour
source "$(dirname "$0")/../lib.sh"
require_root_bpf

golden=tests/fixtures/metrics.golden
# The fixture is a Linux 6.17+ kernel's (6.18). What this kernel lacks, asked of its BTF, takes
# out of it what the exporter then does not export or load: without bpf_rdonly_cast (6.2) the
# drops program is count_drop_compat; without tcp_retransmit_skb's err (6.17) the retransmit
# program is count_retransmit_noerr and there is no failures family; without tcp_send_reset's
# reason (6.10) the sent-reset program is count_sent_noreason.
expected() {
	local sed=()
	kernel_has_kfunc bpf_rdonly_cast ||
		sed+=(-e 's/program="count_drop"/program="count_drop_compat"/')
	[ "$(tracepoint_nargs tcp_retransmit_skb)" -ge 3 ] ||
		sed+=(-e '/netstack_tcp_retransmit_failures_total/d'
			-e 's/program="count_retransmit"/program="count_retransmit_noerr"/')
	[ "$(tracepoint_nargs tcp_send_reset)" -ge 3 ] ||
		sed+=(-e 's/program="count_sent"/program="count_sent_noreason"/')
	sed "${sed[@]}" -e '' "$golden"
}
# Keep one sample per family and label-name set; mask every value and the label values
# that depend on the machine, build or traffic.
mask() {
	sed -E -e '/^#/!s/ [^ ]+$/ X/' \
		-e 's/(version|commit|kernel|reason|family|protocol|kind|state)="[^"]*"/\1="X"/g' |
		awk '/^#/ || !seen[$0]++' |
		# Retransmit samples exist only if this host happened to retransmit: keep the family.
		grep -v '^netstack_tcp_retransmits_total{'
}

# The bpf_program families exist only while bpf_stats is on: pin it on for the comparison.
bpf_stats_on || { not_ok "kernel.bpf_stats_enabled = 1"; finish; }

start_exporter || { not_ok "exporter starts"; finish; }
# Make sure at least one drop series exists: a datagram to a closed port.
"$BUILD/tests/udpflood" 127.0.0.1 9 3 >/dev/null
# And a reset sent and received (a full socket's, seen on every kernel): a connect to a port
# with a listener that closes with the data unread (TCP_ABORT_ON_CLOSE).
python3 tests/tools/tcpreset.py abort 4 >/dev/null
metrics | mask >"$TMP/got"
if [ "${UPDATE_GOLDEN:-}" = 1 ]; then
	expected | cmp -s - "$golden" || skip_all "UPDATE_GOLDEN needs a kernel with every feature"
	cp "$TMP/got" "$golden"
	echo "updated $golden"
fi
expected >"$TMP/want"
if diff -u "$TMP/want" "$TMP/got" >"$TMP/diff"; then
	ok "/metrics matches $golden (as this kernel's features shape it)"
else
	not_ok "/metrics matches $golden" "$(cat "$TMP/diff")"
fi
finish
