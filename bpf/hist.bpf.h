/* SPDX-License-Identifier: GPL-2.0-only */
/* The cell of a value (bpf/hist.h) and a sample counted into a histogram's counters. */
#ifndef NETSTACK_HIST_BPF_H
#define NETSTACK_HIST_BPF_H

#include "bits.bpf.h"
#include "hist.h"
#include "maps.bpf.h"

/*
 * 1 when the edge lies below x: (edge - x) >> 63 in 64 bits, no branch (values vary per sample,
 * a compare-and-jump would mispredict; barrier_var() in the caller keeps clang from making one).
 */
#define HIST_BELOW(edge, x) ((((__u64)(edge)) - (x)) >> 63)

static __always_inline __u32 hist_cell(__u32 us)
{
	__u64 e = log2_u32(us), x = (__u64)us << (31 - e), n;

	barrier_var(x);
	n = HIST_BELOW(HIST_EDGE_1, x) + HIST_BELOW(HIST_EDGE_2, x) + HIST_BELOW(HIST_EDGE_3, x) +
	    HIST_BELOW(HIST_EDGE_4, x) + HIST_BELOW(HIST_EDGE_5, x) + HIST_BELOW(HIST_EDGE_6, x) +
	    HIST_BELOW(HIST_EDGE_7, x) + HIST_BELOW(HIST_EDGE_8, x);
	/* p = n + 1 unless x is 2^31 exactly (u a power of two); u = 0 gives x = 0: (0, 1). */
	n += ((x ^ 0x80000000ull) + 0xffffffffull) >> 32;
	return e * HIST_PER_OCTAVE + n;
}

/*
 * One sample of us into the histogram whose HIST_SIZE counters start at base in a CPU's slice of
 * stride counters (bpf/maps.bpf.h): its cell and its sum, nothing else.
 */
static __always_inline void hist_add(__u64 *slice, __u32 base, __u32 us, const __u32 stride)
{
	slice_add(slice, base + hist_cell(us), 1, stride);
	slice_add(slice, base + HIST_SUM, us, stride);
}

#endif
