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
# The Debian release the Dockerfile's FROM lines name (debian:13, debian:13-slim).
CTR_SUITE=trixie
CTR_MIRRORS=("deb http://deb.debian.org/debian $CTR_SUITE main"
	"deb http://deb.debian.org/debian $CTR_SUITE-updates main"
	"deb http://deb.debian.org/debian-security $CTR_SUITE-security main")

# Roots and packages made from Debian's archive, shared by every clone on this machine: a root
# is made once per (suite, architecture, package list) and then only read.
CTR_CACHE=${NETSTACK_TEST_CACHE:-/var/cache/netstack-test}

# ctr_mirrors SUITE: the archive's sources for SUITE (main, updates, security).
ctr_mirrors() {
	printf '%s\n' "deb http://deb.debian.org/debian $1 main" \
		"deb http://deb.debian.org/debian $1-updates main" \
		"deb http://deb.debian.org/debian-security $1-security main"
}

# ctr_root SUITE ARCH PKG...: the directory of a Debian SUITE root for ARCH (a minbase with the
# PKGs and their dependencies, no docs, man pages or locales), made with mmdebstrap once per
# package set under $CTR_CACHE/roots/SUITE-ARCH-HASH (HASH of the package list and of this
# recipe) and reused by every clone; "# made ..." or "# reused ..." on stderr. Never written to
# once made (users bind-mount it read-only, tests/container/trixie.sh). The packages it
# downloads are kept in $CTR_CACHE/debs/SUITE-ARCH, and with the host's own apt cache (same
# suite) offered to the next root made: a new package list downloads only what is new.
# Needs root and mmdebstrap; only this machine's architecture (maintainer scripts run).
ctr_root() {
	local suite=$1 arch=$2 hash dir debs t0 try rc
	shift 2
	local -a mirrors
	mapfile -t mirrors < <(ctr_mirrors "$suite")
	hash=$({
		printf '%s\n' "$@" | sort -u
		declare -f ctr_root ctr_root_make
		printf '%s\n' "${mirrors[@]}"
	} | sha256sum | cut -c1-16)
	dir=$CTR_CACHE/roots/$suite-$arch-$hash
	debs=$CTR_CACHE/debs/$suite-$arch
	mkdir -p "$CTR_CACHE/roots" "$debs" || return 1
	# Made under a lock: clones running at once make it once, the others wait and reuse it.
	(
		flock 9
		if [ -d "$dir" ]; then
			echo "# reused $dir" >&2
			exit 0
		fi
		t0=$(date +%s)
		# Up to 3 tries: the archive fails a request now and then.
		for try in 1 2 3; do
			rm -rf "$dir.tmp"
			ctr_root_make "$suite" "$arch" "$dir.tmp" "$debs" "$*" "${mirrors[@]}" >&2 && break
			rc=$?
			[ "$try" -lt 3 ] || { rm -rf "$dir.tmp"; exit $rc; }
			echo "# mmdebstrap $suite $arch failed (try $try), again" >&2
		done
		mv "$dir.tmp" "$dir"
		echo "# made $dir in $(($(date +%s) - t0)) s ($(du -sm "$debs" | cut -f1) MB of packages kept)" >&2
	) 9>"$dir.lock" || return 1
	echo "$dir"
}
# ctr_build_root: the $CTR_SUITE root of this machine's architecture with scripts/deps.sh's
# build packages (ctr_root). One base serves both: tests/container/trixie.sh builds and runs
# the exporter in it, and it is the image's build stage's base (ctr_build_base), whose
# scripts/deps.sh then installs only a cross toolchain.
ctr_build_root() {
	# shellcheck disable=SC2046 # one argument per package
	ctr_root "$CTR_SUITE" "$(dpkg --print-architecture)" $("$CTR_ROOT/scripts/deps.sh" --list build)
}

# ctr_root_make SUITE ARCH DIR DEBS PKGS MIRROR...: mmdebstrap for ctr_root.
ctr_root_make() {
	local suite=$1 arch=$2 dir=$3 debs=$4 pkgs=$5 host_debs=
	shift 5
	# The host's own downloads, when the suite is the host's.
	grep -qs "^VERSION_CODENAME=$suite$" /etc/os-release && host_debs=/var/cache/apt/archives
	# Debian's python3 first: mmdebstrap runs mmtarfilter (#!/usr/bin/env python3) once per
	# package, and a python3 shim earlier in PATH (pyenv) costs most of a second each time.
	# The kept packages are hard links where the file system allows (no copy).
	# shellcheck disable=SC2016 # $1 is mmdebstrap's, the root it makes
	PATH=/usr/bin:/usr/sbin:$PATH mmdebstrap --quiet --variant=minbase --arch="$arch" \
		--include="${pkgs// /,}" --skip=essential/unlink \
		--setup-hook='mkdir -p "$1/var/cache/apt/archives"' \
		--setup-hook="for d in $debs $host_debs; do find \"\$d\" -maxdepth 1 -name '*.deb' -exec cp -l -n -t \"\$1/var/cache/apt/archives\" {} + 2>/dev/null || find \"\$d\" -maxdepth 1 -name '*.deb' -exec cp -n -t \"\$1/var/cache/apt/archives\" {} +; done" \
		--customize-hook="find \"\$1/var/cache/apt/archives\" -maxdepth 1 -name '*.deb' -exec cp -l -n -t '$debs' {} + 2>/dev/null || find \"\$1/var/cache/apt/archives\" -maxdepth 1 -name '*.deb' -exec cp -n -t '$debs' {} +" \
		--dpkgopt='path-exclude=/usr/share/doc/*' \
		--dpkgopt='path-include=/usr/share/doc/*/copyright' \
		--dpkgopt='path-exclude=/usr/share/man/*' \
		--dpkgopt='path-exclude=/usr/share/info/*' \
		--dpkgopt='path-exclude=/usr/share/locale/*' \
		--dpkgopt='path-include=/usr/share/locale/locale.alias' \
		"$suite" "$dir" "$@"
}

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
	# Written aside, then renamed: another test using this storage may be reading it.
	cat >"$CONTAINERS_STORAGE_CONF.$$" <<-CONF
		# Written by tests/container/lib.sh.
		[storage]
		driver = "overlay"
		graphroot = "$CTR_DIR/storage"
		runroot = "/run/netstack_exporter-containers/$(printf %s "$CTR_DIR" | md5sum | cut -c1-12)"
	CONF
	mv -f "$CONTAINERS_STORAGE_CONF.$$" "$CONTAINERS_STORAGE_CONF"
}

# ctr_locked NAME CMD...: CMD holding the lock $CTR_DIR/NAME.lock. image.sh, pod.sh and the
# kernel matrix's arm64 guest (tests/kernels/run.sh) may run at once on one storage: each
# base is made once, and one build at a time sets the debian:13 tags (see ctr_image).
ctr_locked() {
	local lock=$CTR_DIR/$1.lock
	shift
	# fd 9 closed for CMD: nothing it leaves running may hold the lock.
	(flock 9 && "$@" 9>&-) 9>"$lock"
}

# ctr_base_tar ARCH: a tar of a $CTR_SUITE minbase for ARCH, made once per recipe and shared by
# every clone on this machine ($CTR_CACHE/bases; the packages it downloads kept as for
# ctr_root). A minbase without docs, man pages and locales, like Debian's own debian:13-slim. A
# foreign architecture is only unpacked (mmdebstrap's extract variant: no maintainer script
# runs, so no emulation); it is only ever a runtime stage's base, which runs nothing at build
# time.
ctr_base_tar() {
	local arch=$1 tar variant=minbase t0 try key debs host_debs= keep
	local -a opts=(--variant=minbase)
	key=$({
		declare -f ctr_base_tar
		printf '%s\n' "${CTR_MIRRORS[@]}"
	} | sha256sum | cut -c1-12)
	tar=$CTR_CACHE/bases/$CTR_SUITE-$arch-$key.tar
	debs=$CTR_CACHE/debs/$CTR_SUITE-$arch
	[ -s "$tar" ] && { echo "$tar"; return 0; }
	mkdir -p "$CTR_CACHE/bases" "$debs" || return 1
	exec 8>"$tar.lock"
	flock 8 # another clone may be making it
	if [ -s "$tar" ]; then
		exec 8>&-
		echo "$tar"
		return 0
	fi
	t0=$(date +%s)
	[ "$arch" = "$(dpkg --print-architecture)" ] &&
		grep -qs "^VERSION_CODENAME=$CTR_SUITE$" /etc/os-release && host_debs=/var/cache/apt/archives
	# The packages kept, hard links where the file system allows (no copy).
	keep="find \"\$1/var/cache/apt/archives\" -maxdepth 1 -name '*.deb' -exec cp -l -n -t '$debs' {} + 2>/dev/null || find \"\$1/var/cache/apt/archives\" -maxdepth 1 -name '*.deb' -exec cp -n -t '$debs' {} +"
	opts+=(--customize-hook="$keep")
	if [ "$arch" != "$(dpkg --print-architecture)" ]; then
		variant=extract
		# What a minbase holds: the essential and the required packages, and apt.
		# shellcheck disable=SC2016 # $1 is mmdebstrap's, the root it makes.
		opts=(--variant=extract --include='?essential' --include='?priority(required)'
			--include=apt
			# base-passwd's maintainer script, which does not run here.
			--extract-hook='cp "$1/usr/share/base-passwd/passwd.master" "$1/etc/passwd"'
			--extract-hook='cp "$1/usr/share/base-passwd/group.master" "$1/etc/group"'
			--extract-hook="$keep")
	fi
	echo "# making $tar ($variant)" >&2
	# Debian's python3 first: mmdebstrap runs mmtarfilter (#!/usr/bin/env python3) once per
	# package, and a python3 shim earlier in PATH (pyenv) costs most of a second each time.
	# Up to 3 tries: the archive fails a request now and then, and mmdebstrap (apt-get
	# update --error-on=any) gives up at the first.
	for try in 1 2 3; do
		# shellcheck disable=SC2016 # $1 is mmdebstrap's, the root it makes.
		PATH=/usr/bin:$PATH mmdebstrap --quiet --format=tar --arch="$arch" "${opts[@]}" \
			--skip=essential/unlink \
			--setup-hook='mkdir -p "$1/var/cache/apt/archives"' \
			--setup-hook="for d in $debs $host_debs; do find \"\$d\" -maxdepth 1 -name '*.deb' -exec cp -l -n -t \"\$1/var/cache/apt/archives\" {} + 2>/dev/null || find \"\$d\" -maxdepth 1 -name '*.deb' -exec cp -n -t \"\$1/var/cache/apt/archives\" {} +; done" \
			--dpkgopt='path-exclude=/usr/share/doc/*' \
			--dpkgopt='path-include=/usr/share/doc/*/copyright' \
			--dpkgopt='path-exclude=/usr/share/man/*' \
			--dpkgopt='path-exclude=/usr/share/info/*' \
			--dpkgopt='path-exclude=/usr/share/locale/*' \
			--dpkgopt='path-include=/usr/share/locale/locale.alias' \
			"$CTR_SUITE" "$tar.tmp" "${CTR_MIRRORS[@]}" >&2 && break
		rm -f "$tar.tmp"
		[ "$try" -lt 3 ] || { exec 8>&-; return 1; }
		echo "# mmdebstrap $arch failed (try $try), again" >&2
	done
	mv "$tar.tmp" "$tar"
	exec 8>&-
	echo "# made $tar in $(($(date +%s) - t0)) s" >&2
	echo "$tar"
}

# ctr_base ARCH: localhost/netstack-base-ARCH, imported once (hold the lock base-ARCH).
ctr_base() {
	local tar
	podman image exists "localhost/netstack-base-$1" && return 0
	tar=$(ctr_base_tar "$1") || return 1
	# --platform linux/arm64 means variant v8: without it podman looks for another image.
	# shellcheck disable=SC2046 # no word at all for other architectures
	podman import --quiet --arch "$1" --os linux \
		$([ "$1" = arm64 ] && echo --variant v8) --change 'CMD ["bash"]' "$tar" \
		"localhost/netstack-base-$1" >/dev/null
}

# ctr_build_base: localhost/netstack-build, ctr_build_root imported once (hold the lock
# base-build): the build stage's base, debian:13 with the build packages.
ctr_build_base() {
	local root
	podman image exists localhost/netstack-build && return 0
	root=$(ctr_build_root) || return 1
	tar -C "$root" -c . | podman import --quiet --change 'CMD ["bash"]' - localhost/netstack-build \
		>/dev/null
}

# ctr_bases ARCH...: the build stage's base, and the base image of this machine's architecture
# and of each ARCH, made at once (mmdebstrap is mostly waiting for the archive and for the
# disk), each only once.
ctr_bases() {
	local arch rc=0
	local -a pids=()
	ctr_locked base-build ctr_build_base &
	pids+=($!)
	for arch in $(printf '%s\n' "$(dpkg --print-architecture)" "$@" | sort -u); do
		ctr_locked "base-$arch" ctr_base "$arch" &
		pids+=($!)
	done
	for arch in "${pids[@]}"; do
		wait "$arch" || rc=1
	done
	return $rc
}

# ctr_image ARCH TAG: make image for linux/ARCH, tagged TAG, with this podman environment.
# debian:13 (the build stage's) is ctr_build_base, debian:13-slim (the runtime stage's) ARCH's
# base: podman 4.3 does not pick a platform's image out of a local manifest list, so one
# storage builds one architecture at a time (the lock build).
# Tagged under docker.io/library/ too: the name containers-common's short-name alias gives
# "debian", which podman looks up for another platform than the machine's.
ctr_image() {
	ctr_locked build ctr_image_locked "$@"
}
ctr_image_locked() {
	podman tag localhost/netstack-build debian:13 docker.io/library/debian:13 &&
		podman tag "localhost/netstack-base-$1" debian:13-slim docker.io/library/debian:13-slim &&
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

# ctr_rootfs IMAGE DIR: IMAGE's whole file system unpacked at DIR (podman export, running
# nothing), only when DIR does not already hold this image's (DIR.id). The kernel matrix's
# arm64 guest runs the exporter in it by chroot: exactly what the image ships, its own libraries
# and loader.
ctr_rootfs() {
	local id c rc
	id=$(podman image inspect -f '{{.Id}}' "$1") || return 1
	[ -d "$2" ] && [ "$(cat "$2.id" 2>/dev/null)" = "$id" ] && return 0
	rm -rf "$2" "$2.id" && mkdir -p "$2" || return 1
	c=$(podman create --arch "$(podman image inspect -f '{{.Architecture}}' "$1")" "$1") ||
		return 1
	podman export "$c" | tar -x --numeric-owner -p -C "$2"
	rc=$?
	podman rm -f "$c" >/dev/null
	[ "$rc" -eq 0 ] && echo "$id" >"$2.id"
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
