/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The slot of a native histogram bucket (bpf/native.h) for a value in microseconds, from a table
 * user space wrote before the program runs: in a plain array map (bpf/rtt.bpf.c: kmalloc'd, in
 * the direct map) or in read-only data (memory-mapped, vmalloc: TLB misses on a cold path).
 */
#ifndef NETSTACK_NATIVE_BPF_H
#define NETSTACK_NATIVE_BPF_H

#include "bits.bpf.h"
#include "native.h"

/*
 * Slot of us: its octave's row (native.h), then a branchless binary search over the row's
 * 2^schema edges ((edge - us) >> 63 is 1 when edge < us; barrier_var() keeps clang from turning
 * it back into a compare-and-jump, which would mispredict on varying values). schema is
 * t->schema; pass it from read-only data (a const volatile the loader sets), where the verifier
 * knows its value and drops the steps a smaller schema does not take: a third of the program's
 * instructions at schema 3, where the table itself is in a map.
 */
static __always_inline __u32 native_slot(const volatile struct native_table *t, __u32 schema,
					 __u32 us)
{
	__u64 row = (__u64)(log2_u32(us) & (NATIVE_OCTAVES - 1)) << (t->row_shift & 7);
	__u64 u = us, k = 0, edge;

/* Step b of the search, taken by schemas above b (written out: clang would not unroll a loop). */
#define NATIVE_STEP(b)                                                                             \
	if ((b) < schema) {                                                                        \
		edge = t->rows[(row + k + (1u << (b))) & (NATIVE_ROWS_SIZE - 1)];                  \
		barrier_var(edge);                                                                 \
		k += (1u << (b)) & -((edge - u) >> 63);                                            \
	}
	_Static_assert(NATIVE_SCHEMA_MAX == 5, "one step per schema");
	NATIVE_STEP(4);
	NATIVE_STEP(3);
	NATIVE_STEP(2);
	NATIVE_STEP(1);
	NATIVE_STEP(0);
#undef NATIVE_STEP
	edge = t->rows[(row + k + 1) & (NATIVE_ROWS_SIZE - 1)];
	barrier_var(edge);
	return t->rows[row & (NATIVE_ROWS_SIZE - 1)] + k + ((edge - u) >> 63);
}

#endif
