# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
# Sourced by tests/container/*.sh: podman with the project's own settings (containers.conf here,
# storage under $BUILD/container), the base images the Dockerfile names made from Debian's
# archive with mmdebstrap (no registry is reachable from the test machines), the image built
# with make image. Needs root, podman, runc and mmdebstrap (scripts/deps.sh test).

CTR_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CTR_BUILD=${BUILD:-build}
case $CTR_BUILD in /*) ;; *) CTR_BUILD=$CTR_ROOT/$CTR_BUILD ;; esac
CTR_DIR=$CTR_BUILD/container
# The Debian release the Dockerfile's FROM lines name (debian:12, debian:12-slim).
CTR_SUITE=bookworm
CTR_MIRRORS=("deb http://deb.debian.org/debian $CTR_SUITE main"
	"deb http://deb.debian.org/debian $CTR_SUITE-updates main"
	"deb http://deb.debian.org/debian-security $CTR_SUITE-security main")

# ctr_env: export CONTAINERS_CONF and CONTAINERS_STORAGE_CONF (storage under $CTR_DIR, its
# run state under /run); returns 77 when root or a tool is missing, 1 on a bad limit.
ctr_env() {
	local t conf=$CTR_ROOT/tests/container/containers.conf lim want
	[ "$(id -u)" -eq 0 ] || { echo "# needs root"; return 77; }
	for t in podman runc mmdebstrap; do
		command -v "$t" >/dev/null || { echo "# $t not installed (scripts/deps.sh test)"; return 77; }
	done
	# The file's limits must be within the hard ones, or every container fails to start.
	for lim in nofile:n nproc:u; do
		want=$(sed -n "s/^ *\"${lim%:*}=[0-9]*:\([0-9]*\)\".*/\1/p" "$conf")
		t=$(ulimit -H"${lim#*:}")
		if [ "$t" != unlimited ] && [ "$t" -lt "$want" ]; then
			echo "# $conf: ${lim%:*}=$want is over this shell's hard limit $t"
			return 1
		fi
	done
	mkdir -p "$CTR_DIR"
	export CONTAINERS_CONF=$conf
	export CONTAINERS_STORAGE_CONF=$CTR_DIR/storage.conf
	cat >"$CONTAINERS_STORAGE_CONF" <<-CONF
		# Written by tests/container/lib.sh.
		[storage]
		driver = "overlay"
		graphroot = "$CTR_DIR/storage"
		runroot = "/run/netstack_exporter-containers/$(printf %s "$CTR_DIR" | md5sum | cut -c1-12)"
	CONF
}

# ctr_base_tar ARCH: $CTR_DIR/base/$CTR_SUITE-ARCH.tar, made once. A minbase without docs,
# man pages and locales, like Debian's own debian:12-slim. A foreign architecture is only
# unpacked (mmdebstrap's extract variant: no maintainer script runs, so no emulation); it is
# only ever a runtime stage's base, which runs nothing at build time.
ctr_base_tar() {
	local arch=$1 tar=$CTR_DIR/base/$CTR_SUITE-$1.tar variant=minbase
	local -a opts=(--variant=minbase)
	[ -s "$tar" ] && { echo "$tar"; return 0; }
	mkdir -p "$CTR_DIR/base"
	if [ "$arch" != "$(dpkg --print-architecture)" ]; then
		variant=extract
		# What a minbase holds: the essential and the required packages, and apt.
		# shellcheck disable=SC2016 # $1 is mmdebstrap's, the root it makes.
		opts=(--variant=extract --include='?essential' --include='?priority(required)'
			--include=apt
			# base-passwd's maintainer script, which does not run here.
			--extract-hook='cp "$1/usr/share/base-passwd/passwd.master" "$1/etc/passwd"'
			--extract-hook='cp "$1/usr/share/base-passwd/group.master" "$1/etc/group"')
	fi
	echo "# making $tar ($variant)" >&2
	mmdebstrap --quiet --format=tar --arch="$arch" "${opts[@]}" \
		--dpkgopt='path-exclude=/usr/share/doc/*' \
		--dpkgopt='path-include=/usr/share/doc/*/copyright' \
		--dpkgopt='path-exclude=/usr/share/man/*' \
		--dpkgopt='path-exclude=/usr/share/info/*' \
		--dpkgopt='path-exclude=/usr/share/locale/*' \
		--dpkgopt='path-include=/usr/share/locale/locale.alias' \
		"$CTR_SUITE" "$tar.tmp" "${CTR_MIRRORS[@]}" >&2 || { rm -f "$tar.tmp"; return 1; }
	mv "$tar.tmp" "$tar"
	echo "$tar"
}

# ctr_bases ARCH...: debian:12 (the build stage's, the host's architecture) and debian:12-slim
# for each ARCH, imported once. Both names are manifest lists, as on a registry, so that
# --platform picks the right image from them.
ctr_bases() {
	local host arch tar name fresh=
	host=$(dpkg --print-architecture)
	for arch in "$host" "$@"; do
		podman image exists "localhost/netstack-base-$arch" && continue
		tar=$(ctr_base_tar "$arch") || return 1
		podman import --quiet --arch "$arch" --os linux --change 'CMD ["bash"]' "$tar" \
			"localhost/netstack-base-$arch" >/dev/null || return 1
		fresh=1
	done
	for name in debian:12 debian:12-slim; do
		# Made again only when a base changed: a new list would be a new base for the cache.
		if [ -n "$fresh" ] && podman manifest exists "$name"; then
			podman manifest rm "$name" >/dev/null || return 1
		fi
		podman manifest exists "$name" || podman manifest create "$name" >/dev/null || return 1
		for arch in "$host" "$@"; do
			[ "$name" = debian:12 ] && [ "$arch" != "$host" ] && continue
			podman manifest inspect "$name" | grep -q "\"architecture\": \"$arch\"" ||
				podman manifest add "$name" "containers-storage:localhost/netstack-base-$arch" \
					>/dev/null || return 1
		done
	done
}

# ctr_image ARCH TAG: make image for linux/ARCH, tagged TAG, with this podman environment.
ctr_image() {
	make -s -C "$CTR_ROOT" image ENGINE=podman PLATFORM="linux/$1" IMAGE="$2"
}

# ctr_binary IMAGE OUT: copy the image's /usr/bin/netstack_exporter to OUT, running nothing.
ctr_binary() {
	local c
	c=$(podman create --arch "$(podman image inspect -f '{{.Architecture}}' "$1")" "$1") ||
		return 1
	podman cp "$c:/usr/bin/netstack_exporter" "$2"
	local rc=$?
	podman rm -f "$c" >/dev/null
	return $rc
}

# ctr_teardown NAME...: remove these containers and images, if there.
ctr_teardown() {
	local n
	for n in "$@"; do
		podman rm -f --ignore "$n" >/dev/null 2>&1
		podman image exists "$n" && podman rmi -f "$n" >/dev/null 2>&1
	done
	return 0
}
