/* SPDX-License-Identifier: GPL-2.0-only */
/* Counting helpers shared by the collectors' BPF programs. */
#ifndef NETSTACK_MAPS_BPF_H
#define NETSTACK_MAPS_BPF_H

#include "cpu_array.h"

/* Add n to slot idx of a u64 array, per-CPU or plain (an inlined lookup on recent kernels). */
static __always_inline void array_add(void *map, __u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(map, &idx);

	if (v)
		*v += n;
}

/*
 * By-CPU arrays: a plain BPF_MAP_TYPE_ARRAY holding one slice of CPU_STRIDE(slots) u64
 * counters per possible CPU, each CPU adding only to its own (user space sums the slices,
 * exporter/kernel/bpfmap.c). Where the stride is a constant, a slice is one element, so that user
 * space reads the whole array in one copy per CPU rather than one per counter. A per-CPU array would do the same, but its values live in per-CPU chunks
 * the kernel maps page by page in vmalloc space, and each lookup first loads the value's
 * pointer: on a cold path under a hypervisor that is a nested page walk per event (see
 * docs/cost.md and bench/results/). A plain array up to 32 KB is one kmalloc, in the kernel's
 * huge-page direct map, and its lookup is arithmetic.
 */

/* This CPU's slice: the index of its first slot, where each counter is an element. */
static __always_inline __u32 cpu_slice(__u32 stride)
{
	return bpf_get_smp_processor_id() * stride;
}

/* This CPU's slice, where each slice is an element of u64[stride]. */
static __always_inline __u64 *cpu_slice_of(void *map)
{
	__u32 cpu = bpf_get_smp_processor_id();

	return bpf_map_lookup_elem(map, &cpu);
}

/*
 * Add n to counter idx of a slice of stride counters (none when the lookup failed). barrier_var()
 * keeps each bound check: clang 19 merges the checks of two nearby indexes (a count and its sum)
 * into one, leaving the verifier an index it cannot bound.
 */
static __always_inline void slice_add(__u64 *slice, __u32 idx, __u64 n, const __u32 stride)
{
	barrier_var(idx);
	if (slice && idx < stride)
		slice[idx] += n;
}

/*
 * This CPU's u64 for key in a bounded per-CPU hash, inserted as 0 when new. NULL when the map
 * is full: the caller counts the event somewhere visible instead of losing it.
 */
static __always_inline __u64 *hash_lookup_or_init(void *map, const void *key)
{
	__u64 *v = bpf_map_lookup_elem(map, key);

	if (!v) {
		__u64 zero = 0;

		/* EEXIST: another CPU inserted it first, which is fine. */
		bpf_map_update_elem(map, key, &zero, BPF_NOEXIST);
		v = bpf_map_lookup_elem(map, key);
	}
	return v;
}

/* Add n to key's counter in a bounded per-CPU hash; false when the map is full. */
static __always_inline bool hash_add(void *map, const void *key, __u64 n)
{
	__u64 *v = hash_lookup_or_init(map, key);

	if (!v)
		return false;
	*v += n;
	return true;
}

/*
 * Add n to a slot of a slot table (bpf/cpu_array.h): in this CPU's slice of stride counters, or
 * with the netns label to (netns, slot) in the bounded hash. When the hash is full the slice
 * takes it, so that sums without the label stay exact, and the result is false: the caller
 * counts an overflow somewhere visible.
 */
static __always_inline bool slot_add(__u64 *slice, void *hash, __u32 netns, __u32 slot, __u64 n,
				     const __u32 stride, const bool labelled)
{
	struct slot_key key = { .netns = netns, .slot = slot };

	if (labelled && hash_add(hash, &key, n))
		return true;
	slice_add(slice, slot, n, stride);
	return !labelled;
}

#endif
