/* SPDX-License-Identifier: GPL-2.0-only */
/* Bit helpers for BPF programs (the BPF instruction set has no count-leading-zeros). */
#ifndef NETSTACK_BITS_BPF_H
#define NETSTACK_BITS_BPF_H

/*
 * floor(log2(v)) for v > 0, 0 for v == 0, in 26 ALU instructions: each step's (c - x) >> 63
 * is 1 when x > c. No branches, so varying values cost no mispredictions; barrier_var() hides
 * x's range from clang, which would otherwise turn the steps back into compare-and-jump.
 */
static __always_inline __u32 log2_u32(__u32 v)
{
	__u64 x = v, r, shift;

	barrier_var(x);
	r = ((0xffffULL - x) >> 63) << 4;
	x >>= r;
	shift = ((0xffULL - x) >> 63) << 3;
	x >>= shift;
	r |= shift;
	shift = ((0xfULL - x) >> 63) << 2;
	x >>= shift;
	r |= shift;
	shift = ((0x3ULL - x) >> 63) << 1;
	x >>= shift;
	r |= shift;
	return r | (x >> 1);
}

#endif
