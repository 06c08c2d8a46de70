/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef NETSTACK_BPFMAP_H
#define NETSTACK_BPFMAP_H

#include <stddef.h>
#include <stdint.h>

/* Buffers to read one per-CPU map with u64 values, sized once and reused every scrape. */
struct percpu_reader {
	int fd;
	size_t key_size;
	uint32_t max_entries;
	int ncpus;
	void *keys;	  /* max_entries * key_size */
	uint64_t *values; /* max_entries * ncpus */
	uint64_t *sums;	  /* max_entries: values summed over CPUs */
};

int percpu_reader_init(struct percpu_reader *r, int fd, size_t key_size, uint32_t max_entries);
/* Read every entry (batch lookup, or key by key where the kernel lacks it); count or -errno. */
int percpu_reader_read(struct percpu_reader *r);
void percpu_reader_free(struct percpu_reader *r);

#endif
