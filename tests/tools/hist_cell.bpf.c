// SPDX-License-Identifier: GPL-2.0-only
/*
 * The kernel's cell of a value (bpf/hist.bpf.h) under BPF_PROG_TEST_RUN, for
 * tests/tools/hist_check.c: the same header the collectors' programs include.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "hist.bpf.h"

struct args {
	__u32 us;
	__u32 cell;
};

SEC("syscall")
int hist_cell_of(struct args *a)
{
	a->cell = hist_cell(a->us);
	return 0;
}

/*
 * The cell's own cost, hot in cache: BENCH_N pseudo-random values (xorshift, spread over
 * octaves 4..27) through hist_cell, or not (with = 0), timed by the kernel's clock.
 */
#define BENCH_N 1024

struct bench {
	__u32 with;
	__u32 pad;
	__u64 ns;
	__u64 acc; /* keeps the results alive */
};

SEC("syscall")
int hist_cell_bench(struct bench *b)
{
	__u32 x = 2463534242u;
	__u64 t0, acc = 0;

	t0 = bpf_ktime_get_ns();
	for (int i = 0; i < BENCH_N; i++) {
		__u32 us;

		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		us = x >> (x & 31) >> 4;
		acc += b->with ? hist_cell(us) : us;
	}
	b->ns = bpf_ktime_get_ns() - t0;
	b->acc = acc;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
