# SPDX-License-Identifier: GPL-2.0-only
# Sourced by the guests' scripts (guest.sh, guest-systemd.sh); needs PORT.
# http_get PATH FILE: GET from the exporter on $PORT over bash's /dev/tcp, the body to FILE;
# fails unless the answer is 200 (as curl -f). Under TCG curl takes over a second to start, cat
# a fifth. HTTP/1.0: the body ends when the exporter closes, and it is read to the end (a
# socket closed with unread data would send a reset, which the resets checks count).
http_get() {
	local fd line ok=1
	{ exec {fd}<>"/dev/tcp/127.0.0.1/$PORT"; } 2>/dev/null || return 1
	printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1:%s\r\n\r\n' "$1" "$PORT" >&"$fd"
	if read -r -t 20 line <&"$fd"; then
		[[ $line =~ ^HTTP/1\.[01]\ 200[[:space:]] ]] && ok=0
		while read -r -t 20 line <&"$fd" && [ -n "${line%$'\r'}" ]; do :; done
		cat <&"$fd" >"$2"
	fi
	exec {fd}>&-
	return $ok
}
