#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Kernel functions (kfuncs) in the BPF objects the exporter embeds. libbpf 1.1 (Debian 12) fails
# a whole object whose kfunc the running kernel lacks, even a weak one, unless it may list
# module BTFs (CAP_SYS_ADMIN): as shipped, without root, on Linux 6.1, such an object does not
# load. So:
#   1. rtt names no kfunc; drops_nokfunc and retrans_nokfunc (the drops and retrans programs for
#      kernels without bpf_rdonly_cast) name none either.
#   2. drops and retrans name bpf_rdonly_cast and nothing else, and open only where the kernel
#      has it: the exporter's log says which reads drops chose, and that follows the kernel's
#      BTF.
#   3. Both objects of each carry the same programs and maps (one skeleton opens either).
# The objects are the build's own (build/*.bpf.o); the kernel matrix (make test-kernels) loads
# them on kernels without the kfuncs.
# schedule: parallel each
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
require_root_bpf
command -v bpftool >/dev/null || skip_all "needs bpftool"

# ksyms OBJECT: the kernel symbols (kfuncs, ksym variables) the object needs, one per line.
ksyms() {
	bpftool btf dump file "$1" |
		sed -n "/DATASEC '.ksyms'/,/^\[/ s/.*(\(FUNC\|VAR\) '\([^']*\)').*/\2/p"
}
# sections OBJECT: its programs (section, name) and maps, sorted.
sections() {
	llvm-objdump -t "$1" | awk '$3 == "F" || ($3 == "O" && $4 == ".maps") { print $4, $NF }' |
		sort
}

for o in rtt drops_nokfunc retrans_nokfunc; do
	[ -s "$BUILD/$o.bpf.o" ] || { not_ok "$o.bpf.o built"; continue; }
	check_eq "$o.bpf.o names no kfunc or kernel symbol" "" "$(ksyms "$BUILD/$o.bpf.o")"
done
for o in drops retrans; do
	check_eq "$o.bpf.o names bpf_rdonly_cast only" bpf_rdonly_cast "$(ksyms "$BUILD/$o.bpf.o")"
	check_eq "$o.bpf.o and ${o}_nokfunc.bpf.o: the same programs and maps" \
		"$(sections "$BUILD/$o.bpf.o" | md5sum)" "$(sections "$BUILD/${o}_nokfunc.bpf.o" | md5sum)"
done
ge "drops.bpf.o: programs found" "$(sections "$BUILD/drops.bpf.o" | grep -c ' count_drop')" 9

# The object for this kernel: direct reads exactly where the kernel has bpf_rdonly_cast.
want="helper reads"
kernel_has_kfunc bpf_rdonly_cast && want="direct reads"
printf '[collector.retrans]\nenabled = false\n[collector.rtt]\nenabled = false\n' >"$TMP/c.ini"
if start_exporter --config "$TMP/c.ini"; then
	check "drops chose $want (the kernel's BTF decides)" \
		grep -q "drops: attached count_drop to .*, $want)" "$EXPORTER_LOG"
else
	not_ok "exporter starts"
fi
finish
