/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef NETSTACK_BPFMAP_H
#define NETSTACK_BPFMAP_H

#include <stdbool.h>
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

/* Readers of a per-CPU map and of a by-CPU array: 0 or -errno, nothing logged (r freed). */
int percpu_reader_init(struct percpu_reader *r, int fd, size_t key_size, uint32_t max_entries);
/* The by-CPU array's size in entries: possible CPUs * stride (0 if that is unknown). */
uint32_t cpu_array_entries(uint32_t stride);
int cpu_array_reader_init(struct percpu_reader *r, int fd, uint32_t slots, uint32_t stride);
/* Read every entry (batch lookup, or key by key where the kernel lacks it); count or -errno. */
int percpu_reader_read(struct percpu_reader *r);
void percpu_reader_free(struct percpu_reader *r);

/*
 * A slot table (bpf/cpu_array.h) read back as series: each row one series, its counters summed
 * over CPUs and over the slots the collector maps to the same series.
 */
struct slot_row {
	uint32_t slot;	/* the series' first slot */
	uint32_t netns; /* labelled only */
	bool overflow;	/* labelled, but counted without the label: the hash was full */
	uint64_t value;
};

/*
 * A collector's series of a slot: rows sort by it, and slots with the same series, netns and
 * overflow add up. SLOT_NONE: not a series (an overflow counter, say).
 */
typedef uint32_t (*slot_series_fn)(uint32_t slot);
#define SLOT_NONE UINT32_MAX

struct slot_table {
	struct percpu_reader array, hash;
	uint32_t slots;
	uint32_t
		hash_slots; /* slots the hash may hold, slots or more (only there); set after init */
	bool labelled;
	slot_series_fn series;
	bool logged_overflow; /* its collector said the hash is full */
	struct slot_row *rows;
	size_t n_rows; /* of the last read */
	size_t cap;
};

/* hash_fd is read only when labelled (then with hash_entries entries). 0 or -errno. */
int slot_table_init(struct slot_table *t, int array_fd, uint32_t slots, uint32_t stride,
		    int hash_fd, uint32_t hash_entries, bool labelled, slot_series_fn series);
/*
 * Read both maps into t->rows, sorted by (series, overflow, netns): the count of rows or
 * -errno. Without the label, the slots in always[] are rows even when zero (series that must
 * exist from the start); non-zero slots always are.
 */
int slot_table_read(struct slot_table *t, const uint32_t *always, size_t n_always);
/* A slot's count without the label (an overflow counter, say), as of the last read. */
uint64_t slot_table_unlabelled(const struct slot_table *t, uint32_t slot);
void slot_table_free(struct slot_table *t);

#endif
