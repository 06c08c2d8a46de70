#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Install the Debian packages netstack_exporter needs, only those missing.
# Usage: scripts/deps.sh [build|test|bench|kernels]   (test = build + what the test suite runs,
# kernels included; bench = test + the tools make bench compares against and drives; kernels =
# build + what make test-kernels needs: QEMU, busybox for the guests' initramfs, and the arm64
# cross compiler with the :arm64 libraries, through dpkg multiarch)
set -eu

BUILD_PKGS="make gcc pkg-config clang llvm bpftool libbpf-dev libelf-dev zlib1g-dev \
libmicrohttpd-dev libinih-dev libcurl4-openssl-dev libjson-c-dev libgnutls28-dev libcrypt-dev \
libseccomp-dev"
# catatonit: the pause process of podman's pods (tests/container/pod.sh plays one).
TEST_PKGS="iproute2 nftables prometheus curl procps chromium cppcheck clang-tidy libclang-rt-14-dev \
jq libyaml-libyaml-perl strace systemd openssl whois python3-prometheus-client \
libcap2-bin catatonit"
BENCH_PKGS="bpftrace prometheus-node-exporter wrk"
# tests/kernels: the guests run the host's own tools over 9p; kernels are never installed here
# (the harness fetches them with apt-get download into build/kernels/).
KERNEL_PKGS="qemu-system-x86 qemu-system-arm busybox-static cpio kmod xz-utils util-linux \
gcc-aarch64-linux-gnu libc6-dev:arm64 libbpf-dev:arm64 libelf-dev:arm64 zlib1g-dev:arm64 \
libmicrohttpd-dev:arm64 libinih-dev:arm64 libcurl4-openssl-dev:arm64 libjson-c-dev:arm64 \
libgnutls28-dev:arm64 libcrypt-dev:arm64 libseccomp-dev:arm64"

pkgs=$BUILD_PKGS
case ${1:-build} in
test) pkgs="$pkgs $TEST_PKGS $KERNEL_PKGS" ;;
bench) pkgs="$pkgs $TEST_PKGS $KERNEL_PKGS $BENCH_PKGS" ;;
kernels) pkgs="$pkgs $KERNEL_PKGS" ;;
esac

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
case $missing in
*:arm64*)
	dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
	;;
esac
apt-get -o DPkg::Lock::Timeout=600 update -qq
# shellcheck disable=SC2086
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $missing >/dev/null
echo "deps: done"
