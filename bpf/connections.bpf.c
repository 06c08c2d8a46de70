// SPDX-License-Identifier: GPL-2.0-only
/*
 * Count TCP connections by family, direction and outcome from the state changes of TCP
 * sockets (tp_btf/inet_sock_set_state), in per-CPU maps. No per-event output: the exporter
 * reads the maps when it is scraped.
 *
 * With handshake timing, also the time each connection took to become established, as a
 * histogram per family and direction (docs/collectors/connections.md says where each time
 * comes from).
 *
 * The program comes in four variants, without and with the netns label, without and with
 * handshake timing, and user space loads one: both choices are compile-time constants, so the
 * default path reads no configuration. Most state changes are not counted (a connection makes
 * five to seven): those return after comparing the two states, which the tracepoint passes in
 * registers.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>
#include "connections.h"
#include "maps.bpf.h"
#include "native.bpf.h"

#define AF_INET 2
#define AF_INET6 10
#define EPIPE 32
#define ECONNABORTED 103
#define ECONNRESET 104

/* States an established connection leaves for CLOSE from. */
#define ENDING_STATES                                                                              \
	(1u << TCP_ESTABLISHED | 1u << TCP_CLOSE_WAIT | 1u << TCP_FIN_WAIT1 |                      \
	 1u << TCP_FIN_WAIT2 | 1u << TCP_CLOSING | 1u << TCP_LAST_ACK)

/* Default labels: every slot of connections.h in this CPU's slice of a by-CPU array. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* resized to possible CPUs */
	__type(key, __u32);
	__type(value, __u64[CN_STRIDE]);
} tcp_connections SEC(".maps");

/* With the netns label: the same slots per netns, bounded by max_series. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1); /* resized to max_series */
	__type(key, struct slot_key);
	__type(value, __u64);
} tcp_connections_netns SEC(".maps");

/*
 * Handshake timing, active side: when connect() moved the socket to SYN_SENT (ns), by socket
 * address, taken out when the handshake ends: a set-associative table in a plain array (one
 * cache line a set, HS_WAYS sockets), the set chosen by a hash of the address. A hash map would
 * do the same at several times the cost per connect (docs/collectors/connections.md); here a
 * connect pending while HS_WAYS later ones of its set began loses its start (the oldest goes)
 * and counts as untimed.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HS_SETS);
	__type(key, __u32);
	__type(value, struct hs_set);
} tcp_handshake_start SEC(".maps");

/*
 * The set of sk: a multiplicative hash of its address's low half. A 32-bit copy of a pointer is
 * a number to the verifier of a program loaded with CAP_PERFMON, as tracing programs are, but
 * no other 32-bit operation on a pointer is: the copy is written out, or clang may fold the
 * truncation into the multiplication.
 */
static __always_inline struct hs_set *hs_set_of(const struct sock *sk)
{
	__u32 lo;

	asm volatile("%0 = %1" : "=w"(lo) : "w"((__u32)(__u64)sk));
	__u32 set = (lo * 0x9e3779b9u) >> (32 - HS_SETS_SHIFT);

	return bpf_map_lookup_elem(&tcp_handshake_start, &set);
}

_Static_assert((HS_WAYS & (HS_WAYS - 1)) == 0, "HS_WAYS: a power of two");

/* Keep now as sk's start: in its own way (left by a missed event), a free one, or the oldest. */
static __always_inline void hs_start(const struct sock *sk)
{
	struct hs_set *s = hs_set_of(sk);
	__u64 key = (__u64)sk, now = bpf_ktime_get_ns(), oldest = ~0ull;
	__u32 way = HS_WAYS, w;

	if (!s)
		return;
#pragma unroll
	for (w = 0; w < HS_WAYS; w++)
		if (way == HS_WAYS && s->sk[w] == key)
			way = w;
#pragma unroll
	for (w = 0; w < HS_WAYS; w++)
		if (way == HS_WAYS && !s->sk[w])
			way = w;
	if (way == HS_WAYS) {
#pragma unroll
		for (w = 0; w < HS_WAYS; w++) {
			if (s->start[w] < oldest) {
				oldest = s->start[w];
				way = w;
			}
		}
	}
	way &= HS_WAYS - 1;
	s->start[way] = now;
	s->sk[way] = key;
}

/* sk's start taken out of the table, or 0 if it has none. */
static __always_inline __u64 hs_take(const struct sock *sk)
{
	struct hs_set *s = hs_set_of(sk);
	__u64 key = (__u64)sk;

	if (!s)
		return 0;
#pragma unroll
	for (__u32 w = 0; w < HS_WAYS; w++) {
		if (s->sk[w] == key) {
			s->sk[w] = 0;
			return s->start[w];
		}
	}
	return 0;
}

/*
 * Native buckets: the edges of the configured schema, and the stride of a CPU's slice of
 * tcp_handshake_native (HS_NATIVE_STRIDE); 0: native buckets off, and no code for them.
 */
const volatile struct native_table hs_native_table;
const volatile __u32 native_stride;

/* Native bucket counts by CPU (connections.h), a slice of native_stride u64 per element. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* resized to possible CPUs */
	__type(key, __u32);
	__uint(value_size, sizeof(__u64)); /* resized to native_stride u64 */
} tcp_handshake_native SEC(".maps");

/* Upper bounds of the classic buckets in us (connections.h), padded to 32 with U32_MAX. */
static const __u32 hs_bounds[32] = {
	HS_BOUND(0),  HS_BOUND(1),  HS_BOUND(2),  HS_BOUND(3),	HS_BOUND(4),  HS_BOUND(5),
	HS_BOUND(6),  HS_BOUND(7),  HS_BOUND(8),  HS_BOUND(9),	HS_BOUND(10), HS_BOUND(11),
	HS_BOUND(12), HS_BOUND(13), HS_BOUND(14), HS_BOUND(15), HS_BOUND(16), HS_BOUND(17),
	HS_BOUND(18), HS_BOUND(19), HS_BOUND(20), ~0u,		~0u,	      ~0u,
	~0u,	      ~0u,	    ~0u,	  ~0u,		~0u,	      ~0u,
	~0u,	      ~0u,
};
_Static_assert(HS_NR_BOUNDS == 21, "hs_bounds: one entry per bound");

/* Family of the packets on the wire, which for an IPv6 socket with a v4-mapped peer is IPv4. */
static __always_inline __u32 sk_family(const struct sock *sk)
{
	const __u32 *a;

	switch (sk->__sk_common.skc_family) {
	case AF_INET:
		return CN_IPV4;
	case AF_INET6:
		a = sk->__sk_common.skc_v6_daddr.in6_u.u6_addr32;
		if (!a[0] && !a[1] && a[2] == bpf_htonl(0xffff))
			return CN_IPV4;
		return CN_IPV6;
	}
	return CN_OTHER;
}

/*
 * How an established connection ended, when it goes to CLOSE from oldstate. The kernel sets
 * sk_err before it closes for a reset received (ECONNRESET; EPIPE in CLOSE_WAIT), an abort
 * (ECONNABORTED: tcp_abort, ss -K) and a timeout (ETIMEDOUT, or the ICMP error behind it);
 * a reset this host sends when its application aborts (close() with unread data, SO_LINGER 0)
 * leaves sk_err 0 until after the state change, and is the only way from ESTABLISHED or
 * CLOSE_WAIT to CLOSE without one. From the FIN states, no error is the normal end.
 */
static __always_inline __u32 end_of(const struct sock *sk, int oldstate)
{
	int err = sk->sk_err;

	if (err == ECONNRESET || err == EPIPE || err == ECONNABORTED)
		return CN_RESET;
	if (err)
		return CN_TIMEOUT;
	if (oldstate == TCP_ESTABLISHED || oldstate == TCP_CLOSE_WAIT)
		return CN_RESET;
	return CN_CLOSED;
}

/* The bucket of us: how many bounds lie below it (a branchless binary search). */
static __always_inline __u32 hs_bucket(__u32 us)
{
	__u32 b = 0;

	if (us == ~0u)
		return HS_NR_BOUNDS;
#pragma unroll
	for (__u32 step = 16; step; step >>= 1)
		b += hs_bounds[(b + step - 1) & 31] < us ? step : 0;
	return b;
}

/* Add n to slot of the slot table, counting what the netns hash had no room for. */
static __always_inline void add(__u64 *slice, const struct sock *sk, __u32 slot, __u64 n,
				const bool netns)
{
	if (!slot_add(slice, &tcp_connections_netns,
		      netns ? sk->__sk_common.skc_net.net->ns.inum : 0, slot, n, CN_STRIDE, netns))
		slice_add(slice, CN_OVERFLOW, 1, CN_STRIDE);
}

/*
 * Microseconds since the SYN of the passive side's child socket, from what the kernel keeps of
 * its request socket: the first SYN-ACK's send time (snt_synack, the SYN's arrival to within
 * the time it takes to answer it). The kernel measures the child's first RTT from it when no
 * SYN-ACK was resent (tcp_check_req, tcp_synack_rtt_meas: srtt_us holds it << 3); when a timer
 * resent it, Linux 6.8+ keeps the time since in total_rto_time (ms). ~0u: neither.
 */
static __always_inline __u32 passive_us(const struct sock *sk)
{
	struct tcp_sock *tp = bpf_skc_to_tcp_sock((struct sock *)sk);

	if (!tp)
		return ~0u;
	if (!tp->total_retrans && tp->srtt_us)
		return tp->srtt_us >> 3;
	/* A Fast Open child's timer counts from its first timeout, not from the SYN-ACK. */
	if (bpf_core_field_exists(tp->total_rto_time) && BPF_CORE_READ(tp, total_rto) &&
	    !BPF_CORE_READ_BITFIELD(tp, syn_data_acked))
		return BPF_CORE_READ(tp, total_rto_time) * 1000;
	return ~0u;
}

/* Microseconds since connect() moved sk to SYN_SENT; ~0u when it has no start. */
static __always_inline __u32 active_us(const struct sock *sk)
{
	__u64 start = hs_take(sk), us;

	if (!start)
		return ~0u;
	us = (bpf_ktime_get_ns() - start) / 1000;
	return us < ~0u ? us : ~0u - 1;
}

/* One established handshake into the histogram of (family, direction), or untimed. */
static __always_inline void record_handshake(__u64 *slice, const struct sock *sk, __u32 family,
					     __u32 direction, const bool netns)
{
	__u32 hist = HS_HIST(family, direction), us = ~0u, bucket;

	/* A simultaneous open is passive, but its socket connected: it has a start. */
	if (direction == CN_ACTIVE || !sk->sk_max_ack_backlog)
		us = active_us(sk);
	if (us == ~0u && direction == CN_PASSIVE)
		us = passive_us(sk);
	if (us == ~0u) {
		add(slice, sk, HS_UNTIMED(hist), 1, netns);
		return;
	}
	bucket = hs_bucket(us);
	add(slice, sk, HS_COUNT(hist, bucket), 1, netns);
	add(slice, sk, HS_SUM(hist, bucket), us, netns);
	if (native_stride) {
		__u32 idx = hist * hs_native_table.slots +
			    native_slot(&hs_native_table, hs_native_table.schema, us);
		struct slot_key k = { .slot = HS_NATIVE_BASE + idx };
		__u32 cpu = bpf_get_smp_processor_id();

		if (netns) {
			k.netns = sk->__sk_common.skc_net.net->ns.inum;
			if (hash_add(&tcp_connections_netns, &k, 1))
				return;
		}
		/* Without the label, or the hash is full (its classic count said so). */
		slice_add(bpf_map_lookup_elem(&tcp_handshake_native, &cpu), idx, 1, native_stride);
	}
}

static __always_inline void record(const struct sock *sk, int oldstate, int newstate,
				   const bool netns, const bool handshake)
{
	__u32 direction = CN_PASSIVE, outcome, slot, family;
	__u64 *slice;

	switch (newstate) {
	case TCP_SYN_SENT:
		if (!handshake || oldstate != TCP_CLOSE || sk->sk_protocol != IPPROTO_TCP)
			return;
		hs_start(sk);
		return;
	case TCP_ESTABLISHED:
		if (oldstate == TCP_SYN_SENT)
			direction = CN_ACTIVE;
		else if (oldstate != TCP_SYN_RECV)
			return;
		outcome = CN_ESTABLISHED;
		break;
	case TCP_CLOSE_WAIT:
	case TCP_FIN_WAIT1:
		/* A Fast Open child that got a FIN, or was closed, before the handshake's ACK. */
		if (oldstate != TCP_SYN_RECV)
			return;
		outcome = CN_ESTABLISHED;
		break;
	case TCP_CLOSE:
		if (oldstate == TCP_SYN_SENT || oldstate == TCP_SYN_RECV) {
			if (oldstate == TCP_SYN_SENT)
				direction = CN_ACTIVE;
			outcome = CN_FAILED;
			break;
		}
		if (oldstate < 0 || oldstate >= 32 || !((1u << oldstate) & ENDING_STATES))
			return;
		outcome = end_of(sk, oldstate);
		/* A listener's children inherit its backlog; a connecting socket has none. */
		if (!sk->sk_max_ack_backlog)
			direction = CN_ACTIVE;
		break;
	default:
		return;
	}
	/* SCTP, DCCP and MPTCP sockets change state through this tracepoint too. */
	if (sk->sk_protocol != IPPROTO_TCP)
		return;
	family = sk_family(sk);
	slot = CN_SLOT(family, direction, outcome);
	slice = cpu_slice_of(&tcp_connections);
	add(slice, sk, slot, 1, netns);
	if (handshake && outcome == CN_ESTABLISHED) {
		record_handshake(slice, sk, family, direction, netns);
	} else if (handshake && outcome == CN_FAILED &&
		   (direction == CN_ACTIVE || !sk->sk_max_ack_backlog)) {
		/* A connect that failed, or a simultaneous open: its start goes. */
		hs_take(sk);
	}
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(count_connection, const struct sock *sk, int oldstate, int newstate)
{
	record(sk, oldstate, newstate, false, false);
	return 0;
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(count_connection_netns, const struct sock *sk, int oldstate, int newstate)
{
	record(sk, oldstate, newstate, true, false);
	return 0;
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(count_handshake, const struct sock *sk, int oldstate, int newstate)
{
	record(sk, oldstate, newstate, false, true);
	return 0;
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(count_handshake_netns, const struct sock *sk, int oldstate, int newstate)
{
	record(sk, oldstate, newstate, true, true);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
