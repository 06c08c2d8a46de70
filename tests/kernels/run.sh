#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The kernel matrix (make test-kernels): Debian's own kernel packages booted under QEMU (TCG: no
# KVM needed), the exporter run inside each guest as root and as shipped, real traffic, the
# guest's own counters as the reference. One boot per kernel runs every check (tests/kernels/
# guest.sh for x86_64, guest-arm64.sh for arm64); 6.1-amd64+systemd boots 6.1 with systemd as
# PID 1 and checks the systemd unit as make install installs it, started by systemd
# (guest-systemd.sh). A guest whose kernel panics is booted once more (docs/testing.md).
#
#   tests/kernels/run.sh [KERNEL...]    KERNEL: 6.1-amd64 6.12-amd64 5.10-amd64 6.1-arm64
#                                       6.1-amd64+systemd (default: all of them, or $KERNELS)
# BUILD (default build) is the x86_64 build under test, ARM64_BUILD (default $BUILD/arm64) the
# arm64 one (its unit tests), built here unless ARM64_BUILD_SKIP=1; the arm64 guest's exporter
# is the one in the arm64 image (make image PLATFORM=linux/arm64 with tests/container/lib.sh),
# run in the image's file system, unpacked at $BUILD/container/arm64/rootfs. Kernel packages
# are fetched with apt-get download (Debian 11's from a private apt configuration: the host's sources stay as they are),
# unpacked with dpkg-deb -x, and kept in $KERNELS_CACHE (default build/kernels); nothing is
# installed on the host. KERNEL_GUEST (a script under the checkout) replaces the x86_64 guest's
# script, to loop one phase; KERNEL_SMP (default 2) sets the guests' CPUs, KERNELS_JOBS (default
# 2) how many guests run at once (every kernel is prepared at once first). Prints
# "ok - <kernel> <arch> <profile>: <check>" lines; exit 77 when it cannot run here (not root, no
# QEMU); a guest that does not boot shows its console's tail.
set -u
cd "$(dirname "$0")/../.." || exit 1
WT=$PWD
BUILD=${BUILD:-build}
ARM64_BUILD=${ARM64_BUILD:-$BUILD/arm64}
ARM64_ROOTFS=$BUILD/container/arm64/rootfs
CACHE=${KERNELS_CACHE:-build/kernels}
BOOT_TIMEOUT=${KERNEL_TIMEOUT:-720}
SMP=${KERNEL_SMP:-2}
FAILED=0 PASSED_N=0 FAILED_N=0

# ---- what each kernel is expected to do: one row per kernel, the same for every profile ------
# (root, and each way the project ships it: a collector up as root must be up as shipped).
# 5.10: tp_btf/kfree_skb has no drop reason argument (5.17+): drops counts every kfree_skb() as
# NOT_SPECIFIED by location (dropreason=no below).
# memlock: 5.10 charges BPF maps and programs to RLIMIT_MEMLOCK (64 KiB by default): up as root,
# under the unit (LimitMEMLOCK=infinity) and in the pod-memlock profile (components/memlock adds
# CAP_SYS_RESOURCE: the exporter raises its limit), down in the pod profile with a log line
# saying why. Up there only what fits (docs/kernels.md): retrans needs 56 KiB; rtt and resets 68,
# connections 124, drops 1048.
EXPECT_TABLE='
# kernel  arch   drops  retrans  rtt      connections  resets
6.1       amd64  up     up       up       up           up
6.12      amd64  up     up       up       up           up
5.10      amd64  memlock  up       memlock  memlock      memlock
6.1       arm64  up     up       up       up           up
'
# What each kernel offers beyond up/down (docs/kernels.md): direct = the drop program reads
# headers directly (bpf_rdonly_cast, 6.2+), else helper reads; err = tcp_retransmit_skb's err
# argument (6.17+: netstack_tcp_retransmit_failures_total); memlock = BPF maps charged to
# RLIMIT_MEMLOCK (before 5.11): in the pod profile (64 KiB) a collector may then be down with a
# log line naming it, and the guest runs the pod-memlock profile too (one exporter start: every
# collector up, drops exact, the walk up, CAP_SYS_RESOURCE gone after start); args = the RTT callback's arguments (6.10+: rtt_kind="sample" has samples);
# existing = connections open before start measured (iter/tcp + bpf_setsockopt, 6.12+); loop =
# bpf_loop (5.17+), with which the pod resolver's process walk runs in one go, else in chunks of
# tail calls (logged); either way the pod labels are checked (but in the pod profile where
# memlock bounds the walk's maps: netstack_pods_resolver_up 0, logged); reason = tcp_send_reset's reason argument (6.10+: reset reasons
# by name, and resets without a full socket seen, so sent resets equal TcpOutRsts); dropreason =
# kfree_skb's reason argument (5.17+), else count_drop_noreason: every packet as NOT_SPECIFIED,
# checked by function (__udp4_lib_rcv for Udp NoPorts, the netfilter hook for the nftables
# counter), and the locations seen idle and under traffic printed. The netns, function and interface labels of every collector
# that runs, and the pod labels the process walk gives them, are checked on every kernel.
FEATURE_TABLE='
# kernel  arch   direct  err  memlock  args  existing  loop  reason  dropreason
6.1       amd64  no      no   no       no    no        yes   no      yes
6.12      amd64  yes     no   no       yes   yes       yes   yes     yes
5.10      amd64  no      no   yes      no    no        no    no      no
6.1       arm64  no      no   no       no    no        yes   no      yes
'
# Where each kernel comes from: suite (bookworm = the host's apt sources; bullseye = a private
# apt configuration under $CACHE/apt) and the package name, newest matching version.
KERNEL_TABLE='
# kernel  arch   suite     package (extended regex)
6.1       amd64  bookworm  ^linux-image-6\.1\.0-[0-9]+-amd64$
6.12      amd64  bookworm  ^linux-image-6\.12\.[0-9]+\+deb12-amd64$
5.10      amd64  bullseye  ^linux-image-5\.10\.0-[0-9]+-amd64$
6.1       arm64  bookworm  ^linux-image-6\.1\.0-[0-9]+-arm64$
'

ok() {
	echo "ok - $1"
	PASSED_N=$((PASSED_N + 1))
}
not_ok() {
	echo "not ok - $1"
	shift
	[ $# -gt 0 ] && printf '  %s\n' "$@"
	FAILED=1 FAILED_N=$((FAILED_N + 1))
}
skip_all() {
	echo "!!!!! SKIPPED: kernel matrix: $* !!!!!" >&2
	exit 77
}
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

[ "$(id -u)" -eq 0 ] || skip_all "needs root (QEMU's 9p export of / and apt-get download)"
command -v qemu-system-x86_64 >/dev/null || skip_all "needs qemu-system-x86 (scripts/deps.sh kernels)"
for tool in busybox cpio dpkg-deb depmod apt-get xz perl jq; do
	command -v "$tool" >/dev/null || skip_all "needs $tool (scripts/deps.sh kernels)"
done
[ -x "$BUILD/netstack_exporter" ] || skip_all "$BUILD/netstack_exporter not built"
mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd)
[ $# -gt 0 ] || set -- ${KERNELS:-6.1-amd64 6.12-amd64 5.10-amd64 6.1-arm64 6.1-amd64+systemd}

# ---- item 5: what ships, parsed from the files that ship it ----------------------------------
# Two profiles (and a third, below, where RLIMIT_MEMLOCK matters): "shipped" is the systemd unit (the user systemd gives it, the unit's capabilities
# as ambient ones, no_new_privs, conf/ INI as make install installs it); "pod" is the DaemonSet
# with the image's user (uid 0 whose bounding set is only the added capabilities, no_new_privs
# from allowPrivilegeEscalation: false, the ConfigMap's INI). Where two files describe the same
# process they must agree.
UNIT=deploy/systemd/netstack_exporter.service
DS=deploy/kubernetes/base/daemonset.yaml
DOCKERFILE=deploy/docker/Dockerfile
unit_key() { # KEY: the unit's value (last assignment wins, as in systemd)
	sed -n "s/^$1=//p" "$UNIT" | tail -n 1
}
capset() { # "CAP_BPF CAP_X" or "BPF X" -> "bpf,x" sorted
	tr ' ' '\n' | sed '/^$/d; s/^CAP_//' | tr 'A-Z' 'a-z' | sort -u | paste -sd,
}
U_AMB=$(unit_key AmbientCapabilities | capset)
U_BND=$(unit_key CapabilityBoundingSet | capset)
if [ -n "$U_AMB" ] && [ "$U_AMB" = "$U_BND" ]; then
	ok "shipped: $UNIT: AmbientCapabilities equals CapabilityBoundingSet ($U_AMB)"
else
	not_ok "shipped: $UNIT: AmbientCapabilities equals CapabilityBoundingSet" \
		"ambient '$U_AMB', bounding '$U_BND'"
fi
U_USER=$(unit_key User)
if [ "$(unit_key DynamicUser)" = yes ] || [ -n "$U_USER" ]; then
	# DynamicUser: an unused uid that owns nothing; nobody is the same to the kernel.
	[ -n "$U_USER" ] || U_USER=nobody
	U_GROUP=$(unit_key Group)
	[ -n "$U_GROUP" ] || U_GROUP=$(id -gn "$U_USER" 2>/dev/null || echo nogroup)
	ok "shipped: $UNIT runs the exporter as a non-root user (here: $U_USER:$U_GROUP)"
else
	U_USER=root U_GROUP=root
	not_ok "shipped: $UNIT runs the exporter as a non-root user" "no User= nor DynamicUser=yes"
fi
U_NNP=
[ "$(unit_key NoNewPrivileges)" = yes ] && U_NNP=--no-new-privs
# LimitMEMLOCK: kernels before 5.11 charge BPF maps to RLIMIT_MEMLOCK (64 KiB by default there).
SHIPPED_MEMLOCK=$(unit_key LimitMEMLOCK)
[ "$SHIPPED_MEMLOCK" = infinity ] && SHIPPED_MEMLOCK=unlimited
SHIPPED_SETPRIV="--reuid=$U_USER --regid=$U_GROUP --clear-groups --bounding-set=-all,+${U_AMB//,/,+}"
SHIPPED_SETPRIV+=" --inh-caps=-all,+${U_AMB//,/,+} --ambient-caps=-all,+${U_AMB//,/,+} $U_NNP"

yaml_json() { # FILE: its YAML documents as one JSON array
	perl -MYAML::XS -MJSON::PP -e '$YAML::XS::Boolean = "JSON::PP"; local $/;
		my @d = grep { defined } YAML::XS::Load(<STDIN>);
		print JSON::PP->new->canonical->encode(\@d), "\n"' <"$1"
}
yaml_ds() { # the DaemonSet's first container as JSON
	yaml_json "$DS" | jq -c '.[] | select(.kind == "DaemonSet") | .spec.template.spec.containers[0]'
}
if ! DSC=$(yaml_ds) || [ -z "$DSC" ]; then
	not_ok "pod: $DS parses (needs libyaml-libyaml-perl and jq)"
	DSC='{}'
fi
P_CAPS=$(jq -r '.securityContext.capabilities.add // [] | join(" ")' <<<"$DSC" | capset)
P_DROP=$(jq -r '.securityContext.capabilities.drop // [] | join(" ")' <<<"$DSC")
P_UID=$(jq -r '.securityContext.runAsUser // empty' <<<"$DSC")
P_GID=$(jq -r '.securityContext.runAsGroup // empty' <<<"$DSC")
D_USER=$(sed -n 's/^USER[[:space:]]\+//p' "$DOCKERFILE" | tail -n 1)
if [ "$P_DROP" = ALL ] && [ -n "$P_CAPS" ]; then
	ok "pod: $DS drops ALL and adds only $P_CAPS"
else
	not_ok "pod: $DS drops ALL and adds the capabilities it needs" "drop '$P_DROP' add '$P_CAPS'"
fi
# The image's USER is what runs when the DaemonSet does not say; when both say, they must agree.
[ -n "$P_UID" ] || P_UID=${D_USER%%:*}
[ -n "$P_GID" ] || P_GID=${D_USER#*:}
if [ "${D_USER%%:*}" = "$P_UID" ] && [ "${D_USER#*:}" = "$P_GID" ]; then
	ok "pod: $DOCKERFILE USER ($D_USER) and the DaemonSet's runAsUser:runAsGroup agree"
else
	not_ok "pod: $DOCKERFILE USER and the DaemonSet's runAsUser:runAsGroup agree" \
		"image $D_USER, DaemonSet $P_UID:$P_GID"
fi
P_NNP=
[ "$(jq -r '.securityContext.allowPrivilegeEscalation' <<<"$DSC")" = false ] && P_NNP=--no-new-privs
# Kubernetes sets no ambient capabilities: uid 0 keeps the bounding set at exec, another uid
# keeps nothing.
pod_setpriv() { # CAPS ("bpf,x")
	echo "--reuid=${P_UID:-0} --regid=${P_GID:-0} --clear-groups" \
		"--bounding-set=-all,+${1//,/,+} --inh-caps=-all --ambient-caps=-all $P_NNP"
}
POD_SETPRIV=$(pod_setpriv "$P_CAPS")
# A third, where the kernel charges BPF to RLIMIT_MEMLOCK: "pod-memlock" is the pod with what
# components/memlock (the opt-in for nodes before 5.11) adds to its capabilities, parsed from
# the component's patch, which may add capabilities and nothing else.
MEMLOCK_PATCH=deploy/kubernetes/components/memlock/daemonset-patch.yaml
CAPS_ADD=/spec/template/spec/containers/0/securityContext/capabilities/add/-
M_CAPS=$(yaml_json "$MEMLOCK_PATCH" | jq -r --arg p "$CAPS_ADD" \
	'.[0][] | if .op == "add" and .path == $p then .value else "NOT-A-CAPABILITY" end' | capset)
if [ -n "$M_CAPS" ] && [[ $M_CAPS != *not-a-capability* ]]; then
	ok "pod-memlock: $MEMLOCK_PATCH adds only the capabilities $M_CAPS"
else
	not_ok "pod-memlock: $MEMLOCK_PATCH adds only capabilities" "adds '$M_CAPS'"
fi
POD_MEMLOCK_SETPRIV=$(pod_setpriv "$(tr , ' ' <<<"$P_CAPS,$M_CAPS" | capset)")
[ "$U_AMB" = "$P_CAPS" ] ||
	echo "# note: the systemd unit grants $U_AMB, the DaemonSet $P_CAPS; each profile runs with its own"
echo "# profiles: root; shipped = ${SHIPPED_MEMLOCK:+prlimit --memlock=$SHIPPED_MEMLOCK }setpriv $SHIPPED_SETPRIV; pod = setpriv $POD_SETPRIV; pod-memlock (kernels with memlock=yes) = setpriv $POD_MEMLOCK_SETPRIV"

# ---- kernel packages ---------------------------------------------------------------------------
APT_PRIV=$CACHE/apt
apt_private() { # apt-get/apt-cache options for the bullseye suite, host sources untouched
	echo -o Dir::Etc::SourceList="$APT_PRIV/sources.list" -o Dir::Etc::SourceParts=/dev/null \
		-o Dir::State::Lists="$APT_PRIV/lists" -o Dir::Cache="$APT_PRIV/cache" \
		-o APT::Architectures::=amd64 -o Debug::NoLocking=1
}
apt_private_update() {
	mkdir -p "$APT_PRIV/lists/partial" "$APT_PRIV/cache/archives/partial"
	cat >"$APT_PRIV/sources.list" <<-EOF
		deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bullseye main
		deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian-security bullseye-security main
	EOF
	# Once a day is enough: a kernel already in the cache is used as it is.
	if [ -z "$(find "$APT_PRIV/lists" -name '*Packages*' -mmin -1440 2>/dev/null)" ]; then
		# shellcheck disable=SC2046
		apt-get $(apt_private) -qq update >&2
	fi
}

# kernel_pkg KERNEL ARCH SUITE REGEX: download and unpack the newest matching package (or
# reuse the cache); prints the unpacked directory.
kernel_pkg() {
	local suite=$3 re=$4 opts=() pkg dir deb
	if [ "$suite" = bullseye ]; then
		apt_private_update
		read -ra opts <<<"$(apt_private)"
	fi
	pkg=$(apt-cache "${opts[@]}" search --names-only "$re" 2>/dev/null | awk '{ print $1 }' |
		sort -V | tail -n 1)
	if [ -z "$pkg" ]; then # offline, or the arch not configured: the newest cached one
		pkg=$(find "$CACHE" -maxdepth 1 -type d -printf '%f\n' | grep -E "$re" | sort -V | tail -n 1)
		[ -n "$pkg" ] || { echo "no package matches $re in $suite" >&2; return 1; }
	fi
	dir=$CACHE/$pkg
	if [ ! -e "$dir/.unpacked" ]; then
		(cd "$CACHE" && rm -f "${pkg}"_*.deb &&
			apt-get "${opts[@]}" -o APT::Sandbox::User=root -qq download "$pkg:$2" >&2) || return 1
		deb=$(ls "$CACHE/${pkg}"_*.deb 2>/dev/null | head -n 1)
		[ -n "$deb" ] || return 1
		rm -rf "$dir" && dpkg-deb -x "$deb" "$dir" || return 1
		# The package's postinst would run depmod; here it runs on the unpacked tree.
		local ver
		ver=$(ls "$dir/lib/modules" | head -n 1)
		depmod -b "$dir" "$ver" || return 1
		rm -f "$deb"
		touch "$dir/.unpacked"
		# Older versions of the same line: superseded, hundreds of MB each.
		find "$CACHE" -maxdepth 1 -type d -printf '%f\n' | grep -E "$re" | grep -vxF "$pkg" |
			while read -r old; do rm -rf "${CACHE:?}/$old"; done
	fi
	echo "$dir"
}

# mod_order DIR VER MODULE...: the modules' files (relative to lib/modules/VER), dependencies
# first, built-in ones left out, from the package's own modules.dep.
mod_order() {
	local dir=$1/lib/modules/$2
	shift 2
	MODDIR=$dir perl -e '
		my %dep; open my $f, "<", "$ENV{MODDIR}/modules.dep" or die;
		while (<$f>) { chomp; my ($m, $d) = split /:\s*/, $_, 2;
			$dep{$m} = [ split " ", ($d // "") ]; }
		my %byname = map { my $n = $_; $n =~ s{.*/}{}; $n =~ s/\.ko(\..*)?$//; $n =~ tr/-/_/;
			($n => $_) } keys %dep;
		my (%seen, @out);
		sub visit { my $m = shift; return if $seen{$m}++; visit($_) for reverse @{$dep{$m}};
			push @out, $m; }
		for (@ARGV) { (my $n = $_) =~ tr/-/_/; visit($byname{$n}) if $byname{$n}; }
		print "$_\n" for @out;' "$@"
}

# initramfs ARCH KDIR VER BUSYBOX OUT EXTRA_DIR: busybox, the 9p/virtio modules (decompressed:
# busybox insmod reads them whole), /init from tests/kernels/init-<ARCH>.sh, EXTRA_DIR's files.
initramfs() {
	local arch=$1 kdir=$2 ver=$3 bb=$4 out=$5 extra=${6:-} root m
	root=$(mktemp -d /tmp/netstack-initrd.XXXXXX)
	chmod 0755 "$root" # the guest's /: mktemp's 0700 would lock out the non-root profile
	mkdir -p "$root/bin" "$root/modules" "$root/proc" "$root/sys" "$root/dev" "$root/newroot" \
		"$root/host" "$root/results" "$root/tmp"
	cp "$bb" "$root/bin/busybox"
	ln -s busybox "$root/bin/sh" # /init installs the other applets
	: >"$root/modules.order"
	for m in $(mod_order "$kdir" "$ver" virtio_pci virtio_mmio 9pnet_virtio 9p); do
		local f=$kdir/lib/modules/$ver/$m b
		b=$(basename "$m" | sed 's/\.ko\..*$/.ko/')
		case $m in
		*.xz) xz -dc "$f" >"$root/modules/$b" ;;
		*.zst) zstd -qdc "$f" >"$root/modules/$b" ;;
		*.gz) gzip -dc "$f" >"$root/modules/$b" ;;
		*) cp "$f" "$root/modules/$b" ;;
		esac
		echo "$b" >>"$root/modules.order"
	done
	cp "tests/kernels/init-$arch.sh" "$root/init"
	chmod +x "$root/init"
	[ -n "$extra" ] && cp -a "$extra"/. "$root/" && chmod 0755 "$root"
	(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$out"
	rm -rf "$root"
}

# ---- arm64: the cross build and the guest's own user-space pieces (busybox, setpriv, curl) ------------------------------
arm64_prepare() { # sets ARM64_EXTRA (files for the initramfs) and ARM64_BB (busybox)
	if [ "${ARM64_BUILD_SKIP:-}" != 1 ]; then
		command -v aarch64-linux-gnu-gcc >/dev/null ||
			{ echo "needs gcc-aarch64-linux-gnu (scripts/deps.sh kernels)"; return 1; }
		local t0
		t0=$(now)
		make -s -j"$SMP" CC=aarch64-linux-gnu-gcc ARCH=arm64 BUILD="$ARM64_BUILD" all unit tools \
			>"$CACHE/arm64-build.log" 2>&1 ||
			{ tail -n 30 "$CACHE/arm64-build.log"; return 1; }
		echo "# arm64: make CC=aarch64-linux-gnu-gcc BUILD=$ARM64_BUILD took $(secs "$t0" "$(now)") s"
	fi
	# The exporter the guest runs: the arm64 image's (make image, tests/container/lib.sh), in
	# the image's own file system (its libraries and loader: chroot in the guest), so the
	# image ships what a real arm64 kernel was shown to run.
	(source tests/container/lib.sh && ctr_env && ctr_bases arm64 &&
		ctr_image arm64 localhost/netstack-exporter:test-arm64 &&
		ctr_rootfs localhost/netstack-exporter:test-arm64 "$ARM64_ROOTFS") \
		>"$CACHE/arm64-image.log" 2>&1 || { tail -n 30 "$CACHE/arm64-image.log"; return 1; }
	# busybox and setpriv (util-linux) for arm64, fetched and unpacked like the kernels.
	local d=$CACHE/arm64-userland p
	if [ ! -e "$d/.unpacked" ]; then
		rm -rf "$d" && mkdir -p "$d/debs"
		(cd "$d/debs" && apt-get -o APT::Sandbox::User=root -qq download busybox-static:arm64 \
			util-linux:arm64 libcap-ng0:arm64 curl:arm64) || return 1
		for p in "$d"/debs/*.deb; do dpkg-deb -x "$p" "$d/root" || return 1; done
		rm -rf "$d/debs"
		touch "$d/.unpacked"
	fi
	ARM64_BB=$d/root/bin/busybox
	ARM64_EXTRA=$(mktemp -d /tmp/netstack-arm64x.XXXXXX)
	mkdir -p "$ARM64_EXTRA/usr/bin" "$ARM64_EXTRA/opt/lib"
	chmod 0755 "$ARM64_EXTRA"
	# curl: busybox's wget crashes here; its libcurl4:arm64 came with libcurl4-openssl-dev:arm64.
	cp "$d/root/usr/bin/setpriv" "$d/root/usr/bin/curl" "$ARM64_EXTRA/usr/bin/"
	cp -a "$d"/root/lib/aarch64-linux-gnu/libcap-ng.so.0* "$d"/root/usr/lib/aarch64-linux-gnu/libcap-ng.so.0* \
		"$ARM64_EXTRA/opt/lib/" 2>/dev/null
	ls "$ARM64_EXTRA"/opt/lib/libcap-ng.so.0* >/dev/null 2>&1 || { echo "libcap-ng0:arm64 not unpacked"; return 1; }
}

# ---- one boot --------------------------------------------------------------------------------
expect_row() { # KERNEL ARCH: "drops=up retrans=up rtt=up connections=up resets=up"
	awk -v k="$1" -v a="$2" '$1 == k && $2 == a {
		print "drops=" $3, "retrans=" $4, "rtt=" $5, "connections=" $6, "resets=" $7 }' \
		<<<"$EXPECT_TABLE"
}

# Every boot and preparation runs as a job of its own and prints to $WORK/<name>/out; the main
# loop prints each job's lines when it ends, so that one guest's lines stay together.
WORK=$(mktemp -d /tmp/netstack-kernels.XXXXXX)

# prepare KERNEL-ARCH: the kernel package and the initramfs, once per kernel (the +systemd boot
# shares its kernel's); $WORK/KERNEL-ARCH/ready when both are there.
prepare() {
	local kernel=${1%-*} arch=${1##*-} dir=$WORK/$1 row suite re kdir ver bb extra='' t0
	t0=$(now)
	row=$(awk -v k="$kernel" -v a="$arch" '$1 == k && $2 == a { print $3, $4 }' <<<"$KERNEL_TABLE")
	if [ -z "$row" ] || [ -z "$(expect_row "$kernel" "$arch")" ]; then
		not_ok "$kernel $arch: in the kernel and expectation tables" "unknown kernel '$1'"
		return
	fi
	read -r suite re <<<"$row"
	if [ "$arch" = arm64 ]; then
		command -v qemu-system-aarch64 >/dev/null || {
			not_ok "$kernel $arch: qemu-system-aarch64 installed" "scripts/deps.sh kernels"
			return
		}
		if ! arm64_prepare; then
			not_ok "$kernel $arch: arm64 build and guest user space"
			return
		fi
		bb=$ARM64_BB extra=$ARM64_EXTRA
	else
		bb=$(command -v busybox)
	fi
	if ! kdir=$(kernel_pkg "$kernel" "$arch" "$suite" "$re"); then
		not_ok "$kernel $arch: kernel package fetched ($re from $suite)"
		return
	fi
	ver=$(ls "$kdir/lib/modules" | head -n 1)
	initramfs "$arch" "$kdir" "$ver" "$bb" "$dir/initrd.gz" "$extra"
	[ -n "$extra" ] && rm -rf "$extra"
	echo "$kdir $ver $(secs "$t0" "$(now)")" >"$dir/ready"
}

boot() { # KERNEL-ARCH[+systemd]: after prepare KERNEL-ARCH
	local init='' name=$1
	[[ $1 == *+systemd ]] && init=systemd && set -- "${1%+systemd}"
	local kernel=${1%-*} arch=${1##*-} kdir ver prep res console t1 qemu rc
	local guest=$WT/tests/kernels/guest${init:+-$init}.sh append=
	[ -e "$WORK/$1/ready" ] || return 0 # prepare said why
	read -r kdir ver prep <"$WORK/$1/ready"
	res=$(mktemp -d /tmp/netstack-kernel.XXXXXX)
	mkdir "$res/out"
	# What the guest runs: its identity, expectations and the profiles (no secrets: paths).
	{
		echo "KERNEL='$kernel' ARCH='$arch' KVER='$ver' KDIR='$kdir' WT='$WT'"
		echo "EXPECT='$(expect_row "$kernel" "$arch")'"
		echo "FEATURES='$(awk -v k="$kernel" -v a="$arch" '$1 == k && $2 == a {
			print "direct=" $3, "err=" $4, "memlock=" $5, "args=" $6, "existing=" $7,
				"loop=" $8, "reason=" $9, "dropreason=" $10 }' <<<"$FEATURE_TABLE")'"
		echo "SHIPPED_SETPRIV='$SHIPPED_SETPRIV' POD_SETPRIV='$POD_SETPRIV' CI='${CI:-}'"
		echo "POD_MEMLOCK_SETPRIV='$POD_MEMLOCK_SETPRIV'"
		echo "SHIPPED_MEMLOCK='$SHIPPED_MEMLOCK'"
		echo "GUEST='${KERNEL_GUEST:-$guest}' INIT='$init'"
		if [ "$arch" = arm64 ]; then
			echo "BUILD='$WT/$ARM64_BUILD' ROOTFS='$WT/$ARM64_ROOTFS'"
		else
			echo "BUILD='$WT/$BUILD'"
		fi
	} >"$res/out/env"
	if [ "$init" = systemd ]; then
		# The unit as make install installs it, copied by the guest to its /usr/local (whose
		# lib/systemd/system systemd reads); SYSCONFDIR there too: the guest's /etc is the
		# host's, read-only.
		make -s BUILD="$BUILD" DESTDIR="$res/out/inst" SYSCONFDIR=/usr/local/etc install \
			>"$res/install.log" 2>&1 ||
			{ not_ok "$kernel $arch systemd: make install" "$(tail -n 5 "$res/install.log")"; return; }
		# No fstab: the host's would mount its disks.
		append="systemd.unit=kt.target fstab=no systemd.show_status=0"
	fi
	console=$res/console.log
	local vmlinuz common
	vmlinuz=$(ls "$kdir"/boot/vmlinuz-* | head -n 1)
	common=(-m 1024 -smp "$SMP" -nographic -no-reboot -nic none -kernel "$vmlinuz"
		-initrd "$WORK/$1/initrd.gz"
		-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
		-virtfs "local,path=$res/out,mount_tag=results,security_model=none,multidevs=remap"
		-virtfs "local,path=$WT,mount_tag=worktree,security_model=none,readonly=on,multidevs=remap")
	if [ "$arch" = arm64 ]; then
		qemu=(qemu-system-aarch64 -machine virt -cpu cortex-a72 "${common[@]}"
			-append "console=ttyAMA0 panic=-1 loglevel=4 rdinit=/init")
	else
		qemu=(qemu-system-x86_64 -machine q35 -cpu max "${common[@]}"
			-append "console=ttyS0 panic=-1 loglevel=4 rdinit=/init $append")
	fi
	echo "# $kernel $arch${init:+ $init}: booting $(basename "$kdir") ($ver)"
	t1=$(now)
	local try panic
	for try in 1 2; do
		rm -f "$res/out/log"
		timeout --foreground -k 10 "$BOOT_TIMEOUT" "${qemu[@]}" </dev/null >"$console" 2>&1
		rc=$?
		# A panic in the guest's kernel (under TCG; docs/testing.md): once more, said in one
		# line. Not after the guest asked to power off: its PID 1 may then exit ("Attempted to
		# kill init") while the devices, 9p included, shut down.
		panic=$(tr -d '\r' <"$console" | sed '/sysrq: Power Off/q' |
			grep -m 1 -E 'Kernel panic|BUG:|Oops')
		[ -n "$panic" ] || break
		if [ "$try" = 1 ]; then
			echo "# $kernel $arch: the guest's kernel panicked ($panic): booting it again once"
			mv "$console" "$res/console.panic.log"
		else
			not_ok "$kernel $arch: the guest's kernel does not panic twice in a row" "$panic" \
				"console tail:" "$(tr -d '\r' <"$console" | tail -n 40)"
		fi
	done
	local took_boot took_all
	took_all=$(secs "$t1" "$(now)")
	[ -s "$res/out/log" ] && tr -d '\r' <"$res/out/log" | grep -E '^(ok|not ok) - |^  |^# '
	if ! grep -q '^# guest done' "$res/out/log" 2>/dev/null; then
		not_ok "$kernel $arch: guest booted and ran every check" \
			"qemu exit $rc after ${took_all}s (timeout ${BOOT_TIMEOUT}s); console tail:" \
			"$(tr -d '\r' <"$console" | tail -n 40)"
	fi
	# A script stopped by a shell error still powers off, and says "guest done" on its way.
	if grep -qE ': unbound variable$|: syntax error' "$res/out/log" 2>/dev/null; then
		not_ok "$kernel $arch${init:+ $init}: the guest's script ran without a shell error" \
			"$(grep -E ': unbound variable$|: syntax error' "$res/out/log" | head -n 5)"
	fi
	took_boot=$(sed -n 's/^# guest started at uptime \([0-9.]*\).*/\1/p' "$res/out/log" 2>/dev/null)
	echo "$kernel $arch${init:++$init}: $prep s to prepare, ${took_boot:-?} s to boot, ${took_all} s boot+checks" \
		>"$WORK/boot-$name/timing"
	if [ -n "${KEEP_TMP:-}" ]; then echo "# kept $res"; else rm -rf "$res"; fi
}

# ---- the schedule ------------------------------------------------------------------------------
# Every kernel is prepared at once (downloads, unpacking, the arm64 build and image); each boot
# starts as soon as its kernel is ready and fewer than KERNELS_JOBS guests run. A guest under TCG
# keeps about one host CPU busy (its script runs one process at a time), so two at once on two
# CPUs take about the time of one.
JOBS=${KERNELS_JOBS:-2}
[[ $JOBS =~ ^[1-9][0-9]*$ ]] || JOBS=1
# Jobs report their end on this pipe (one short line each: atomic); the main loop blocks on it.
mkfifo "$WORK/events"
exec 3<>"$WORK/events"
# job NAME FUNCTION ARG: FUNCTION ARG in the background, its output in $WORK/NAME/out.
job() {
	mkdir -p "$WORK/$1"
	({ "$2" "$3" 3>&-; } >"$WORK/$1/out" 2>&1 </dev/null; echo "$2 $1" >&3) &
}
report() { # NAME: a job's lines, counted
	[ -s "$WORK/$1/out" ] || return 0
	cat "$WORK/$1/out"
	PASSED_N=$((PASSED_N + $(grep -c '^ok - ' "$WORK/$1/out")))
	FAILED_N=$((FAILED_N + $(grep -c '^not ok - ' "$WORK/$1/out")))
	grep -q '^not ok - ' "$WORK/$1/out" && FAILED=1
	return 0
}

T0=$(now)
declare -A PREPARED=()
QUEUE=()
for k in "$@"; do
	QUEUE+=("$k")
	[ -n "${PREPARED[${k%+systemd}]+x}" ] && continue
	PREPARED[${k%+systemd}]=0
	job "${k%+systemd}" prepare "${k%+systemd}"
done
pending=${#PREPARED[@]} running=0
while [ ${#QUEUE[@]} -gt 0 ] || [ "$running" -gt 0 ] || [ "$pending" -gt 0 ]; do
	rest=()
	for k in "${QUEUE[@]}"; do
		if [ "$running" -lt "$JOBS" ] && [ "${PREPARED[${k%+systemd}]}" = 1 ]; then
			job "boot-$k" boot "$k"
			running=$((running + 1))
			echo "# $k: guest started ($running of at most $JOBS running; its lines when it ends)"
		else
			rest+=("$k")
		fi
	done
	QUEUE=("${rest[@]}")
	[ ${#QUEUE[@]} -gt 0 ] || [ "$running" -gt 0 ] || [ "$pending" -gt 0 ] || break
	read -r what name <&3 || break
	case $what in
	prepare) PREPARED[$name]=1 pending=$((pending - 1)) ;;
	boot) running=$((running - 1)) ;;
	esac
	report "$name"
done
echo "# timing (KERNELS_JOBS=$JOBS guests at once, KERNEL_SMP=$SMP CPUs each):"
for k in "$@"; do
	[ -s "$WORK/boot-$k/timing" ] && echo "#   $(cat "$WORK/boot-$k/timing")"
done
rm -rf "$WORK"
echo "# kernel matrix: $PASSED_N passed, $FAILED_N failed"
echo "# make test-kernels took $(awk -v s="$(secs "$T0" "$(now)")" 'BEGIN { printf "%.1f min", s / 60 }')"
exit "$FAILED"
