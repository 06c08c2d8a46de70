#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The container image, built for real: make image (deploy/docker/Dockerfile as shipped) with
# podman, on base images made here from Debian's archive (tests/container/lib.sh), for this
# machine's architecture and for the other one (amd64, arm64) without emulation. Checks each
# image's binary (architecture, the commit it was built from, its libraries all in the image),
# that it holds no compiler, headers, apt lists or package caches, its size against the budget
# below, its OCI labels and its user (docs/security.md).
source "$(dirname "$0")/../lib.sh"
source tests/container/lib.sh
ctr_env || exit $?

# What the image may add to debian:13-slim: the binary and the libraries it needs (measured
# 16 MB for amd64, 17 MB for arm64; docs/deploy.md).
ADD_BUDGET_MB=20
HOST=$(dpkg --print-architecture)
case $HOST in amd64) OTHER=arm64 ;; arm64) OTHER=amd64 ;; *) skip_all "no cross build on $HOST" ;; esac
VERSION=$(sed -n 's/^VERSION ?= //p' Makefile)
COMMIT=$(git rev-parse --short=12 HEAD)
SOURCE=$(git remote get-url origin 2>/dev/null) || SOURCE=unknown
declare -A ELF_MACHINE=([amd64]="Advanced Micro Devices X86-64" [arm64]=AArch64)
declare -A ELF_MAGIC=([amd64]=3e00 [arm64]=b700)

# No emulation: no binfmt_misc handler would run the other architecture's programs (its
# e_machine in the handler's magic), so anything its build runs must be native.
mkdir "$TMP/binfmt"
if mount -t binfmt_misc binfmt_misc "$TMP/binfmt" 2>/dev/null; then
	on_exit umount "$TMP/binfmt"
	handlers=$(grep -l "magic .*${ELF_MAGIC[$OTHER]}" "$TMP"/binfmt/* 2>/dev/null |
		xargs -r grep -lx enabled | xargs -r -n1 basename | paste -sd' ')
	check_eq "no binfmt_misc handler for $OTHER binaries" "" "$handlers"
else
	ok "no binfmt_misc handler for $OTHER binaries (binfmt_misc cannot be mounted)"
fi

# Both bases made at once in the background; this machine's image is built as soon as its
# own base is there, the other architecture's base meanwhile.
BASES_T0=$(date +%s)
{
	ctr_bases "$OTHER"
	rc=$?
	date +%s >"$TMP/bases.end"
	exit $rc
} >>"$TMP/bases.log" 2>&1 &
BASES=$!
bases_made() {
	if wait "$BASES"; then
		ok "base images ($HOST, $OTHER) from mmdebstrap ($(($(cat "$TMP/bases.end") - BASES_T0)) s)"
		grep -E '^# (made|mmdebstrap)' "$TMP/bases.log"
	else
		not_ok "base images from mmdebstrap" "$(tail -n 20 "$TMP/bases.log")"
		finish
	fi
}
for arch in "$HOST" "$OTHER"; do
	img=localhost/netstack-exporter:test-$arch
	if [ "$arch" = "$HOST" ]; then
		# Waits for this machine's base (its lock) only.
		ctr_bases >>"$TMP/bases.log" 2>&1 || bases_made
	else
		bases_made
	fi
	t0=$(date +%s)
	if ! ctr_image "$arch" "$img" >"$TMP/build-$arch.log" 2>&1; then
		not_ok "make image PLATFORM=linux/$arch" "$(tail -n 30 "$TMP/build-$arch.log")"
		continue
	fi
	ok "make image PLATFORM=linux/$arch builds ($(($(date +%s) - t0)) s)"
	check_eq "$arch: the image's architecture" "$arch" \
		"$(podman image inspect -f '{{.Architecture}}' "$img")"

	bin=$TMP/netstack_exporter.$arch
	check "$arch: the binary copied out of the image" ctr_binary "$img" "$bin"
	check_eq "$arch: the binary is an ELF for $arch" "${ELF_MACHINE[$arch]}" \
		"$(readelf -h "$bin" 2>&1 | sed -n 's/^ *Machine: *//p')"
	if [ "$arch" = "$HOST" ]; then
		check_eq "$arch: --version in the image names the commit" \
			"netstack_exporter $VERSION (commit $COMMIT)" \
			"$(podman run --rm "$img" --version 2>&1)"
	else
		# Not run: it would need emulation. Its version string holds the commit.
		check "$arch: the binary names the commit ($COMMIT)" grep -qaF "$COMMIT" "$bin"
	fi

	for l in source:"$SOURCE" version:"$VERSION" revision:"$COMMIT" licenses:GPL-2.0-only \
		title:netstack_exporter; do
		check_eq "$arch: label org.opencontainers.image.${l%%:*}" "${l#*:}" \
			"$(podman image inspect -f "{{index .Labels \"org.opencontainers.image.${l%%:*}\"}}" "$img")"
	done

	# docs/security.md names the image's user; [security] user = nobody needs nobody there.
	doc_uid=$(sed -n 's/.*The container image runs as uid \([0-9]*\).*/\1/p' docs/security.md)
	check_eq "$arch: the image's user is docs/security.md's (uid ${doc_uid:-?})" "$doc_uid:$doc_uid" \
		"$(podman image inspect -f '{{.Config.User}}' "$img")"

	root=$(podman image mount "$img") || { not_ok "$arch: podman image mount"; continue; }
	on_exit podman image unmount "$img"
	check "$arch: /etc/passwd has nobody ([security] user = nobody)" \
		grep -q '^nobody:[^:]*:65534:' "$root/etc/passwd"
	ma=$(readelf -h "$bin" | grep -q AArch64 && echo aarch64-linux-gnu || echo x86_64-linux-gnu)
	missing=
	for so in $(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p') libcurl.so.4; do
		# The loader's default paths; the base of a foreign architecture is not /usr-merged.
		[ -e "$root/usr/lib/$ma/$so" ] || [ -e "$root/lib/$ma/$so" ] || missing="$missing $so"
	done
	check_eq "$arch: every library the binary needs, and libcurl, is in the image" "" "${missing# }"
	found=$(cd "$root" && ls -d usr/bin/*gcc* usr/bin/cc usr/bin/clang* usr/bin/ld usr/lib/gcc \
		usr/include/* var/lib/apt/lists/*_Packages* var/cache/apt/*.bin \
		var/cache/apt/archives/*.deb 2>/dev/null | head -n 5 | paste -sd' ')
	check_eq "$arch: no compiler, headers, apt lists or package caches" "" "$found"
	# Against the base of its own architecture (a foreign one is only unpacked, so larger).
	base_mb=$(($(podman image inspect -f '{{.Size}}' "localhost/netstack-base-$arch") / 1000000))
	size_mb=$(($(podman image inspect -f '{{.Size}}' "$img") / 1000000))
	le "$arch: size ($size_mb MB) over the ${base_mb} MB base, in MB, within $ADD_BUDGET_MB" \
		$((size_mb - base_mb)) "$ADD_BUDGET_MB"
done
finish
