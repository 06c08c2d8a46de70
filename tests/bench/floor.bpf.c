// SPDX-License-Identifier: GPL-2.0-only
/*
 * The floor for tests/bench/drops.sh: an empty program on the same hook as bpf/drops.bpf.c,
 * so its run time is what any tp_btf/kfree_skb program costs (dispatch and bpf_stats clocks).
 * Not named "floor": clang knows that name as the libm builtin.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

SEC("tp_btf/kfree_skb")
int BPF_PROG(kfree_skb_floor, struct sk_buff *skb, void *location, enum skb_drop_reason reason)
{
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
