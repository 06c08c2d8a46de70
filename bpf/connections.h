/* SPDX-License-Identifier: GPL-2.0-only */
/* Types shared by bpf/connections.bpf.c and exporter/collectors/connections.c. */
#ifndef NETSTACK_CONNECTIONS_H
#define NETSTACK_CONNECTIONS_H

#include "cpu_array.h"

enum conn_family { CN_IPV4, CN_IPV6, CN_OTHER, CN_NR_FAMILIES };
enum conn_direction { CN_ACTIVE, CN_PASSIVE, CN_NR_DIRECTIONS };
enum conn_outcome {
	CN_ESTABLISHED, /* the handshake completed */
	CN_FAILED,	/* closed before it did */
	CN_RESET,	/* an established connection ended by a reset, received or sent */
	CN_TIMEOUT,	/* ... by a timeout (retransmissions, keepalive, user timeout) */
	CN_CLOSED,	/* ... normally, after FINs both ways */
	CN_NR_OUTCOMES
};

/* Optional labels; those not set in label_mask stay zero in the key. */
#define CN_LABEL_NETNS (1u << 0)

/*
 * Handshake time histograms, one per (family, direction), classic buckets in microseconds:
 * bucket b holds HS_BOUND(b - 1) < us <= HS_BOUND(b), the last bucket +Inf. The bounds are
 * 2^k s rounded down to whole microseconds, k = -16..-1 and 1..5 (15 us to 0.5 s, then 2, 4,
 * 8, 16, 32 s): none at 1 s, because the kernel's 1 s initial RTO fires a few milliseconds
 * either side of its second (jiffies, timer wheel), and a bound there would split the
 * handshakes that needed one retransmit over two buckets; (0.5 s, 2 s] holds them, and each
 * further retransmit (3 s, 7 s, 15 s, 31 s) a bucket of its own. 2^k s is the edge of a native
 * bucket of every schema, counted the same way.
 */
#define HS_NR_BOUNDS 21
#define HS_NR_BUCKETS (HS_NR_BOUNDS + 1)
#define HS_BOUND(b) ((unsigned int)((1000000ull << ((b) + ((b) >= 16))) >> 16))

/*
 * Start times of pending connects (bpf/connections.bpf.c tcp_handshake_start): HS_SETS sets of
 * HS_WAYS sockets, one cache line each.
 */
#define HS_WAYS 4
#define HS_SETS_SHIFT 13
#define HS_SETS (1u << HS_SETS_SHIFT)
struct hs_set {
	__u64 sk[HS_WAYS];    /* socket address, 0: free */
	__u64 start[HS_WAYS]; /* bpf_ktime_get_ns() at SYN_SENT */
};

/*
 * The slot table's slots (bpf/cpu_array.h): one per (family, direction, outcome); per (family,
 * direction) the handshake histogram, each bucket's count and sum of microseconds side by side
 * (a handshake's two updates land on one cache line; the histogram's sum is its buckets'), and
 * the handshakes established without a time; then the overflow count.
 */
#define CN_SLOT(family, direction, outcome)                                                        \
	(((family)*CN_NR_DIRECTIONS + (direction)) * CN_NR_OUTCOMES + (outcome))
#define HS_BASE CN_SLOT(CN_NR_FAMILIES, 0, 0)
#define HS_PER_HIST (2 * HS_NR_BUCKETS + 1)
#define HS_HIST(family, direction) ((family)*CN_NR_DIRECTIONS + (direction))
#define HS_COUNT(hist, bucket) (HS_BASE + (hist)*HS_PER_HIST + 2 * (bucket))
#define HS_SUM(hist, bucket) (HS_COUNT(hist, bucket) + 1)
#define HS_UNTIMED(hist) HS_COUNT(hist, HS_NR_BUCKETS)
#define HS_NR_HISTS (CN_NR_FAMILIES * CN_NR_DIRECTIONS)
#define CN_OVERFLOW HS_COUNT(HS_NR_HISTS, 0) /* events the hash had no room for */
#define CN_NR_SLOTS (CN_OVERFLOW + 1)
/*
 * Native buckets (bpf/native.h), when on: slot d of histogram hist is element
 * hist * slots + d of this CPU's slice of tcp_handshake_native (without the netns label; with
 * it, what the hash had no room for), and with the netns label slot HS_NATIVE_BASE + that of
 * the slot table's hash.
 */
#define HS_NATIVE_BASE CN_NR_SLOTS
#define HS_NATIVE_STRIDE(slots) CPU_STRIDE(HS_NR_HISTS *(slots))
/* Each CPU's slice of the by-CPU array tcp_connections (bpf/maps.bpf.h). */
#define CN_STRIDE CPU_STRIDE(CN_NR_SLOTS)

#endif
