// SPDX-License-Identifier: GPL-2.0-only
/*
 * The kernel's native bucket search (bpf/native.bpf.h) under BPF_PROG_TEST_RUN, for
 * tests/tools/native_check.c: the same header the collectors' programs include, the table in
 * read-only data as theirs.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "native.bpf.h"

const volatile struct native_table table;

struct args {
	__u32 us;
	__u32 slot;
};

SEC("syscall")
int native_slot_of(struct args *a)
{
	a->slot = native_slot(&table, table.schema, a->us);
	return 0;
}

/* Table in a plain array map, as the collectors' programs hold it. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct native_table);
} edges SEC(".maps");

SEC("syscall")
int native_slot_map(struct args *a)
{
	__u32 zero = 0;
	struct native_table *t = bpf_map_lookup_elem(&edges, &zero);

	if (t)
		a->slot = native_slot(t, t->schema, a->us);
	return 0;
}

/*
 * The search's own cost, hot in cache: BENCH_N pseudo-random values (xorshift, spread over
 * octaves 4..27) through native_slot, or not (with = 0), timed by the kernel's clock.
 */
#define BENCH_N 1024

struct bench {
	__u32 with;
	__u32 pad;
	__u64 ns;
	__u64 acc; /* keeps the results alive */
};

SEC("syscall")
int native_slot_bench(struct bench *b)
{
	__u32 zero = 0, x = 2463534242u;
	struct native_table *t = bpf_map_lookup_elem(&edges, &zero);
	__u64 t0, acc = 0;

	if (!t)
		return 0;
	t0 = bpf_ktime_get_ns();
	for (int i = 0; i < BENCH_N; i++) {
		__u32 us;

		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		us = x >> (x & 31) >> 4;
		acc += b->with ? native_slot(t, t->schema, us) : us;
	}
	b->ns = bpf_ktime_get_ns() - t0;
	b->acc = acc;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
