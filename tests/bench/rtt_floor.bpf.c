// SPDX-License-Identifier: GPL-2.0-only
/*
 * The floor for tests/bench/rtt.sh: a sockops program that sees exactly the callbacks
 * bpf/rtt.bpf.c sees (it turns the RTT callback on in the same places) and records nothing,
 * so its run time is what any sockops program costs on that event stream.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "bits.bpf.h"
#include "maps.bpf.h"

#define AF_INET6 10

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

/*
 * The reference for the cells' cost (tests/bench/rtt.sh, "classic"): what bpf/rtt.bpf.c did with
 * default labels before cells and native buckets, a log2 bucket of the srtt and its count and
 * sum side by side on one line of this CPU's slice (24 bounds from 4 us, then +Inf; 2 families).
 */
#define CLASSIC_BUCKETS 25
#define CLASSIC_STRIDE CPU_STRIDE(2 * CLASSIC_BUCKETS * 2)

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* resized to possible CPUs */
	__type(key, __u32);
	__type(value, __u64[CLASSIC_STRIDE]);
} classic_by_family SEC(".maps");

SEC("sockops")
int tcp_rtt_classic(struct bpf_sock_ops *skops)
{
	__u32 srtt, us, b, family = skops->family == AF_INET6, idx;
	__u64 *slice;

	switch (skops->op) {
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		bpf_sock_ops_cb_flags_set(skops,
					  skops->bpf_sock_ops_cb_flags | BPF_SOCK_OPS_RTT_CB_FLAG);
		return 1;
	case BPF_SOCK_OPS_RTT_CB:
		break;
	default:
		return 1;
	}
	if (family && !skops->remote_ip6[0] && !skops->remote_ip6[1] &&
	    skops->remote_ip6[2] == bpf_htonl(0xffff))
		family = 0;
	srtt = skops->args[1];
	us = (srtt ? srtt : skops->srtt_us) >> 3;
	b = us <= 4 ? 0 : log2_u32(us - 1) - 1;
	b = b < CLASSIC_BUCKETS - 1 ? b : CLASSIC_BUCKETS - 1;
	idx = (family * CLASSIC_BUCKETS + b) * 2;
	slice = cpu_slice_of(&classic_by_family);
	slice_add(slice, idx, 1, CLASSIC_STRIDE);
	slice_add(slice, idx + 1, us, CLASSIC_STRIDE);
	return 1;
}

char LICENSE[] SEC("license") = "GPL";
