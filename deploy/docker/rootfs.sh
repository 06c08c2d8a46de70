#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Usage: rootfs.sh DIR BINARY CC BASE [SONAME...]
# Fill DIR with what the runtime image adds to debian:13-slim: BINARY at /usr/bin, and the
# installed Debian packages holding the shared libraries it needs (its NEEDED entries, then
# theirs, plus SONAME: libraries loaded at run time), for CC's architecture (dpkg multiarch).
# Run in the build stage, so the runtime stage only copies DIR and no command runs for the
# target architecture (no emulation). The packages named in the file BASE (the base image's) are
# left to it; each package's dpkg record goes to DIR/var/lib/dpkg/status.d/, where
# image scanners look for packages installed without dpkg.
set -eu
dir=$1 bin=$2 cc=$3 base=$4
shift 4
ma=$($cc -print-multiarch)

needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }

todo="$(needed "$bin") $*" seen='' pkgs=
while [ -n "${todo# }" ]; do
	# shellcheck disable=SC2086
	set -- $todo
	so=$1
	shift
	todo="$*"
	case " $seen " in *" $so "*) continue ;; esac
	seen="$seen $so"
	pkg=$(dpkg -S "*/$ma/$so" 2>/dev/null | sed -n 's|^\([^ ,]*\): /.*|\1|p' | head -n 1)
	[ -n "$pkg" ] || { echo "rootfs.sh: no installed package holds $ma/$so" >&2; exit 1; }
	case " $pkgs " in *" $pkg "*) ;; *) pkgs="$pkgs $pkg" ;; esac
	lib=$(dpkg -L "$pkg" | grep "/$ma/$so\$" | head -n 1)
	todo="$todo $(needed "$lib")"
done

install -D -m 0755 "$bin" "$dir/usr/bin/$(basename "$bin")"
mkdir -p "$dir/var/lib/dpkg/status.d"
for pkg in $pkgs; do
	grep -qx "${pkg%%:*}" "$base" && continue
	echo "rootfs.sh: $pkg"
	dpkg -s "$pkg" >"$dir/var/lib/dpkg/status.d/${pkg%%:*}"
	dpkg -L "$pkg" | while read -r f; do
		[ -d "$f" ] && continue
		case $f in
		/usr/share/doc/*/copyright) ;;
		/usr/share/doc/* | /usr/share/man/* | /usr/share/lintian/* | /usr/share/locale/*) continue ;;
		esac
		# Debian merges /lib into /usr/lib: copying a /lib directory over the base's
		# /lib symlink would break it.
		case $f in /lib/* | /lib64/* | /bin/* | /sbin/*) to=/usr$f ;; *) to=$f ;; esac
		mkdir -p "$dir$(dirname "$to")"
		cp -a "$f" "$dir$to"
	done
done
