/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Cell histograms of a value in microseconds, shared by the BPF programs (bpf/hist.bpf.h) and
 * user space (exporter/collectors/histogram.c). The kernel counts each sample once, in one cell;
 * every bucket user space exposes, classic or native, is a sum of cells, and so is the count:
 * a histogram's count, +Inf bucket and native buckets come from one read and always agree.
 *
 * The cell of u >= 1 is (e, p): the octave e = floor(log2(u)), u in [2^e, 2^(e+1)), and the
 * position p = 0 when u = 2^e (a classic bound of the RTT histogram: le is inclusive), else
 * 1 + n, n the number of native bucket edges of schema 3 in that octave that lie below u. Native
 * bucket i holds (2^((i-1)/8), 2^(i/8)] s; each octave of microseconds holds 8 of their edges,
 * the first that of bucket 8e - 159, and scaled by 2^(31-e) they are the same 8 integers in every
 * octave (HIST_EDGES: floor(1e6 * 2^(12 + k/8)) brought into [2^31, 2^32); the edge at k = 0 is
 * exactly 1e6 << 12, the others irrational), so u << (31 - e) compared with them is exact.
 * u = 0 counts in cell (0, 1), which no u >= 1 reaches: octave 0 holds u = 1 alone.
 */
#ifndef NETSTACK_HIST_H
#define NETSTACK_HIST_H

#define HIST_OCTAVES 32
#define HIST_PER_OCTAVE 10
#define HIST_CELLS 320 /* a constant, not a product: it is an offset into counters */
_Static_assert(HIST_CELLS == HIST_OCTAVES * HIST_PER_OCTAVE, "10 cells an octave");
#define HIST_CELL(e, p) ((e)*HIST_PER_OCTAVE + (p))
#define HIST_ZERO_CELL HIST_CELL(0, 1)
/* A histogram's counters: its cells, then the sum of its values in microseconds. */
#define HIST_SUM HIST_CELLS
#define HIST_SIZE (HIST_CELLS + 1)

/* The native buckets the cells resolve: schema 3, octave e's first bucket 8e + HIST_OFFSET. */
#define HIST_SCHEMA 3
#define HIST_OFFSET (-159)
#define HIST_EDGE_1 2233359836u
#define HIST_EDGE_2 2435496171u
#define HIST_EDGE_3 2655927407u
#define HIST_EDGE_4 2896309375u
#define HIST_EDGE_5 3158447770u
#define HIST_EDGE_6 3444311716u
#define HIST_EDGE_7 3756048560u
#define HIST_EDGE_8 4096000000u
#define HIST_EDGES                                                                                 \
	{                                                                                          \
		HIST_EDGE_1, HIST_EDGE_2, HIST_EDGE_3, HIST_EDGE_4, HIST_EDGE_5, HIST_EDGE_6,      \
			HIST_EDGE_7, HIST_EDGE_8                                                   \
	}

#endif
