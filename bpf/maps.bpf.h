/* SPDX-License-Identifier: GPL-2.0-only */
/* Counting helpers shared by the collectors' BPF programs. */
#ifndef NETSTACK_MAPS_BPF_H
#define NETSTACK_MAPS_BPF_H

/* Add n to slot idx of a per-CPU u64 array (an inlined lookup on recent kernels). */
static __always_inline void array_add(void *map, __u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(map, &idx);

	if (v)
		*v += n;
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

#endif
