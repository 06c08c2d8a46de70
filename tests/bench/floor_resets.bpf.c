// SPDX-License-Identifier: GPL-2.0-only
/*
 * The floor for tests/bench/resets.sh: an empty program on the same hook as bpf/resets.bpf.c's
 * count_sent, so its run time is what any tp_btf/tcp_send_reset program costs.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

SEC("tp_btf/tcp_send_reset")
int BPF_PROG(tcp_send_reset_floor, const struct sock *sk, const struct sk_buff *skb)
{
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
