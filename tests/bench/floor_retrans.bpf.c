// SPDX-License-Identifier: GPL-2.0-only
/*
 * The floor for tests/bench/retrans.sh: an empty program on the same hook as bpf/retrans.bpf.c's
 * count_retransmit, so its run time is what any tp_btf/tcp_retransmit_skb program costs.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(tcp_retransmit_floor, const struct sock *sk, const struct sk_buff *skb)
{
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
