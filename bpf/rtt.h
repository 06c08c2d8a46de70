/* SPDX-License-Identifier: GPL-2.0-only */
/* Types shared by bpf/rtt.bpf.c and exporter/collectors/rtt.c. */
#ifndef NETSTACK_RTT_H
#define NETSTACK_RTT_H

#include "cpu_array.h"
#include "hist.h"

enum rtt_family { RTT_IPV4, RTT_IPV6, NR_RTT_FAMILIES };
/* srtt: the smoothed RTT after the update, what ss shows; sample: the measurement itself. */
enum rtt_kind { RTT_KIND_SRTT, RTT_KIND_SAMPLE, NR_RTT_KINDS };

/* Optional labels; those not set in label_mask stay zero in the key. */
#define RTT_LABEL_NETNS (1u << 0)
#define RTT_LABEL_KIND (1u << 1) /* without it, only srtt is recorded */

/*
 * Classic buckets: bucket i holds samples of at most 2^(RTT_MIN_SHIFT + i) us, from 4 us to 2^25 us
 * (33.6 s), then +Inf. User space derives them, and the native buckets, from the cells
 * (bpf/hist.h) the kernel counts.
 */
#define RTT_MIN_SHIFT 2
#define RTT_MAX_SHIFT 25
#define RTT_NR_BOUNDS (RTT_MAX_SHIFT - RTT_MIN_SHIFT + 1)

/*
 * Each CPU's slice of the tcp_rtt_by_family array holds the histograms in use, HIST_SIZE counters
 * each (bpf/hist.h): RTT_HIST(overflow, kind, family) below the highest the label set reaches.
 * Overflow histograms hold what the netns hashes had no room for, and only that: their counts
 * are the overflow count.
 */
#define RTT_HIST(overflow, kind, family)                                                           \
	((((overflow)*NR_RTT_KINDS) + (kind)) * NR_RTT_FAMILIES + (family))
#define RTT_NR_HISTS RTT_HIST(2, 0, 0)
/* The stride of a CPU's slice for nhists histograms. */
#define RTT_STRIDE(nhists) CPU_STRIDE((nhists)*HIST_SIZE)

/*
 * Key of the hashes used with the netns label: tcp_rtt (an entry a histogram, bounded by
 * max_series, holding the sum of its samples in microseconds; cell 0) and tcp_rtt_cells (one
 * counter per cell, room for RTT_NETNS_CELLS cells a histogram on average).
 */
struct rtt_key {
	__u32 netns;
	__u8 family;
	__u8 kind;
	__u16 cell;
};
#define RTT_NETNS_CELLS 64

/* What the start-up pass over existing sockets (iter/tcp) did, in the program's .bss. */
struct rtt_existing {
	__u64 enabled; /* RTT callbacks turned on */
	__u64 already; /* already on (another program, or established after we attached) */
	__u64 failed;  /* bpf_setsockopt() refused */
};

#endif
