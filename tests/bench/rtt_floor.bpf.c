// SPDX-License-Identifier: GPL-2.0-only
/*
 * The floor for tests/bench/rtt.sh: a sockops program that sees exactly the callbacks
 * bpf/rtt.bpf.c sees (it turns the RTT callback on in the same places) and records nothing,
 * so its run time is what any sockops program costs on that event stream.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

SEC("sockops")
int tcp_rtt_floor(struct bpf_sock_ops *skops)
{
	switch (skops->op) {
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		bpf_sock_ops_cb_flags_set(skops,
					  skops->bpf_sock_ops_cb_flags | BPF_SOCK_OPS_RTT_CB_FLAG);
		break;
	}
	return 1;
}

char LICENSE[] SEC("license") = "GPL";
