/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Sampled events into one ring buffer shared by every collector's object (user space makes
 * each object reuse the same map). Off by default: sample_cfg is read-only data, so with
 * rate 0 the verifier removes the code behind each caller's test of it (tests/integration/
 * drops.sh checks count_drop_compat's); the drop programs that sample are loaded only with a
 * rate, and test nothing. When on: 1 in `rate` events (per CPU, random gaps averaging rate - 1
 * events; tests/integration/events.sh checks 1 in 10), then a per-CPU token bucket (GCRA: one
 * theoretical arrival time), then the ring buffer; what the bucket refuses or the ring buffer
 * has no room for is counted.
 */
#ifndef NETSTACK_SAMPLE_BPF_H
#define NETSTACK_SAMPLE_BPF_H

#include "cpu_array.h"
#include "sample.h"

#define EV_ETH_P_IP 0x0800
#define EV_ETH_P_IPV6 0x86DD
#define EV_AF_INET 2
#define EV_AF_INET6 10

const volatile struct sample_config sample_cfg;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096); /* replaced by the shared one when sampling is on */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EV_NR_STATS);
	__type(key, __u32);
	__type(value, __u64);
} events_stats SEC(".maps");

/* Two lines per CPU, of which it writes the first 12 bytes: no two CPUs write to one line. */
struct sample_state {
	__u64 tat;  /* the token bucket's theoretical arrival time */
	__u32 skip; /* events to let pass before the next sample */
	__u32 pad[29];
};
_Static_assert(sizeof(struct sample_state) == CPU_ELEM_SIZE &&
		       __builtin_offsetof(struct sample_state, pad) <= CPU_LINE,
	       "a CPU's sample_state shares no line with another's");

/*
 * By-CPU (bpf/maps.bpf.h), not per-CPU: looked up on every event, and a plain array's lookup
 * is arithmetic where a per-CPU one first loads the value's pointer.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* resized to possible CPUs */
	__type(key, __u32);
	__type(value, struct sample_state);
} events_state SEC(".maps");

static __always_inline void sample_stat(__u32 stat)
{
	__u64 *v = bpf_map_lookup_elem(&events_stats, &stat);

	if (v)
		*v += 1;
}

/* A zeroed record with its header filled, or NULL when this event is not sampled. */
static __always_inline struct event *sample_begin(__u16 type)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct sample_state *st;
	struct event *e;
	__u64 now, tat;

	st = bpf_map_lookup_elem(&events_state, &cpu);
	if (!st)
		return NULL;
	/* The common case is a countdown; a random gap, on average rate - 1, follows a sample. */
	if (st->skip) {
		st->skip--;
		return NULL;
	}
	st->skip = bpf_get_prandom_u32() % sample_cfg.gap_mod;
	now = bpf_ktime_get_ns();
	if (sample_cfg.interval_ns) {
		tat = st->tat > now ? st->tat : now;
		if (tat - now > sample_cfg.burst_ns) {
			sample_stat(EV_STAT_RATELIMITED);
			return NULL;
		}
		st->tat = tat + sample_cfg.interval_ns;
	}
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		sample_stat(EV_STAT_LOST);
		return NULL;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->type = type;
	e->size = sizeof(*e);
	e->cpu = bpf_get_smp_processor_id();
	e->ts_ns = now;
	sample_stat(EV_STAT_SAMPLED);
	return e;
}

/* A wakeup per event would cost more than the event: wake the reader when it has a backlog. */
static __always_inline void sample_submit(struct event *e)
{
	bool wake = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= sample_cfg.wakeup_bytes;

	bpf_ringbuf_submit(e, wake ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
}

/* Ports and TCP flags at l4 (the first 14 bytes of a TCP or UDP header). */
static __always_inline void sample_l4(struct event_flow *f, const unsigned char *l4)
{
	__u8 h[14];

	if (f->proto != IPPROTO_TCP && f->proto != IPPROTO_UDP)
		return;
	if (bpf_probe_read_kernel(h, f->proto == IPPROTO_TCP ? 14 : 4, l4))
		return;
	f->sport = (__u16)h[0] << 8 | h[1];
	f->dport = (__u16)h[2] << 8 | h[3];
	if (f->proto == IPPROTO_TCP)
		f->tcp_flags = h[13];
}

/* The L3/L4 headers of a dropped packet, when it has an IP network header. */
static __always_inline void sample_headers(struct event_flow *f, struct sk_buff *skb)
{
	unsigned char *head = skb->head;
	__u16 nh_off = skb->network_header, th_off = skb->transport_header;
	struct iphdr ip4;
	struct ipv6hdr ip6;

	switch (bpf_ntohs(skb->protocol)) {
	case EV_ETH_P_IP:
		if (bpf_probe_read_kernel(&ip4, sizeof(ip4), head + nh_off))
			return;
		f->family = 4;
		f->proto = ip4.protocol;
		__builtin_memcpy(f->saddr, &ip4.saddr, 4);
		__builtin_memcpy(f->daddr, &ip4.daddr, 4);
		/* Not yet set on every path: the header follows the IP header then. */
		if (th_off == (__u16)~0 || th_off <= nh_off)
			th_off = nh_off + ip4.ihl * 4;
		break;
	case EV_ETH_P_IPV6:
		if (bpf_probe_read_kernel(&ip6, sizeof(ip6), head + nh_off))
			return;
		f->family = 6;
		f->proto = ip6.nexthdr; /* extension headers are not walked */
		__builtin_memcpy(f->saddr, &ip6.saddr, 16);
		__builtin_memcpy(f->daddr, &ip6.daddr, 16);
		if (th_off == (__u16)~0 || th_off <= nh_off)
			th_off = nh_off + sizeof(ip6);
		break;
	default:
		return;
	}
	sample_l4(f, head + th_off);
}

/*
 * No test of the rate here: the sample_drop* programs call this, loaded only with a rate, and
 * count_drop_compat after its own test of it.
 */
static __always_inline void sample_drop_event(struct sk_buff *skb, void *location, __u32 reason)
{
	struct net_device *dev;
	struct event *e;
	struct sock *sk;

	e = sample_begin(EV_DROP);
	if (!e)
		return;
	e->drop.location = (__u64)location;
	e->drop.reason = reason;
	e->drop.len = skb->len;
	dev = skb->dev;
	if (dev) {
		e->ifindex = dev->ifindex;
		e->netns = dev->nd_net.net->ns.inum;
		__builtin_memcpy(e->drop.ifname, dev->name, sizeof(e->drop.ifname));
	} else if ((sk = skb->sk)) {
		e->netns = sk->__sk_common.skc_net.net->ns.inum;
	}
	sample_headers(&e->flow, skb);
	sample_submit(e);
}

/* The 4-tuple of a socket (or request socket) into f. */
static __always_inline void sample_skc(struct event_flow *f, const struct sock_common *skc)
{
	f->proto = IPPROTO_TCP;
	f->sport = skc->skc_num;
	f->dport = bpf_ntohs(skc->skc_dport);
	if (skc->skc_family == EV_AF_INET) {
		f->family = 4;
		__builtin_memcpy(f->saddr, &skc->skc_rcv_saddr, 4);
		__builtin_memcpy(f->daddr, &skc->skc_daddr, 4);
	} else if (skc->skc_family == EV_AF_INET6) {
		f->family = 6;
		__builtin_memcpy(f->saddr, &skc->skc_v6_rcv_saddr, 16);
		__builtin_memcpy(f->daddr, &skc->skc_v6_daddr, 16);
	}
}

/* skc: the connection (for a SYN-ACK, the request socket); sk: the socket it belongs to. */
static __always_inline void sample_retrans(const struct sock *sk, const struct sock_common *skc,
					   __u8 kind)
{
	struct tcp_sock *tp;
	struct event *e;

	if (!sample_cfg.rate)
		return;
	e = sample_begin(EV_RETRANS);
	if (!e)
		return;
	sample_skc(&e->flow, skc);
	e->netns = skc->skc_net.net->ns.inum;
	e->ifindex = sk->sk_rx_dst_ifindex;
	e->retrans.state = skc->skc_state;
	e->retrans.kind = kind;
	tp = bpf_skc_to_tcp_sock((void *)sk);
	if (tp) {
		e->retrans.srtt_us = tp->srtt_us >> 3;
		e->retrans.cwnd = tp->snd_cwnd;
	}
	sample_submit(e);
}

/*
 * A reset sent (dir RS_DIR_SENT, with the segment that caused it, skb, when there is one) or
 * received. The flow is the reset's own direction: from this host (source) to the peer. Without
 * a socket the flow comes from the segment's headers, turned around.
 */
static __always_inline void sample_reset(const struct sock *sk, const struct sk_buff *skb,
					 __u32 reason, __u8 state, __u8 family, __u8 dir)
{
	struct event_flow in;
	struct net_device *dev;
	struct event *e;

	if (!sample_cfg.rate)
		return;
	__builtin_memset(&in, 0, sizeof(in));
	e = sample_begin(EV_RESET);
	if (!e)
		return;
	e->reset.reason = reason;
	e->reset.state = state;
	e->reset.dir = dir;
	e->reset.family = family;
	if (skb) {
		sample_headers(&in, (struct sk_buff *)skb);
		dev = skb->dev;
		if (dev) {
			e->ifindex = dev->ifindex;
			e->netns = dev->nd_net.net->ns.inum;
		}
	}
	if (sk) {
		sample_skc(&e->flow, &sk->__sk_common);
		e->netns = sk->__sk_common.skc_net.net->ns.inum;
	} else {
		e->flow.family = in.family;
		e->flow.proto = in.proto;
		e->flow.sport = in.dport;
		e->flow.dport = in.sport;
		__builtin_memcpy(e->flow.saddr, in.daddr, 16);
		__builtin_memcpy(e->flow.daddr, in.saddr, 16);
	}
	e->flow.tcp_flags = in.tcp_flags; /* of the segment the reset answers */
	sample_submit(e);
}

/*
 * The network namespace of a sockops program's socket (0 if it has none): through a helper,
 * not a kfunc, so that the object loads on any kernel and without CAP_SYS_ADMIN. The helper
 * needs CAP_PERFMON.
 */
static __always_inline __u32 skops_netns(struct bpf_sock_ops *skops)
{
	struct bpf_sock *sk = skops->sk;
	struct tcp_sock *tp;

	if (!sk)
		return 0;
	tp = bpf_skc_to_tcp_sock(sk);
	return tp ? tp->inet_conn.icsk_inet.sk.__sk_common.skc_net.net->ns.inum : 0;
}

/* In an RTT callback; its arguments are 0 before Linux 6.10, then the srtt is the sample. */
static __always_inline void sample_rtt(struct bpf_sock_ops *skops)
{
	struct event *e;
	__u32 rtt_us;

	if (!sample_cfg.rate)
		return;
	rtt_us = skops->args[1] ? skops->args[0] : skops->srtt_us >> 3;
	if (rtt_us < sample_cfg.min_rtt_us)
		return;
	e = sample_begin(EV_RTT);
	if (!e)
		return;
	e->rtt.rtt_us = rtt_us;
	e->rtt.srtt_us = skops->srtt_us >> 3;
	e->flow.proto = IPPROTO_TCP;
	e->flow.sport = skops->local_port;
	e->flow.dport = bpf_ntohl(skops->remote_port); /* be16 in the upper half */
	if (skops->family == EV_AF_INET) {
		e->flow.family = 4;
		__builtin_memcpy(e->flow.saddr, &skops->local_ip4, 4);
		__builtin_memcpy(e->flow.daddr, &skops->remote_ip4, 4);
	} else {
		/* Context fields take constant offsets only: one load each. */
		__u32 s6[4] = { skops->local_ip6[0], skops->local_ip6[1], skops->local_ip6[2],
				skops->local_ip6[3] };
		__u32 d6[4] = { skops->remote_ip6[0], skops->remote_ip6[1], skops->remote_ip6[2],
				skops->remote_ip6[3] };

		e->flow.family = 6;
		__builtin_memcpy(e->flow.saddr, s6, 16);
		__builtin_memcpy(e->flow.daddr, d6, 16);
	}
	e->netns = skops_netns(skops);
	sample_submit(e);
}

#endif
