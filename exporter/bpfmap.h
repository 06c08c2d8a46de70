/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef NETSTACK_BPFMAP_H
#define NETSTACK_BPFMAP_H

#include <stddef.h>
#include <stdint.h>

/*
 * Buffers to read one per-CPU map with u64 values, sized once and reused every scrape; or a
 * by-CPU array (bpf/maps.bpf.h: a plain array with one slice of stride u64 per possible CPU),
 * read as if it were a per-CPU array of max_entries.
 */
struct percpu_reader {
	int fd;
	size_t key_size;
	uint32_t max_entries;
	uint32_t stride;   /* by-CPU array only */
	uint32_t per_elem; /* by-CPU array only: counters per map element (1 or stride) */
	int ncpus;
	uint64_t *raw; /* by-CPU array only: ncpus * stride as the map holds them */
	const volatile uint64_t *mapped; /* the same, mapped (BPF_F_MMAPABLE) */
	size_t mapped_len;
	void *keys;	  /* max_entries * key_size (not for a by-CPU array: slot i is i) */
	uint64_t *values; /* max_entries * ncpus (not for a by-CPU array) */
	uint64_t *sums;	  /* max_entries: values summed over CPUs */
};

/* A read-only view of len bytes of a BPF_F_MMAPABLE array; NULL (errno set) on failure. */
const void *map_view(int fd, size_t len);
void map_view_free(const void *p, size_t len);

int percpu_reader_init(struct percpu_reader *r, int fd, size_t key_size, uint32_t max_entries);
/* The by-CPU array's size in entries: possible CPUs * stride (0 if that is unknown). */
uint32_t cpu_array_entries(uint32_t stride);
int cpu_array_reader_init(struct percpu_reader *r, int fd, uint32_t slots, uint32_t stride);
/* Read every entry (batch lookup, or key by key where the kernel lacks it); count or -errno. */
int percpu_reader_read(struct percpu_reader *r);
void percpu_reader_free(struct percpu_reader *r);

#endif
