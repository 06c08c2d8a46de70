#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Install the Debian packages netstack_exporter needs, only those missing.
# Usage: scripts/deps.sh [build|test|bench]   (test = build + what the test suite runs;
# bench = test + the tools make bench compares against and drives)
set -eu

BUILD_PKGS="make gcc pkg-config clang llvm bpftool libbpf-dev libelf-dev zlib1g-dev \
libmicrohttpd-dev libinih-dev libcurl4-openssl-dev libjson-c-dev libgnutls28-dev libcrypt-dev"
TEST_PKGS="iproute2 nftables prometheus curl procps chromium cppcheck clang-tidy libclang-rt-14-dev \
jq libyaml-libyaml-perl strace systemd openssl whois python3-prometheus-client"
BENCH_PKGS="bpftrace prometheus-node-exporter wrk"

pkgs=$BUILD_PKGS
case ${1:-build} in
test) pkgs="$pkgs $TEST_PKGS" ;;
bench) pkgs="$pkgs $TEST_PKGS $BENCH_PKGS" ;;
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
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
echo "deps: done"
