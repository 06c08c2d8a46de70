// SPDX-License-Identifier: GPL-2.0-only
/*
 * Count TCP connections by family, direction and outcome from the state changes of TCP
 * sockets (tp_btf/inet_sock_set_state), in per-CPU maps. No per-event output: the exporter
 * reads the maps when it is scraped.
 *
 * With handshake timing, also the time each connection took to become established, as a
 * histogram per family and direction, from what the socket already holds when it becomes
 * established (docs/collectors/connections.md says what each time covers): no clock read and
 * no table write when a connect starts. Only a SYN the kernel retransmitted needs its first
 * send time kept, by a second program on tp_btf/tcp_retransmit_skb.
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
#include "hist.bpf.h"
#include "maps.bpf.h"

#ifndef CONNECTIONS_NO_KFUNC
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;
/* The socket as the tcp_sock it is: a cast the verifier removes (Linux 6.2+), no call. */
#define tcp_sock_of(sk)                                                                            \
	((struct tcp_sock *)bpf_rdonly_cast(sk, bpf_core_type_id_kernel(struct tcp_sock)))
#else
/* Before 6.2 (bpf/connections_nokfunc.bpf.c): a helper call, which checks what the cast assumes. */
#define tcp_sock_of(sk) bpf_skc_to_tcp_sock((void *)(sk))
#endif

#define AF_INET 2
#define AF_INET6 10
#define EPIPE 32
#define ECONNABORTED 103
#define ECONNRESET 104

/* States an established connection leaves for CLOSE from. */
#define ENDING_STATES                                                                              \
	(1u << TCP_ESTABLISHED | 1u << TCP_CLOSE_WAIT | 1u << TCP_FIN_WAIT1 |                      \
	 1u << TCP_FIN_WAIT2 | 1u << TCP_CLOSING | 1u << TCP_LAST_ACK)

/*
 * Every slot of connections.h in this CPU's slice of a by-CPU array: CN_STRIDE with handshake
 * timing, CN_COUNT_STRIDE without (user space sizes the value; the program's bound follows).
 */
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

/* The few sockets the program must remember something of (connections.h CN_NOTE_PASSIVE). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CN_NOTES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, __u64);
} tcp_socket_notes SEC(".maps");

/*
 * The passive notes in tcp_socket_notes (inserted less deleted): while 0, a closing socket
 * without backlog is active and needs no look-up. A plain array in the kernel's direct map, not
 * a global in .bss (vmalloc'ed when mmapable: a page walk on a cold TLB entry at every close);
 * pinned with the notes, so the two agree across restarts.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} tcp_passive_notes SEC(".maps");

/* Add n to the count of passive notes. */
static __always_inline void passive_notes_add(__s64 n)
{
	__u32 zero = 0;
	__u64 *v = bpf_map_lookup_elem(&tcp_passive_notes, &zero);

	if (v)
		__sync_fetch_and_add(v, n);
}

static __always_inline bool passive_notes_any(void)
{
	__u32 zero = 0;
	__u64 *v = bpf_map_lookup_elem(&tcp_passive_notes, &zero);

	return v && *v;
}

static __always_inline __u64 note_key(const struct sock *sk)
{
	return (__u64)sk;
}

/* sk established passive without a backlog: remember it for its end. */
static __always_inline void note_passive(const struct sock *sk)
{
	__u64 key = note_key(sk), v = CN_NOTE_PASSIVE;

	/* A simultaneous open may hold its SYN's time: the passive note replaces it. */
	if (!bpf_map_update_elem(&tcp_socket_notes, &key, &v, BPF_ANY))
		passive_notes_add(1);
}

/* sk's note taken out: its value, or 0 when it has none. */
static __always_inline __u64 take_note(const struct sock *sk)
{
	__u64 key = note_key(sk), *v = bpf_map_lookup_elem(&tcp_socket_notes, &key), note;

	if (!v)
		return 0;
	note = *v;
	if (bpf_map_delete_elem(&tcp_socket_notes, &key))
		return 0; /* another CPU took it */
	if (note == CN_NOTE_PASSIVE)
		passive_notes_add(-1);
	return note;
}

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

/* With the netns label: this CPU's counter of (sk's netns, slot), made if new; NULL: full. */
static __always_inline __u64 *netns_counter(const struct sock *sk, __u32 slot)
{
	struct slot_key k = { .netns = sk->__sk_common.skc_net.net->ns.inum, .slot = slot };

	return hash_lookup_or_init(&tcp_connections_netns, &k);
}

/* Add n to slot of the slot table, counting what the netns hash had no room for. */
static __always_inline void add(__u64 *slice, const struct sock *sk, __u32 slot, __u64 n,
				const bool netns, const __u32 stride)
{
	if (!slot_add(slice, &tcp_connections_netns,
		      netns ? sk->__sk_common.skc_net.net->ns.inum : 0, slot, n, stride, netns))
		slice_add(slice, CN_OVERFLOW, 1, stride);
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
	struct tcp_sock *tp = tcp_sock_of(sk);

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

/*
 * Microseconds from the first SYN's send to the SYN-ACK, at SYN_SENT -> ESTABLISHED. The kernel
 * has processed the SYN-ACK's ACK (tcp_ack) before the state changes (tcp_finish_connect).
 * SYN sent once (total_retrans 0): that ACK gave the socket's first RTT sample, the SYN's send
 * time (its skb's timestamp) to now, and the first sample sets srtt_us = sample << 3
 * (tcp_rtt_estimator). SYN retransmitted: Karn's rule takes no sample from the SYN (one from the
 * timestamp echo, of the last SYN, is no handshake time), and retrans_stamp, which held the first
 * SYN's time, was cleared when the SYN-ACK acknowledged it (tcp_clean_rtx_queue): the time comes
 * from the note the first retransmit left (note_syn_retransmit), against tcp_mstamp, taken when
 * the SYN-ACK arrived. ~0u: no time.
 */
static __always_inline __u32 active_us(const struct sock *sk)
{
	struct tcp_sock *tp = tcp_sock_of(sk);
	__u64 first;
	__s64 us;

	if (!tp)
		return ~0u;
	if (!tp->total_retrans)
		return tp->srtt_us ? tp->srtt_us >> 3 : ~0u;
	first = take_note(sk);
	if (!first || first == CN_NOTE_PASSIVE)
		return ~0u;
	us = tp->tcp_mstamp - first;
	if (us < 0)
		return ~0u;
	return us < ~0u ? us : ~0u - 1;
}

/*
 * One established connection: its count and, with handshake timing, its handshake (a cell and
 * the sum, or untimed). With the netns label all of it goes into the hash, or, when the hash has
 * no room for one of them, all of it into the slice with one overflow: the counts of a netns (or
 * of the overflow series) always agree.
 */
static __always_inline void record_established(__u64 *slice, const struct sock *sk, __u32 family,
					       __u32 direction, const bool netns,
					       const bool handshake)
{
	const __u32 stride = handshake ? CN_STRIDE : CN_COUNT_STRIDE;
	__u32 est = CN_SLOT(family, direction, CN_ESTABLISHED), hist, us = ~0u, at;
	bool simultaneous = false;

	if (direction == CN_PASSIVE && !sk->sk_max_ack_backlog) {
		/* A listen(fd, 0) child, or a simultaneous open, whose socket is the user's. */
		simultaneous = sk->sk_socket;
		note_passive(sk);
	}
	if (!handshake || family >= HS_NR_FAMILIES) {
		add(slice, sk, est, 1, netns, stride);
		return;
	}
	hist = HS_HIST(family, direction);
	est = HS_EST(hist);
	if (direction == CN_ACTIVE)
		us = active_us(sk);
	else if (!simultaneous)
		us = passive_us(sk);
	at = us == ~0u ? HS_UNTIMED(hist) : HS_CELL(hist, hist_cell(us));
	if (netns) {
		__u64 *e = netns_counter(sk, est), *c = netns_counter(sk, at), *sum = c;

		if (us != ~0u)
			sum = netns_counter(sk, HS_SUM(hist));
		if (e && c && sum) {
			*e += 1;
			*c += 1;
			if (us != ~0u)
				*sum += us;
			return;
		}
		slice_add(slice, CN_OVERFLOW, 1, CN_STRIDE);
	}
	slice_add(slice, est, 1, CN_STRIDE);
	slice_add(slice, at, 1, CN_STRIDE);
	if (us != ~0u)
		slice_add(slice, HS_SUM(hist), us, CN_STRIDE);
}

/*
 * The direction of an established connection at its end. A listener's children inherit its
 * backlog (sk_max_ack_backlog), a connecting socket has none; the children of a listener made
 * with listen(fd, 0), and simultaneous opens, were noted passive when established.
 */
static __always_inline __u32 end_direction(const struct sock *sk)
{
	if (sk->sk_max_ack_backlog)
		return CN_PASSIVE;
	if (passive_notes_any() && take_note(sk) == CN_NOTE_PASSIVE)
		return CN_PASSIVE;
	return CN_ACTIVE;
}

static __always_inline void record(const struct sock *sk, int oldstate, int newstate,
				   const bool netns, const bool handshake)
{
	const __u32 stride = handshake ? CN_STRIDE : CN_COUNT_STRIDE;
	__u32 direction = CN_PASSIVE, outcome, family;
	struct tcp_sock *tp;
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
		break;
	default:
		return;
	}
	/* SCTP, DCCP and MPTCP sockets change state through this tracepoint too. */
	if (sk->sk_protocol != IPPROTO_TCP)
		return;
	family = sk_family(sk);
	slice = cpu_slice_of(&tcp_connections);
	if (outcome == CN_ESTABLISHED) {
		record_established(slice, sk, family, direction, netns, handshake);
		return;
	}
	if (outcome != CN_FAILED) {
		direction = end_direction(sk);
	} else if (direction == CN_ACTIVE && handshake) {
		/* A failed connect whose SYN was retransmitted leaves its note. */
		tp = tcp_sock_of(sk);
		if (tp && tp->total_retrans)
			take_note(sk);
	} else if (!sk->sk_max_ack_backlog && handshake) {
		/* A simultaneous open that failed may hold its SYN's note. */
		take_note(sk);
	}
	add(slice, sk, CN_SLOT(family, direction, outcome), 1, netns, stride);
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

/* Whether the socket's TCP timestamps, and so retrans_stamp, are in microseconds (6.7+). */
static __always_inline bool usec_ts(const struct tcp_sock *tp)
{
	if (!bpf_core_field_exists(tp->tcp_usec_ts))
		return false;
	return BPF_CORE_READ_BITFIELD(tp, tcp_usec_ts);
}

/*
 * A SYN retransmitted (loaded with handshake timing; tcp_retransmit_skb fires after each
 * retransmit that went out): note the first SYN's send time, which retrans_stamp holds while
 * the socket is in SYN_SENT (tcp_connect sets it; a retransmit keeps it), in the units of
 * tcp_time_stamp (ms; us with tcp_usec_ts), brought to tcp_mstamp's microseconds (the same
 * clock). The first retransmit's note stands.
 */
SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(note_syn_retransmit, const struct sock *sk)
{
	struct tcp_sock *tp;
	__u64 key, now, first, ms;
	__u32 stamp;

	if (sk->__sk_common.skc_state != TCP_SYN_SENT || sk->sk_protocol != IPPROTO_TCP)
		return 0;
	tp = tcp_sock_of(sk);
	if (!tp)
		return 0;
	stamp = tp->retrans_stamp;
	now = tp->tcp_mstamp;
	if (!stamp)
		return 0;
	if (usec_ts(tp)) {
		first = now - (__u32)((__u32)now - stamp);
	} else {
		ms = now / 1000;
		first = (ms - (__u32)((__u32)ms - stamp)) * 1000;
	}
	if (!first || first == CN_NOTE_PASSIVE)
		return 0;
	key = note_key(sk);
	bpf_map_update_elem(&tcp_socket_notes, &key, &first, BPF_NOEXIST);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
