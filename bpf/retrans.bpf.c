// SPDX-License-Identifier: GPL-2.0-only
/*
 * Count TCP retransmissions by family, kind, cause and TCP state, the segments they carry and
 * the attempts that failed, in per-CPU maps. No per-event output: the exporter reads the maps
 * when it is scraped.
 *
 * Each program comes in variants, with and without the cause and netns labels and sampling, and
 * user space loads one: the choice is a compile-time constant, so the default path reads no
 * configuration (a read-only data load is still a cache line to fetch on every retransmission,
 * and a TLB entry: 11 ns of the 100 in paired rounds, docs/cost.md).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>
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
/* A macro of include/net/tcp.h, so not in BTF (the same in 6.1 to 6.18). */
#define TCPHDR_SYN 0x02

#ifndef RETRANS_NO_KFUNC
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;
/* The socket as the inet_connection_sock it is: a cast the verifier removes (Linux 6.2+). */
#define icsk_of(sk)                                                                                \
	((const struct inet_connection_sock *)bpf_rdonly_cast(                                     \
		sk, bpf_core_type_id_kernel(struct inet_connection_sock)))
#else
/* Before 6.2 (bpf/retrans_nokfunc.bpf.c): a helper call, which checks what the cast assumes. */
#define icsk_of(sk) ((const struct inet_connection_sock *)bpf_skc_to_tcp_sock((void *)(sk)))
#endif

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

/*
 * Why the kernel retransmits skb, from its own state at the tracepoint (docs/collectors/retrans.md
 * derives each case from the kernel source, Linux 6.1 to 6.18):
 * - syn: a SYN, what __tcp_retransmit_skb() counts in TCPSynRetrans;
 * - timeout: the socket in loss state (TCP_CA_Loss), which the retransmission timer enters
 *   before it resends the head, and in which the resends that follow it count in
 *   TCPSlowStartRetrans;
 * - tail_loss_probe: a segment not marked lost (TCPCB_LOST): tcp_send_loss_probe() resends the
 *   last segment as it is, while every other path resends only segments marked lost
 *   (tcp_xmit_retransmit_queue() skips the others; the retransmission timer resends the head
 *   after tcp_enter_loss() marked it);
 * - fast: any other, i.e. tcp_xmit_retransmit_queue() outside loss state, which the kernel
 *   counts in TCPFastRetrans.
 * Without branches (a rare event finds the branch predictor cold too): with the causes numbered
 * timeout 0, fast 1, tail_loss_probe 2, syn 3, the cause is (not in loss) << (not lost), or 3.
 * The segment's flags and mark are in the line of skb->cb the count of segments is read from;
 * the loss state is in a line of the socket the kernel's retransmit path has just read.
 */
_Static_assert(RT_CAUSE_TIMEOUT == 0 && RT_CAUSE_FAST == 1 && RT_CAUSE_TAIL_LOSS_PROBE == 2 &&
		       RT_CAUSE_SYN == 3,
	       "retransmit_cause() computes these numbers");
_Static_assert(TCPHDR_SYN == 1 << 1 && TCPCB_LOST == 1 << 2, "retransmit_cause() shifts by these");

static __always_inline __u32 retransmit_cause(const struct sock *sk, const struct tcp_skb_cb *cb)
{
	__u32 syn = (cb->tcp_flags >> 1) & 1, lost = (cb->sacked >> 2) & 1, not_loss;
	const struct inet_connection_sock *icsk = icsk_of(sk);

#ifdef RETRANS_NO_KFUNC
	/* The tracepoint's socket is a full TCP socket: the helper does not fail. */
	if (!icsk)
		return RT_CAUSE_FAST;
#endif
	/* ca_state != TCP_CA_Loss as 0 or 1, for a 5-bit ca_state: ((x ^ k) + 31) >> 5. */
	not_loss = ((BPF_CORE_READ_BITFIELD(icsk, icsk_ca_state) ^ TCP_CA_Loss) + 31) >> 5;
	return not_loss << (lost ^ 1) | syn * RT_CAUSE_SYN;
}

static __always_inline void record_retransmit(const struct sock *sk, const struct sk_buff *skb,
					      int err, const bool cause, const bool netns,
					      const bool sample)
{
	const struct tcp_skb_cb *cb = (const struct tcp_skb_cb *)skb->cb;
	__u8 family = sk_family(sk);
	__u64 *slice = cpu_slice_of(&tcp_retransmits);
	__u64 slot;
	bool ok = true;

	/* Only the sample_* programs: the test of the rate is a load from read-only data, a
	 * cache line and a TLB entry (vmalloc'd) that a rare event would find cold every time. */
	if (sample)
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
	slot = RT_RETRANSMIT(cause ? retransmit_cause(sk, cb) : 0, family,
			     clamp_state(sk->__sk_common.skc_state));
	/* Never true; a test of all 64 bits, which bounds the index for 5.10's and 6.1's verifiers. */
	barrier_var(slot);
	if (slot >= RT_STRIDE - 1)
		return;
	if (!netns) {
		/* The pair side by side: one test of the slice for both. */
		if (slice) {
			__u64 *pair = &slice[slot];

			pair[0] += 1;
			/* tcp_skb_pcount(): the segments TcpRetransSegs was increased by. */
			pair[1] += cb->tcp_gso_segs;
		}
		return;
	}
	ok &= add(sk, slice, slot, 1, netns);
	ok &= add(sk, slice, slot + 1, cb->tcp_gso_segs, netns);
out:
	if (!ok)
		slice_add(slice, RT_OVERFLOW, 1, RT_STRIDE);
}

/* Runs only when the SYN-ACK went out, right after TcpRetransSegs and TCPSynRetrans += 1. */
static __always_inline void record_synack(const struct sock *sk, const struct request_sock *req,
					  const bool netns, const bool sample)
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
	if (sample)
		sample_retrans(sk, &req->__req_common, RT_KIND_SYNACK);
	slot = RT_SYNACK(family, clamp_state(state));
	ok &= add(sk, slice, slot, 1, netns);
	ok &= add(sk, slice, slot + 1, 1, netns);
	if (!ok)
		slice_add(slice, RT_OVERFLOW, 1, RT_STRIDE);
}

/*
 * The variants: with the cause label (the default) or without, with the netns label or without,
 * for the tracepoint with err (Linux 6.17+: every attempt, with its result) or without (before
 * 6.17, where it fires for successful retransmissions only); count_* without sampling, sample_*
 * with (loaded only when sampling is on).
 */
#define RETRANSMIT_PROG(name, cause, netns, sample)                                                \
	SEC("tp_btf/tcp_retransmit_skb")                                                           \
	int BPF_PROG(name, const struct sock *sk, const struct sk_buff *skb, int err)              \
	{                                                                                          \
		record_retransmit(sk, skb, err, cause, netns, sample);                             \
		return 0;                                                                          \
	}
/* Before 6.17 the tracepoint has no err: the program must not read a third argument. */
#define RETRANSMIT_PROG_NOERR(name, cause, netns, sample)                                          \
	SEC("tp_btf/tcp_retransmit_skb")                                                           \
	int BPF_PROG(name, const struct sock *sk, const struct sk_buff *skb)                       \
	{                                                                                          \
		record_retransmit(sk, skb, 0, cause, netns, sample);                               \
		return 0;                                                                          \
	}
#define RETRANSMIT_PROGS(prefix, sample)                                                           \
	RETRANSMIT_PROG(prefix##_retransmit, true, false, sample)                                  \
	RETRANSMIT_PROG(prefix##_retransmit_netns, true, true, sample)                             \
	RETRANSMIT_PROG(prefix##_retransmit_nocause, false, false, sample)                         \
	RETRANSMIT_PROG(prefix##_retransmit_nocause_netns, false, true, sample)                    \
	RETRANSMIT_PROG_NOERR(prefix##_retransmit_noerr, true, false, sample)                      \
	RETRANSMIT_PROG_NOERR(prefix##_retransmit_noerr_netns, true, true, sample)                 \
	RETRANSMIT_PROG_NOERR(prefix##_retransmit_noerr_nocause, false, false, sample)             \
	RETRANSMIT_PROG_NOERR(prefix##_retransmit_noerr_nocause_netns, false, true, sample)        \
	SEC("tp_btf/tcp_retransmit_synack")                                                        \
	int BPF_PROG(prefix##_synack, const struct sock *sk, const struct request_sock *req)       \
	{                                                                                          \
		record_synack(sk, req, false, sample);                                             \
		return 0;                                                                          \
	}                                                                                          \
	SEC("tp_btf/tcp_retransmit_synack")                                                        \
	int BPF_PROG(prefix##_synack_netns, const struct sock *sk, const struct request_sock *req) \
	{                                                                                          \
		record_synack(sk, req, true, sample);                                              \
		return 0;                                                                          \
	}

RETRANSMIT_PROGS(count, false)
RETRANSMIT_PROGS(sample, true)

char LICENSE[] SEC("license") = "GPL";
