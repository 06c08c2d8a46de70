// SPDX-License-Identifier: GPL-2.0-only
/*
 * The floor for tests/bench/connections.sh: an empty program on the same hook as
 * bpf/connections.bpf.c's count_connection, so its run time is what any
 * tp_btf/inet_sock_set_state program costs.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(inet_sock_set_state_floor, const struct sock *sk, int oldstate, int newstate)
{
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
