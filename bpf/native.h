/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Native (exponential) histogram buckets of a value in microseconds, shared by the BPF programs
 * (bpf/native.bpf.h) and user space (exporter/collectors/native.c), which fills the table.
 *
 * Bucket i holds (2^((i-1)/2^schema), 2^(i/2^schema)] seconds. In integer microseconds u that is
 * T(i-1) < u <= T(i) with T(i) = floor(2^(i/2^schema) * 1e6). A histogram's counts are dense
 * "slots": slot 0 is the zero bucket (u = 0, zero_threshold 0), slot d >= 1 is bucket
 * offset + d - 1, and the slots cover every u32 value: nothing is clamped.
 */
#ifndef NETSTACK_NATIVE_H
#define NETSTACK_NATIVE_H

/* Schemas offered; each step up doubles the buckets (and their memory). */
#define NATIVE_SCHEMA_MIN 0
#define NATIVE_SCHEMA_MAX 5
#define NATIVE_SCHEMA_DEFAULT 3
/* Octaves of a u32: [2^o, 2^(o+1)) for o = 0..31 (octave 0 also holds u = 0). */
#define NATIVE_OCTAVES 32
/* A power of two above the slots of the largest schema plus one octave of padding. */
#define NATIVE_TABLE_SIZE 2048

/*
 * What the kernel needs to place a value. thr[d] is the upper edge of slot d in microseconds
 * (thr[0] = 0 for the zero bucket, then T(offset + d - 1) capped at UINT32_MAX, then
 * UINT32_MAX as padding); first[o] is the first slot whose edge is at least 2^o (0 for octave
 * 0). Within an octave at most 2^schema edges lie below a value, so a binary search of schema
 * steps plus one comparison from first[o] finds its slot.
 */
struct native_table {
	__u32 schema;
	__u32 slots; /* n + 1: the zero bucket and n buckets */
	__s32 offset;
	__u32 first[NATIVE_OCTAVES];
	__u32 thr[NATIVE_TABLE_SIZE];
};

#endif
