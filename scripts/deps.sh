#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Install the Debian packages netstack_exporter needs, only those missing.
# Usage: scripts/deps.sh [build [ARCH]|test|bench|kernels]   (build ARCH: for a build for the
# Debian architecture ARCH, amd64 or arm64, its cross compiler and the :ARCH libraries through
# dpkg multiarch when ARCH is not this machine's; test = build + what the test suite runs,
# kernels and containers included; bench = test + the tools make bench compares against and
# drives; kernels = build + what make test-kernels needs: QEMU, busybox for the guests'
# initramfs, and the arm64 cross build). --list first: print the packages, install nothing.
set -eu
list=
[ "${1:-}" = --list ] && list=1 && shift

BUILD_PKGS="make gcc pkg-config clang llvm bpftool libbpf-dev libelf-dev zlib1g-dev \
libmicrohttpd-dev libinih-dev libcurl4-openssl-dev libjson-c-dev libgnutls28-dev libcrypt-dev \
libseccomp-dev uthash-dev libprotobuf-c-dev protobuf-c-compiler"
# catatonit: the pause process of podman's pods (tests/container/pod.sh plays one).
TEST_PKGS="iproute2 nftables prometheus curl procps chromium cppcheck clang-tidy libclang-rt-14-dev \
jq libyaml-libyaml-perl strace systemd openssl whois python3-prometheus-client \
podman buildah runc mmdebstrap uidmap fuse-overlayfs slirp4netns containernetworking-plugins \
libcap2-bin catatonit libnetfilter-queue-dev"
BENCH_PKGS="bpftrace prometheus-node-exporter wrk"
# tests/kernels: the guests run the host's own tools over 9p; kernels are never installed here
# (the harness fetches them with apt-get download into build/kernels/).
KERNEL_PKGS="qemu-system-x86 qemu-system-arm busybox-static cpio kmod xz-utils util-linux"

# cross ARCH: the cross compiler for ARCH and the :ARCH builds of BUILD_PKGS' libraries.
cross() {
	[ "$1" = "$(dpkg --print-architecture)" ] && return 0
	case $1 in
	amd64) echo gcc-x86-64-linux-gnu ;;
	arm64) echo gcc-aarch64-linux-gnu ;;
	*) echo "deps: no cross build for architecture '$1' (amd64, arm64)" >&2; exit 1 ;;
	esac
	echo "libc6-dev:$1"
	# make tools links tests/tools/nfqdelay with libnetfilter-queue (the kernel matrix builds them).
	for p in $BUILD_PKGS libnetfilter-queue-dev; do
		case $p in *-dev) echo "$p:$1" ;; esac
	done
}

pkgs=$BUILD_PKGS
case ${1:-build} in
build) [ -z "${2:-}" ] || pkgs="$pkgs $(cross "$2")" ;;
test) pkgs="$pkgs $TEST_PKGS $KERNEL_PKGS $(cross arm64)" ;;
bench) pkgs="$pkgs $TEST_PKGS $KERNEL_PKGS $(cross arm64) $BENCH_PKGS" ;;
kernels) pkgs="$pkgs $KERNEL_PKGS $(cross arm64)" ;;
esac

# shellcheck disable=SC2086 # one word per package
[ -z "$list" ] || { echo $pkgs; exit 0; }
missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing packages:$missing (run as root, or install them)" >&2
	exit 1
fi
echo "deps: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
for a in $(echo "$missing" | tr ' ' '\n' | sed -n 's/.*://p' | sort -u); do
	dpkg --print-foreign-architectures | grep -qx "$a" || dpkg --add-architecture "$a"
done
apt-get -o DPkg::Lock::Timeout=600 update -qq
# shellcheck disable=SC2086
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $missing >/dev/null
echo "deps: done"
