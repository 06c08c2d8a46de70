#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# make install into a DESTDIR: the files land where docs/layout.md says, the unit points at
# them, the installed config passes --check-config, and an edited config is not overwritten.
# schedule: parallel each
source "$(dirname "$0")/../lib.sh"

root=$TMP/root
# -o: install the binary the build made, never build it again (after a commit the version
# header changes and make would rebuild all of $BUILD, the ASan build without its flags).
REUSE=(-o "$BUILD/netstack_exporter")
make -s install "${REUSE[@]}" DESTDIR="$root" PREFIX=/usr BUILD="$BUILD" >"$TMP/install.log" 2>&1 ||
	not_ok "make install" "$(cat "$TMP/install.log")"
for f in usr/bin/netstack_exporter etc/netstack_exporter.ini \
	usr/lib/systemd/system/netstack_exporter.service \
	usr/lib/systemd/system/netstack_exporter.service.d/syscall-filter.conf \
	usr/share/doc/netstack_exporter/README.md; do
	check "installed $f" test -s "$root/$f"
done
# The README's links into docs/ resolve in the installed copy.
missing=$(cd "$root/usr/share/doc/netstack_exporter" &&
	grep -o '](docs/[^)#]*' README.md | cut -c3- | sort -u | while read -r d; do
		[ -s "$d" ] || echo "$d"
	done)
check_eq "installed the docs the README links to" "" "$missing"
check "installed binary runs" "$root/usr/bin/netstack_exporter" --version
check "installed config is valid" "$root/usr/bin/netstack_exporter" --check-config \
	--config "$root/etc/netstack_exporter.ini"
unit=$root/usr/lib/systemd/system/netstack_exporter.service
check_eq "unit runs the installed binary with the installed config" \
	"ExecStart=/usr/bin/netstack_exporter --config /etc/netstack_exporter.ini" \
	"$(grep '^ExecStart=' "$unit")"
check "no placeholder left in the unit" bash -c "! grep -q @ '$unit'"

echo '; edited' >>"$root/etc/netstack_exporter.ini"
make -s install "${REUSE[@]}" DESTDIR="$root" PREFIX=/usr BUILD="$BUILD" >/dev/null 2>&1
check "reinstall keeps an edited config" grep -q '^; edited$' "$root/etc/netstack_exporter.ini"
make -s uninstall DESTDIR="$root" PREFIX=/usr BUILD="$BUILD" >/dev/null 2>&1
check "uninstall removes the binary" test ! -e "$root/usr/bin/netstack_exporter"
finish
