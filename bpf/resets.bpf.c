// SPDX-License-Identifier: GPL-2.0-only
/*
 * Count TCP resets sent (by family, reset reason and TCP state) and received (by family and
 * TCP state) in per-CPU maps. No per-event output: the exporter reads the maps when scraped.
 *
 * As in bpf/retrans.bpf.c each program comes without and with the netns label, and the sent
 * one also without the reason argument (before Linux 6.10): user space loads one per hook, so
 * the label choice is a compile-time constant and the default path reads no configuration.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>
#include "resets.h"
#include "maps.bpf.h"
#include "sample.bpf.h"

#define AF_INET6 10
#define ETH_P_IPV6 0x86DD

/* Default labels: every slot of resets.h in this CPU's slice of a by-CPU array (maps.bpf.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* resized to possible CPUs */
	__type(key, __u32);
	__type(value, __u64[RS_STRIDE]);
} tcp_resets SEC(".maps");

/* With the netns label: the same slots per netns, bounded by max_series. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1); /* resized to max_series */
	__type(key, struct slot_key);
	__type(value, __u64);
} tcp_resets_netns SEC(".maps");

/*
 * Family of the packets on the wire, which for an IPv6 socket with a v4-mapped peer is IPv4.
 * Any socket here (full, request or TIME_WAIT) starts with a struct sock_common.
 */
static __always_inline __u8 sk_family(const struct sock *sk)
{
	const __u32 *a;

	if (sk->__sk_common.skc_family != AF_INET6)
		return RS_IPV4;
	a = sk->__sk_common.skc_v6_daddr.in6_u.u6_addr32;
	return !a[0] && !a[1] && a[2] == bpf_htonl(0xffff) ? RS_IPV4 : RS_IPV6;
}

static __always_inline __u8 sk_state(const struct sock *sk)
{
	__u8 state = sk->__sk_common.skc_state;

	return state < RS_NR_STATES ? state : RS_NR_STATES - 1;
}

/* Add 1 to a slot, in netns's series with the label; past max_series in the array's. */
static __always_inline void count(__u32 slot, __u32 netns, const bool with_netns)
{
	__u64 *slice = cpu_slice_of(&tcp_resets);

	/*
	 * The compiler knows the slot is in range and drops slice_add's check; 6.1's verifier
	 * cannot follow it through the slot's arithmetic and refuses the access: keep the check.
	 */
	barrier_var(slot);
	if (!slot_add(slice, &tcp_resets_netns, netns, slot, 1, RS_STRIDE, with_netns))
		slice_add(slice, RS_OVERFLOW, 1, RS_STRIDE);
}

/*
 * sk: the socket the reset is for (full, request or TIME_WAIT), or NULL when no socket
 * matched the segment skb; skb: that segment, or NULL for a reset the socket sends of its own
 * (tcp_send_active_reset: abort on close, linger 0, ...).
 */
static __always_inline void record_sent(const struct sock *sk, const struct sk_buff *skb,
					__u32 reason, const bool with_netns)
{
	struct net_device *dev;
	__u32 netns = 0;
	__u8 family, state;

	if (sk) {
		family = sk_family(sk);
		state = sk_state(sk);
		if (with_netns)
			netns = sk->__sk_common.skc_net.net->ns.inum;
	} else {
		/* The segment's own family and device (where it arrived, the reset leaves). */
		family = skb && skb->protocol == bpf_htons(ETH_P_IPV6) ? RS_IPV6 : RS_IPV4;
		state = RS_STATE_NONE;
		dev = skb ? skb->dev : NULL;
		if (with_netns && dev)
			netns = dev->nd_net.net->ns.inum;
	}
	sample_reset(sk, skb, reason, state, family, RS_DIR_SENT);
	/* Without a reason (a constant then) all go to reason slot 0. */
	if (reason == RS_REASON_NONE)
		reason = 0;
	count(RS_SENT(family, reason < RS_NR_REASONS ? reason : RS_NR_REASONS - 1, state), netns,
	      with_netns);
}

static __always_inline void record_received(const struct sock *sk, const bool with_netns)
{
	__u8 family = sk_family(sk), state = sk_state(sk);

	sample_reset(sk, NULL, RS_REASON_NONE, state, family, RS_DIR_RECEIVED);
	count(RS_RECEIVED(family, state), with_netns ? sk->__sk_common.skc_net.net->ns.inum : 0,
	      with_netns);
}

/* Linux 6.10+: with the reason, and for every reset (no socket, TIME_WAIT, request sockets). */
SEC("tp_btf/tcp_send_reset")
int BPF_PROG(count_sent, const struct sock *sk, const struct sk_buff *skb, __u32 reason)
{
	record_sent(sk, skb, reason, false);
	return 0;
}

SEC("tp_btf/tcp_send_reset")
int BPF_PROG(count_sent_netns, const struct sock *sk, const struct sk_buff *skb, __u32 reason)
{
	record_sent(sk, skb, reason, true);
	return 0;
}

/* Before 6.10: no reason (rendered "__unknown__"), and only full sockets fire it. */
SEC("tp_btf/tcp_send_reset")
int BPF_PROG(count_sent_noreason, const struct sock *sk, const struct sk_buff *skb)
{
	record_sent(sk, skb, RS_REASON_NONE, false);
	return 0;
}

SEC("tp_btf/tcp_send_reset")
int BPF_PROG(count_sent_noreason_netns, const struct sock *sk, const struct sk_buff *skb)
{
	record_sent(sk, skb, RS_REASON_NONE, true);
	return 0;
}

/* tcp_reset(): a RST accepted by a full socket, before the socket is closed. */
SEC("tp_btf/tcp_receive_reset")
int BPF_PROG(count_received, const struct sock *sk)
{
	record_received(sk, false);
	return 0;
}

SEC("tp_btf/tcp_receive_reset")
int BPF_PROG(count_received_netns, const struct sock *sk)
{
	record_received(sk, true);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
