/* SPDX-License-Identifier: GPL-2.0-only */
/* Types shared by bpf/rtt.bpf.c and exporter/collectors/rtt.c. */
#ifndef NETSTACK_RTT_H
#define NETSTACK_RTT_H

#include "cpu_array.h"

enum rtt_family { RTT_IPV4, RTT_IPV6, NR_RTT_FAMILIES };
/* srtt: the smoothed RTT after the update, what ss shows; sample: the measurement itself. */
enum rtt_kind { RTT_KIND_SRTT, RTT_KIND_SAMPLE, NR_RTT_KINDS };

/* Optional labels; those not set in label_mask stay zero in the key. */
#define RTT_LABEL_NETNS (1u << 0)
#define RTT_LABEL_KIND (1u << 1) /* without it, only srtt is recorded */

/*
 * Log2 buckets of the sample in microseconds: bucket i counts samples of at most
 * 2^(RTT_MIN_SHIFT + i) us, from 4 us to 2^25 us (33.6 s); the last bucket is +Inf.
 */
#define RTT_MIN_SHIFT 2
#define RTT_MAX_SHIFT 25
#define RTT_NR_BOUNDS (RTT_MAX_SHIFT - RTT_MIN_SHIFT + 1)
#define RTT_NR_BUCKETS (RTT_NR_BOUNDS + 1)

/*
 * Each CPU's slice of the tcp_rtt_by_family array holds, for each histogram
 * RTT_HIST(overflow, kind, family) and each bucket, the count of samples and their sum in
 * microseconds side by side, so that a sample's two updates land next to each other; a
 * histogram's sum is the sum of its buckets' sums. Overflow histograms hold what the netns
 * hash had no room for, and only that: their counts are the overflow count.
 */
#define RTT_HIST(overflow, kind, family)                                                           \
	((((overflow)*NR_RTT_KINDS) + (kind)) * NR_RTT_FAMILIES + (family))
#define RTT_NR_HISTS RTT_HIST(2, 0, 0)
#define RTT_COUNT(hist, bucket) (((hist)*RTT_NR_BUCKETS + (bucket)) * 2)
#define RTT_SUM(hist, bucket) (RTT_COUNT(hist, bucket) + 1)
#define RTT_ARRAY_SIZE RTT_COUNT(RTT_NR_HISTS, 0)
/* Each CPU's slice of the by-CPU array tcp_rtt_by_family (bpf/maps.bpf.h). */
#define RTT_STRIDE CPU_STRIDE(RTT_ARRAY_SIZE)

/*
 * Key of the hashes used with the netns label: tcp_rtt (sum of samples in microseconds per
 * histogram, bucket 0, bounded by max_series) and tcp_rtt_buckets (one counter per bucket).
 */
struct rtt_key {
	__u32 netns;
	__u8 family;
	__u8 kind;
	__u8 bucket;
	__u8 pad;
};

/*
 * Native buckets (bpf/native.h), counted beside the classic ones: each CPU's slice of the
 * tcp_rtt_native array holds, for the histograms in use (RTT_HIST below nhists, the highest
 * the label set can reach), each histogram's slots side by side, slot 0 its zero bucket.
 */
#define RTT_NATIVE_SLOT(hist, slots, slot) ((hist) * (slots) + (slot))
#define RTT_NATIVE_STRIDE(nhists, slots) CPU_STRIDE((nhists) * (slots))

/*
 * Key of tcp_rtt_nslots (netns label): one counter per native slot of a histogram. The hash has
 * room for max_series * RTT_NATIVE_OCTAVES octaves of slots (exporter/collectors/rtt.c).
 */
#define RTT_NATIVE_OCTAVES 8
struct rtt_native_key {
	__u32 netns;
	__u8 family;
	__u8 kind;
	__u16 slot;
};

/* What the start-up pass over existing sockets (iter/tcp) did, in the program's .bss. */
struct rtt_existing {
	__u64 enabled; /* RTT callbacks turned on */
	__u64 already; /* already on (another program, or established after we attached) */
	__u64 failed;  /* bpf_setsockopt() refused */
};

#endif
