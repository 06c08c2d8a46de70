/* SPDX-License-Identifier: GPL-2.0-only */
/* Types shared by bpf/connections.bpf.c and exporter/collectors/connections.c. */
#ifndef NETSTACK_CONNECTIONS_H
#define NETSTACK_CONNECTIONS_H

#include "cpu_array.h"
#include "hist.h"

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
 * Handshake time histograms, one per (family, direction) of IPv4 and IPv6 (a TCP socket is one
 * or the other: CN_OTHER never has a handshake), counted in cells (bpf/hist.h): a handshake is
 * one cell increment and the sum. The classic buckets user space derives from the cells, in
 * microseconds: bucket b holds HS_BOUND(b - 1) < us <= HS_BOUND(b), the last bucket +Inf. The
 * bounds are 2^k s rounded down to whole microseconds, k = -16..-1 and 1..5 (15 us to 0.5 s,
 * then 2, 4, 8, 16, 32 s): none at 1 s, because the kernel's 1 s initial RTO fires a few
 * milliseconds either side of its second (jiffies, timer wheel), and a bound there would split
 * the handshakes that needed one retransmit over two buckets; (0.5 s, 2 s] holds them, and each
 * further retransmit (3 s, 7 s, 15 s, 31 s) a bucket of its own. 2^k s rounded down is a native
 * bucket edge of schema 3 (HIST_EDGE_8 of its octave, or the octave's start): a cell boundary.
 */
#define HS_NR_BOUNDS 21
#define HS_NR_BUCKETS (HS_NR_BOUNDS + 1)
#define HS_BOUND(b) ((unsigned int)((1000000ull << ((b) + ((b) >= 16))) >> 16))
#define HS_NR_FAMILIES 2 /* CN_IPV4, CN_IPV6 */
#define HS_NR_HISTS (HS_NR_FAMILIES * CN_NR_DIRECTIONS)
#define HS_HIST(family, direction) ((family)*CN_NR_DIRECTIONS + (direction))

/*
 * The slot table's slots (bpf/cpu_array.h): one per (family, direction, outcome); the overflow
 * count; then, with handshake timing only, a block per histogram: its established count (which
 * replaces the (family, direction, established) slot), its untimed count and its sum side by
 * side, so that every handshake touches that cache line and its cell's, then its HIST_CELLS
 * cells (bpf/hist.h). Without timing the table ends at the overflow count (CN_NR_COUNT_SLOTS,
 * a smaller stride).
 */
#define CN_SLOT(family, direction, outcome)                                                        \
	(((family)*CN_NR_DIRECTIONS + (direction)) * CN_NR_OUTCOMES + (outcome))
#define CN_OVERFLOW CN_SLOT(CN_NR_FAMILIES, 0, 0) /* events the hash had no room for */
#define CN_NR_COUNT_SLOTS (CN_OVERFLOW + 1)
#define HS_BASE CN_NR_COUNT_SLOTS
#define HS_EST_AT 0
#define HS_UNTIMED_AT 1
#define HS_SUM_AT 2
#define HS_CELLS_AT 3
#define HS_BLOCK (HS_CELLS_AT + HIST_CELLS)
#define HS_EST(hist) (HS_BASE + (hist)*HS_BLOCK)
#define HS_UNTIMED(hist) (HS_EST(hist) + HS_UNTIMED_AT)
#define HS_SUM(hist) (HS_EST(hist) + HS_SUM_AT)
#define HS_CELL(hist, cell) (HS_EST(hist) + HS_CELLS_AT + (cell))
#define CN_NR_SLOTS HS_EST(HS_NR_HISTS)
/* Each CPU's slice of the by-CPU array tcp_connections (bpf/maps.bpf.h), with timing or not. */
#define CN_STRIDE CPU_STRIDE(CN_NR_SLOTS)
#define CN_COUNT_STRIDE CPU_STRIDE(CN_NR_COUNT_SLOTS)

/*
 * What the program notes of a socket in tcp_socket_notes, by socket address: for a connect
 * whose SYN was retransmitted, the first SYN's send time (tcp_mstamp microseconds, never 0 or
 * CN_NOTE_PASSIVE), until it leaves SYN_SENT; for a socket established passive that has no
 * listen backlog (the child of a listen(fd, 0) listener, a simultaneous open), CN_NOTE_PASSIVE
 * until it closes. A bounded hash, allocated per entry: these are rare.
 */
#define CN_NOTES 1024
#define CN_NOTE_PASSIVE (~0ull)

#endif
