/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The slot of a native histogram bucket (bpf/native.h) for a value in microseconds, from a table
 * user space wrote into the program's read-only data before load.
 */
#ifndef NETSTACK_NATIVE_BPF_H
#define NETSTACK_NATIVE_BPF_H

#include "bits.bpf.h"
#include "native.h"

/*
 * Slot of us: the octave's first candidate, then a branchless binary search over the next
 * 2^schema edges ((edge - us) >> 63 is 1 when edge < us). t->schema is read-only data, a
 * constant to the verifier, which drops the steps a smaller schema does not take.
 */
static __always_inline __u32 native_slot(const volatile struct native_table *t, __u32 us)
{
	__u32 schema = t->schema;
	__u64 d = t->first[log2_u32(us) & (NATIVE_OCTAVES - 1)];
	__u64 u = us, edge;

/* Step b of the search, taken by schemas above b (written out: clang would not unroll a loop). */
#define NATIVE_STEP(b)                                                                             \
	if ((b) < schema) {                                                                        \
		edge = t->thr[(d + (1u << (b)) - 1) & (NATIVE_TABLE_SIZE - 1)];                    \
		d += (1u << (b)) & -((edge - u) >> 63);                                            \
	}
	_Static_assert(NATIVE_SCHEMA_MAX == 5, "one step per schema");
	NATIVE_STEP(4);
	NATIVE_STEP(3);
	NATIVE_STEP(2);
	NATIVE_STEP(1);
	NATIVE_STEP(0);
#undef NATIVE_STEP
	edge = t->thr[d & (NATIVE_TABLE_SIZE - 1)];
	return d + ((edge - u) >> 63);
}

#endif
