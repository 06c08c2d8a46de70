// SPDX-License-Identifier: GPL-2.0-only
/*
 * Count TCP retransmissions by family, kind and TCP state, the segments they carry and the
 * attempts that failed, in per-CPU maps. No per-event output: the exporter reads the maps when
 * it is scraped.
 *
 * Each program comes in two variants, without and with the netns label, and user space loads
 * one: the label choice is a compile-time constant, so the default path reads no configuration
 * (a read-only data load is still a cache line to fetch on every retransmission).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>
#include "retrans.h"
#include "maps.bpf.h"
#include "sample.bpf.h"

#define AF_INET 2
#define AF_INET6 10
#define EAGAIN 11
#define ENOMEM 12
#define EBUSY 16
#define EINVAL 22
#define EHOSTUNREACH 113

/*
 * Default labels: every slot of retrans.h, a plain index into this CPU's slice of a by-CPU
 * array (maps.bpf.h), so the hot path is an inlined lookup into the kernel's direct map.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* resized to possible CPUs */
	__type(key, __u32);
	__type(value, __u64[RT_STRIDE]);
} tcp_retransmits SEC(".maps");

/* With the netns label: the same slots per netns, bounded by max_series. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1); /* resized to max_series */
	__type(key, struct slot_key);
	__type(value, __u64);
} tcp_retransmits_netns SEC(".maps");

/* Family of the packets on the wire, which for an IPv6 socket with a v4-mapped peer is IPv4. */
static __always_inline __u8 sk_family(const struct sock *sk)
{
	const __u32 *a;

	switch (sk->__sk_common.skc_family) {
	case AF_INET:
		return RT_IPV4;
	case AF_INET6:
		a = sk->__sk_common.skc_v6_daddr.in6_u.u6_addr32;
		if (!a[0] && !a[1] && a[2] == bpf_htonl(0xffff))
			return RT_IPV4;
		return RT_IPV6;
	}
	return RT_OTHER;
}

static __always_inline __u32 clamp_state(__u8 state)
{
	return state < RT_NR_STATES ? state : RT_NR_STATES - 1;
}

/* Add n to a slot; false when the hash was full and the array took it instead. */
static __always_inline bool add(const struct sock *sk, __u64 *slice, __u32 slot, __u64 n,
				const bool netns)
{
	return slot_add(slice, &tcp_retransmits_netns,
			netns ? sk->__sk_common.skc_net.net->ns.inum : 0, slot, n, RT_STRIDE,
			netns);
}

static __always_inline void record_retransmit(const struct sock *sk, const struct sk_buff *skb,
					      int err, const bool netns)
{
	__u8 family = sk_family(sk);
	__u64 *slice = cpu_slice_of(&tcp_retransmits);
	__u32 slot;
	bool ok = true;

	sample_retrans(sk, &sk->__sk_common, RT_KIND_RETRANSMIT);
	if (err) {
		ok &= add(sk, slice, RT_FAILURES(family), 1, netns);
		/*
		 * __tcp_retransmit_skb() returns these before it adds to TcpRetransSegs (the packet
		 * is still queued in the host, no window, no memory, no route): the kernel has not
		 * retransmitted anything and will try again. Any other error comes from sending,
		 * after the kernel counted the segments (and TCPRetransFail).
		 */
		if (err == -EBUSY || err == -EAGAIN || err == -ENOMEM || err == -EINVAL ||
		    err == -EHOSTUNREACH)
			goto out;
	}
	slot = RT_PACKETS(RT_KIND_RETRANSMIT, family, clamp_state(sk->__sk_common.skc_state));
	ok &= add(sk, slice, slot, 1, netns);
	/* tcp_skb_pcount(): the segments TcpRetransSegs was increased by. */
	ok &= add(sk, slice, slot + 1, ((const struct tcp_skb_cb *)skb->cb)->tcp_gso_segs, netns);
out:
	if (!ok)
		slice_add(slice, RT_OVERFLOW, 1, RT_STRIDE);
}

/* Runs only when the SYN-ACK went out, right after TcpRetransSegs and TCPSynRetrans += 1. */
static __always_inline void record_synack(const struct sock *sk, const struct request_sock *req,
					  const bool netns)
{
	__u16 af = req->rsk_ops->family; /* the request's own: a v4 SYN on a v6 listener is v4 */
	__u8 family = af == AF_INET ? RT_IPV4 : af == AF_INET6 ? RT_IPV6 : RT_OTHER;
	__u8 state = sk->__sk_common.skc_state;
	__u64 *slice = cpu_slice_of(&tcp_retransmits);
	__u32 slot;
	bool ok = true;

	/* A listener retransmits for a request socket; a Fast Open child is the connection. */
	if (state == TCP_LISTEN)
		state = req->__req_common.skc_state;
	sample_retrans(sk, &req->__req_common, RT_KIND_SYNACK);
	slot = RT_PACKETS(RT_KIND_SYNACK, family, clamp_state(state));
	ok &= add(sk, slice, slot, 1, netns);
	ok &= add(sk, slice, slot + 1, 1, netns);
	if (!ok)
		slice_add(slice, RT_OVERFLOW, 1, RT_STRIDE);
}

/* Linux 6.17+: every attempt, with its result. */
SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(count_retransmit, const struct sock *sk, const struct sk_buff *skb, int err)
{
	record_retransmit(sk, skb, err, false);
	return 0;
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(count_retransmit_netns, const struct sock *sk, const struct sk_buff *skb, int err)
{
	record_retransmit(sk, skb, err, true);
	return 0;
}

/* Before 6.17 the tracepoint has no err and fires for successful retransmissions only. */
SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(count_retransmit_noerr, const struct sock *sk, const struct sk_buff *skb)
{
	record_retransmit(sk, skb, 0, false);
	return 0;
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(count_retransmit_noerr_netns, const struct sock *sk, const struct sk_buff *skb)
{
	record_retransmit(sk, skb, 0, true);
	return 0;
}

SEC("tp_btf/tcp_retransmit_synack")
int BPF_PROG(count_synack, const struct sock *sk, const struct request_sock *req)
{
	record_synack(sk, req, false);
	return 0;
}

SEC("tp_btf/tcp_retransmit_synack")
int BPF_PROG(count_synack_netns, const struct sock *sk, const struct request_sock *req)
{
	record_synack(sk, req, true);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
