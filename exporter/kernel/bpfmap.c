// SPDX-License-Identifier: GPL-2.0-only
#define _GNU_SOURCE /* qsort_r */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kernel/bpfmap.h"
#include "cpu_array.h"

#ifndef ENOTSUPP
#define ENOTSUPP 524 /* kernel-internal, returned by some map types */
#endif

const void *map_view(int fd, size_t len)
{
	void *p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

void map_view_free(const void *p, size_t len)
{
	if (p)
		munmap((void *)p, len);
}

/* What every reader has: the map, its size, the CPUs and the sums. */
static int reader_init(struct percpu_reader *r, int fd, size_t key_size, uint32_t max_entries)
{
	memset(r, 0, sizeof(*r));
	r->fd = fd;
	r->key_size = key_size;
	r->max_entries = max_entries;
	r->ncpus = libbpf_num_possible_cpus();
	if (r->ncpus <= 0)
		return r->ncpus ? r->ncpus : -EINVAL;
	r->sums = calloc(max_entries, sizeof(uint64_t));
	return r->sums ? 0 : -ENOMEM;
}

int percpu_reader_init(struct percpu_reader *r, int fd, size_t key_size, uint32_t max_entries)
{
	int err = reader_init(r, fd, key_size, max_entries);

	if (err)
		return err;
	r->keys = calloc(max_entries, key_size);
	r->values = calloc((size_t)max_entries * r->ncpus, sizeof(uint64_t));
	if (!r->keys || !r->values) {
		percpu_reader_free(r);
		return -ENOMEM;
	}
	return 0;
}

uint32_t cpu_array_entries(uint32_t stride)
{
	int ncpus = libbpf_num_possible_cpus();

	return ncpus > 0 ? (uint32_t)ncpus * stride : 0;
}

int cpu_array_reader_init(struct percpu_reader *r, int fd, uint32_t slots, uint32_t stride)
{
	struct bpf_map_info info = { 0 };
	uint32_t len = sizeof(info);
	/* Slot i's sum is sums[i]: no keys, and the slices are summed straight from the map. */
	int err = reader_init(r, fd, sizeof(uint32_t), slots);

	if (err)
		return err;
	r->stride = stride;
	/* A BPF_F_MMAPABLE array is read in place, without a system call per scrape. */
	err = bpf_obj_get_info_by_fd(fd, &info, &len);
	if (!err && info.value_size % sizeof(uint64_t))
		err = -EINVAL;
	if (err) {
		percpu_reader_free(r);
		return err;
	}
	r->per_elem = info.value_size / sizeof(uint64_t); /* 1, or a whole slice */
	if (info.map_flags & BPF_F_MMAPABLE) {
		r->mapped_len = (size_t)r->ncpus * stride * sizeof(uint64_t);
		r->mapped = map_view(fd, r->mapped_len);
		if (r->mapped)
			return 0;
		err = -errno;
		percpu_reader_free(r);
		return err;
	}
	/* Values, then room for the u32 keys a batch lookup returns with them. */
	r->raw = calloc((size_t)r->ncpus * stride, sizeof(uint64_t) + sizeof(uint32_t));
	if (!r->raw) {
		percpu_reader_free(r);
		return -ENOMEM;
	}
	return 0;
}

/* The whole by-CPU array: in place, or in one batch (key by key where the kernel lacks it). */
static int read_cpu_array(struct percpu_reader *r)
{
	uint32_t elems = (uint32_t)r->ncpus * r->stride / r->per_elem, count = elems, cursor;
	const volatile uint64_t *v = r->mapped;
	int err;

	if (!v) {
		/* The keys the batch returns go after the values (cpu_array_reader_init sized raw). */
		uint32_t *keys = (uint32_t *)(r->raw + (size_t)r->ncpus * r->stride);

		err = bpf_map_lookup_batch(r->fd, NULL, &cursor, keys, r->raw, &count, NULL);
		if ((err && err != -ENOENT) || count != elems) {
			for (uint32_t k = 0; k < elems; k++)
				if (bpf_map_lookup_elem(r->fd, &k,
							r->raw + (size_t)k * r->per_elem))
					return -errno;
		}
		v = r->raw;
	}
	/* Each CPU writes only its own slice; an aligned u64 load sees a whole value. */
	memset(r->sums, 0, r->max_entries * sizeof(uint64_t));
	for (int c = 0; c < r->ncpus; c++)
		for (uint32_t i = 0; i < r->max_entries; i++)
			r->sums[i] += v[(size_t)c * r->stride + i];
	return (int)r->max_entries;
}

static void sum(struct percpu_reader *r, uint32_t i)
{
	const uint64_t *v = r->values + (size_t)i * r->ncpus;
	uint64_t s = 0;

	for (int c = 0; c < r->ncpus; c++)
		s += v[c];
	r->sums[i] = s;
}

static int read_one_by_one(struct percpu_reader *r)
{
	char *prev = NULL, *key = r->keys;
	uint32_t n = 0;

	while (n < r->max_entries && !bpf_map_get_next_key(r->fd, prev, key)) {
		/* An entry deleted between the two calls is simply skipped. */
		if (!bpf_map_lookup_elem(r->fd, key, r->values + (size_t)n * r->ncpus)) {
			prev = key;
			key += r->key_size;
			n++;
		}
	}
	return n;
}

int percpu_reader_read(struct percpu_reader *r)
{
	/* Batch cursor: large enough for any key; arrays and hashes use different cursors. */
	uint64_t batch[8];
	uint32_t n = 0;
	int err = 0;
	bool first = true;

	if (r->key_size > sizeof(batch))
		return -EINVAL;
	if (r->stride)
		return read_cpu_array(r);
	while (n < r->max_entries && err != -ENOENT) {
		uint32_t count = r->max_entries - n;

		err = bpf_map_lookup_batch(r->fd, first ? NULL : batch, batch,
					   (char *)r->keys + (size_t)n * r->key_size,
					   r->values + (size_t)n * r->ncpus, &count, NULL);
		if (err && err != -ENOENT) {
			if (first && (err == -EINVAL || err == -ENOTSUPP || err == -EOPNOTSUPP))
				n = read_one_by_one(r);
			else
				return err;
			break;
		}
		first = false;
		n += count;
	}
	for (uint32_t i = 0; i < n; i++)
		sum(r, i);
	return (int)n;
}

void percpu_reader_free(struct percpu_reader *r)
{
	free(r->keys);
	free(r->values);
	free(r->sums);
	free(r->raw);
	map_view_free((const void *)r->mapped, r->mapped_len);
	r->keys = r->values = r->sums = r->raw = NULL;
	r->mapped = NULL;
}

int slot_table_init(struct slot_table *t, int array_fd, uint32_t slots, uint32_t stride,
		    int hash_fd, uint32_t hash_entries, bool labelled, slot_series_fn series)
{
	int err;

	memset(t, 0, sizeof(*t));
	t->slots = slots;
	t->hash_slots = slots;
	t->labelled = labelled;
	t->series = series;
	err = cpu_array_reader_init(&t->array, array_fd, slots, stride);
	if (!err && labelled)
		err = percpu_reader_init(&t->hash, hash_fd, sizeof(struct slot_key), hash_entries);
	if (err)
		slot_table_free(t);
	return err;
}

static int cmp_slot_row(const void *a, const void *b, void *table)
{
	const struct slot_row *x = a, *y = b;
	const struct slot_table *t = table;
	uint32_t sx = t->series(x->slot), sy = t->series(y->slot);

	if (sx != sy)
		return sx < sy ? -1 : 1;
	if (x->overflow != y->overflow)
		return x->overflow - y->overflow;
	return x->netns < y->netns ? -1 : x->netns > y->netns;
}

static void add_row(struct slot_table *t, size_t *n, uint32_t slot, uint32_t netns, bool overflow,
		    uint64_t value)
{
	if (slot < t->hash_slots && t->series(slot) != SLOT_NONE)
		t->rows[(*n)++] = (struct slot_row){ slot, netns, overflow, value };
}

int slot_table_read(struct slot_table *t, const uint32_t *always, size_t n_always)
{
	int na, nh = 0;
	size_t n = 0, out = 0;

	na = percpu_reader_read(&t->array);
	if (na >= 0 && t->labelled)
		nh = percpu_reader_read(&t->hash);
	if (na < 0 || nh < 0)
		return na < 0 ? na : nh;
	if ((size_t)(na + nh) + n_always > t->cap) {
		struct slot_row *r = realloc(t->rows, (na + nh + n_always) * sizeof(*r));

		if (!r)
			return -ENOMEM;
		t->rows = r;
		t->cap = na + nh + n_always;
	}
	for (size_t i = 0; !t->labelled && i < n_always; i++)
		add_row(t, &n, always[i], 0, false, 0);
	for (int i = 0; i < na; i++)
		if (t->array.sums[i])
			add_row(t, &n, i, 0, t->labelled, t->array.sums[i]);
	for (int i = 0; i < nh; i++) {
		const struct slot_key *k = (const struct slot_key *)t->hash.keys + i;

		add_row(t, &n, k->slot, k->netns, false, t->hash.sums[i]);
	}
	qsort_r(t->rows, n, sizeof(*t->rows), cmp_slot_row, t);
	for (size_t i = 0; i < n; i++) {
		if (out && !cmp_slot_row(&t->rows[out - 1], &t->rows[i], t))
			t->rows[out - 1].value += t->rows[i].value;
		else
			t->rows[out++] = t->rows[i];
	}
	t->n_rows = out;
	return (int)out;
}

uint64_t slot_table_unlabelled(const struct slot_table *t, uint32_t slot)
{
	return slot < t->slots ? t->array.sums[slot] : 0;
}

void slot_table_free(struct slot_table *t)
{
	percpu_reader_free(&t->array);
	percpu_reader_free(&t->hash);
	free(t->rows);
	t->rows = NULL;
}
