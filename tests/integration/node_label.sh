#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# [labels] node / --node: every sample carries node="...", set only when configured, the flag
# overriding the file; the output stays valid exposition.
# schedule: parallel each
source "$(dirname "$0")/../lib.sh"
require_root_bpf

samples_without() { metrics | grep -v '^#' | grep -vc "$1"; }

start_exporter || { not_ok "exporter starts"; finish; }
check_eq "no node label unless configured" 0 \
	"$(metrics | grep -v '^#' | grep -c 'node=')"
kill "$EXPORTER_PID"

printf '[labels]\nnode = from-file\n' >"$TMP/node.ini"
start_exporter --config "$TMP/node.ini" || { not_ok "exporter starts with [labels] node"; finish; }
check_eq "[labels] node: on every sample" 0 "$(samples_without 'node="from-file"')"
check "[labels] node: promtool check metrics" \
	bash -c "curl -sf '$EXPORTER_URL/metrics' | promtool check metrics"
check "[labels] node: OpenMetrics ends with # EOF" bash -c \
	"curl -sf -H 'Accept: application/openmetrics-text;version=1.0.0' '$EXPORTER_URL/metrics' | tail -n1 | grep -qx '# EOF'"
kill "$EXPORTER_PID"

start_exporter --config "$TMP/node.ini" --node 'from-flag' || { not_ok "exporter starts"; finish; }
check_eq "--node overrides the file" 0 "$(samples_without 'node="from-flag"')"
finish
