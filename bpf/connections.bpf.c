// SPDX-License-Identifier: GPL-2.0-only
/*
 * Count TCP connections by family, direction and outcome from the state changes of TCP
 * sockets (tp_btf/inet_sock_set_state), in per-CPU maps. No per-event output: the exporter
 * reads the maps when it is scraped.
 *
 * The program comes in two variants, without and with the netns label, and user space loads
 * one: the label choice is a compile-time constant, so the default path reads no configuration.
 * Most state changes are not counted (a connection makes five to seven): those return after
 * comparing the two states, which the tracepoint passes in registers.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>
#include "connections.h"
#include "maps.bpf.h"

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

static __always_inline void record(const struct sock *sk, int oldstate, int newstate,
				   const bool netns)
{
	__u32 direction = CN_PASSIVE, outcome, slot;
	__u64 *slice;

	switch (newstate) {
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
	slot = CN_SLOT(sk_family(sk), direction, outcome);
	slice = cpu_slice_of(&tcp_connections);
	if (!slot_add(slice, &tcp_connections_netns,
		      netns ? sk->__sk_common.skc_net.net->ns.inum : 0, slot, 1, CN_STRIDE, netns))
		slice_add(slice, CN_OVERFLOW, 1, CN_STRIDE);
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(count_connection, const struct sock *sk, int oldstate, int newstate)
{
	record(sk, oldstate, newstate, false);
	return 0;
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(count_connection_netns, const struct sock *sk, int oldstate, int newstate)
{
	record(sk, oldstate, newstate, true);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
