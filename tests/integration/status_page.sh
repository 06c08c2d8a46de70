#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The landing page as a browser renders it: headless Chromium loads / and the rendered DOM is
# checked against drops this test causes (an nftables rule in a fresh namespace drops UDP).
#
#   1. The drops table lists NETFILTER_DROP with at least the nft rule's own count.
#   2. A second view shows a rate for it (> 0) with a non-empty SVG bar.
#   3. With every drop sampled, the latest events show the test's flow (its netns, 127.0.0.1 to
#      the nft-dropped port, NETFILTER_DROP at an nftables function) and the top drop
#      locations list NETFILTER_DROP.
#   4. The page needs nothing from outside: no script, no external asset.
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
require_root_bpf
UDPFLOOD=$BUILD/tests/udpflood
[ -x "$UDPFLOOD" ] || skip_all "$UDPFLOOD not built (make $UDPFLOOD)"
for tool in nft curl chromium; do
	command -v "$tool" >/dev/null || skip_all "needs $tool"
done

NS=nsstatus$$
PORT=5566
N=300

# render URL OUT: the DOM after Chromium has loaded and laid out the page.
render() {
	timeout 60 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--user-data-dir="$TMP/chromium" --dump-dom "$1" >"$2" 2>"$TMP/chromium.log"
}
# drop_row FILE: "total rate bar-width" of the NETFILTER_DROP row in a rendered page
drop_row() {
	grep -o '<tr><td>NETFILTER_DROP</td>.*</tr>' "$1" | head -1 |
		sed -E 's|<td class="num">([^<]*)</td>|\n\1\n|g; s|<rect width="([0-9]+)"|\n@\1\n|g' |
		awk '/^[0-9.]+$/ { v[n++] = $1 } /^&ndash;$|^–$/ { v[n++] = "-" } /^@/ { w = substr($1, 2) }
			END { print v[0], v[1], w }'
}
nft_dropped() {
	ip netns exec "$NS" nft list counter inet nsstatus dropped | awk '$1 == "packets" { print $2 }'
}
flood() { ip netns exec "$NS" "$UDPFLOOD" 127.0.0.1 "$PORT" "$1" >/dev/null; }

netns_add "$NS"
ip netns exec "$NS" nft -f - <<EOF
table inet nsstatus {
	counter dropped { }
	chain input {
		type filter hook input priority filter; policy accept;
		udp dport $PORT counter name "dropped" drop
	}
}
EOF
printf '[sampling]\ndrop_sample_rate = 1\n' >"$TMP/sampling.ini"
start_exporter --config "$TMP/sampling.ini"

flood "$N"
render "$EXPORTER_URL/" "$TMP/page1.html"
check "Chromium rendered the page" grep -q '<h2>Drops by reason</h2>' "$TMP/page1.html"
read -r total1 _ _ <<<"$(drop_row "$TMP/page1.html")"
dropped=$(nft_dropped)
ge "NETFILTER_DROP total on the page >= nft counter" "${total1:-0}" "$dropped"
ge "nft dropped what was sent" "$dropped" "$N"

sleep 1.2
flood "$N"
render "$EXPORTER_URL/" "$TMP/page2.html"
read -r total2 rate2 width2 <<<"$(drop_row "$TMP/page2.html")"
ge "second view: total grew by the second flood" "${total2:-0}" $((${total1:-0} + N))
check "second view: NETFILTER_DROP has a rate > 0 ($rate2/s)" \
	awk -v r="${rate2:--}" 'BEGIN { exit !(r != "-" && r + 0 > 0) }'
gt "second view: its rate bar is drawn" "${width2:-0}" 0

inode=$(netns_inode "$NS")
check "latest events show the dropped flow of netns $inode" grep -Eq \
	"<td>udp</td><td>$inode</td><td>127\\.0\\.0\\.1:[0-9]+</td><td>127\\.0\\.0\\.1:$PORT</td><td>NETFILTER_DROP at nft_[a-z_]+" \
	"$TMP/page2.html"
check "top drop locations list NETFILTER_DROP" bash -c \
	"sed -n '/class=\"top-drops\"/,/<\\/table>/p' '$TMP/page2.html' | grep -q NETFILTER_DROP"
check "no scripts on the page" bash -c "! grep -qi '<script' '$TMP/page2.html'"
check "no external assets" bash -c "! grep -Eqi '(src|href)=\"(https?:)?//' '$TMP/page2.html'"
finish
